/* lessons/04-memory-traffic/probe.c — run ONE launcher of lessons 01-03 once.
 *
 *   probe_04 --run softmax_unfused --rows 16384 --cols 16384
 *   probe_04 --list
 *
 * Made to be run under a profiler (counters.c runs it under ncu): inputs are
 * uploaded from the host, so the only kernels in the process are the
 * launcher's own.
 */
#include "course_kernels.h"
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
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
            fprintf(stderr, "usage: %s --run NAME --rows R [--cols C] | --list\n", argv[0]);
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
