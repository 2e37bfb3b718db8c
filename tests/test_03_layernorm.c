/* tests/test_03_layernorm.c — lesson 03: LayerNorm forward and backward.
 *
 * Built twice: against lessons/03-layernorm/layernorm_fused.cu (the
 * student's file; `./lab check 03`) and against solutions/03-layernorm
 * (`./lab test`).
 *
 *   A_forward::correct     layernorm_fwd_fused: y, mean and rstd against a
 *                          double-precision CPU reference, at 1 x 1, 3 x 17,
 *                          8192 x 512, 12288 x 768, 1151 x 8192, 4096 x 4096
 *                          and 64 x 16384 (the widest row)
 *   A_forward::eps         eps = 1e-3, 0.37 and 4 (every other case uses
 *                          1e-5), at 67 x 1024, 29 x 333, 23 x 2002,
 *                          21 x 1025 and 13 x 2049
 *   A_forward::large_mean  rows with a large mean and a small spread (|mean|
 *                          64 to 4000, std 0.02 to 2: mean/std 1000 to 5000),
 *                          at 64 x 4096, 41 x 999, 4 x 16384, 33 x 3000
 *                          and 31 x 1500
 *   A_forward::limits      rows = 0 is a no-op (cudaSuccess, nothing
 *                          written); cols = 16385 and 16388 (past
 *                          LAYERNORM_MAX_COLS) are refused with
 *                          cudaErrorInvalidValue and nothing written;
 *                          5 x 16383 (just under, no float4) and
 *                          1048579 x 3 (more row blocks than a grid's y or z
 *                          dimension holds) are right
 *   A_forward::stream      all the launcher's work goes on the stream it is
 *                          given (fl_test_stream_honoured): checked while the
 *                          legacy default stream is held busy
 *   A_forward::misaligned  every pointer, then x, weight, bias and y alone,
 *                          offset by one float (4-byte but not 16-byte
 *                          aligned) at 67 x 1024, and every pointer at
 *                          19 x 2048 and 3 x 16384
 *   A_forward::huge        1048579 x 4096 (more than 2^32 elements; 2^19 + 3
 *                          rows, more than 2^31, when the GPU lacks the
 *                          memory; skipped when it lacks even that), inputs
 *                          made on the GPU, 16 sampled rows checked, among
 *                          them the first, the last and those around element
 *                          2^31 and 2^32; every mean and rstd checked for
 *                          being written and in range
 *   B_backward::*          the same for layernorm_bwd_fused (deterministic)
 *                          and layernorm_bwd_fused_atomic: correct, eps (the
 *                          mean and rstd it is given come from a forward with
 *                          that eps), large_mean, limits, stream, misaligned
 *                          (every pointer, then dy, x, weight and dx alone),
 *                          huge (12 GiB per array past 2^32: 48 GiB in all);
 *                          atomic (the atomic version on every shape of
 *                          correct), bitwise_reproducible (the deterministic
 *                          one twice: the same bits)
 *   baseline::*            the unfused baseline (complete; if it fails, the
 *                          course is broken, not your kernel)
 *   speed::*               fused vs unfused at 4096 x 4096, forward and
 *                          backward
 *
 * Inputs: x ~ normal(mean -2.3, std 0.5), a mean far from 0 with a small
 * spread, and one row of constants (-2.25) in every shape: its variance is
 * exactly 0, so rstd = 1/sqrt(eps) and y = bias. -2.25 has few mantissa
 * bits, so every order of summation gives the row's sum exactly. weight ~
 * normal(1, 0.25), bias ~ normal(0, 0.5), dy ~ normal(0, 1). The backward's
 * mean and rstd inputs are the reference's, rounded to float, so Part B is
 * tested on its own, whatever Part A does.
 *
 * Every output starts as NaN (the poison), so an element never written is
 * reported as such; after every call the guard zone behind each output (and
 * behind the scratch) must be intact and the inputs' checksums unchanged.
 *
 * Speed: before every run, warm-ups included, the inputs are drawn afresh on
 * the GPU from a new key (fl_test_fresh_key: unpredictable, never the same
 * twice) and the outputs poisoned; after every run (untimed) 16 rows, drawn
 * after the run, are checked against a CPU reference computed from the key,
 * every mean and rstd for being in range, every dweight and dbias for being
 * in range and 8 columns of them (sums over all rows) exactly. The full
 * 4096 x 4096 outputs are checked by the correct cases.
 *
 * Tolerances, |got - want| <= atol + rtol * |want| (tests/thresholds.h):
 *   y, mean, rstd  1e-5 + 1e-5 |want|. A float kernel's error is a few
 *                  roundings of values ~3 times rstd (~2): ~1e-6. (Summing a
 *                  row of 8192 one element after another in a single float
 *                  does NOT pass: the running sum reaches ~2e4 and each
 *                  addition rounds at ~1e-3; sum a few dozen elements per
 *                  thread and then across threads.)
 *   y, besides     16 units in the last place of |mean|, times rstd |w|
 *                  (L03_Y_MEAN_ULPS): y = (x - mean) * rstd * w + b carries
 *                  the error of the float mean, amplified by rstd |w|. A
 *                  parallel sum of same-sign values (the large-mean rows) is
 *                  off by up to ~2 units of |mean|, Welford's by ~3,
 *                  y = x * (rstd w) + (b - mean rstd w) by ~5 (simulated in
 *                  float on these rows); mean * (1/cols) can miss -2.25 by one
 *                  unit, which the flat row's rstd = 316 turns into 8e-5 |w|.
 *                  E[x^2] - mean^2 is off by ~5000 units on the large-mean
 *                  rows (NaN or 316x on the flat one): caught by 300x.
 *   rstd, besides  2 units of |mean| times rstd, relative (L03_RSTD_MEAN_ULPS):
 *                  Welford's update mean += (x - mean) / k rounds the mean at
 *                  each step, and each rounding (half a unit of |mean|) enters
 *                  the sum of squares to first order, against a deviation of
 *                  1/rstd: var is off by up to ~2 u |mean| rstd of itself, rstd
 *                  by half that. A float Welford is off by ~0.06 units on the
 *                  large-mean rows (measured on an H200); two passes by far
 *                  less (second order). E[x^2] - mean^2 is off by ~|mean| rstd
 *                  / 2 units, 500 to 2500 on those rows.
 *   dx             1e-4 + 1e-5 |want|. The row of constants has rstd = 316,
 *                  and dx = rstd * (g - mean(g) - ...) multiplies every
 *                  rounding of g = dy * w by 316: ~3e-5 where g - mean(g)
 *                  cancels. Elsewhere the error is ~1e-6.
 *   dweight, dbias 1e-6 * rows + 1e-5 |want|. Sums over rows of terms ~1:
 *                  one float adding every row in turn is off by ~1e-7 per
 *                  row (measured on these inputs: 1.2e-3 at 12288 rows);
 *                  per-block partial sums do ~5x better. The bound is ~8x
 *                  the former; a missing or doubled row is off by ~1.
 */
#include "fl_test.h"
#include "thresholds.h"
#include "data.h"
#include "layernorm.h"
#include "layernorm_reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(A_forward, .timeout = 120);
TestSuite(B_backward, .timeout = 120);
TestSuite(baseline, .timeout = 120);
TestSuite(speed, .timeout = 300);

typedef struct {
    size_t rows, cols;
} shape03;

/* the shapes, plus the widest row the lesson supports (16384: the
 * largest shared-memory request of the backward) */
static shape03 kShapes[] = {
    {1, 1}, {3, 17}, {8192, 512}, {12288, 768}, {1151, 8192}, {4096, 4096}, {64, 16384},
};
#define N_SHAPES (sizeof kShapes / sizeof kShapes[0])

static const float kConstant = -2.25f; /* the flat row's value */

/* The device inputs of a call, wherever they come from. The backward's mean
 * and rstd are those of a forward run with `eps`. */
typedef struct {
    size_t rows, cols;
    float eps;
    float *x, *dy, *w, *b, *mean, *rstd;
} ins03;

typedef enum { DATA_STANDARD, DATA_LARGE_MEAN } data03;

typedef struct {
    size_t rows, cols, n, flat_row;
    /* host inputs */
    float *x, *w, *b, *dy;
    float *mean_in, *rstd_in; /* reference mean and rstd rounded to float */
    /* host references (double) */
    double *y_ref, *mean_ref, *rstd_ref, *dx_ref, *dw_ref, *db_ref;
    double *y_allow;           /* per row: L03_Y_MEAN_ULPS ulp of |mean| x rstd */
    float *mag_elem, *mag_row; /* 1 on the flat row, else 0 (for diagnoses) */
    float *got;                /* host copy of an output */
    ins03 d;                   /* device inputs */
} problem03;

/* One output of a launcher and how to judge it. */
typedef struct {
    const char *name;
    float *dev;
    size_t off;        /* dev is this many floats into its allocation */
    size_t len, cols;  /* cols > 0: report (row, col) */
    const double *want;
    double atol, rtol;
    const float *magnitude; /* flat-row marker, or NULL */
    int y_like;             /* 1: y, with the mean's allowance; 2: rstd, with
                               its own (L03_RSTD_MEAN_ULPS, relative) */
} output03;

/* Inputs drawn on the GPU from keys (speed and huge cases): the reference
 * of any element is computed from its key and index alone. */
typedef struct {
    uint64_t x, dy, w, b, mean, rstd;
} keys03;

typedef struct {
    ins03 d;
    int backward;
    keys03 keys;    /* of the last draw */
    fl_inputs sums; /* checksums of what the last draw wrote */
    int armed;      /* 1 between a draw and the check of the run after it */
} fresh03;

typedef struct {
    ins03 *in;
    problem03 *p;   /* full references, or NULL */
    fresh03 *f;     /* inputs drawn from keys (sampled references), or NULL */
    keys03 keys;    /* the keys of this job's last run (fresh inputs) */
    output03 out[3]; /* forward: y, mean, rstd; backward: dx, dweight, dbias */
    float *scratch;  /* device scratch of the launcher, or NULL */
    size_t scratch_floats, scratch_off;
    fl_run_fn run;
    const char *who;
    size_t sample_rows;        /* fresh inputs: rows checked per run */
    const size_t *extra_rows;  /* ... and these (n_extra of them) */
    size_t n_extra;
    cudaStream_t readback;     /* non-zero: read outputs on this stream */
    float *pinned;             /* with readback: host buffer of the largest output */
} job03;

static const char *kFlatHint =
    "NaN/inf only in the row of constants: its variance is 0, so rstd = "
    "1/sqrt(var + eps) needs the eps, and var must never come out negative "
    "(compute it as mean((x - mean)^2), not E[x^2] - mean^2)";

/* ---- problem and references -------------------------------------------------- */

/* The references (the lesson's reference module, which the bench checks
 * against too), and y's allowance for the error of a float mean per row. */
static void reference(problem03 *p)
{
    layernorm_reference(p->x, p->w, p->b, p->dy, p->rows, p->cols, p->d.eps, p->y_ref,
                        p->mean_ref, p->rstd_ref, p->mean_in, p->rstd_in, p->dx_ref,
                        p->dw_ref, p->db_ref);
    for (size_t r = 0; r < p->rows; ++r)
        p->y_allow[r] = layernorm_y_allowance(p->mean_ref[r], p->rstd_ref[r]);
}

/* Large mean, small spread: row r is normal(mean, std) with (mean, std) from
 * this table in turn. mean/std = 1000 to 5000: E[x^2] - mean^2 loses all of
 * float's digits there, two passes and Welford lose none. (The flat row
 * stays at -2.25: at a mean of 1000 a mean one unit in the last place off,
 * as mean * (1/cols) can be, adds 4e-9 to a variance of 0 and moves rstd =
 * 1/sqrt(var + 1e-5) by 2e-4 of itself: no tolerance derived from the
 * float mean could check that row's rstd.) */
static const double kLargeMean[][2] = {
    {1000.0, 1.0}, {-1000.0, 1.0}, {4000.0, 2.0}, {-300.0, 0.3}, {2500.0, 0.5}, {-64.0, 0.02},
};
#define N_LARGE_MEAN (sizeof kLargeMean / sizeof kLargeMean[0])

static void problem_init(problem03 *p, size_t rows, size_t cols, uint64_t seed, data03 data,
                         float eps)
{
    memset(p, 0, sizeof *p);
    p->rows = rows;
    p->cols = cols;
    p->n = rows * cols;
    p->flat_row = rows / 2;
    size_t n = p->n;
    p->x = fl_test_host_alloc(n * sizeof(float));
    p->dy = fl_test_host_alloc(n * sizeof(float));
    p->w = fl_test_host_alloc(cols * sizeof(float));
    p->b = fl_test_host_alloc(cols * sizeof(float));
    p->mean_in = fl_test_host_alloc(rows * sizeof(float));
    p->rstd_in = fl_test_host_alloc(rows * sizeof(float));
    p->y_ref = fl_test_host_alloc(n * sizeof(double));
    p->dx_ref = fl_test_host_alloc(n * sizeof(double));
    p->mean_ref = fl_test_host_alloc(rows * sizeof(double));
    p->rstd_ref = fl_test_host_alloc(rows * sizeof(double));
    p->y_allow = fl_test_host_alloc(rows * sizeof(double));
    p->dw_ref = fl_test_host_alloc(cols * sizeof(double));
    p->db_ref = fl_test_host_alloc(cols * sizeof(double));
    p->mag_elem = fl_test_host_alloc(n * sizeof(float));
    p->mag_row = fl_test_host_alloc(rows * sizeof(float));
    p->got = fl_test_host_alloc(n * sizeof(float));

    if (data == DATA_LARGE_MEAN) {
        for (size_t r = 0; r < rows; ++r) {
            const double *ms = kLargeMean[r % N_LARGE_MEAN];
            fl_fill_normal(p->x + r * cols, cols, fl_seed(seed + 1) ^ (0x9E3779B97F4A7C15ull * r),
                           (float)ms[0], (float)ms[1]);
        }
    } else {
        fl_fill_normal(p->x, n, fl_seed(seed + 1), -2.3f, 0.5f);
    }
    fl_fill_normal(p->dy, n, fl_seed(seed + 2), 0.0f, 1.0f);
    fl_fill_normal(p->w, cols, fl_seed(seed + 3), 1.0f, 0.25f);
    fl_fill_normal(p->b, cols, fl_seed(seed + 4), 0.0f, 0.5f);
    for (size_t c = 0; c < cols; ++c) p->x[p->flat_row * cols + c] = kConstant;
    for (size_t i = 0; i < n; ++i) p->mag_elem[i] = i / cols == p->flat_row ? 1.0f : 0.0f;
    for (size_t r = 0; r < rows; ++r) p->mag_row[r] = r == p->flat_row ? 1.0f : 0.0f;
    p->d.rows = rows;
    p->d.cols = cols;
    p->d.eps = eps;
    reference(p);

    p->d.x = fl_test_dev_alloc(n * sizeof(float));
    p->d.dy = fl_test_dev_alloc(n * sizeof(float));
    p->d.w = fl_test_dev_alloc(cols * sizeof(float));
    p->d.b = fl_test_dev_alloc(cols * sizeof(float));
    p->d.mean = fl_test_dev_alloc(rows * sizeof(float));
    p->d.rstd = fl_test_dev_alloc(rows * sizeof(float));
    FL_ASSERT_CUDA(fl_upload_f32(p->d.x, p->x, n));
    FL_ASSERT_CUDA(fl_upload_f32(p->d.dy, p->dy, n));
    FL_ASSERT_CUDA(fl_upload_f32(p->d.w, p->w, cols));
    FL_ASSERT_CUDA(fl_upload_f32(p->d.b, p->b, cols));
    FL_ASSERT_CUDA(fl_upload_f32(p->d.mean, p->mean_in, rows));
    FL_ASSERT_CUDA(fl_upload_f32(p->d.rstd, p->rstd_in, rows));
}

static void problem_free(problem03 *p)
{
    float *dev[] = {p->d.x, p->d.dy, p->d.w, p->d.b, p->d.mean, p->d.rstd};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; ++i) (void)cudaFree(dev[i]);
    void *host[] = {p->x, p->dy, p->w, p->b, p->mean_in, p->rstd_in, p->y_ref,
                    p->dx_ref, p->mean_ref, p->rstd_ref, p->y_allow, p->dw_ref,
                    p->db_ref, p->mag_elem, p->mag_row, p->got};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; ++i) free(host[i]);
}

/* ---- jobs: a launcher's outputs, scratch, and how to check them ---------------- */

/* Device memory of `floats` floats starting `off` floats into an allocation
 * (off = 1: 4-byte but not 16-byte aligned); the guard zone follows it. */
static float *dev_alloc_at(size_t floats, size_t off)
{
    return (float *)fl_test_dev_alloc((floats + off) * sizeof(float)) + off;
}

/* Outputs (and scratch) of a forward or backward call on `in`; bit k of
 * `misalign` offsets output k by one float, bit 3 the scratch. `p` (full
 * references) may be NULL. */
static void job_init(job03 *j, ins03 *in, problem03 *p, int backward, size_t scratch_floats,
                     unsigned misalign)
{
    memset(j, 0, sizeof *j);
    j->in = in;
    j->p = p;
    const size_t R = in->rows, C = in->cols, N = R * C;
    if (backward) {
        double sum_atol = L03_DWB_ATOL_PER_ROW * (double)R;
        output03 dx = {"dx", NULL, 0, N, C, p ? p->dx_ref : NULL, L03_DX_ATOL, L03_DX_RTOL,
                       NULL, 0};
        output03 dw = {"dweight", NULL, 0, C, 0, p ? p->dw_ref : NULL, sum_atol, L03_DWB_RTOL,
                       NULL, 0};
        output03 db = {"dbias", NULL, 0, C, 0, p ? p->db_ref : NULL, sum_atol, L03_DWB_RTOL,
                       NULL, 0};
        j->out[0] = dx;
        j->out[1] = dw;
        j->out[2] = db;
    } else {
        output03 y = {"y", NULL, 0, N, C, p ? p->y_ref : NULL, L03_FWD_ATOL, L03_FWD_RTOL,
                      p ? p->mag_elem : NULL, 1};
        output03 mean = {"mean", NULL, 0, R, 0, p ? p->mean_ref : NULL, L03_FWD_ATOL,
                         L03_FWD_RTOL, NULL, 0};
        output03 rstd = {"rstd", NULL, 0, R, 0, p ? p->rstd_ref : NULL, L03_FWD_ATOL,
                         L03_FWD_RTOL, p ? p->mag_row : NULL, 2};
        j->out[0] = y;
        j->out[1] = mean;
        j->out[2] = rstd;
    }
    for (int k = 0; k < 3; ++k) {
        j->out[k].off = (misalign >> k) & 1u;
        j->out[k].dev = dev_alloc_at(j->out[k].len, j->out[k].off);
    }
    j->scratch_floats = scratch_floats;
    j->scratch_off = (misalign >> 3) & 1u;
    if (scratch_floats) j->scratch = dev_alloc_at(scratch_floats, j->scratch_off);
}

static void job_free(job03 *j)
{
    for (int k = 0; k < 3; ++k) (void)cudaFree(j->out[k].dev - j->out[k].off);
    if (j->scratch) (void)cudaFree(j->scratch - j->scratch_off);
}

/* Poison every output (and the scratch: a launcher must not rely on it). */
static cudaError_t poison_job(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    for (int k = 0; k < 3; ++k) {
        cudaError_t e = fl_poison(j->out[k].dev, j->out[k].len * sizeof(float), st);
        if (e != cudaSuccess) return e;
    }
    if (j->scratch) return fl_poison(j->scratch, j->scratch_floats * sizeof(float), st);
    return cudaSuccess;
}

/* Read n floats of an output back: on the job's own stream when it has one
 * (the stream check holds the legacy default stream busy meanwhile). */
static cudaError_t read_back(const job03 *j, float *host, const float *dev, size_t n)
{
    if (!j->readback) return fl_download_f32(host, dev, n);
    CUDA_CHECK(cudaMemcpyAsync(j->pinned, dev, n * sizeof(float), cudaMemcpyDeviceToHost,
                               j->readback));
    CUDA_CHECK(cudaStreamSynchronize(j->readback));
    memcpy(host, j->pinned, n * sizeof(float));
    return cudaSuccess;
}

/* Compare `got` (n elements, rows of `cols` when y_like is 1) with `want`.
 * For y, an element within its row's allowance for the error of a float mean
 * (allow[r] * |w[c]|) on top of atol + rtol |want| is set to the reference
 * first, so the comparison proper reports only the elements beyond it, with
 * their positions, values and diagnosis; for rstd (y_like 2, one per row)
 * the allowance is allow[r] * L03_RSTD_MEAN_ULPS / L03_Y_MEAN_ULPS * |want|. */
static fl_compare_result compare_output(const output03 *o, float *got, const double *want,
                                        size_t n, const double *allow, const float *w,
                                        const float *magnitude)
{
    if (o->y_like && allow)
        layernorm_accept_mean_error(got, want, n, o->cols, o->atol, o->rtol, o->y_like, allow, w);
    fl_compare_opts opts = fl_compare_defaults(o->name, o->atol, o->rtol);
    opts.cols = o->cols;
    opts.magnitude = magnitude;
    opts.overflow_above = 0.5;
    opts.overflow_hint = kFlatHint;
    return fl_compare_f32(got, want, n, &opts);
}

/* Compare each output with its full reference; on the first bad one, say why. */
static int check_job(void *ctx, char *msg, size_t len)
{
    job03 *j = ctx;
    problem03 *p = j->p;
    for (int k = 0; k < 3; ++k) {
        output03 *o = &j->out[k];
        if (read_back(j, p->got, o->dev, o->len) != cudaSuccess) {
            snprintf(msg, len, "could not read %s back", o->name);
            return 0;
        }
        fl_compare_result r =
            compare_output(o, p->got, o->want, o->len, p->y_allow, p->w, o->magnitude);
        if (r.n_bad) {
            snprintf(msg, len, "%s", r.message);
            return 0;
        }
    }
    snprintf(msg, len, "all outputs within tolerance");
    return 1;
}

/* 1 if none of the n floats at dev was written (all still hold the poison);
 * else 0 and a message. */
static int untouched(const float *dev, size_t n, const char *what, char *msg, size_t len)
{
    float *h = fl_test_host_alloc(n * sizeof(float));
    cudaError_t e = fl_download_f32(h, dev, n);
    size_t written = 0, first = 0;
    for (size_t i = 0; e == cudaSuccess && i < n; ++i)
        if (!fl_is_poison_f32(h[i]) && written++ == 0) first = i;
    free(h);
    if (e != cudaSuccess) {
        snprintf(msg, len, "could not read %s back: %s", what, cudaGetErrorString(e));
        return 0;
    }
    if (written == 0) return 1;
    snprintf(msg, len, "%zu of %zu elements of %s were written (the first at index %zu)",
             written, n, what, first);
    return 0;
}

/* ---- the launchers under test, as harness callbacks ---------------------------- */

static cudaError_t run_fwd_fused(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    ins03 *d = j->in;
    return layernorm_fwd_fused(d->x, d->w, d->b, j->out[0].dev, j->out[1].dev, j->out[2].dev,
                               d->rows, d->cols, d->eps, st);
}

static cudaError_t run_fwd_unfused(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    ins03 *d = j->in;
    return layernorm_fwd_unfused(d->x, d->w, d->b, j->out[0].dev, j->out[1].dev, j->out[2].dev,
                                 j->scratch, d->rows, d->cols, d->eps, st);
}

static cudaError_t run_bwd_fused(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    ins03 *d = j->in;
    return layernorm_bwd_fused(d->dy, d->x, d->w, d->mean, d->rstd, j->out[0].dev,
                               j->out[1].dev, j->out[2].dev, j->scratch, d->rows, d->cols, st);
}

static cudaError_t run_bwd_atomic(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    ins03 *d = j->in;
    return layernorm_bwd_fused_atomic(d->dy, d->x, d->w, d->mean, d->rstd, j->out[0].dev,
                                      j->out[1].dev, j->out[2].dev, d->rows, d->cols, st);
}

static cudaError_t run_bwd_unfused(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    ins03 *d = j->in;
    return layernorm_bwd_unfused(d->dy, d->x, d->w, d->mean, d->rstd, j->out[0].dev,
                                 j->out[1].dev, j->out[2].dev, j->scratch, d->rows, d->cols,
                                 st);
}

typedef struct {
    const char *label;  /* names the part in every message */
    const char *advice; /* what to look at when it fails */
    fl_run_fn run;
    int backward;
    size_t (*scratch)(size_t rows, size_t cols);
    uint64_t seed;
} part03;

static size_t no_scratch(size_t rows, size_t cols)
{
    (void)rows;
    (void)cols;
    return 0;
}
static size_t fused_bwd_scratch(size_t rows, size_t cols)
{
    (void)rows;
    return LAYERNORM_BWD_SCRATCH_FLOATS(cols);
}
static size_t unfused_fwd_scratch(size_t rows, size_t cols)
{
    return LAYERNORM_FWD_UNFUSED_SCRATCH_FLOATS(rows, cols);
}
static size_t unfused_bwd_scratch(size_t rows, size_t cols)
{
    return LAYERNORM_BWD_UNFUSED_SCRATCH_FLOATS(rows, cols);
}

static const part03 kPartA = {
    "Part A (forward), layernorm_fwd_fused",
    "TODO(A1)-(A4) in layernorm_fused.cu: one row per row of threads, mean and "
    "var reduced with ln_row_sum, y = (x - mean) * rstd * w + b",
    run_fwd_fused, 0, no_scratch, 0xA300};
static const part03 kPartB = {
    "Part B (backward, deterministic), layernorm_bwd_fused",
    "TODO(B1)-(B5) in layernorm_fused.cu: dx = rstd * (g - mean(g) - xhat * "
    "mean(g * xhat)) with g = dy * w; each block's partial dweight/dbias "
    "written to part_dw/part_db, then summed by layernorm_bwd_reduce_kernel",
    run_bwd_fused, 1, fused_bwd_scratch, 0xB300};
static const part03 kPartBAtomic = {
    "Part B (backward, atomic), layernorm_bwd_fused_atomic",
    "TODO(B1)-(B4) in layernorm_fused.cu with atomic == 1: each block adds "
    "its partial dweight/dbias into dweight/dbias with atomicAdd",
    run_bwd_atomic, 1, no_scratch, 0xB310};
static const part03 kBaseFwd = {
    "baseline, layernorm_fwd_unfused",
    "the baseline is complete as shipped: if it fails, the course is broken",
    run_fwd_unfused, 0, unfused_fwd_scratch, 0xC300};
static const part03 kBaseBwd = {
    "baseline, layernorm_bwd_unfused",
    "the baseline is complete as shipped: if it fails, the course is broken",
    run_bwd_unfused, 1, unfused_bwd_scratch, 0xC310};

/* One correctness case: a shape, its data, eps, and what to say about it. */
typedef struct {
    size_t rows, cols;
    data03 data;
    float eps;
    const char *context; /* appended to the shape in messages, or "" */
    const char *hint;    /* advice instead of the part's, or NULL */
} case03;

/* Register the inputs of a part for the checksums taken around a call. */
static void inputs_of(fl_inputs *in, const ins03 *d, int backward)
{
    memset(in, 0, sizeof *in);
    size_t n = d->rows * d->cols;
    fl_test_inputs_add(in, "x", d->x, n * sizeof(float));
    fl_test_inputs_add(in, "weight", d->w, d->cols * sizeof(float));
    if (backward) {
        fl_test_inputs_add(in, "dy", d->dy, n * sizeof(float));
        fl_test_inputs_add(in, "mean", d->mean, d->rows * sizeof(float));
        fl_test_inputs_add(in, "rstd", d->rstd, d->rows * sizeof(float));
    } else {
        fl_test_inputs_add(in, "bias", d->b, d->cols * sizeof(float));
    }
}

/* After a call: no fault, no write past an output or the scratch, inputs
 * unchanged. `who` names the call in the messages. */
static void assert_clean_call(const job03 *j, const fl_inputs *in, const char *who)
{
    FL_ASSERT_SYNC(who);
    for (int k = 0; k < 3; ++k)
        FL_ASSERT_NO_OVERRUN(j->out[k].dev + j->out[k].len, who, j->out[k].name);
    if (j->scratch) FL_ASSERT_NO_OVERRUN(j->scratch + j->scratch_floats, who, "its scratch");
    FL_ASSERT_INPUTS(in, who);
}

/* Poison the outputs, run once, compare with the CPU reference. */
static void run_case(const case03 *c, const part03 *part)
{
    fl_test_skip_if_too_large(c->rows * c->cols * sizeof(float)); /* x, before CUDA starts */
    FL_REQUIRE_GPU();
    problem03 p;
    job03 j;
    problem_init(&p, c->rows, c->cols, part->seed + 131 * c->rows + c->cols, c->data, c->eps);
    job_init(&j, &p.d, &p, part->backward, part->scratch(c->rows, c->cols), 0);
    FL_ASSERT_CUDA(poison_job(&j, 0));
    fl_inputs in;
    inputs_of(&in, &p.d, part->backward);
    char who[512];
    snprintf(who, sizeof who, "%s, %zu x %zu%s", part->label, c->rows, c->cols, c->context);
    cudaError_t e = part->run(&j, 0);
    cr_assert(e == cudaSuccess, "%s: returned %s (%s)%s [%s]", who, cudaGetErrorName(e),
              cudaGetErrorString(e), fl_test_error_hint(e), c->hint ? c->hint : part->advice);
    assert_clean_call(&j, &in, who);
    char msg[1024];
    int ok = check_job(&j, msg, sizeof msg);
    cr_assert(ok, "%s: %s [%s]", who, msg, c->hint ? c->hint : part->advice);
    job_free(&j);
    problem_free(&p);
}

static void correct_case(const shape03 *s, const part03 *part)
{
    case03 c = {s->rows, s->cols, DATA_STANDARD, LAYERNORM_EPS, "", NULL};
    run_case(&c, part);
}

FL_PARAM_TEST(A_forward, correct, shape03, s, kShapes, N_SHAPES) { correct_case(s, &kPartA); }

FL_PARAM_TEST(B_backward, correct, shape03, s, kShapes, N_SHAPES) { correct_case(s, &kPartB); }

FL_PARAM_TEST(B_backward, atomic, shape03, s, kShapes, N_SHAPES) { correct_case(s, &kPartBAtomic); }

/* ---- eps: an argument, not a constant ------------------------------------------- */

/* eps values besides the 1e-5 of every other case: a small one (the flat
 * row's rstd 31.6 instead of 316), one above the rows' variance (~0.25: every
 * rstd changes by 1.6x) and a large one. The backward has no eps of its own:
 * it is given the mean and rstd of a forward run with that eps. */
static const float kEps[] = {1e-3f, 0.37f, 4.0f};
/* 23 x 2002, 21 x 1025 and 13 x 2049: rows of 1025-4096 floats whose width is
 * no multiple of 4 (the scalar layout), the last slots of a row of threads
 * part-filled; 1025 and 2049 are the first widths past 1024 and 2048 */
static const shape03 kEpsShapes[] = {{67, 1024}, {29, 333}, {23, 2002}, {21, 1025}, {13, 2049}};

static void eps_cases(const part03 *const *parts, int nparts, const char *hint)
{
    for (size_t s = 0; s < sizeof kEpsShapes / sizeof kEpsShapes[0]; ++s)
        for (size_t e = 0; e < sizeof kEps / sizeof kEps[0]; ++e) {
            char ctx[64];
            snprintf(ctx, sizeof ctx, ", eps = %g", (double)kEps[e]);
            case03 c = {kEpsShapes[s].rows, kEpsShapes[s].cols, DATA_STANDARD, kEps[e], ctx,
                        hint};
            for (int k = 0; k < nparts; ++k) run_case(&c, parts[k]);
        }
}

FL_TEST(A_forward, eps)
{
    const part03 *parts[] = {&kPartA};
    eps_cases(parts, 1,
              "A_forward::correct passes with eps = 1e-5: use the eps argument as given, "
              "rstd = 1/sqrt(var + eps); a constant (1e-5) in its place is right for one "
              "value only");
}

FL_TEST(B_backward, eps)
{
    const part03 *parts[] = {&kPartB, &kPartBAtomic};
    eps_cases(parts, 2,
              "B_backward::correct passes with eps = 1e-5: xhat = (x - mean) * rstd with "
              "the mean and rstd arguments; here they come from a forward with this eps, "
              "and a backward that recomputes them from x (with its own eps) gets "
              "another rstd");
}

/* ---- large mean, small spread ---------------------------------------------------- */

/* 33 x 3000 and 31 x 1500: float4s, the second float4 of a row of 512 or 256
 * threads loaded by only some of them */
static const shape03 kLargeShapes[] = {{64, 4096}, {41, 999}, {4, 16384}, {33, 3000}, {31, 1500}};

static void large_mean_cases(const part03 *const *parts, int nparts, const char *hint)
{
    for (size_t s = 0; s < sizeof kLargeShapes / sizeof kLargeShapes[0]; ++s) {
        case03 c = {kLargeShapes[s].rows, kLargeShapes[s].cols, DATA_LARGE_MEAN, LAYERNORM_EPS,
                    ", rows with a large mean and a small spread (|mean| up to 4000, "
                    "std down to 0.02)",
                    hint};
        for (int k = 0; k < nparts; ++k) run_case(&c, parts[k]);
    }
}

FL_TEST(A_forward, large_mean)
{
    const part03 *parts[] = {&kPartA};
    large_mean_cases(parts, 1,
                     "the variance must be mean((x - mean)^2) (two passes over the "
                     "registers, or Welford), never E[x^2] - mean^2: with mean 1000 and "
                     "std 1 that subtracts two numbers ~1e6 that agree to 6 digits, all "
                     "a float has");
}

FL_TEST(B_backward, large_mean)
{
    const part03 *parts[] = {&kPartB, &kPartBAtomic};
    large_mean_cases(parts, 2,
                     "xhat = (x - mean) * rstd with the mean and rstd arguments; x - mean "
                     "is exact here, (x * rstd) - (mean * rstd) is not");
}

/* ---- the API's limits -------------------------------------------------------- */

/* rows = 0: cudaSuccess and nothing written (layernorm.h: a no-op). */
static void rows0_case(const part03 *part)
{
    const size_t C = 64;
    ins03 d = {0, C, LAYERNORM_EPS, NULL, NULL, NULL, NULL, NULL, NULL};
    d.x = dev_alloc_at(C, 0);
    d.dy = dev_alloc_at(C, 0);
    d.w = dev_alloc_at(C, 0);
    d.b = dev_alloc_at(C, 0);
    d.mean = dev_alloc_at(1, 0);
    d.rstd = dev_alloc_at(1, 0);
    /* outputs sized for one row: a no-op must leave all of them alone */
    ins03 one = d;
    one.rows = 1;
    job03 j;
    job_init(&j, &one, NULL, part->backward, part->scratch(1, C), 0);
    j.in = &d;
    FL_ASSERT_CUDA(poison_job(&j, 0));
    cudaError_t e = part->run(&j, 0);
    char who[256];
    snprintf(who, sizeof who, "%s, rows = 0", part->label);
    cr_assert(e == cudaSuccess,
              "%s: returned %s (%s); rows = 0 is a no-op that returns cudaSuccess "
              "(layernorm.h): return before launching (a grid of 0 blocks is an invalid "
              "launch)",
              who, cudaGetErrorName(e), cudaGetErrorString(e));
    FL_ASSERT_SYNC(who);
    char msg[512];
    for (int k = 0; k < 3; ++k)
        cr_assert(untouched(j.out[k].dev, j.out[k].len, j.out[k].name, msg, sizeof msg),
                  "%s: %s -- rows = 0 is a no-op (layernorm.h): nothing may be written, "
                  "not even zeros into dweight and dbias",
                  who, msg);
    job_free(&j);
    float *bufs[] = {d.x, d.dy, d.w, d.b, d.mean, d.rstd};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i) (void)cudaFree(bufs[i]);
}

/* cols past LAYERNORM_MAX_COLS: cudaErrorInvalidValue and nothing written. */
static void too_wide_case(const part03 *part, size_t cols)
{
    const size_t R = 3, N = R * cols;
    ins03 d = {R, cols, LAYERNORM_EPS, NULL, NULL, NULL, NULL, NULL, NULL};
    d.x = dev_alloc_at(N, 0);
    d.dy = dev_alloc_at(N, 0);
    d.w = dev_alloc_at(cols, 0);
    d.b = dev_alloc_at(cols, 0);
    d.mean = dev_alloc_at(R, 0);
    d.rstd = dev_alloc_at(R, 0);
    float *bufs[] = {d.x, d.dy, d.w, d.b, d.mean, d.rstd};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i)
        FL_ASSERT_CUDA(cudaMemset(bufs[i], 0, (i < 2 ? N : i < 4 ? cols : R) * sizeof(float)));
    job03 j;
    job_init(&j, &d, NULL, part->backward, part->scratch(R, cols), 0);
    FL_ASSERT_CUDA(poison_job(&j, 0));
    cudaError_t e = part->run(&j, 0);
    char who[256];
    snprintf(who, sizeof who, "%s, %zu x %zu (past LAYERNORM_MAX_COLS = %d)", part->label, R,
             cols, LAYERNORM_MAX_COLS);
    cr_assert(e == cudaErrorInvalidValue,
              "%s: returned %s, want cudaErrorInvalidValue: the launchers refuse rows wider "
              "than LAYERNORM_MAX_COLS (layernorm.h) before launching anything",
              who, cudaGetErrorName(e));
    FL_ASSERT_SYNC(who);
    char msg[512];
    for (int k = 0; k < 3; ++k)
        cr_assert(untouched(j.out[k].dev, j.out[k].len, j.out[k].name, msg, sizeof msg),
                  "%s: %s -- a refused call writes nothing: check cols before any work "
                  "(zeroing included)",
                  who, msg);
    job_free(&j);
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i) (void)cudaFree(bufs[i]);
}

static void limits_cases(const part03 *part)
{
    FL_REQUIRE_GPU();
    rows0_case(part);
    too_wide_case(part, LAYERNORM_MAX_COLS + 1);
    too_wide_case(part, LAYERNORM_MAX_COLS + 4);
    case03 under = {5, LAYERNORM_MAX_COLS - 1, DATA_STANDARD, LAYERNORM_EPS,
                    " (the widest row that is not a multiple of 4)", NULL};
    run_case(&under, part);
    case03 many = {((size_t)1 << 20) + 3, 3, DATA_STANDARD, LAYERNORM_EPS,
                   " (more row blocks than a grid's y or z dimension holds, 65535)",
                   "rows go on gridDim.x (up to 2^31 - 1 blocks) or a grid-stride loop, not "
                   "on gridDim.y or z (at most 65535)"};
    run_case(&many, part);
}

FL_TEST(A_forward, limits) { limits_cases(&kPartA); }

FL_TEST(B_backward, limits)
{
    limits_cases(&kPartB);
    limits_cases(&kPartBAtomic);
}

/* ---- the stream argument ----------------------------------------------------------- */

static void stream_case(const part03 *part)
{
    FL_REQUIRE_GPU();
    problem03 p;
    job03 j;
    const size_t R = 259, C = 1024;
    problem_init(&p, R, C, part->seed + 0x57, DATA_STANDARD, LAYERNORM_EPS);
    job_init(&j, &p.d, &p, part->backward, part->scratch(R, C), 0);
    FL_ASSERT_CUDA(cudaStreamCreateWithFlags(&j.readback, cudaStreamNonBlocking));
    FL_ASSERT_CUDA(cudaMallocHost((void **)&j.pinned, R * C * sizeof(float)));
    char who[256];
    snprintf(who, sizeof who, "%s, %zu x %zu", part->label, R, C);
    fl_test_stream_honoured(who, part->run, poison_job, check_job, &j);
    FL_ASSERT_SYNC(who);
    (void)cudaFreeHost(j.pinned);
    (void)cudaStreamDestroy(j.readback);
    job_free(&j);
    problem_free(&p);
}

FL_TEST(A_forward, stream) { stream_case(&kPartA); }

FL_TEST(B_backward, stream)
{
    stream_case(&kPartB);
    stream_case(&kPartBAtomic);
}

/* ---- misaligned pointers ----------------------------------------------------------- */

/* The API takes any float pointer. Offset by one float, a pointer is 4-byte
 * aligned but not 16-byte: a float4 access there faults. */
enum { MIS_X = 1, MIS_DY = 2, MIS_W = 4, MIS_B = 8, MIS_MEAN = 16, MIS_RSTD = 32 };
typedef struct {
    const char *what;
    unsigned in;  /* MIS_* */
    unsigned out; /* bit k: output k; bit 3: the scratch */
} misalign03;

static const misalign03 kMisFwd[] = {
    {"every pointer", MIS_X | MIS_W | MIS_B, 7},
    {"x alone", MIS_X, 0}, {"weight alone", MIS_W, 0}, {"bias alone", MIS_B, 0},
    {"y alone", 0, 1},
};
static const misalign03 kMisBwd[] = {
    {"every pointer", MIS_X | MIS_DY | MIS_W | MIS_MEAN | MIS_RSTD, 15},
    {"dy alone", MIS_DY, 0}, {"x alone", MIS_X, 0}, {"weight alone", MIS_W, 0},
    {"dx alone", 0, 1},
};

/* A copy of n host floats one float into a device allocation. */
static float *upload_at1(const float *h, size_t n)
{
    float *d = dev_alloc_at(n, 1);
    FL_ASSERT_CUDA(fl_upload_f32(d, h, n));
    return d;
}

static void misaligned_shape(const part03 *part, size_t R, size_t C, const misalign03 *cases,
                             size_t ncases)
{
    problem03 p;
    problem_init(&p, R, C, part->seed + 0x4D + R, DATA_STANDARD, LAYERNORM_EPS);
    ins03 off = p.d;
    off.x = upload_at1(p.x, p.n);
    off.dy = upload_at1(p.dy, p.n);
    off.w = upload_at1(p.w, C);
    off.b = upload_at1(p.b, C);
    off.mean = upload_at1(p.mean_in, R);
    off.rstd = upload_at1(p.rstd_in, R);
    for (size_t k = 0; k < ncases; ++k) {
        const misalign03 *m = &cases[k];
        ins03 d = p.d;
        if (m->in & MIS_X) d.x = off.x;
        if (m->in & MIS_DY) d.dy = off.dy;
        if (m->in & MIS_W) d.w = off.w;
        if (m->in & MIS_B) d.b = off.b;
        if (m->in & MIS_MEAN) d.mean = off.mean;
        if (m->in & MIS_RSTD) d.rstd = off.rstd;
        job03 j;
        job_init(&j, &d, &p, part->backward, part->scratch(R, C), m->out);
        FL_ASSERT_CUDA(poison_job(&j, 0));
        fl_inputs in;
        inputs_of(&in, &d, part->backward);
        char who[256];
        snprintf(who, sizeof who, "%s, %zu x %zu, %s offset by one float (not 16-byte aligned)",
                 part->label, R, C, m->what);
        cudaError_t e = part->run(&j, 0);
        cr_assert(e == cudaSuccess, "%s: returned %s (%s): the API takes any float pointer",
                  who, cudaGetErrorName(e), cudaGetErrorString(e));
        assert_clean_call(&j, &in, who);
        char msg[1024];
        cr_assert(check_job(&j, msg, sizeof msg),
                  "%s: %s [take the float4 path only when every pointer it touches is 16-byte "
                  "aligned (FL_ALIGNED16), else the scalar one]",
                  who, msg);
        job_free(&j);
    }
    float *bufs[] = {off.x, off.dy, off.w, off.b, off.mean, off.rstd};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i) (void)cudaFree(bufs[i] - 1);
    problem_free(&p);
}

FL_TEST(A_forward, misaligned)
{
    FL_REQUIRE_GPU();
    misaligned_shape(&kPartA, 67, 1024, kMisFwd, sizeof kMisFwd / sizeof kMisFwd[0]);
    misaligned_shape(&kPartA, 19, 2048, kMisFwd, 1);
    misaligned_shape(&kPartA, 3, LAYERNORM_MAX_COLS, kMisFwd, 1);
}

FL_TEST(B_backward, misaligned)
{
    FL_REQUIRE_GPU();
    const part03 *parts[] = {&kPartB, &kPartBAtomic};
    for (int k = 0; k < 2; ++k) {
        misaligned_shape(parts[k], 67, 1024, kMisBwd, sizeof kMisBwd / sizeof kMisBwd[0]);
        misaligned_shape(parts[k], 3, LAYERNORM_MAX_COLS, kMisBwd, 1);
    }
}

/* ---- inputs drawn from keys: sampled references ------------------------------------- */

/* Ranges of the drawn inputs: x has mean -2.3 and std 0.52 like the normal
 * inputs; the backward's mean and rstd are plausible statistics of such rows
 * (the backward's formula holds for any). */
#define FX_LO (-3.2f)
#define FX_HI (-1.4f)
#define FDY_LO (-1.7f)
#define FDY_HI 1.7f
#define FW_LO 0.5f
#define FW_HI 1.5f
#define FB_LO (-0.8f)
#define FB_HI 0.8f
#define FMEAN_LO (-2.4f)
#define FMEAN_HI (-2.2f)
#define FRSTD_LO 1.7f
#define FRSTD_HI 2.1f

static void fresh_init(fresh03 *f, size_t rows, size_t cols, int backward)
{
    memset(f, 0, sizeof *f);
    f->backward = backward;
    ins03 *d = &f->d;
    d->rows = rows;
    d->cols = cols;
    d->eps = LAYERNORM_EPS;
    size_t n = rows * cols;
    d->x = dev_alloc_at(n, 0);
    d->w = dev_alloc_at(cols, 0);
    if (backward) {
        d->dy = dev_alloc_at(n, 0);
        d->mean = dev_alloc_at(rows, 0);
        d->rstd = dev_alloc_at(rows, 0);
    } else {
        d->b = dev_alloc_at(cols, 0);
    }
    inputs_of(&f->sums, d, backward);
}

static void fresh_free(fresh03 *f)
{
    ins03 *d = &f->d;
    float *bufs[] = {d->x, d->w, d->dy, d->mean, d->rstd, d->b};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; ++i)
        if (bufs[i]) (void)cudaFree(bufs[i]);
}

/* New inputs from new keys, on `st`; then their checksums. */
static cudaError_t fresh_draw(fresh03 *f, cudaStream_t st)
{
    ins03 *d = &f->d;
    size_t n = d->rows * d->cols;
    keys03 k;
    memset(&k, 0, sizeof k);
    k.x = fl_test_fresh_key();
    k.w = fl_test_fresh_key();
    CUDA_CHECK(fl_fill_uniform_dev(d->x, n, k.x, FX_LO, FX_HI, st));
    CUDA_CHECK(fl_fill_uniform_dev(d->w, d->cols, k.w, FW_LO, FW_HI, st));
    if (f->backward) {
        k.dy = fl_test_fresh_key();
        k.mean = fl_test_fresh_key();
        k.rstd = fl_test_fresh_key();
        CUDA_CHECK(fl_fill_uniform_dev(d->dy, n, k.dy, FDY_LO, FDY_HI, st));
        CUDA_CHECK(fl_fill_uniform_dev(d->mean, d->rows, k.mean, FMEAN_LO, FMEAN_HI, st));
        CUDA_CHECK(fl_fill_uniform_dev(d->rstd, d->rows, k.rstd, FRSTD_LO, FRSTD_HI, st));
    } else {
        k.b = fl_test_fresh_key();
        CUDA_CHECK(fl_fill_uniform_dev(d->b, d->cols, k.b, FB_LO, FB_HI, st));
    }
    CUDA_CHECK(cudaStreamSynchronize(st));
    f->keys = k;
    CUDA_CHECK(fl_test_inputs_snapshot(&f->sums));
    f->armed = 1;
    return cudaSuccess;
}

/* Every element of an output must at least be written, finite and within
 * [lo, hi], bounds that hold for any inputs in the drawn ranges. */
static int check_range(const char *what, const float *got, size_t n, double lo, double hi,
                       char *msg, size_t len)
{
    size_t bad = 0, unwritten = 0, first = 0;
    for (size_t i = 0; i < n; ++i) {
        double g = got[i];
        if (isfinite(g) && g >= lo && g <= hi) continue;
        if (bad++ == 0) first = i;
        unwritten += fl_is_poison_f32(got[i]);
    }
    if (bad == 0) return 1;
    char gotv[64];
    if (fl_is_poison_f32(got[first])) snprintf(gotv, sizeof gotv, "nan (never written)");
    else snprintf(gotv, sizeof gotv, "%.9g", (double)got[first]);
    snprintf(msg, len,
             "%zu of %zu elements of %s wrong, first at index %zu: got %s, want a value in "
             "[%.6g, %.6g], which holds for any inputs of these ranges (%zu never written)",
             bad, n, what, first, gotv, lo, hi, unwritten);
    return 0;
}

static float *host_row(uint64_t key, size_t row, size_t cols, float lo, float hi, float *out)
{
    for (size_t c = 0; c < cols; ++c) out[c] = fl_uniform_at(key, row * cols + c, lo, hi);
    return out;
}

/* The fresh-input check of a forward job: inputs unchanged, every mean in
 * [FX_LO, FX_HI] and every rstd in [1/sqrt((FX_HI - FX_LO)^2 / 4 + eps),
 * 1/sqrt(eps)] (a row's variance is at most a quarter of its range squared),
 * and the sampled rows against the reference. */
static int check_fresh_fwd(job03 *j, const size_t *rows, size_t nrows, char *msg, size_t len)
{
    const ins03 *d = j->in;
    const size_t R = d->rows, C = d->cols;
    float *w = fl_test_host_alloc(C * sizeof(float)), *b = fl_test_host_alloc(C * sizeof(float));
    float *x = fl_test_host_alloc(C * sizeof(float)), *got = fl_test_host_alloc(C * sizeof(float));
    float *stat = fl_test_host_alloc(R * sizeof(float));
    double *y = fl_test_host_alloc(C * sizeof(double));
    fl_fill_uniform_host(w, C, j->keys.w, FW_LO, FW_HI);
    fl_fill_uniform_host(b, C, j->keys.b, FB_LO, FB_HI);
    const double eps = (double)d->eps, range = (double)FX_HI - (double)FX_LO;
    const double rstd_lo = 1.0 / sqrt(range * range / 4.0 + eps) * (1.0 - 1e-5);
    const double rstd_hi = 1.0 / sqrt(eps) * (1.0 + 1e-5);
    int ok = 1;
    if (read_back(j, stat, j->out[1].dev, R) != cudaSuccess) {
        snprintf(msg, len, "could not read mean back");
        ok = 0;
    }
    ok = ok && check_range("mean", stat, R, FX_LO - 1e-3, FX_HI + 1e-3, msg, len);
    float *rstd = fl_test_host_alloc(R * sizeof(float));
    if (ok && read_back(j, rstd, j->out[2].dev, R) != cudaSuccess) {
        snprintf(msg, len, "could not read rstd back");
        ok = 0;
    }
    ok = ok && check_range("rstd", rstd, R, rstd_lo, rstd_hi, msg, len);
    for (size_t i = 0; ok && i < nrows; ++i) {
        size_t r = rows[i];
        host_row(j->keys.x, r, C, FX_LO, FX_HI, x);
        double mu, rs;
        layernorm_ref_row_stats(x, C, eps, &mu, &rs);
        layernorm_ref_row_y(x, w, b, C, mu, rs, y);
        output03 o = j->out[0];
        o.cols = C;
        if (read_back(j, got, j->out[0].dev + r * C, C) != cudaSuccess) {
            snprintf(msg, len, "could not read y back");
            ok = 0;
            break;
        }
        double allow = layernorm_y_allowance(mu, rs);
        fl_compare_result cr = compare_output(&o, got, y, C, &allow, w, NULL);
        double stats_want[2] = {mu, rs};
        float stats_got[2] = {stat[r], rstd[r]};
        output03 so = j->out[1];
        so.cols = 0;
        fl_compare_result cm = compare_output(&so, stats_got, stats_want, 1, NULL, NULL, NULL);
        so = j->out[2];
        fl_compare_result cs = compare_output(&so, stats_got + 1, stats_want + 1, 1, &allow, NULL,
                                              NULL);
        const fl_compare_result *bad = cr.n_bad ? &cr : cm.n_bad ? &cm : cs.n_bad ? &cs : NULL;
        if (bad) {
            snprintf(msg, len, "in row %zu of %zu (one of %zu rows checked): %s", r, R, nrows,
                     bad->message);
            ok = 0;
        }
    }
    if (ok) snprintf(msg, len, "all checked outputs within tolerance");
    free(w);
    free(b);
    free(x);
    free(got);
    free(stat);
    free(rstd);
    free(y);
    return ok;
}

/* The fresh-input check of a backward job: dx of the sampled rows, every
 * dweight and dbias within the bounds any inputs of these ranges obey, and
 * `ncols` sampled columns of them (sums over every row) exactly. */
static int check_fresh_bwd(job03 *j, const size_t *rows, size_t nrows, size_t ncols, char *msg,
                           size_t len)
{
    const ins03 *d = j->in;
    const size_t R = d->rows, C = d->cols;
    float *w = fl_test_host_alloc(C * sizeof(float));
    float *x = fl_test_host_alloc(C * sizeof(float)), *dy = fl_test_host_alloc(C * sizeof(float));
    float *got = fl_test_host_alloc(C * sizeof(float));
    float *mean = fl_test_host_alloc(R * sizeof(float)), *rstd = fl_test_host_alloc(R * sizeof(float));
    double *want = fl_test_host_alloc(C * sizeof(double));
    size_t *cols = fl_test_host_alloc(ncols * sizeof(size_t));
    fl_fill_uniform_host(w, C, j->keys.w, FW_LO, FW_HI);
    fl_fill_uniform_host(mean, R, j->keys.mean, FMEAN_LO, FMEAN_HI);
    fl_fill_uniform_host(rstd, R, j->keys.rstd, FRSTD_LO, FRSTD_HI);
    int ok = 1;
    for (size_t i = 0; ok && i < nrows; ++i) {
        size_t r = rows[i];
        host_row(j->keys.x, r, C, FX_LO, FX_HI, x);
        host_row(j->keys.dy, r, C, FDY_LO, FDY_HI, dy);
        layernorm_ref_row_dx(x, dy, w, C, mean[r], rstd[r], want);
        if (read_back(j, got, j->out[0].dev + r * C, C) != cudaSuccess) {
            snprintf(msg, len, "could not read dx back");
            ok = 0;
            break;
        }
        output03 o = j->out[0];
        fl_compare_result cr = compare_output(&o, got, want, C, NULL, NULL, NULL);
        if (cr.n_bad) {
            snprintf(msg, len, "in row %zu of %zu (one of %zu rows checked): %s", r, R, nrows,
                     cr.message);
            ok = 0;
        }
    }
    /* |xhat| <= 1.0 * 2.1 (x - mean within [-1, 1]), |dy| <= 1.7 */
    const double xhat_max = 1.0 * (double)FRSTD_HI, slack = 1.0 + 1e-4;
    const double bound[2] = {slack * (double)FDY_HI * xhat_max * (double)R,
                             slack * (double)FDY_HI * (double)R};
    fl_test_sample_rows(fl_test_fresh_key(), C, ncols, cols);
    for (int k = 1; ok && k < 3; ++k) {
        output03 *o = &j->out[k];
        if (read_back(j, got, o->dev, C) != cudaSuccess) {
            snprintf(msg, len, "could not read %s back", o->name);
            ok = 0;
            break;
        }
        if (!check_range(o->name, got, C, -bound[k - 1], bound[k - 1], msg, len)) {
            ok = 0;
            break;
        }
        for (size_t i = 0; ok && i < ncols; ++i) {
            size_t c = cols[i];
            double s = 0.0;
            for (size_t r = 0; r < R; ++r) {
                double g = fl_uniform_at(j->keys.dy, r * C + c, FDY_LO, FDY_HI);
                if (k == 1) {
                    float xv = fl_uniform_at(j->keys.x, r * C + c, FX_LO, FX_HI);
                    g *= ((double)xv - mean[r]) * (double)rstd[r];
                }
                s += g;
            }
            fl_compare_result cr = compare_output(o, got + c, &s, 1, NULL, NULL, NULL);
            if (cr.n_bad) {
                snprintf(msg, len, "in column %zu (one of %zu columns checked): %s", c, ncols,
                         cr.message);
                ok = 0;
            }
        }
    }
    if (ok) snprintf(msg, len, "all checked outputs within tolerance");
    free(w);
    free(x);
    free(dy);
    free(got);
    free(mean);
    free(rstd);
    free(want);
    free(cols);
    return ok;
}

/* fl_check_fn of a job on fresh inputs: inputs unchanged since the draw
 * (once per draw), then a new sample of rows (drawn now, after the run). */
static int check_fresh(void *ctx, char *msg, size_t len)
{
    job03 *j = ctx;
    fresh03 *f = j->f;
    if (f->armed) {
        f->armed = 0;
        if (!fl_test_inputs_unchanged(&f->sums, j->who, msg, len)) return 0;
    }
    size_t n = j->sample_rows + j->n_extra;
    size_t *rows = fl_test_host_alloc(n * sizeof(size_t));
    fl_test_sample_rows(fl_test_fresh_key(), j->in->rows, j->sample_rows, rows);
    for (size_t i = 0; i < j->n_extra; ++i) rows[j->sample_rows + i] = j->extra_rows[i];
    int ok = f->backward ? check_fresh_bwd(j, rows, n, 8, msg, len)
                         : check_fresh_fwd(j, rows, n, msg, len);
    free(rows);
    return ok;
}

/* fl_run_fn before every run of a job on fresh inputs (untimed): new
 * inputs, outputs and scratch poisoned. */
static cudaError_t prepare_fresh(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    CUDA_CHECK(fresh_draw(j->f, st));
    j->keys = j->f->keys;
    return poison_job(j, st);
}

/* ---- more than 2^31 elements ------------------------------------------------------ */

#define HUGE_COLS ((size_t)4096)

/* The most rows past 2^32 elements (else past 2^31) whose buffers fit in
 * this GPU's free memory, with 1 GiB to spare; 0 when neither does. */
static size_t huge_rows(int arrays, size_t extra_bytes, double *need_gib, double *free_gib)
{
    size_t free_b = 0, total_b = 0;
    FL_ASSERT_CUDA(cudaMemGetInfo(&free_b, &total_b));
    *free_gib = (double)free_b / (double)(1u << 30);
    const size_t options[] = {((size_t)1 << 20) + 3, ((size_t)1 << 19) + 3};
    for (int k = 0; k < 2; ++k) {
        size_t need = (size_t)arrays * options[k] * HUGE_COLS * sizeof(float) + extra_bytes +
                      ((size_t)1 << 30);
        *need_gib = (double)need / (double)(1u << 30);
        if (need <= free_b) return options[k];
    }
    return 0;
}

static void huge_case(const part03 *const *parts, int nparts)
{
    /* skipped under the sanitizer (up to 16 MiB a buffer) before CUDA starts,
     * which there costs an instrumented start per tool: its smallest buffer */
    fl_test_skip_if_too_large(((size_t)1 << 31) * sizeof(float));
    FL_REQUIRE_GPU();
    const int backward = parts[0]->backward;
    double need = 0.0, avail = 0.0;
    size_t extra = backward ? LAYERNORM_BWD_SCRATCH_FLOATS(HUGE_COLS) * sizeof(float) : 0;
    size_t R = huge_rows(backward ? 3 : 2, extra, &need, &avail);
    if (R == 0)
        cr_skip_test("the case past 2^31 elements needs %.1f GiB of free GPU memory, this GPU "
                     "has %.1f GiB free",
                     need, avail);
    const size_t C = HUGE_COLS, N = R * C;
    const int past = N > ((size_t)1 << 32) ? 32 : 31;
    fresh03 f;
    fresh_init(&f, R, C, backward);
    FL_ASSERT_CUDA(fresh_draw(&f, 0));
    /* besides a random sample, the rows around elements 2^31 and 2^32 */
    const size_t at31 = ((size_t)1 << 31) / C, at32 = ((size_t)1 << 32) / C;
    size_t extra_rows[4] = {at31 - 1, at31, at32 - 1, at32};
    size_t n_extra = past == 32 ? 4 : 2;
    for (int k = 0; k < nparts; ++k) {
        const part03 *part = parts[k];
        job03 j;
        job_init(&j, &f.d, NULL, backward, part->scratch(R, C), 0);
        j.f = &f;
        j.keys = f.keys;
        j.sample_rows = 12;
        j.extra_rows = extra_rows;
        j.n_extra = n_extra;
        char who[384];
        snprintf(who, sizeof who,
                 "%s, %zu x %zu = %zu elements, more than 2^%d elements: compute row * cols "
                 "and every index in size_t, not int or unsigned",
                 part->label, R, C, N, past);
        j.who = who;
        FL_ASSERT_CUDA(poison_job(&j, 0));
        cudaError_t e = part->run(&j, 0);
        cr_assert(e == cudaSuccess, "%s: returned %s (%s)", who, cudaGetErrorName(e),
                  cudaGetErrorString(e));
        assert_clean_call(&j, &f.sums, who); /* the inputs' checksums included */
        f.armed = 0;
        char msg[1024];
        cr_assert(check_fresh(&j, msg, sizeof msg), "%s: %s", who, msg);
        job_free(&j);
    }
    fresh_free(&f);
}

Test(A_forward, huge, .timeout = 300)
{
    const part03 *parts[] = {&kPartA};
    huge_case(parts, 1);
}

Test(B_backward, huge, .timeout = 300)
{
    const part03 *parts[] = {&kPartB, &kPartBAtomic};
    huge_case(parts, 2);
}

/* ---- reproducibility, baseline ----------------------------------------------------- */

/* The deterministic backward twice on the same input, outputs poisoned in
 * between: dweight and dbias (and dx) must agree bit for bit. */
FL_PARAM_TEST(B_backward, bitwise_reproducible, shape03, s, kShapes, N_SHAPES)
{
    fl_test_skip_if_too_large(s->rows * s->cols * sizeof(float)); /* x, before CUDA starts */
    FL_REQUIRE_GPU();
    problem03 p;
    job03 j;
    problem_init(&p, s->rows, s->cols, 0xB320 + 131 * s->rows + s->cols, DATA_STANDARD,
                 LAYERNORM_EPS);
    job_init(&j, &p.d, &p, 1, fused_bwd_scratch(s->rows, s->cols), 0);
    float *first[3];
    for (int run = 0; run < 2; ++run) {
        FL_ASSERT_CUDA(poison_job(&j, 0));
        FL_ASSERT_CUDA(run_bwd_fused(&j, 0));
        FL_ASSERT_SYNC("layernorm_bwd_fused");
        if (run == 0) {
            /* two runs that both leave the poison agree too: be right first */
            char msg[1024];
            cr_assert(check_job(&j, msg, sizeof msg),
                      "%s, %zu x %zu: %s [make B_backward::correct pass first]",
                      kPartB.label, s->rows, s->cols, msg);
        }
        for (int k = 0; k < 3; ++k) {
            output03 *o = &j.out[k];
            if (run == 0) {
                first[k] = fl_test_host_alloc(o->len * sizeof(float));
                FL_ASSERT_CUDA(fl_download_f32(first[k], o->dev, o->len));
                continue;
            }
            FL_ASSERT_CUDA(fl_download_f32(p.got, o->dev, o->len));
            fl_compare_opts opts = fl_compare_defaults(o->name, 0.0, 0.0);
            opts.cols = o->cols;
            fl_compare_result r = fl_compare_runs_f32(first[k], p.got, o->len, &opts);
            cr_assert(r.n_bad == 0,
                      "Part B (backward, deterministic), layernorm_bwd_fused, %zu x %zu: %s "
                      "[the deterministic version must give the same bits in every run: "
                      "no atomicAdd on floats, and partial sums added in a fixed order]",
                      s->rows, s->cols, r.message);
        }
    }
    for (int k = 0; k < 3; ++k) free(first[k]);
    job_free(&j);
    problem_free(&p);
}

FL_PARAM_TEST(baseline, forward, shape03, s, kShapes, N_SHAPES) { correct_case(s, &kBaseFwd); }

FL_PARAM_TEST(baseline, backward, shape03, s, kShapes, N_SHAPES) { correct_case(s, &kBaseBwd); }

/* ---- speed ---------------------------------------------------------------------- */

/* Correct first (a fast wrong kernel earns nothing), then time fused and
 * unfused interleaved; each writes its own outputs. Before every run
 * (warm-up or timed) the inputs are drawn afresh and the outputs poisoned;
 * after every run outputs and inputs are checked (untimed). */
static void speed_case(const part03 *fused, const part03 *base, const char *label,
                       double fused_bytes, double base_bytes, double min_speedup)
{
    FL_REQUIRE_GPU();
    const size_t R = L03_SPEED_ROWS, C = L03_SPEED_COLS;
    fresh03 f;
    fresh_init(&f, R, C, fused->backward);
    job03 jf, jb;
    job_init(&jf, &f.d, NULL, fused->backward, fused->scratch(R, C), 0);
    job_init(&jb, &f.d, NULL, fused->backward, base->scratch(R, C), 0);
    jf.run = fused->run;
    jf.who = fused->label;
    jb.run = base->run;
    jb.who = base->label;
    jf.f = jb.f = &f;
    jf.sample_rows = jb.sample_rows = 16;
    FL_ASSERT_CUDA(prepare_fresh(&jf, 0));
    FL_ASSERT_CUDA(fused->run(&jf, 0));
    FL_ASSERT_SYNC(fused->label);
    char msg[1024];
    cr_assert(check_fresh(&jf, msg, sizeof msg), "%s, %zu x %zu: %s [%s]", fused->label, R, C,
              msg, fused->advice);

    fl_variant vb = {.name = fused->backward ? "unfused (15 kernels)" : "unfused (8 kernels)",
                     .run = jb.run, .ctx = &jb, .bytes = base_bytes,
                     .prepare = prepare_fresh, .check = check_fresh};
    fl_variant vf = {.name = "fused", .run = jf.run, .ctx = &jf, .bytes = fused_bytes,
                     .prepare = prepare_fresh, .check = check_fresh};
    fl_test_speed(label, &vb, &vf, min_speedup, L03_MIN_PCT_CEILING);
    job_free(&jf);
    job_free(&jb);
    fresh_free(&f);
}

Test(speed, forward)
{
    speed_case(&kPartA, &kBaseFwd, "forward 4096x4096",
               LAYERNORM_FWD_FUSED_BYTES(L03_SPEED_ROWS, L03_SPEED_COLS),
               LAYERNORM_FWD_UNFUSED_BYTES(L03_SPEED_ROWS, L03_SPEED_COLS), L03_FWD_MIN_SPEEDUP);
}

Test(speed, backward)
{
    speed_case(&kPartB, &kBaseBwd, "backward 4096x4096",
               LAYERNORM_BWD_FUSED_BYTES(L03_SPEED_ROWS, L03_SPEED_COLS),
               LAYERNORM_BWD_UNFUSED_BYTES(L03_SPEED_ROWS, L03_SPEED_COLS), L03_BWD_MIN_SPEEDUP);
}
