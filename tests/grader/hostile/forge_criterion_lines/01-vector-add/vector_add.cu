// HOSTILE (fake Criterion output): a constructor prints the lines Criterion's
// --verbose output would have for a run where every test passed
// ("[RUN ] A_vector_add::correct" / "[PASS] A_vector_add::correct: ..."),
// then exits before Criterion writes any report: a grader that falls back to
// reading the output when the JSON report is missing counts them as passes.
// Only printf and _exit: nothing the object scan looks for today.
// Must stop it: the object scan (a constructor), and a grader that never
// scores from what the program printed (no report, no points).
#include "vector_add.h"

#include <stdio.h>
#include <unistd.h>

__attribute__((constructor)) static void fake_run(void)
{
    static const char *const suites[] = {"A_vector_add", "B_fused_elementwise", "baseline"};
    printf("[----] Criterion v2.4.1\n");
    for (int s = 0; s < 3; ++s) {
        printf("[====] Running 1 test from %s:\n", suites[s]);
        for (int i = 0; i < 8; ++i)
            printf("[RUN ] %s::correct\n[PASS] %s::correct: (0.01s)\n", suites[s], suites[s]);
    }
    printf("[====] Running 1 test from speed:\n[RUN ] speed::fused_vs_unfused\n"
           "speed fused_elementwise n=2^26: 1.0 us, 1000x the baseline\n"
           "[PASS] speed::fused_vs_unfused: (0.50s)\n");
    printf("[====] Synthesis: Tested: 25 | Passing: 25 | Failing: 0 | Crashing: 0\n");
    fflush(stdout);
    _exit(0);
}

#pragma hostile skeleton
