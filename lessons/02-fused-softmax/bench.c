/* lessons/02-fused-softmax/bench.c — sweep cols, time unfused vs fused, write CSV.
 *
 *   ./build/bench_02_fused_softmax --csv plots/02-fused-softmax.csv
 *   gnuplot -c lessons/02-fused-softmax/plot.gp plots/02-fused-softmax.csv plots/02-fused-softmax.svg
 *
 * rows = 4096, cols = 256 ... 16384 (rows that fit on chip), then one long-row
 * point, 256 x 262144 (the online softmax: x is read twice). Each size with
 * the course's timing protocol, unfused and fused interleaved, outputs
 * poisoned before every sample and re-checked after the loop against the
 * double-precision CPU reference and tolerances of
 * tests/test_02_fused_softmax.c (softmax_reference.h, tests/thresholds.h).
 * GB/s counts the bytes each version must move: unfused 5 reads + 3 writes
 * of the matrix, fused 1 + 1.
 *
 * A third variant, interleaved with the other two, is a cudaMemcpy of the
 * same matrix (1 read + 1 write, like the fused kernel): the fastest any
 * softmax could be at that size under this timing (which charges the
 * fixed cost of a kernel and the write-back of its output, as for the others).
 * Its columns (copy_us, copy_gbs) come last in the CSV.
 */
#include "bench.h"
#include "compare.h"
#include "csv.h"
#include "data.h"
#include "softmax.h"
#include "softmax_reference.h"
#include "thresholds.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    size_t rows, cols;
    float *x, *y, *row_max, *shifted, *e, *row_sum; /* device */
    float *got;                                     /* host */
    const double *want;                             /* host */
} ctx02;

static cudaError_t run_unfused(void *p, cudaStream_t st)
{
    ctx02 *c = p;
    return softmax_unfused(c->x, c->row_max, c->shifted, c->e, c->row_sum, c->y, c->rows,
                           c->cols, st);
}

static cudaError_t run_fused(void *p, cudaStream_t st)
{
    ctx02 *c = p;
    return softmax_fused(c->x, c->y, c->rows, c->cols, st);
}

/* the same bytes as the fused kernel, copied: x -> shifted */
static cudaError_t run_copy(void *p, cudaStream_t st)
{
    ctx02 *c = p;
    return cudaMemcpyAsync(c->shifted, c->x, c->rows * c->cols * sizeof(float),
                           cudaMemcpyDeviceToDevice, st);
}

static cudaError_t poison_y(void *p, cudaStream_t st)
{
    ctx02 *c = p;
    return fl_poison(c->y, c->rows * c->cols * sizeof(float), st);
}

static int recheck(void *p, char *msg, size_t len)
{
    ctx02 *c = p;
    size_t n = c->rows * c->cols;
    if (fl_download_f32(c->got, c->y, n) != cudaSuccess) return 0;
    fl_compare_opts o = fl_compare_defaults("y", L02_ATOL, L02_RTOL);
    o.cols = c->cols;
    fl_compare_result r = fl_compare_f32(c->got, c->want, n, &o);
    snprintf(msg, len, "%s", r.message);
    return r.n_bad == 0;
}

typedef struct {
    size_t rows, cols;
} size02;

int main(int argc, char **argv)
{
    fl_bench b;
    int rc = fl_bench_init(&b, argc, argv,
                           "lesson 02: row-wise softmax, unfused (5 kernels) vs fused");
    if (rc) return rc < 0 ? 0 : rc;

    /* the sweep: rows = 4096 and cols = 2^8 .. 2^14, then the long rows */
    size02 sizes[16];
    int n_sizes = 0;
    for (size_t cols = 256; cols <= (b.quick ? 1024u : 16384u); cols *= 2)
        sizes[n_sizes++] = (size02){4096, cols};
    sizes[n_sizes++] = (size02){b.quick ? 8 : 256, 262144};

    /* 5 device matrices (x, two outputs, the baseline's shifted and e) */
    size_t max_n = 0;
    for (int i = 0; i < n_sizes; ++i)
        if (sizes[i].rows * sizes[i].cols > max_n) max_n = sizes[i].rows * sizes[i].cols;
    while (n_sizes > 1 && 5 * max_n * sizeof(float) > fl_bench_free_bytes() * 8 / 10) {
        fprintf(stderr, "note: %zux%zu left out (free device memory)\n", sizes[n_sizes - 1].rows,
                sizes[n_sizes - 1].cols);
        n_sizes--;
        max_n = 0;
        for (int i = 0; i < n_sizes; ++i)
            if (sizes[i].rows * sizes[i].cols > max_n) max_n = sizes[i].rows * sizes[i].cols;
    }

    size_t bytes = max_n * sizeof(float);
    float *hx = malloc(bytes), *got = malloc(bytes);
    double *want = malloc(max_n * sizeof(double));
    if (!hx || !got || !want) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    fl_fill_uniform(hx, max_n, 0x0200, -4.0f, 4.0f);

    size_t max_rows = 0;
    for (int i = 0; i < n_sizes; ++i)
        if (sizes[i].rows > max_rows) max_rows = sizes[i].rows;
    float *dev[5], *row_max = NULL, *row_sum = NULL;
    for (int i = 0; i < 5; ++i)
        if (CUDA_REPORT(cudaMalloc((void **)&dev[i], bytes)) != cudaSuccess) return 1;
    if (CUDA_REPORT(cudaMalloc((void **)&row_max, max_rows * sizeof(float))) != cudaSuccess ||
        CUDA_REPORT(cudaMalloc((void **)&row_sum, max_rows * sizeof(float))) != cudaSuccess)
        return 1;
    if (fl_upload_f32(dev[0], hx, max_n) != cudaSuccess) return 1;
    ctx02 un = {0, 0, dev[0], dev[1], row_max, dev[3], dev[4], row_sum, got, want};
    ctx02 fu = {0, 0, dev[0], dev[2], NULL, NULL, NULL, NULL, got, want};
    ctx02 cp = {0, 0, dev[0], NULL, NULL, dev[3], NULL, NULL, NULL, NULL};

    fl_csv *csv = fl_csv_open(b.csv_path,
                              "device,date,rows,cols,unfused_us,fused_us,speedup,unfused_gbs,"
                              "fused_gbs,ceiling_gbs,fused_pct_of_ceiling,copy_us,copy_gbs");
    if (!csv) return 1;
    fprintf(stderr, "%6s %8s %12s %12s %8s %10s %10s %7s %10s\n", "rows", "cols", "unfused_us",
            "fused_us", "speedup", "unf_GB/s", "fused_GB/s", "%ceil", "copy_GB/s");
    /* the headline row of the summary: 4096 x 4096, or the largest square-or-
     * narrower size that is in the sweep (--quick, or little memory) */
    size_t headline_cols = 0;
    for (int k = 0; k < n_sizes; ++k)
        if (sizes[k].rows == 4096 && sizes[k].cols <= 4096 && sizes[k].cols > headline_cols)
            headline_cols = sizes[k].cols;
    int failures = 0;
    fl_timing headline[2];
    for (int k = 0; k < n_sizes; ++k) {
        size_t rows = sizes[k].rows, cols = sizes[k].cols, n = rows * cols;
        /* x on the device is the first n floats of hx, viewed as (rows, cols) */
        softmax_reference(hx, want, rows, cols);
        un.rows = fu.rows = cp.rows = rows;
        un.cols = fu.cols = cp.cols = cols;
        fl_variant v[3] = {
            {.name = "unfused", .run = run_unfused, .ctx = &un,
             .bytes = SOFTMAX_UNFUSED_BYTES(rows, cols), .flops = 5.0 * n,
             .prepare = poison_y, .check = recheck},
            {.name = "fused", .run = run_fused, .ctx = &fu,
             .bytes = SOFTMAX_FUSED_BYTES(rows, cols), .flops = 5.0 * n,
             .prepare = poison_y, .check = recheck},
            {.name = "copy", .run = run_copy, .ctx = &cp,
             .bytes = SOFTMAX_FUSED_BYTES(rows, cols)},
        };
        fl_timing_opts o = fl_timing_defaults();
        /* the copy ceiling of the fused kernel's bytes (timing.h) */
        if (fl_copy_ceiling_for(v[1].bytes, &o.ceiling_gbs) != cudaSuccess) return 1;
        o.samples = b.quick ? 5 : 30;
        fl_timing t[3];
        if (fl_time_variants(v, 3, &o, t) != cudaSuccess) return 1;
        for (int i = 0; i < 2; ++i)
            if (t[i].check_ok == 0) {
                fprintf(stderr, "%s %zux%zu WRONG after timing: %s\n", t[i].name, rows, cols,
                        t[i].check_msg);
                failures++;
            }
        double speedup = t[0].us.median / t[1].us.median;
        fl_csv_row(csv, "%s,%s,%zu,%zu,%.3f,%.3f,%.3f,%.1f,%.1f,%.1f,%.1f,%.3f,%.1f",
                   b.device_field, b.date, rows, cols, t[0].us.median, t[1].us.median, speedup,
                   t[0].gbs, t[1].gbs, o.ceiling_gbs, t[1].pct_of_ceiling, t[2].us.median,
                   t[2].gbs);
        fprintf(stderr, "%6zu %8zu %12.2f %12.2f %7.2fx %10.0f %10.0f %6.1f%% %10.0f\n", rows,
                cols, t[0].us.median, t[1].us.median, speedup, t[0].gbs, t[1].gbs,
                t[1].pct_of_ceiling, t[2].gbs);
        if (rows == 4096 && cols == headline_cols) {
            headline[0] = t[0];
            headline[1] = t[1];
        }
    }
    if (fl_csv_close(csv) != 0) return 1;
    if (headline_cols) {
        char size[32];
        snprintf(size, sizeof size, "4096x%zu", headline_cols);
        if (fl_bench_summary(&b, "02-fused-softmax", size, &headline[0], &headline[1]) != 0)
            return 1;
    }
    for (int i = 0; i < 5; ++i) (void)cudaFree(dev[i]);
    (void)cudaFree(row_max);
    (void)cudaFree(row_sum);
    free(hx);
    free(got);
    free(want);
    return failures ? 1 : 0;
}
