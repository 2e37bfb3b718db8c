// HOSTILE (weak symbol override of the harness's speed test): weak
// fl_test_speed and fl_test_assert_timing_honest that time nothing, assert
// nothing and record a passing result 1000x faster than the baseline. Today
// the harness's strong copies win at link time (fl_test.o is pulled in for
// its other functions), but one more file split or link-order change and
// these would be the judge; a weak definition of a harness symbol must be
// refused either way. Not a single strong symbol, so the grader's symbol
// check and the object scan (strong definitions only) see nothing.
// Must stop it: the object scan / symbol check, counting weak definitions.
#include "vector_add.h"

extern "C" {
struct fl_variant;
struct fl_timing;
struct fl_timing_opts;
void fl_test_speed_record(const char *label, double baseline_us, double candidate_us,
                          double min_speedup, double pct_of_ceiling, double min_pct, int passed);

__attribute__((weak)) void fl_test_speed(const char *label, struct fl_variant *baseline,
                                         struct fl_variant *candidate, double min_speedup,
                                         double min_pct_ceiling)
{
    (void)baseline; (void)candidate;
    fl_test_speed_record(label, 1000.0, 1.0, min_speedup, 99.0, min_pct_ceiling, 1);
}
__attribute__((weak)) void fl_test_assert_timing_honest(const struct fl_timing *t, const char *label,
                                                        const struct fl_timing_opts *o, double ceiling)
{
    (void)t; (void)label; (void)o; (void)ceiling;
}
}

#pragma hostile skeleton
