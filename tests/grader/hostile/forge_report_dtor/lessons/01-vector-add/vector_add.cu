// HOSTILE (forged report, destructor): a C destructor runs after Criterion's
// runner has written its JSON report, and overwrites it (plain libc fopen,
// the path from /proc/self/cmdline) with one where every test PASSED, plus
// a passing speed record in $FUSIONLAB_SPEED_LOG's file.
// Must stop it: the object scan (a destructor; opens files), the sandbox
// (the report is not the test program's to write), and the grader's check
// of the report against evidence.
#include "vector_add.h"

#include <stdio.h>
#include <string.h>

#pragma hostile raw_syscalls
#pragma hostile forge

static void libc_put(const char *path, const char *text, const char *mode)
{
    FILE *f = fopen(path, mode);
    if (f == NULL) return;
    fputs(text, f);
    fclose(f);
}

__attribute__((destructor)) static void hs_after_main(void)
{
    char path[4096];
    if (hs_find("/proc/self/cmdline", "--json=", path, sizeof path))
        libc_put(path, kForgedReport, "w");
    if (hs_find("/proc/self/environ", "FUSIONLAB_SPEED_LOG=", path, sizeof path))
        libc_put(path, kForgedSpeed, "a");
}

#pragma hostile skeleton
