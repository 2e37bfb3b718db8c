/* lessons/04-memory-traffic/bench.c — every measurement of lesson 04.
 *
 *   ./build/bench_04_memory_traffic --csv plots/04-memory-traffic.csv
 *
 * writes four tables (BASE is the --csv path without .csv):
 *   BASE.csv         every launcher of lessons 01-03: predicted bytes (your
 *                    model), DRAM bytes from the counters (where ncu can read
 *                    them), time, GB/s, GFLOP/s, arithmetic intensity, and the
 *                    two ceilings (copy GB/s, FMA GFLOP/s): the roofline
 *   BASE-stride.csv  bandwidth against the stride of the reads (1 ... 32)
 *   BASE-offset.csv  bandwidth against a misaligned start (0 ... 32 floats)
 *   BASE-blocks.csv  time against threads per block (32 ... 1024)
 * With --csv - (the default) all four go to stdout, one after the other.
 */
#include "bench.h"
#include "compare.h"
#include "counters.h"
#include "course_kernels.h"
#include "csv.h"
#include "data.h"
#include "traffic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float *in, *out;
    size_t n;
    int param;
} exp_ctx;

static cudaError_t run_stride(void *p, cudaStream_t s)
{
    exp_ctx *c = p;
    return strided_read(c->in, c->out, c->n, c->param, s);
}

static cudaError_t run_offset(void *p, cudaStream_t s)
{
    exp_ctx *c = p;
    return offset_copy(c->in, c->out, c->n, c->param, s);
}

static cudaError_t run_threads(void *p, cudaStream_t s)
{
    exp_ctx *c = p;
    return scale_threads(c->in, c->out, c->n, c->param, s);
}

static cudaError_t run_fma(void *p, cudaStream_t s)
{
    exp_ctx *c = p;
    return fma_peak(c->out, (int)c->n, 256, c->param, s);
}

typedef struct {
    const float *in;
    float *out;
    size_t rows, cols;
    int tiled;
} tr_ctx;

static cudaError_t run_transpose(void *p, cudaStream_t s)
{
    tr_ctx *c = p;
    return c->tiled ? transpose_tiled(c->in, c->out, c->rows, c->cols, s)
                    : transpose_naive(c->in, c->out, c->rows, c->cols, s);
}

static fl_csv *open_table(const fl_bench *b, const char *suffix, const char *header)
{
    if (!strcmp(b->csv_path, "-")) return fl_csv_open("-", header);
    char path[4096];
    size_t len = strlen(b->csv_path);
    if (len > 4 && !strcmp(b->csv_path + len - 4, ".csv")) len -= 4;
    snprintf(path, sizeof path, "%.*s%s.csv", (int)len, b->csv_path, suffix);
    return fl_csv_open(path, header);
}

/* Time one launcher alone (no interleaving partner) with the course protocol. */
static int time_one(const fl_bench *b, fl_variant *v, int samples, fl_timing *t)
{
    fl_timing_opts o = fl_timing_defaults();
    o.ceiling_gbs = b->ceiling_gbs;
    o.samples = samples;
    return fl_time_variants(v, 1, &o, t) == cudaSuccess ? 0 : -1;
}

static traffic_bytes model_for(const char *name, size_t rows, size_t cols)
{
    if (!strcmp(name, "elementwise_unfused")) return bytes_elementwise_unfused(rows);
    if (!strcmp(name, "elementwise_fused")) return bytes_elementwise_fused(rows);
    if (!strcmp(name, "softmax_unfused")) return bytes_softmax_unfused(rows, cols);
    if (!strcmp(name, "softmax_fused")) return bytes_softmax_fused(rows, cols);
    if (!strcmp(name, "layernorm_fwd_unfused")) return bytes_layernorm_fwd_unfused(rows, cols);
    if (!strcmp(name, "layernorm_fwd_fused")) return bytes_layernorm_fwd_fused(rows, cols);
    if (!strcmp(name, "layernorm_bwd_unfused")) return bytes_layernorm_bwd_unfused(rows, cols);
    if (!strcmp(name, "layernorm_bwd_fused")) return bytes_layernorm_bwd_fused(rows, cols);
    traffic_bytes none = {0.0, 0.0};
    return none;
}

int main(int argc, char **argv)
{
    fl_bench b;
    int rc = fl_bench_init(&b, argc, argv, "lesson 04: memory traffic, access patterns, roofline");
    if (rc) return rc < 0 ? 0 : rc;
    int samples = b.quick ? 5 : 20;

    /* one pool of device memory for the experiments: in holds 33n floats
     * (stride 32 reads 32n), out 8n (two transposed 8192^2 matrices) */
    size_t n = b.quick ? ((size_t)1 << 20) : ((size_t)1 << 24);
    float *in = NULL, *out = NULL;
    if (CUDA_REPORT(cudaMalloc((void **)&in, n * 33 * sizeof(float)))) return 1;
    if (CUDA_REPORT(cudaMalloc((void **)&out, n * 8 * sizeof(float)))) return 1;
    if (CUDA_REPORT(cudaMemset(in, 0x3f, n * 33 * sizeof(float)))) return 1;

    /* ---- C1: stride ------------------------------------------------------ */
    fl_csv *t = open_table(&b, "-stride", "device,date,stride,us,useful_gbs,ceiling_gbs");
    if (!t) return 1;
    fprintf(stderr, "\nstride  useful GB/s  (each warp's 32 reads span 32 x stride floats)\n");
    for (int s = 1; s <= 32; s = s < 4 ? s + 1 : s * 2) {
        exp_ctx c = {in, out, n, s};
        fl_variant v = {.name = "strided", .run = run_stride, .ctx = &c,
                        .bytes = 2.0 * 4.0 * (double)n};
        fl_timing tm;
        if (time_one(&b, &v, samples, &tm)) return 1;
        fl_csv_row(t, "%s,%s,%d,%.3f,%.1f,%.1f", b.device_field, b.date, s, tm.us.median,
                   tm.gbs, b.ceiling_gbs);
        fprintf(stderr, "%6d  %11.0f\n", s, tm.gbs);
    }
    if (fl_csv_close(t)) return 1;

    /* ---- C1: misaligned start --------------------------------------------- */
    t = open_table(&b, "-offset", "device,date,offset_floats,us,gbs,ceiling_gbs");
    if (!t) return 1;
    size_t n_off = 4 * n;
    fprintf(stderr, "\noffset  GB/s  (copy starting `offset` floats past a 128-byte line)\n");
    for (int off = 0; off <= 32; off += off < 8 ? 1 : 8) {
        exp_ctx c = {in, out, n_off, off};
        fl_variant v = {.name = "offset", .run = run_offset, .ctx = &c,
                        .bytes = 2.0 * 4.0 * (double)n_off};
        fl_timing tm;
        if (time_one(&b, &v, samples, &tm)) return 1;
        fl_csv_row(t, "%s,%s,%d,%.3f,%.1f,%.1f", b.device_field, b.date, off, tm.us.median,
                   tm.gbs, b.ceiling_gbs);
        fprintf(stderr, "%6d  %5.0f\n", off, tm.gbs);
    }
    if (fl_csv_close(t)) return 1;

    /* ---- C2: threads per block -------------------------------------------- */
    t = open_table(&b, "-blocks", "device,date,threads,us,gbs,ceiling_gbs");
    if (!t) return 1;
    fprintf(stderr, "\nthreads/block  us  GB/s  (out = 2 * in, one element per thread)\n");
    for (int th = 32; th <= 1024; th *= 2) {
        exp_ctx c = {in, out, n_off, th};
        fl_variant v = {.name = "scale", .run = run_threads, .ctx = &c,
                        .bytes = 2.0 * 4.0 * (double)n_off};
        fl_timing tm;
        if (time_one(&b, &v, samples, &tm)) return 1;
        fl_csv_row(t, "%s,%s,%d,%.3f,%.1f,%.1f", b.device_field, b.date, th, tm.us.median,
                   tm.gbs, b.ceiling_gbs);
        fprintf(stderr, "%13d  %8.1f  %5.0f\n", th, tm.us.median, tm.gbs);
    }
    if (fl_csv_close(t)) return 1;

    /* ---- C: transpose, naive vs tiled (the summary's headline) ------------- */
    size_t side = b.quick ? 2048 : 8192;
    tr_ctx tn = {in, out, side, side, 0}, tt = {in, out + side * side, side, side, 1};
    fl_variant tv[2] = {
        {.name = "naive transpose", .run = run_transpose, .ctx = &tn,
         .bytes = 8.0 * (double)side * (double)side},
        {.name = "tiled transpose", .run = run_transpose, .ctx = &tt,
         .bytes = 8.0 * (double)side * (double)side},
    };
    fl_timing_opts o = fl_timing_defaults();
    /* the copy ceiling of the transpose's bytes (timing.h) */
    if (fl_copy_ceiling_for(tv[1].bytes, &o.ceiling_gbs) != cudaSuccess) return 1;
    o.samples = samples;
    fl_timing tr[2];
    if (fl_time_variants(tv, 2, &o, tr) != cudaSuccess) return 1;
    fprintf(stderr, "\ntranspose %zux%zu: naive %.1f us (%.0f GB/s), tiled %.1f us (%.0f GB/s, "
            "%.0f%% of ceiling): %.2fx\n", side, side, tr[0].us.median, tr[0].gbs,
            tr[1].us.median, tr[1].gbs, tr[1].pct_of_ceiling, tr[0].us.median / tr[1].us.median);
    char label[32];
    snprintf(label, sizeof label, "%zux%zu", side, side);
    if (fl_bench_summary(&b, "04-memory-traffic", label, &tr[0], &tr[1])) return 1;

    /* ---- D: the compute ceiling -------------------------------------------- */
    int fblocks = b.dev.sm_count * 8, iters = b.quick ? 256 : 4096;
    exp_ctx fc = {NULL, out, (size_t)fblocks, iters};
    fl_variant fv = {.name = "fma", .run = run_fma, .ctx = &fc,
                     .flops = FMA_PEAK_FLOPS(fblocks, 256, iters)};
    fl_timing ft;
    if (time_one(&b, &fv, samples, &ft)) return 1;
    double peak_gflops = ft.tflops * 1e3;
    fprintf(stderr, "\nFP32 FMA ceiling: %.0f GFLOP/s (measured)\n", peak_gflops);
    cudaFree(in);
    cudaFree(out);

    /* ---- A, B, D: every launcher of lessons 01-03 --------------------------- */
    t = open_table(&b, "",
                   "device,date,kernel,lesson,version,rows,cols,pred_read_mb,pred_write_mb,"
                   "meas_read_mb,meas_write_mb,us,gbs,gflops,intensity,ceiling_gbs,peak_gflops");
    if (!t) return 1;
    fprintf(stderr, "\n%-22s %22s %22s %9s %7s %8s\n", "launcher", "predicted R/W MB",
            "DRAM counters R/W MB", "us", "GB/s", "GFLOP/s");
    int counters_ok = !b.quick;
    char why[1024] = "skipped in --quick mode";
    for (const course_kernel *k = course_kernels(); k->name; ++k) {
        /* 2^27 elements: 512 MiB per matrix, far beyond any L2 */
        size_t rows = k->two_d ? (b.quick ? 1024 : 32768) : (b.quick ? (1u << 20) : (1u << 27));
        size_t cols = k->two_d ? (b.quick ? 1024 : 4096) : 1;
        course_run *r = NULL;
        if (course_run_open(k, rows, cols, &r) != cudaSuccess) return 1;
        traffic_bytes pred = model_for(k->name, rows, cols);
        double flops = k->flops_per_element * course_run_elements(r);
        fl_variant v = {.name = k->name, .run = course_run_launch, .ctx = r,
                        .bytes = pred.read + pred.write, .flops = flops};
        fl_timing tm;
        if (time_one(&b, &v, samples, &tm)) return 1;
        course_run_close(r);
        counters_result m = {0};
        if (counters_ok) {
            int crc = counters_measure(k->name, rows, cols, &m, why, sizeof why);
            if (crc != 0) {
                counters_ok = 0;
                fprintf(stderr, "counters: %s\n", why);
            }
        }
        char mr[32] = "nan", mw[32] = "nan";
        if (counters_ok) {
            snprintf(mr, sizeof mr, "%.1f", m.read / 1e6);
            snprintf(mw, sizeof mw, "%.1f", m.write / 1e6);
        }
        double intensity = pred.read + pred.write > 0 ? flops / (pred.read + pred.write) : 0.0;
        fl_csv_row(t, "%s,%s,%s,%s,%s,%zu,%zu,%.1f,%.1f,%s,%s,%.3f,%.1f,%.1f,%.4f,%.1f,%.1f",
                   b.device_field, b.date, k->name, k->lesson, k->version, rows, cols,
                   pred.read / 1e6, pred.write / 1e6, mr, mw, tm.us.median, tm.gbs,
                   tm.tflops * 1e3, intensity, b.ceiling_gbs, peak_gflops);
        fprintf(stderr, "%-22s %10.1f / %9.1f %10s / %9s %9.1f %7.0f %8.1f\n", k->name,
                pred.read / 1e6, pred.write / 1e6, mr, mw, tm.us.median, tm.gbs, tm.tflops * 1e3);
    }
    if (!counters_ok) fprintf(stderr, "(no DRAM counters: %s)\n", why);
    return fl_csv_close(t) ? 1 : 0;
}
