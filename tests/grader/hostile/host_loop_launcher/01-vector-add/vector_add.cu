// HOSTILE (a runaway host loop; needs a GPU: only a test with a device calls
// a launcher): the launchers spin on the CPU forever after queuing the
// skeleton's kernels. Nothing to scan: a loop is a loop.
// Must stop it: the grader's per-suite time limit (SIGTERM, then SIGKILL of
// the whole run), then the next suite and submission graded as usual.
#include "vector_add.h"

#pragma hostile launcher_hook

static void hs_in_launcher(void)
{
    for (volatile unsigned long i = 0;; ++i) {
    }
}

#pragma hostile skeleton
