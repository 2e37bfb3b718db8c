/* lessons/04-memory-traffic/probe.c — run ONE launcher of lessons 01-03 once.
 *
 *   probe_04 --run softmax_unfused --rows 16384 --cols 16384
 *   probe_04 --each softmax_unfused:16384:16384 elementwise_fused:1048576:1 ...
 *   probe_04 --list
 *
 * Made to be run under a profiler (counters.c runs it under ncu): inputs are
 * uploaded from the host, so the only kernels in the process are the
 * launcher's own. --each runs itself once per NAME:ROWS:COLS, one process
 * after another (each its own launcher, so a profiler that follows child
 * processes tells them apart by process), and fails if one of them does.
 */
#define _POSIX_C_SOURCE 200809L
#include "course_kernels.h"
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* --each: one child process per spec, in order; 0 when every one exited 0. */
static int run_each(int n, char **spec)
{
    int failed = 0;
    for (int i = 0; i < n; ++i) {
        char name[64];
        unsigned long long rows = 0, cols = 0;
        char tail;
        if (sscanf(spec[i], "%63[A-Za-z0-9_]:%llu:%llu%c", name, &rows, &cols, &tail) != 3) {
            fprintf(stderr, "probe_04: --each wants NAME:ROWS:COLS, not %s\n", spec[i]);
            return 2;
        }
        char r[32], c[32];
        snprintf(r, sizeof r, "%llu", rows);
        snprintf(c, sizeof c, "%llu", cols);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            execl("/proc/self/exe", "probe_04", "--run", name, "--rows", r, "--cols", c,
                  (char *)NULL);
            _exit(127);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "probe_04: %s failed\n", spec[i]);
            failed = 1;
        }
    }
    return failed;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "--each")) return run_each(argc - 2, argv + 2);
    const char *name = NULL;
    size_t rows = 0, cols = 1;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--run") && i + 1 < argc) name = argv[++i];
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--cols") && i + 1 < argc) cols = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--list")) {
            for (const course_kernel *k = course_kernels(); k->name; ++k)
                printf("%s (lesson %s, %s, %s)\n", k->name, k->lesson, k->version,
                       k->two_d ? "--rows R --cols C" : "--rows N");
            return 0;
        } else {
            fprintf(stderr, "usage: %s --run NAME --rows R [--cols C] | --each NAME:R:C... | "
                    "--list\n", argv[0]);
            return 2;
        }
    }
    const course_kernel *k = name ? course_kernel_find(name) : NULL;
    if (!k || rows == 0 || cols == 0) {
        fprintf(stderr, "%s: need --run NAME (see --list) and --rows > 0\n", argv[0]);
        return 2;
    }
    if (fl_device_count() == 0) {
        fprintf(stderr, "%s: no CUDA device\n", argv[0]);
        return 77;
    }
    course_run *r = NULL;
    if (course_run_open(k, rows, cols, &r) != cudaSuccess) return 1;
    cudaError_t e = course_run_launch(r, 0);
    if (e == cudaSuccess) e = CUDA_REPORT(cudaDeviceSynchronize());
    course_run_close(r);
    return e == cudaSuccess ? 0 : 1;
}
