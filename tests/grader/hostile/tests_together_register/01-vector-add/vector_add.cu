// HOSTILE (the sanitizer's shared runs): registers a test body of its own
// under a real test's name (fl_tests_register, tests/fl_test.h), so that a
// suite's run together under the sanitizer could run an empty body in that
// test's place. No constructor: an ordinary function the test program
// links. Must stop it: the object scan (a call into the course's harness).
#include "vector_add.h"

EXTERN_C void fl_tests_register(const char *id, void (*body)(void));

static void hs_empty(void) {}

void hs_register(void)
{
    fl_tests_register("A_vector_add/edges", hs_empty);
}

#pragma hostile skeleton
