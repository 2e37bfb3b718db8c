// HOSTILE (the untimed switch): the worked solution's verifying runs get
// FUSIONLAB_TIMING_UNTIMED=1, under which a speed check makes its runs
// without timing them and asserts no speed. This file turns the switch on in
// its own graded run, from a constructor placed before every other (priority
// 101), hoping that its speed checks then pass whatever its kernels take.
// Must stop it: the object scan (a constructor; it changes the environment);
// behind that, a speed check run untimed writes no speed record, and one
// without a record scores nothing (grader/stage_score.c).
#include "vector_add.h"

#include <stdlib.h>

__attribute__((constructor(101))) static void hs_untimed(void)
{
    setenv("FUSIONLAB_TIMING_UNTIMED", "1", 1);
}

#pragma hostile skeleton
