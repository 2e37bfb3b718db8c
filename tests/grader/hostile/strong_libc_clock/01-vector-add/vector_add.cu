// HOSTILE (strong override of a libc function): clock_gettime that lets
// time pass 1000 times slower. A definition in the executable interposes on
// libc's for everything in the process: wall-clock timings (the harness's
// hidden-work check, Criterion's per-test timeout) shrink.
// Must stop it: the grader's symbol check / object scan, naming
// clock_gettime (no symbol but the lesson's API).
#include "vector_add.h"

#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

extern "C" int clock_gettime(clockid_t clk, struct timespec *ts) noexcept
{
    long rc = syscall(SYS_clock_gettime, (long)clk, ts);
    if (rc == 0 && ts) {
        long long ns = ((long long)ts->tv_sec * 1000000000LL + ts->tv_nsec) / 1000;
        ts->tv_sec = (time_t)(ns / 1000000000LL);
        ts->tv_nsec = (long)(ns % 1000000000LL);
    }
    return (int)rc;
}

#pragma hostile skeleton
