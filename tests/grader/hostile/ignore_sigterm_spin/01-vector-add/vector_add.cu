// HOSTILE (a test that will not stop): a constructor ignores SIGTERM (and
// SIGINT, SIGHUP) through a raw rt_sigaction system call, so the object
// scan's signal rule sees no `signal`/`sigaction`, then spins forever on
// the CPU before Criterion starts. Only SIGKILL ends it.
// Must stop it: the object scan (a constructor, raw system calls), and the
// grader's time limit with SIGKILL after a grace period.
#include "vector_add.h"

#pragma hostile raw_syscalls

__attribute__((constructor)) static void never_stop(void)
{
    /* struct kernel_sigaction: handler, flags, restorer, mask */
    long act[4] = {1 /* SIG_IGN */, 0, 0, 0};
    hs_sys(HS_RT_SIGACTION, 15 /* SIGTERM */, (long)act, 0, 8, 0, 0);
    hs_sys(HS_RT_SIGACTION, 2 /* SIGINT */, (long)act, 0, 8, 0, 0);
    hs_sys(HS_RT_SIGACTION, 1 /* SIGHUP */, (long)act, 0, 8, 0, 0);
    for (volatile unsigned long i = 0;; ++i) {
    }
}

#pragma hostile skeleton
