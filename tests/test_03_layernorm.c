/* tests/test_03_layernorm.c — lesson 03: LayerNorm forward and backward.
 *
 * Built twice: against lessons/03-layernorm/layernorm_fused.cu (the
 * student's file; `./lab check 03`) and against solutions/03-layernorm
 * (`./lab test`).
 *
 *   A_forward::*    Part A, layernorm_fwd_fused: y, mean and rstd against a
 *                   double-precision CPU reference
 *   B_backward::*   Part B: dx, dweight and dbias of layernorm_bwd_fused
 *                   (deterministic) and layernorm_bwd_fused_atomic, against
 *                   the double reference; the deterministic one must give
 *                   the same bits twice
 *   baseline::*     the unfused baseline (complete; if it fails, the course
 *                   is broken, not your kernel)
 *   speed::*        fused vs unfused at 4096 x 4096, forward and backward
 *
 * Inputs: x ~ normal(mean -2.3, std 0.5), a mean far from 0 with a small
 * spread (a kernel that assumes centred data, or computes the variance as
 * E[x^2] - mean^2, loses digits here), and one row of constants (-2.25) in
 * every shape: its variance is exactly 0, so rstd = 1/sqrt(eps) and y =
 * bias. -2.25 has few mantissa bits, so every order of summation gives the
 * row's mean exactly. weight ~ normal(1, 0.25), bias ~ normal(0, 0.5),
 * dy ~ normal(0, 1).
 *
 * Tolerances, |got - want| <= atol + rtol * |want| (tests/thresholds.h):
 *   y, mean, rstd  1e-5 + 1e-5 |want|. A float kernel's error is a few
 *                  roundings of the mean (~1e-7 at |mean| = 2.3) times rstd
 *                  (~2): ~1e-6. (Summing a row of 8192 one element after
 *                  another in a single float does NOT pass: the running
 *                  sum reaches ~2e4 and each addition rounds at ~1e-3; sum
 *                  a few dozen elements per thread and then across threads.)
 *   dx             1e-4 + 1e-5 |want|. The row of constants has rstd = 316,
 *                  and dx = rstd * (g - mean(g) - ...) multiplies every
 *                  rounding of g = dy * w by 316: ~3e-5 where g - mean(g)
 *                  cancels. Elsewhere the error is ~1e-6.
 *   dweight, dbias 1e-6 * rows + 1e-5 |want|. Sums over rows of terms ~1:
 *                  one float adding every row in turn is off by ~1e-7 per
 *                  row (measured on these inputs: 1.2e-3 at 12288 rows);
 *                  per-block partial sums do ~5x better. The bound is ~8x
 *                  the former; a missing or doubled row is off by ~1.
 * The backward's mean and rstd inputs are the reference's, rounded to
 * float, so Part B is tested on its own, whatever Part A does.
 */
#include "fl_test.h"
#include "thresholds.h"
#include "data.h"
#include "layernorm.h"

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

typedef struct {
    size_t rows, cols, n, flat_row;
    /* host inputs */
    float *x, *w, *b, *dy;
    float *mean_in, *rstd_in; /* reference mean and rstd rounded to float */
    /* host references (double) */
    double *y_ref, *mean_ref, *rstd_ref, *dx_ref, *dw_ref, *db_ref;
    float *mag_elem, *mag_row; /* 1 on the flat row, else 0 (for diagnoses) */
    float *got;                /* host copy of an output */
    /* device inputs */
    float *d_x, *d_w, *d_b, *d_dy, *d_mean_in, *d_rstd_in;
} problem03;

/* One output of a launcher and how to judge it. */
typedef struct {
    const char *name;
    float *dev;
    size_t len, cols; /* cols > 0: report (row, col) */
    const double *want;
    double atol, rtol;
    const float *magnitude; /* flat-row marker, or NULL */
} output03;

typedef struct {
    problem03 *p;
    output03 out[3]; /* forward: y, mean, rstd; backward: dx, dweight, dbias */
    float *scratch;  /* device scratch of the launcher, or NULL */
    size_t scratch_floats;
    /* speed only: the launcher timed, fresh inputs for every run, and the
     * shift (rows) this job's last run saw */
    fl_run_fn run;
    fl_rotor *rotor;
    size_t shift;
    const char *who;
} job03;

static const char *kFlatHint =
    "NaN/inf only in the row of constants: its variance is 0, so rstd = "
    "1/sqrt(var + eps) needs the eps, and var must never come out negative "
    "(compute it as mean((x - mean)^2), not E[x^2] - mean^2)";

/* ---- problem and references -------------------------------------------------- */

static void reference(problem03 *p)
{
    const size_t R = p->rows, C = p->cols;
    const double eps = (double)L03_EPS;
    for (size_t c = 0; c < C; ++c) p->dw_ref[c] = p->db_ref[c] = 0.0;
    for (size_t r = 0; r < R; ++r) {
        const float *xr = p->x + r * C, *dr = p->dy + r * C;
        double s = 0.0, q = 0.0;
        for (size_t c = 0; c < C; ++c) s += xr[c];
        double mu = s / (double)C;
        for (size_t c = 0; c < C; ++c) q += (xr[c] - mu) * (xr[c] - mu);
        double rs = 1.0 / sqrt(q / (double)C + eps);
        p->mean_ref[r] = mu;
        p->rstd_ref[r] = rs;
        for (size_t c = 0; c < C; ++c)
            p->y_ref[r * C + c] = (xr[c] - mu) * rs * p->w[c] + p->b[c];

        /* backward, from the float mean and rstd the kernels are given */
        p->mean_in[r] = (float)mu;
        p->rstd_in[r] = (float)rs;
        double m = p->mean_in[r], rr = p->rstd_in[r], sg = 0.0, sgx = 0.0;
        for (size_t c = 0; c < C; ++c) {
            double xh = (xr[c] - m) * rr, g = (double)dr[c] * p->w[c];
            sg += g;
            sgx += g * xh;
            p->dw_ref[c] += (double)dr[c] * xh;
            p->db_ref[c] += dr[c];
        }
        double mg = sg / (double)C, mgx = sgx / (double)C;
        for (size_t c = 0; c < C; ++c) {
            double xh = (xr[c] - m) * rr, g = (double)dr[c] * p->w[c];
            p->dx_ref[r * C + c] = rr * (g - mg - xh * mgx);
        }
    }
}

static void problem_init(problem03 *p, size_t rows, size_t cols, uint64_t seed)
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
    p->dw_ref = fl_test_host_alloc(cols * sizeof(double));
    p->db_ref = fl_test_host_alloc(cols * sizeof(double));
    p->mag_elem = fl_test_host_alloc(n * sizeof(float));
    p->mag_row = fl_test_host_alloc(rows * sizeof(float));
    p->got = fl_test_host_alloc(n * sizeof(float));

    fl_fill_normal(p->x, n, fl_seed(seed + 1), -2.3f, 0.5f);
    fl_fill_normal(p->dy, n, fl_seed(seed + 2), 0.0f, 1.0f);
    fl_fill_normal(p->w, cols, fl_seed(seed + 3), 1.0f, 0.25f);
    fl_fill_normal(p->b, cols, fl_seed(seed + 4), 0.0f, 0.5f);
    for (size_t c = 0; c < cols; ++c) p->x[p->flat_row * cols + c] = kConstant;
    for (size_t i = 0; i < n; ++i) p->mag_elem[i] = i / cols == p->flat_row ? 1.0f : 0.0f;
    for (size_t r = 0; r < rows; ++r) p->mag_row[r] = r == p->flat_row ? 1.0f : 0.0f;
    reference(p);

    p->d_x = fl_test_dev_alloc(n * sizeof(float));
    p->d_dy = fl_test_dev_alloc(n * sizeof(float));
    p->d_w = fl_test_dev_alloc(cols * sizeof(float));
    p->d_b = fl_test_dev_alloc(cols * sizeof(float));
    p->d_mean_in = fl_test_dev_alloc(rows * sizeof(float));
    p->d_rstd_in = fl_test_dev_alloc(rows * sizeof(float));
    FL_ASSERT_CUDA(fl_upload_f32(p->d_x, p->x, n));
    FL_ASSERT_CUDA(fl_upload_f32(p->d_dy, p->dy, n));
    FL_ASSERT_CUDA(fl_upload_f32(p->d_w, p->w, cols));
    FL_ASSERT_CUDA(fl_upload_f32(p->d_b, p->b, cols));
    FL_ASSERT_CUDA(fl_upload_f32(p->d_mean_in, p->mean_in, rows));
    FL_ASSERT_CUDA(fl_upload_f32(p->d_rstd_in, p->rstd_in, rows));
}

static void problem_free(problem03 *p)
{
    float *dev[] = {p->d_x, p->d_dy, p->d_w, p->d_b, p->d_mean_in, p->d_rstd_in};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; ++i) (void)cudaFree(dev[i]);
    void *host[] = {p->x, p->dy, p->w, p->b, p->mean_in, p->rstd_in, p->y_ref,
                    p->dx_ref, p->mean_ref, p->rstd_ref, p->dw_ref, p->db_ref,
                    p->mag_elem, p->mag_row, p->got};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; ++i) free(host[i]);
}

/* ---- jobs: a launcher's outputs, scratch, and how to check them ---------------- */

static void job_forward(job03 *j, problem03 *p, size_t scratch_floats)
{
    memset(j, 0, sizeof *j);
    j->p = p;
    output03 y = {"y", NULL, p->n, p->cols, p->y_ref, L03_FWD_ATOL, L03_FWD_RTOL, p->mag_elem};
    output03 mean = {"mean", NULL, p->rows, 0, p->mean_ref, L03_FWD_ATOL, L03_FWD_RTOL, NULL};
    output03 rstd = {"rstd", NULL, p->rows, 0, p->rstd_ref, L03_FWD_ATOL, L03_FWD_RTOL,
                     p->mag_row};
    j->out[0] = y;
    j->out[1] = mean;
    j->out[2] = rstd;
    for (int k = 0; k < 3; ++k) j->out[k].dev = fl_test_dev_alloc(j->out[k].len * sizeof(float));
    j->scratch_floats = scratch_floats;
    if (scratch_floats) j->scratch = fl_test_dev_alloc(scratch_floats * sizeof(float));
}

static void job_backward(job03 *j, problem03 *p, size_t scratch_floats)
{
    memset(j, 0, sizeof *j);
    j->p = p;
    double sum_atol = L03_DWB_ATOL_PER_ROW * (double)p->rows;
    output03 dx = {"dx", NULL, p->n, p->cols, p->dx_ref, L03_DX_ATOL, L03_DX_RTOL, NULL};
    output03 dw = {"dweight", NULL, p->cols, 0, p->dw_ref, sum_atol, L03_DWB_RTOL, NULL};
    output03 db = {"dbias", NULL, p->cols, 0, p->db_ref, sum_atol, L03_DWB_RTOL, NULL};
    j->out[0] = dx;
    j->out[1] = dw;
    j->out[2] = db;
    for (int k = 0; k < 3; ++k) j->out[k].dev = fl_test_dev_alloc(j->out[k].len * sizeof(float));
    j->scratch_floats = scratch_floats;
    if (scratch_floats) j->scratch = fl_test_dev_alloc(scratch_floats * sizeof(float));
}

static void job_free(job03 *j)
{
    for (int k = 0; k < 3; ++k) (void)cudaFree(j->out[k].dev);
    if (j->scratch) (void)cudaFree(j->scratch);
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

/* Compare each output with its reference; on the first bad one, say why. */
static int check_job(void *ctx, char *msg, size_t len)
{
    job03 *j = ctx;
    if (j->rotor && !fl_test_rotor_inputs_ok(j->rotor, j->who, msg, len)) return 0;
    for (int k = 0; k < 3; ++k) {
        output03 *o = &j->out[k];
        if (fl_download_f32(j->p->got, o->dev, o->len) != cudaSuccess) {
            snprintf(msg, len, "could not read %s back", o->name);
            return 0;
        }
        /* row-wise outputs come out shifted with the inputs; dweight and
         * dbias are sums over all rows, which a shift does not change */
        int summed = strcmp(o->name, "dweight") == 0 || strcmp(o->name, "dbias") == 0;
        if (j->rotor && !summed)
            fl_unrotate_f32(j->p->got, o->len, j->shift * (o->len / j->p->rows));
        fl_compare_opts opts = fl_compare_defaults(o->name, o->atol, o->rtol);
        opts.cols = o->cols;
        opts.magnitude = o->magnitude;
        opts.overflow_above = 0.5;
        opts.overflow_hint = kFlatHint;
        fl_compare_result r = fl_compare_f32(j->p->got, o->want, o->len, &opts);
        if (r.n_bad) {
            snprintf(msg, len, "%s", r.message);
            return 0;
        }
    }
    snprintf(msg, len, "all outputs within tolerance");
    return 1;
}

/* ---- the launchers under test, as harness callbacks ---------------------------- */

static cudaError_t run_fwd_fused(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    problem03 *p = j->p;
    return layernorm_fwd_fused(p->d_x, p->d_w, p->d_b, j->out[0].dev, j->out[1].dev,
                               j->out[2].dev, p->rows, p->cols, L03_EPS, st);
}

static cudaError_t run_fwd_unfused(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    problem03 *p = j->p;
    return layernorm_fwd_unfused(p->d_x, p->d_w, p->d_b, j->out[0].dev, j->out[1].dev,
                                 j->out[2].dev, j->scratch, p->rows, p->cols, L03_EPS, st);
}

static cudaError_t run_bwd_fused(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    problem03 *p = j->p;
    return layernorm_bwd_fused(p->d_dy, p->d_x, p->d_w, p->d_mean_in, p->d_rstd_in,
                               j->out[0].dev, j->out[1].dev, j->out[2].dev, j->scratch,
                               p->rows, p->cols, st);
}

static cudaError_t run_bwd_atomic(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    problem03 *p = j->p;
    return layernorm_bwd_fused_atomic(p->d_dy, p->d_x, p->d_w, p->d_mean_in, p->d_rstd_in,
                                      j->out[0].dev, j->out[1].dev, j->out[2].dev, p->rows,
                                      p->cols, st);
}

static cudaError_t run_bwd_unfused(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    problem03 *p = j->p;
    return layernorm_bwd_unfused(p->d_dy, p->d_x, p->d_w, p->d_mean_in, p->d_rstd_in,
                                 j->out[0].dev, j->out[1].dev, j->out[2].dev, j->scratch,
                                 p->rows, p->cols, st);
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

/* Poison the outputs, run once, compare with the CPU reference. */
static void correct_case(const shape03 *s, const part03 *part)
{
    FL_REQUIRE_GPU();
    problem03 p;
    job03 j;
    problem_init(&p, s->rows, s->cols, part->seed + 131 * s->rows + s->cols);
    size_t scratch = part->scratch(s->rows, s->cols);
    if (part->backward) job_backward(&j, &p, scratch);
    else job_forward(&j, &p, scratch);
    FL_ASSERT_CUDA(poison_job(&j, 0));
    fl_inputs in = {0};
    fl_test_inputs_add(&in, "x", p.d_x, p.n * sizeof(float));
    fl_test_inputs_add(&in, "weight", p.d_w, p.cols * sizeof(float));
    if (part->backward) {
        fl_test_inputs_add(&in, "dy", p.d_dy, p.n * sizeof(float));
        fl_test_inputs_add(&in, "mean", p.d_mean_in, p.rows * sizeof(float));
        fl_test_inputs_add(&in, "rstd", p.d_rstd_in, p.rows * sizeof(float));
    } else {
        fl_test_inputs_add(&in, "bias", p.d_b, p.cols * sizeof(float));
    }
    FL_ASSERT_CUDA(part->run(&j, 0));
    FL_ASSERT_SYNC(part->label);
    for (int k = 0; k < 3; ++k)
        FL_ASSERT_NO_OVERRUN(j.out[k].dev + j.out[k].len, part->label, j.out[k].name);
    FL_ASSERT_INPUTS(&in, part->label);
    char msg[1024];
    int ok = check_job(&j, msg, sizeof msg);
    cr_assert(ok, "%s, %zu x %zu: %s [%s]", part->label, s->rows, s->cols, msg, part->advice);
    job_free(&j);
    problem_free(&p);
}

ParameterizedTestParameters(A_forward, correct)
{
    return cr_make_param_array(shape03, kShapes, N_SHAPES);
}
ParameterizedTest(shape03 *s, A_forward, correct) { correct_case(s, &kPartA); }

ParameterizedTestParameters(B_backward, correct)
{
    return cr_make_param_array(shape03, kShapes, N_SHAPES);
}
ParameterizedTest(shape03 *s, B_backward, correct) { correct_case(s, &kPartB); }

ParameterizedTestParameters(B_backward, atomic)
{
    return cr_make_param_array(shape03, kShapes, N_SHAPES);
}
ParameterizedTest(shape03 *s, B_backward, atomic) { correct_case(s, &kPartBAtomic); }

/* The deterministic backward twice on the same input, outputs poisoned in
 * between: dweight and dbias (and dx) must agree bit for bit. */
ParameterizedTestParameters(B_backward, bitwise_reproducible)
{
    return cr_make_param_array(shape03, kShapes, N_SHAPES);
}
ParameterizedTest(shape03 *s, B_backward, bitwise_reproducible)
{
    FL_REQUIRE_GPU();
    problem03 p;
    job03 j;
    problem_init(&p, s->rows, s->cols, 0xB320 + 131 * s->rows + s->cols);
    job_backward(&j, &p, fused_bwd_scratch(s->rows, s->cols));
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

ParameterizedTestParameters(baseline, forward)
{
    return cr_make_param_array(shape03, kShapes, N_SHAPES);
}
ParameterizedTest(shape03 *s, baseline, forward) { correct_case(s, &kBaseFwd); }

ParameterizedTestParameters(baseline, backward)
{
    return cr_make_param_array(shape03, kShapes, N_SHAPES);
}
ParameterizedTest(shape03 *s, baseline, backward) { correct_case(s, &kBaseBwd); }

/* ---- speed ---------------------------------------------------------------------- */

static cudaError_t timed_run(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    return j->run(j, st);
}

/* Untimed, before every run: the inputs rotated by a new number of rows, the
 * outputs (and scratch) poisoned. */
static cudaError_t prepare_run(void *ctx, cudaStream_t st)
{
    job03 *j = ctx;
    CUDA_CHECK(fl_test_rotor_next(j->rotor, st));
    j->shift = j->rotor->shift;
    return poison_job(j, st);
}

/* Correct first (a fast wrong kernel earns nothing), then time fused and
 * unfused interleaved; each writes its own outputs. Before every run
 * (warm-up or timed) the inputs rotate and the outputs are poisoned; after
 * every run outputs and inputs are checked (untimed). */
static void speed_case(const part03 *fused, const part03 *base, const char *label,
                       double fused_bytes, double base_bytes, double min_speedup)
{
    FL_REQUIRE_GPU();
    const size_t R = L03_SPEED_ROWS, C = L03_SPEED_COLS;
    problem03 p;
    problem_init(&p, R, C, 0xD300 + (uint64_t)fused->backward);
    job03 jf, jb;
    if (fused->backward) {
        job_backward(&jf, &p, fused->scratch(R, C));
        job_backward(&jb, &p, base->scratch(R, C));
    } else {
        job_forward(&jf, &p, fused->scratch(R, C));
        job_forward(&jb, &p, base->scratch(R, C));
    }
    fl_rotor rotor;
    fl_test_rotor_init(&rotor, R);
    fl_test_rotor_add(&rotor, "x", p.d_x, C * sizeof(float));
    if (fused->backward) {
        fl_test_rotor_add(&rotor, "dy", p.d_dy, C * sizeof(float));
        fl_test_rotor_add(&rotor, "mean", p.d_mean_in, sizeof(float));
        fl_test_rotor_add(&rotor, "rstd", p.d_rstd_in, sizeof(float));
    }
    jf.run = fused->run;
    jf.rotor = &rotor;
    jf.who = fused->label;
    jb.run = base->run;
    jb.rotor = &rotor;
    jb.who = base->label;
    FL_ASSERT_CUDA(prepare_run(&jf, 0));
    FL_ASSERT_CUDA(fused->run(&jf, 0));
    FL_ASSERT_SYNC(fused->label);
    char msg[1024];
    cr_assert(check_job(&jf, msg, sizeof msg), "%s, %zu x %zu: %s [%s]", fused->label, R, C,
              msg, fused->advice);

    fl_variant vb = {.name = fused->backward ? "unfused (15 kernels)" : "unfused (8 kernels)",
                     .run = timed_run, .ctx = &jb, .bytes = base_bytes,
                     .prepare = prepare_run, .check = check_job};
    fl_variant vf = {.name = "fused", .run = timed_run, .ctx = &jf, .bytes = fused_bytes,
                     .prepare = prepare_run, .check = check_job};
    fl_test_speed(label, &vb, &vf, min_speedup, L03_MIN_PCT_CEILING);
    fl_test_rotor_free(&rotor);
    job_free(&jf);
    job_free(&jb);
    problem_free(&p);
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
