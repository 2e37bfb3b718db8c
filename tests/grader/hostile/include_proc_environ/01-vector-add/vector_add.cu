// HOSTILE (the grader's environment leaked through compiler errors): the
// compiler runs with the grader's environment, which holds the grading
// seed (and whatever else the instructor's shell exports: tokens, keys);
// including /proc/self/environ makes the compiler quote it as errors.
// Must stop it: includes limited to the lesson's public headers, compiler
// diagnostics shown only for the student's own file, and builds that run
// without the grader's environment.
#include "vector_add.h"
#include "/proc/self/environ"

#pragma hostile skeleton
