// HOSTILE (memory bomb at run time): a constructor allocates and touches
// host memory 256 MiB at a time. A real bomb goes until the kernel's OOM
// killer picks a victim (on a shared grading machine, anyone's job); this
// one stops at 12 GiB, in Criterion's runner only (its workers, named
// "boxfort-worker", are left alone). malloc and memset: nothing the object
// scan flags.
// Must stop it: the object scan (a constructor), and a memory limit on the
// test program (RLIMIT_DATA or a cgroup).
#include "vector_add.h"

#include <stdlib.h>
#include <string.h>

__attribute__((constructor)) static void eat_memory(int argc, char **argv)
{
    if (argc < 1 || strstr(argv[0], "boxfort-worker")) return;
    for (int i = 0; i < 48; ++i) {
        void *p = malloc((size_t)256 << 20);
        if (p == NULL) break;
        memset(p, 0x5A, (size_t)256 << 20);
    }
}

#pragma hostile skeleton
