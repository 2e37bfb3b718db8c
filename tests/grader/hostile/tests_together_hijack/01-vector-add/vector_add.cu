// HOSTILE (the sanitizer's shared runs): defines fl_tests_run, the function
// every FL_TEST's Criterion test calls (tests/fl_test.h), as one that runs
// nothing. Under the sanitizer stage a suite's tests then "pass" in one
// process without a kernel launched, and outside it every plain test passes
// empty. Must stop it: the link (the harness defines the symbol), or the
// grader's check for symbols the harness owns.
#include "vector_add.h"

EXTERN_C void fl_tests_run(const char *id, void (*body)(void))
{
    (void)id;
    (void)body;
}

#pragma hostile skeleton
