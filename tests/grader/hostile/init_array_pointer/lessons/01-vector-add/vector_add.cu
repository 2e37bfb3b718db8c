// HOSTILE (start-up code without a constructor attribute): a function
// pointer placed by hand in the .init_array section: the dynamic loader
// calls it before main exactly like a constructor, but there is no
// __attribute__((constructor)) in the source and no symbol. It prints the
// lines Criterion's --verbose output would show for a run where every test
// passed, and exits before any report is written.
// Must stop it: the object scan (any .init_array/.ctors/.preinit_array
// entry is a constructor), and a grader that never scores from output.
#include "vector_add.h"

#include <stdio.h>
#include <unistd.h>

static void hs_early(void)
{
    static const char *const suites[] = {"A_vector_add", "B_fused_elementwise", "baseline"};
    for (int s = 0; s < 3; ++s)
        for (int i = 0; i < 8; ++i)
            printf("[RUN ] %s::correct\n[PASS] %s::correct: (0.01s)\n", suites[s], suites[s]);
    printf("[RUN ] speed::fused_vs_unfused\n[PASS] speed::fused_vs_unfused: (0.50s)\n");
    fflush(stdout);
    _exit(0);
}

__attribute__((used, section(".init_array"))) static void (*hs_early_ptr)(void) = hs_early;

#pragma hostile skeleton
