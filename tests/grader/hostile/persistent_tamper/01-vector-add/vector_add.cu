// HOSTILE (a process that outlives its test and changes classmates' grades):
// the first test process's constructor forks a child that leaves the
// process group (setsid, so the grader's kill of the group misses it),
// closes its output (so the grader does not wait for it) and, for up to
// 240 s, watches the shared run folder (its working folder): every
// Criterion report and speed log a later submission's tests write there is
// replaced within milliseconds by one where everything passed. Raw
// `syscall` instructions only.
// Must stop it: the object scan (a constructor, raw system calls) and the
// sandbox (a fresh run folder and process namespace per run; nothing
// survives the run).
#include "vector_add.h"

#pragma hostile raw_syscalls
#pragma hostile forge

static int already_forged(const char *path)
{
    static char head[4096];
    long fd = hs_open(path, O_RDONLY, 0);
    if (fd < 0) return 1; /* nothing there yet */
    long n = hs_read(fd, head, sizeof head - 1);
    hs_close(fd);
    if (n <= 0) return 0;
    head[n] = '\0';
    for (long i = 0; i + 7 <= n; ++i)
        if (head[i] == 'H' && head[i + 1] == 'O' && head[i + 2] == 'S' && head[i + 3] == 'T' &&
            head[i + 4] == 'I' && head[i + 5] == 'L' && head[i + 6] == 'E')
            return 1;
    return 0;
}

__attribute__((constructor)) static void leave_a_watcher(void)
{
    /* one watcher per batch: the first process to create the lock file */
    long lock = hs_open("hostile-watcher.lock", O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (lock < 0) return;
    hs_close(lock);
    if (hs_fork() != 0) return; /* the test program goes on as usual */
    hs_sys(HS_SETSID, 0, 0, 0, 0, 0, 0);
    for (int fd = 0; fd < 1024; ++fd) hs_close(fd);
    for (long t = 0; t < 240 * 200; ++t) { /* 240 s, every 5 ms */
        if (!already_forged("report.json")) {
            hs_sleep_ms(2); /* let Criterion finish writing */
            hs_put("report.json", kForgedReport, O_TRUNC);
        }
        if (!already_forged("speed.jsonl")) hs_put("speed.jsonl", kForgedSpeed, O_APPEND);
        hs_sleep_ms(5);
    }
    hs_exit(0);
}

#pragma hostile skeleton
