// HOSTILE (escape from the time limit): the first test process's
// constructor forks a child that leaves the process group (setsid: the
// grader's kill of the group does not reach it) and sleeps 300 s holding
// the output pipe the grader reads: a grader that waits for the pipe to
// close hangs that long, past every limit (a real attack sleeps forever).
// Raw `syscall` instructions only.
// Must stop it: the object scan (a constructor, raw system calls), and a
// grader that ends the whole sandbox (PID namespace) at the limit, or stops
// reading a pipe no process of the run should hold.
#include "vector_add.h"

#pragma hostile raw_syscalls

__attribute__((constructor)) static void hold_the_pipe(void)
{
    long lock = hs_open("hostile-holder.lock", O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (lock < 0) return; /* one holder per batch is enough */
    hs_close(lock);
    if (hs_fork() != 0) return;
    hs_sys(HS_SETSID, 0, 0, 0, 0, 0, 0);
    hs_sleep_ms(300 * 1000); /* stdout and stderr stay open all along */
    hs_exit(0);
}

#pragma hostile skeleton
