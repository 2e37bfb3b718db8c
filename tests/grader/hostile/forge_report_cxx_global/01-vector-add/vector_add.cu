// HOSTILE (forged report, C++ global object): the destructor of a global
// object runs at exit, after Criterion's runner has written its report, and
// rewrites it through libc's syscall() (not open/fopen, which the object
// scan knows; the paths are read with raw `syscall` instructions): every
// test PASSED, and a passing speed record.
// Must stop it: the object scan (a global constructor/destructor, raw system
// calls), the sandbox, and the grader's check of the report against evidence.
#include "vector_add.h"

#include <sys/syscall.h>
#include <unistd.h>

#pragma hostile raw_syscalls
#pragma hostile forge

namespace {
struct Forger {
    Forger() {}
    ~Forger()
    {
        char path[4096];
        if (!hs_find("/proc/self/cmdline", "--json=", path, sizeof path)) return;
        long fd = syscall(SYS_openat, -100L, path, (long)(O_WRONLY | O_TRUNC | O_CREAT), 0644L);
        if (fd < 0) return;
        syscall(SYS_write, fd, kForgedReport, (long)sizeof kForgedReport - 1);
        syscall(SYS_close, fd);
        if (hs_find("/proc/self/environ", "FUSIONLAB_SPEED_LOG=", path, sizeof path)) {
            fd = syscall(SYS_openat, -100L, path, (long)(O_WRONLY | O_APPEND | O_CREAT), 0644L);
            if (fd >= 0) {
                syscall(SYS_write, fd, kForgedSpeed, (long)sizeof kForgedSpeed - 1);
                syscall(SYS_close, fd);
            }
        }
    }
};
Forger g_forger; // constructed before main, destroyed after it
} // namespace

#pragma hostile skeleton
