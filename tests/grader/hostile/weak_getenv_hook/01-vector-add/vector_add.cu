// HOSTILE (student code at start-up without a constructor): a weak getenv.
// The executable's definition takes every call: the CUDA runtime's and the
// harness's (linked into the same program) and Criterion's (through the
// PLT). The first call, early in Criterion's runner, prints the lines its
// --verbose output would show for a run where every test passed and exits
// before any report is written. No constructor, no undefined getenv
// reference (the scan's rule for reading the environment), and a weak
// definition passes the grader's symbol check.
// Must stop it: the object scan / symbol check, counting weak definitions
// (no symbol but the lesson's API); a grader that never scores from what
// the program printed.
#include "vector_add.h"

#include <unistd.h>

static void say(const char *s)
{
    size_t n = 0;
    while (s[n]) ++n;
    ssize_t w = write(1, s, n);
    (void)w;
}

extern "C" __attribute__((weak)) char *getenv(const char *name) noexcept
{
    (void)name;
    static const char *const suites[] = {"A_vector_add", "B_fused_elementwise", "baseline"};
    for (int s = 0; s < 3; ++s)
        for (int i = 0; i < 8; ++i) {
            say("[RUN ] "); say(suites[s]); say("::correct\n");
            say("[PASS] "); say(suites[s]); say("::correct: (0.01s)\n");
        }
    say("[RUN ] speed::fused_vs_unfused\n[PASS] speed::fused_vs_unfused: (0.50s)\n");
    _exit(0);
}

#pragma hostile skeleton
