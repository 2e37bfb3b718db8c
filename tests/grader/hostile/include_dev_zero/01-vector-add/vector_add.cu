// HOSTILE (memory bomb in the compiler): #include "/dev/zero". The
// preprocessor reads an include file to its end before it looks at it;
// /dev/zero has none, so its buffer grows until the machine runs out of
// memory (every other job on it suffers) or the build's time limit.
// Must stop it: includes limited to the lesson's public headers, and a
// memory limit on every build step (the grader's, not the kernel's OOM
// killer).
#include "vector_add.h"
#include "/dev/zero"

#pragma hostile skeleton
