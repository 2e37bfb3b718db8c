// HOSTILE (forged report, written by a launcher; needs a GPU: only a test
// with a device calls a launcher): the first launch in each test process
// forks a watcher that leaves the process group (setsid) and closes its
// output, finds the report path in its parent's (the runner's) command
// line, and rewrites the JSON report the moment the runner writes it, and
// again when the runner exits (every test PASSED, a passing speed record).
// The kernels are the skeleton's: nothing is computed. Raw `syscall`
// instructions only; no constructor.
// Must stop it: the object scan (raw system calls), the sandbox (the
// report is not the test program's to write; nothing outlives the run),
// and the grader's check of the report against evidence.
#include "vector_add.h"

#pragma hostile raw_syscalls
#pragma hostile forge
#pragma hostile launcher_hook

static int g_spawned;

static void hs_in_launcher(void)
{
    if (g_spawned++) return;
    long runner = hs_sys(HS_GETPPID, 0, 0, 0, 0, 0, 0);
    if (hs_fork() != 0) return;
    hs_sys(HS_SETSID, 0, 0, 0, 0, 0, 0);
    for (int fd = 0; fd < 1024; ++fd) hs_close(fd);
    static char proc[64], report[4096];
    const char *pre = "/proc/";
    long k = 0, digits[24], nd = 0;
    for (const char *s = pre; *s; ++s) proc[k++] = *s;
    for (long r = runner; r > 0; r /= 10) digits[nd++] = r % 10;
    while (nd > 0) proc[k++] = (char)('0' + digits[--nd]);
    const char *tail = "/cmdline";
    for (const char *s = tail; *s; ++s) proc[k++] = *s;
    proc[k] = '\0';
    if (!hs_find(proc, "--json=", report, sizeof report)) hs_exit(0);
    for (long t = 0; t < 120 * 1000; ++t) { /* up to 120 s, every 1 ms */
        int runner_gone = hs_sys(HS_KILL, runner, 0, 0, 0, 0, 0) < 0;
        long fd = hs_open(report, O_RDONLY, 0);
        if (fd >= 0) {
            static char head[64];
            long n = hs_read(fd, head, sizeof head), ours = 0;
            hs_close(fd);
            for (long i = 0; i + 7 <= n && !ours; ++i)
                ours = head[i] == 'H' && head[i + 1] == 'O' && head[i + 2] == 'S' && head[i + 3] == 'T';
            if (n > 0 && !ours) { /* the runner's, not ours yet */
                hs_sleep_ms(2);
                hs_put(report, kForgedReport, O_TRUNC);
            }
        }
        if (runner_gone) {
            hs_put(report, kForgedReport, O_TRUNC);
            hs_exit(0);
        }
        hs_sleep_ms(1);
    }
    hs_exit(0);
}

#pragma hostile skeleton
