/* common/bench.c — see bench.h. */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include "csv.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(const char *prog, const char *title)
{
    printf("%s — %s\n\n"
           "usage: %s [--csv FILE] [--summary FILE] [--quick]\n"
           "  --csv FILE      write the sweep as CSV to FILE (default: stdout)\n"
           "  --summary FILE  append the headline row to FILE\n"
           "  --quick         a short sweep (smoke test)\n",
           prog, title, prog);
}

int fl_bench_init(fl_bench *b, int argc, char **argv, const char *lesson_title)
{
    memset(b, 0, sizeof *b);
    b->csv_path = "-";
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--csv") && i + 1 < argc) b->csv_path = argv[++i];
        else if (!strcmp(argv[i], "--summary") && i + 1 < argc) b->summary_path = argv[++i];
        else if (!strcmp(argv[i], "--quick")) b->quick = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(argv[0], lesson_title);
            return -1;
        } else {
            fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", argv[0], argv[i]);
            return 2;
        }
    }
    if (fl_device_count() == 0) {
        fprintf(stderr, "%s: no CUDA device: nothing to measure (skipped)\n", argv[0]);
        return FL_EXIT_SKIP;
    }
    if (fl_device_query(&b->dev) != cudaSuccess) return 1;
    if (fl_csv_quote(b->dev.name, b->device_field, sizeof b->device_field) != 0) return 1;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(b->date, sizeof b->date, "%Y-%m-%d", &tm);
    if (fl_copy_bandwidth_gbs(0, &b->ceiling_gbs) != cudaSuccess) return 1;
    char desc[400];
    fl_device_describe(&b->dev, desc, sizeof desc);
    fl_copy_ceiling parts = fl_copy_ceiling_parts();
    fprintf(stderr, "%s\ndevice: %s\ncopy ceiling: %.0f GB/s (measured, read + write: the most "
            "of cudaMemcpy, %.0f GB/s, a copy kernel, %.0f GB/s, a read-only stream, "
            "%.0f GB/s, and two or three reads a write, %.0f GB/s; each row against the "
            "faster of it and the same streams of the row's bytes)\n", lesson_title, desc,
            b->ceiling_gbs, parts.memcpy_gbs, parts.kernel_gbs, parts.read_gbs,
            parts.mixed_gbs);
    return 0;
}

int fl_bench_summary(const fl_bench *b, const char *lesson, const char *size,
                     const fl_timing *unfused, const fl_timing *fused)
{
    if (!b->summary_path) return 0;
    int exists = access(b->summary_path, F_OK) == 0;
    FILE *f = fopen(b->summary_path, "a");
    if (!f) {
        perror(b->summary_path);
        return -1;
    }
    if (!exists)
        fprintf(f, "lesson,size,device,date,unfused_us,fused_us,speedup,"
                   "unfused_gbs,fused_gbs,ceiling_gbs,fused_pct_of_ceiling,"
                   "unfused_tflops,fused_tflops\n");
    /* the ceiling the fused timing was measured against (each bench's row:
     * fl_copy_ceiling_for, timing.h), else the bench's large copy */
    double ceiling = fused->pct_of_ceiling > 0.0 ? 100.0 * fused->gbs / fused->pct_of_ceiling
                                                 : b->ceiling_gbs;
    fprintf(f, "%s,%s,%s,%s,%.2f,%.2f,%.2f,%.1f,%.1f,%.1f,%.1f,%.2f,%.2f\n", lesson, size,
            b->device_field, b->date, unfused->us.median, fused->us.median,
            unfused->us.median / fused->us.median, unfused->gbs, fused->gbs, ceiling,
            100.0 * fused->gbs / ceiling, unfused->tflops, fused->tflops);
    return fclose(f) == 0 ? 0 : -1;
}

size_t fl_bench_free_bytes(void)
{
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return 0;
    return free_b;
}
