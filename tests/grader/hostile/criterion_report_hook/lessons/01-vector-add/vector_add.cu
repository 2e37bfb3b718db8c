// HOSTILE (forged report from inside the test framework): a Criterion
// POST_ALL report hook, registered the way ReportHook(POST_ALL) does it (a
// pointer in the "cr_poa" section, but static: no global symbol), runs in
// the runner after the last test and before the JSON report is written, and
// marks every test PASSED. No file is written, no constructor, no system call:
// Criterion itself writes the forged report.
// Must stop it: includes limited to the lesson's own headers (this needs
// <criterion/stats.h>), the object scan (a test-framework section), and the
// grader's check of the report against evidence of real comparisons.
#include "vector_add.h"

#include <criterion/stats.h>

static void hs_all_passed(struct criterion_global_stats *g)
{
    for (struct criterion_suite_stats *s = g->suites; s; s = s->next) {
        for (struct criterion_test_stats *t = s->tests; t; t = t->next) {
            t->test_status = CR_STATUS_PASSED;
            t->crashed = false;
            t->timed_out = false;
            t->failed_asserts = 0;
            t->passed_asserts = 1;
            t->message = NULL;
        }
        s->tests_passed = s->nb_tests;
        s->tests_failed = s->tests_crashed = s->tests_skipped = 0;
    }
    g->tests_passed = g->nb_tests;
    g->tests_failed = g->tests_crashed = g->tests_skipped = 0;
}

typedef void (*hs_hook_fn)(void *);
__attribute__((used, section("cr_poa"))) static hs_hook_fn hs_hook_ptr = (hs_hook_fn)hs_all_passed;

#pragma hostile skeleton
