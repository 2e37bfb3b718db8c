// HOSTILE (memory and time bomb in the compiler): #include "/dev/urandom",
// an endless file of random bytes: the preprocessor's buffer grows until
// memory runs out, and the entropy pool is drained meanwhile.
// Must stop it: includes limited to the lesson's public headers, and a
// memory limit on every build step.
#include "vector_add.h"
#include "/dev/urandom"

#pragma hostile skeleton
