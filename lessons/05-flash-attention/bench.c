/* lessons/05-flash-attention/bench.c — sweep seq, time unfused vs fused attention, write CSV.
 *
 *   ./build/bench_05_flash_attention --csv plots/05-flash-attention.csv
 *   gnuplot -c lessons/05-flash-attention/plot.gp plots/05-flash-attention.csv plots/05-flash-attention.svg
 *
 * seq = 256 ... 65536 at head_dim 64 and 32 heads (batch x heads), no mask,
 * in float32 and in float16. Each size with the course's timing protocol,
 * unfused and fused interleaved, outputs poisoned before every sample and
 * re-checked after the loop on sampled rows against the double-precision
 * CPU reference and the bounds of tests/test_05_flash_attention.c
 * (attention_reference.h, tests/thresholds.h). Where the unfused path's S
 * and P do not fit in device memory it is reported as not run (nan in the
 * CSV) and the fused path goes on.
 * The memory columns are what each version needs on the device: Q, K, V and
 * O, plus S and P for the unfused one.
 */
#include "attention.h"
#include "attention_reference.h"
#include "bench.h"
#include "compare.h"
#include "csv.h"
#include "data.h"
#include "thresholds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BH 32
#define HEAD_DIM 64
#define N_ROWS 8 /* rows re-checked against the CPU per size */

typedef struct {
    attn_dtype dtype;
    int seq;
    void *q, *k, *v, *o;   /* device; o is this variant's output */
    void *ws;              /* unfused only */
    size_t ws_bytes;
    const int *rows;       /* N_ROWS flat rows (head * seq + query) to check */
    const double *want;    /* N_ROWS x HEAD_DIM */
    int fused;
} ctx05;

static size_t esize(attn_dtype t) { return t == ATTN_F16 ? 2 : 4; }

/* the usual 1/sqrt(head_dim): the kernels get it, the reference the same float */
static float attn_scale(void) { return 1.0f / sqrtf((float)HEAD_DIM); }

static cudaError_t run(void *p, cudaStream_t st)
{
    ctx05 *x = p;
    float scale = attn_scale();
    if (x->dtype == ATTN_F16)
        return x->fused ? attention_fused_f16(x->q, x->k, x->v, x->o, BH, x->seq, HEAD_DIM,
                                              scale, 0, st)
                        : attention_unfused_f16(x->q, x->k, x->v, x->o, BH, x->seq, HEAD_DIM,
                                                scale, 0, x->ws, x->ws_bytes, st);
    return x->fused ? attention_fused_f32(x->q, x->k, x->v, x->o, BH, x->seq, HEAD_DIM, scale, 0,
                                          st)
                    : attention_unfused_f32(x->q, x->k, x->v, x->o, BH, x->seq, HEAD_DIM, scale,
                                            0, x->ws, x->ws_bytes, st);
}

static cudaError_t poison_o(void *p, cudaStream_t st)
{
    ctx05 *x = p;
    return fl_poison(x->o, (size_t)BH * x->seq * HEAD_DIM * esize(x->dtype), st);
}

static int recheck(void *p, char *msg, size_t len)
{
    ctx05 *x = p;
    float got[N_ROWS * HEAD_DIM];
    uint16_t h[HEAD_DIM];
    for (int i = 0; i < N_ROWS; ++i) {
        size_t off = (size_t)x->rows[i] * HEAD_DIM;
        cudaError_t e;
        if (x->dtype == ATTN_F16) {
            e = cudaMemcpy(h, (const uint16_t *)x->o + off, sizeof h, cudaMemcpyDeviceToHost);
            attention_f16_to_f32(h, got + i * HEAD_DIM, HEAD_DIM);
        } else {
            e = cudaMemcpy(got + i * HEAD_DIM, (const float *)x->o + off,
                           HEAD_DIM * sizeof(float), cudaMemcpyDeviceToHost);
        }
        if (e != cudaSuccess) {
            snprintf(msg, len, "could not read the output back: %s", cudaGetErrorString(e));
            return 0;
        }
    }
    /* the tests' bounds: float32, L05_F32_ATOL + L05_F32_RTOL |ref|; float16,
     * with no error of the unfused path on these rows to scale, the fused
     * output's bound for rows checked alone (|V| <= 1 here) and the unfused
     * path's own sanity bound at unit size */
    fl_compare_opts o =
        x->dtype == ATTN_F32 ? fl_compare_defaults("O (sampled rows)", L05_F32_ATOL, L05_F32_RTOL)
        : x->fused ? fl_compare_defaults("O (sampled rows)", attention_f16_sampled_atol(1.0), 0.0)
                   : fl_compare_defaults("O (sampled rows)", L05_F16_BASELINE_ATOL, 0.0);
    o.cols = HEAD_DIM;
    fl_compare_result r = fl_compare_f32(got, x->want, N_ROWS * HEAD_DIM, &o);
    snprintf(msg, len, "%s", r.message);
    return r.n_bad == 0;
}

static double mib(double bytes) { return bytes / 1048576.0; }

int main(int argc, char **argv)
{
    fl_bench b;
    int rc = fl_bench_init(&b, argc, argv,
                           "lesson 05: attention, unfused (cuBLAS + softmax + cuBLAS) vs fused");
    if (rc) return rc < 0 ? 0 : rc;

    int lo = 256, hi = b.quick ? 1024 : 65536;
    /* Q, K, V and two outputs at the largest seq, in float32, in half the free memory */
    size_t free_b = fl_bench_free_bytes();
    while (hi > lo && 5.0 * BH * (double)hi * HEAD_DIM * 4.0 > 0.5 * (double)free_b) hi /= 2;
    size_t n_max = (size_t)BH * hi * HEAD_DIM;

    /* inputs: uniform in [-1, 1); float16 runs get the same values rounded */
    float *h32[3], *h16f[3];
    uint16_t *h16[3];
    for (int i = 0; i < 3; ++i) {
        h32[i] = malloc(n_max * sizeof(float));
        h16f[i] = malloc(n_max * sizeof(float));
        h16[i] = malloc(n_max * sizeof(uint16_t));
        if (!h32[i] || !h16f[i] || !h16[i]) {
            fprintf(stderr, "out of host memory\n");
            return 1;
        }
        fl_fill_uniform(h32[i], n_max, 0x0500 + i, -1.0f, 1.0f);
        attention_f32_to_f16(h32[i], h16[i], n_max);
        attention_f16_to_f32(h16[i], h16f[i], n_max);
    }
    /* device: q, k, v, unfused o, fused o, per precision (float32 sized) */
    void *dev[5];
    for (int i = 0; i < 5; ++i)
        if (CUDA_REPORT(cudaMalloc(&dev[i], n_max * sizeof(float))) != cudaSuccess) return 1;

    fl_csv *csv = fl_csv_open(b.csv_path,
                              "device,date,dtype,seq,batch_heads,head_dim,unfused_us,fused_us,"
                              "speedup,unfused_tflops,fused_tflops,unfused_mib,fused_mib,"
                              "device_mib");
    if (!csv) return 1;
    fprintf(stderr, "%-5s %6s %12s %12s %8s %10s %10s %11s %10s\n", "dtype", "seq", "unfused_us",
            "fused_us", "speedup", "unf_TF/s", "fused_TF/s", "unf_MiB", "fused_MiB");

    int failures = 0;
    const int headline_seq = 4096;
    fl_timing head_t[2][2];
    int have_head[2] = {0, 0};
    double *scratch = malloc((size_t)hi * sizeof(double));
    double *want = malloc((size_t)N_ROWS * HEAD_DIM * sizeof(double));
    if (!scratch || !want) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    for (int di = 0; di < 2; ++di) {
        attn_dtype dt = di ? ATTN_F16 : ATTN_F32;
        const char *dname = di ? "f16" : "f32";
        float **hin = di ? h16f : h32;
        /* this precision's inputs, once, at the largest size */
        for (int i = 0; i < 3; ++i) {
            cudaError_t e = di ? cudaMemcpy(dev[i], h16[i], n_max * 2, cudaMemcpyHostToDevice)
                               : cudaMemcpy(dev[i], h32[i], n_max * 4, cudaMemcpyHostToDevice);
            if (CUDA_REPORT(e) != cudaSuccess) return 1;
        }
        for (int seq = lo; seq <= hi; seq *= 2) {
            /* Q, K, V of shape (BH, seq, HEAD_DIM) are the first BH*seq*HEAD_DIM
             * elements of the uploaded arrays */
            int rows[N_ROWS]; /* spread over the heads, the first and the last included */
            for (int i = 0; i < N_ROWS; ++i)
                rows[i] = (int)((size_t)i * ((size_t)BH * seq - 1) / (N_ROWS - 1));
            for (int i = 0; i < N_ROWS; ++i)
                attention_reference_row(hin[0], hin[1], hin[2], seq, HEAD_DIM, 0,
                                        (double)attn_scale(), rows[i] / seq, rows[i] % seq,
                                        scratch, want + i * HEAD_DIM);

            ctx05 un = {dt, seq, dev[0], dev[1], dev[2], dev[3], NULL, 0, rows, want, 0};
            ctx05 fu = {dt, seq, dev[0], dev[1], dev[2], dev[4], NULL, 0, rows, want, 1};
            un.ws_bytes = attention_unfused_workspace_bytes(dt, BH, seq);
            int have_unfused = attention_unfused_workspace_alloc(dt, BH, seq, &un.ws) == cudaSuccess;

            double flops = ATTENTION_FLOPS(BH, seq, HEAD_DIM, 0), e = (double)esize(dt);
            fl_variant v[2] = {
                {.name = "unfused", .run = run, .ctx = &un,
                 .bytes = ATTENTION_UNFUSED_BYTES(BH, seq, HEAD_DIM, e), .flops = flops,
                 .prepare = poison_o, .check = recheck},
                {.name = "fused", .run = run, .ctx = &fu,
                 .bytes = ATTENTION_FUSED_BYTES(BH, seq, HEAD_DIM, e), .flops = flops,
                 .prepare = poison_o, .check = recheck},
            };
            fl_timing_opts o = fl_timing_defaults();
            o.ceiling_gbs = b.ceiling_gbs;
            o.samples = b.quick ? 3 : seq <= 4096 ? 20 : seq <= 8192 ? 8 : 3;
            o.warmup = seq <= 4096 ? 3 : 1;
            /* t[1] is the fused timing; t[0] the unfused one, when it ran */
            int nv = have_unfused ? 2 : 1;
            fl_timing t[2];
            memset(t, 0, sizeof t);
            if (fl_time_variants(v + 2 - nv, nv, &o, t + 2 - nv) != cudaSuccess) return 1;
            fl_timing *tf = &t[1];
            (void)cudaFree(un.ws);
            for (int k = have_unfused ? 0 : 1; k < 2; ++k)
                if (t[k].check_ok == 0) {
                    fprintf(stderr, "%s %s seq=%d WRONG after timing: %s\n", dname,
                            k ? "fused" : "unfused", seq, t[k].check_msg);
                    failures++;
                }
            double unf_mib = mib(ATTENTION_FUSED_BYTES(BH, seq, HEAD_DIM, e) +
                                 (double)un.ws_bytes);
            double fu_mib = mib(ATTENTION_FUSED_BYTES(BH, seq, HEAD_DIM, e));
            double dev_mib = mib((double)b.dev.global_mem_bytes);
            if (have_unfused) {
                double speedup = t[0].us.median / tf->us.median;
                fl_csv_row(csv, "%s,%s,%s,%d,%d,%d,%.3f,%.3f,%.3f,%.2f,%.2f,%.1f,%.1f,%.1f",
                           b.device_field, b.date, dname, seq, BH, HEAD_DIM, t[0].us.median,
                           tf->us.median, speedup, t[0].tflops, tf->tflops, unf_mib, fu_mib,
                           dev_mib);
                fprintf(stderr, "%-5s %6d %12.1f %12.1f %7.2fx %10.1f %10.1f %11.0f %10.0f\n",
                        dname, seq, t[0].us.median, tf->us.median, speedup, t[0].tflops,
                        tf->tflops, unf_mib, fu_mib);
            } else {
                fl_csv_row(csv, "%s,%s,%s,%d,%d,%d,nan,%.3f,nan,nan,%.2f,%.1f,%.1f,%.1f",
                           b.device_field, b.date, dname, seq, BH, HEAD_DIM, tf->us.median,
                           tf->tflops, unf_mib, fu_mib, dev_mib);
                fprintf(stderr, "%-5s %6d %12s %12.1f %8s %10s %10.1f %11.0f %10.0f  "
                        "(unfused: S and P do not fit)\n",
                        dname, seq, "-", tf->us.median, "-", "-", tf->tflops, unf_mib, fu_mib);
            }
            if (seq == headline_seq && have_unfused) {
                head_t[di][0] = t[0];
                head_t[di][1] = *tf;
                have_head[di] = 1;
            }
        }
    }
    if (fl_csv_close(csv) != 0) return 1;
    char size[32];
    snprintf(size, sizeof size, "seq=%d", headline_seq);
    const char *label[2] = {"05-flash-attention", "05-flash-attention-fp16"};
    for (int di = 0; di < 2; ++di) {
        if (!have_head[di]) {
            if (!b.quick)
                fprintf(stderr, "note: no summary row for %s (seq %d was not measured with both "
                                "versions)\n", label[di], headline_seq);
            continue;
        }
        if (fl_bench_summary(&b, label[di], size, &head_t[di][0], &head_t[di][1]) != 0) return 1;
    }
    for (int i = 0; i < 5; ++i) (void)cudaFree(dev[i]);
    for (int i = 0; i < 3; ++i) {
        free(h32[i]);
        free(h16f[i]);
        free(h16[i]);
    }
    free(scratch);
    free(want);
    return failures ? 1 : 0;
}
