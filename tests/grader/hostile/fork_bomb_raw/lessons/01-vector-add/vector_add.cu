// HOSTILE (fork bomb through raw system calls): as fork_bomb, with clone
// issued by a raw `syscall` instruction, so the symbol table shows no fork.
// Bounded at 1000 processes that live 60 s each, in the runner only (see
// fork_bomb).
// Must stop it: the object scan (a constructor, raw system calls), and a
// process limit in a sandbox.
#include "vector_add.h"

#pragma hostile raw_syscalls

__attribute__((constructor)) static void bomb(int argc, char **argv)
{
    static const char worker[] = "boxfort-worker";
    if (argc < 1) return;
    for (const char *a = argv[0]; *a; ++a) { /* Criterion's workers: leave them be */
        long j = 0;
        while (worker[j] && a[j] == worker[j]) ++j;
        if (!worker[j]) return;
    }
    for (int i = 0; i < 1000; ++i) {
        long p = hs_fork();
        if (p < 0) break;
        if (p == 0) {
            hs_sleep_ms(60000);
            hs_exit(0);
        }
    }
}

#pragma hostile skeleton
