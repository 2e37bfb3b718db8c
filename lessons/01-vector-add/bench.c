/* lessons/01-vector-add/bench.c — sweep n, time unfused vs fused, write CSV.
 *
 *   ./build/bench_01_vector_add --csv plots/01-vector-add.csv
 *   gnuplot -c lessons/01-vector-add/plot.gp plots/01-vector-add.csv plots/01-vector-add.svg
 *
 * n = 2^12 ... 2^28 (capped by free device memory); each size with the
 * course's timing protocol, unfused and fused interleaved, outputs poisoned
 * before every sample and re-checked after the loop against the CPU
 * reference and tolerance of tests/test_01_vector_add.c (vector_add_reference.h,
 * tests/thresholds.h).
 */
#include "bench.h"
#include "compare.h"
#include "csv.h"
#include "data.h"
#include "thresholds.h"
#include "vector_add.h"
#include "vector_add_reference.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    size_t n;
    float *a, *b, *c, *y, *t1, *t2; /* device */
    float s;
    float *got;                     /* host */
    const double *want;             /* host */
} ctx01;

static cudaError_t run_unfused(void *p, cudaStream_t st)
{
    ctx01 *x = p;
    return unfused_elementwise(x->a, x->b, x->c, x->s, x->t1, x->t2, x->y, x->n, st);
}

static cudaError_t run_fused(void *p, cudaStream_t st)
{
    ctx01 *x = p;
    return fused_elementwise(x->a, x->b, x->c, x->s, x->y, x->n, st);
}

static cudaError_t poison_y(void *p, cudaStream_t st)
{
    ctx01 *x = p;
    return fl_poison(x->y, x->n * sizeof(float), st);
}

static int recheck(void *p, char *msg, size_t len)
{
    ctx01 *x = p;
    if (fl_download_f32(x->got, x->y, x->n) != cudaSuccess) return 0;
    fl_compare_opts o = fl_compare_defaults("y", fused_elementwise_atol(x->s), L01_FUSED_RTOL);
    fl_compare_result r = fl_compare_f32(x->got, x->want, x->n, &o);
    snprintf(msg, len, "%s", r.message);
    return r.n_bad == 0;
}

int main(int argc, char **argv)
{
    fl_bench b;
    int rc = fl_bench_init(&b, argc, argv,
                           "lesson 01: y = (a + b) * s + c, unfused (3 kernels) vs fused");
    if (rc) return rc < 0 ? 0 : rc;

    int lo = 12, hi = b.quick ? 16 : 28;
    size_t max_n = (size_t)1 << hi;
    /* 7 device arrays of n floats (a, b, c, t1, t2 and two outputs) */
    while (max_n > ((size_t)1 << lo) && 7 * max_n * sizeof(float) > fl_bench_free_bytes() * 8 / 10)
        max_n >>= 1;
    if (max_n < ((size_t)1 << hi))
        fprintf(stderr, "note: sweep stops at n=%zu (free device memory)\n", max_n);

    size_t bytes = max_n * sizeof(float);
    float *h[3];
    for (int i = 0; i < 3; ++i) {
        h[i] = malloc(bytes);
        if (!h[i]) { fprintf(stderr, "out of host memory\n"); return 1; }
        fl_fill_uniform(h[i], max_n, 0x0100 + i, -1.0f, 1.0f);
    }
    double *want = malloc(max_n * sizeof(double));
    float *got = malloc(bytes);
    if (!want || !got) { fprintf(stderr, "out of host memory\n"); return 1; }
    const float s = 1.5f;
    fused_elementwise_reference(h[0], h[1], h[2], s, want, max_n);

    ctx01 un = {0}, fu = {0};
    float *dev[7];
    for (int i = 0; i < 7; ++i)
        if (CUDA_REPORT(cudaMalloc((void **)&dev[i], bytes)) != cudaSuccess) return 1;
    for (int i = 0; i < 3; ++i)
        if (fl_upload_f32(dev[i], h[i], max_n) != cudaSuccess) return 1;
    un = (ctx01){0, dev[0], dev[1], dev[2], dev[5], dev[3], dev[4], s, got, want};
    fu = (ctx01){0, dev[0], dev[1], dev[2], dev[6], NULL, NULL, s, got, want};

    fl_csv *csv = fl_csv_open(b.csv_path,
                              "device,date,n,unfused_us,fused_us,speedup,unfused_gbs,"
                              "fused_gbs,ceiling_gbs,fused_pct_of_ceiling");
    if (!csv) return 1;
    fprintf(stderr, "%12s %12s %12s %8s %10s %10s %7s\n", "n", "unfused_us", "fused_us",
            "speedup", "unf_GB/s", "fused_GB/s", "%ceil");
    int failures = 0;
    /* the headline row of the summary: n = 2^26, or the largest n that fit */
    size_t headline_n = max_n < ((size_t)1 << 26) ? max_n : ((size_t)1 << 26);
    fl_timing headline[2];
    for (size_t n = (size_t)1 << lo; n <= max_n; n <<= 1) {
        un.n = fu.n = n;
        fl_variant v[2] = {
            {.name = "unfused", .run = run_unfused, .ctx = &un,
             .bytes = ELEMENTWISE_UNFUSED_BYTES(n), .flops = 3.0 * n,
             .prepare = poison_y, .check = recheck},
            {.name = "fused", .run = run_fused, .ctx = &fu,
             .bytes = ELEMENTWISE_FUSED_BYTES(n), .flops = 3.0 * n,
             .prepare = poison_y, .check = recheck},
        };
        fl_timing_opts o = fl_timing_defaults();
        /* the copy ceiling of the fused kernel's bytes (timing.h) */
        if (fl_copy_ceiling_for(v[1].bytes, &o.ceiling_gbs) != cudaSuccess) return 1;
        o.samples = b.quick ? 5 : 30;
        fl_timing t[2];
        if (fl_time_variants(v, 2, &o, t) != cudaSuccess) return 1;
        for (int k = 0; k < 2; ++k)
            if (t[k].check_ok == 0) {
                fprintf(stderr, "%s n=%zu WRONG after timing: %s\n", t[k].name, n, t[k].check_msg);
                failures++;
            }
        double speedup = t[0].us.median / t[1].us.median;
        fl_csv_row(csv, "%s,%s,%zu,%.3f,%.3f,%.3f,%.1f,%.1f,%.1f,%.1f", b.device_field, b.date,
                   n, t[0].us.median, t[1].us.median, speedup, t[0].gbs, t[1].gbs,
                   o.ceiling_gbs, t[1].pct_of_ceiling);
        fprintf(stderr, "%12zu %12.2f %12.2f %7.2fx %10.0f %10.0f %6.0f%%\n", n,
                t[0].us.median, t[1].us.median, speedup, t[0].gbs, t[1].gbs,
                t[1].pct_of_ceiling);
        if (n == headline_n) {
            headline[0] = t[0];
            headline[1] = t[1];
        }
    }
    if (fl_csv_close(csv) != 0) return 1;
    int log2n = 0;
    while (((size_t)1 << log2n) < headline_n) log2n++;
    char size[32];
    snprintf(size, sizeof size, "n=2^%d", log2n);
    if (fl_bench_summary(&b, "01-vector-add", size, &headline[0], &headline[1]) != 0) return 1;
    for (int i = 0; i < 7; ++i) (void)cudaFree(dev[i]);
    for (int i = 0; i < 3; ++i) free(h[i]);
    free(want);
    free(got);
    return failures ? 1 : 0;
}
