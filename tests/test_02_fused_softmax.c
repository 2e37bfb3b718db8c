/* tests/test_02_fused_softmax.c — lesson 02: row-wise softmax in one kernel.
 *
 * Built twice: against lessons/02-fused-softmax/softmax_fused.cu (the
 * student's file; `./lab check 02`) and against solutions/02-fused-softmax
 * (`./lab test`).
 *
 *   A_rows::*       Part A, rows that fit on chip (up to 32768 columns) with
 *                   ordinary inputs, and two runs that must agree bit for bit
 *   B_stable::*     Part B, rows offset by +100 or -100 and rows of one
 *                   repeated value: right only with the row max subtracted
 *   C_long_rows::*  Part C, rows too long to keep on chip (online softmax)
 *   baseline::*     the unfused baseline (complete; if it fails, the course
 *                   is broken, not your kernel)
 *   speed::*        fused vs unfused at 4096 x 4096
 *
 * Every correctness case poisons the output with NaN, runs once and checks
 *   |y - ref| <= 1e-6 + 1e-5 |ref| per element against a double-precision
 *   reference (a NaN or inf never passes), then that every row sums to 1
 *   within 1e-5.
 */
#include "fl_test.h"
#include "thresholds.h"
#include "data.h"
#include "softmax.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(A_rows, .timeout = 60);
TestSuite(B_stable, .timeout = 60);
TestSuite(C_long_rows, .timeout = 60);
TestSuite(baseline, .timeout = 120);
TestSuite(speed, .timeout = 180);

/* What the rows hold. */
enum {
    PAT_PLAIN = 0, /* uniform in [-4, 4): exp never overflows, stable or not */
    PAT_OFFSET,    /* the same plus 0, +100 or -100, by row (r % 3) */
    PAT_CONSTANT   /* every element of row r equal: kConstants[r % 10] */
};

static const float kOffsets[3] = {0.0f, 100.0f, -100.0f};
static const float kConstants[10] = {0.0f,    1.0f,   -1.0f, 3.25f,   100.0f,
                                     -100.0f, 50.0f, -50.0f, 1000.0f, -1000.0f};

/* One problem: a (rows, cols) matrix, placed `offset` floats into its
 * allocations (offset 1 makes every row start misaligned for float4). */
typedef struct {
    size_t rows, cols;
    int pattern;
    size_t offset;
} shape02;

static shape02 kRowShapes[] = {
    {1, 1, PAT_PLAIN, 0},        {1, 7, PAT_PLAIN, 0},       {3, 1, PAT_PLAIN, 0},
    {1823, 781, PAT_PLAIN, 0},   {4096, 4096, PAT_PLAIN, 0}, {7, 16384, PAT_PLAIN, 0},
    {333, 1024, PAT_PLAIN, 1},   {5, 32768, PAT_PLAIN, 0},
};
static shape02 kStableShapes[] = {
    {96, 1000, PAT_OFFSET, 0}, {64, 517, PAT_CONSTANT, 0}, {12, 16384, PAT_OFFSET, 0},
};
static shape02 kLongShapes[] = {
    {2, 262144, PAT_PLAIN, 0},   {3, 40001, PAT_OFFSET, 0},
    {2, 32772, PAT_PLAIN, 0},    {10, 65536, PAT_CONSTANT, 0},
    {1, 1000003, PAT_PLAIN, 1},
};
/* The baseline runs every shape above. */
static shape02 kBaselineShapes[] = {
    {1, 1, PAT_PLAIN, 0},        {1, 7, PAT_PLAIN, 0},       {3, 1, PAT_PLAIN, 0},
    {1823, 781, PAT_PLAIN, 0},   {4096, 4096, PAT_PLAIN, 0}, {7, 16384, PAT_PLAIN, 0},
    {333, 1024, PAT_PLAIN, 1},   {5, 32768, PAT_PLAIN, 0},   {96, 1000, PAT_OFFSET, 0},
    {64, 517, PAT_CONSTANT, 0},  {12, 16384, PAT_OFFSET, 0}, {2, 262144, PAT_PLAIN, 0},
    {3, 40001, PAT_OFFSET, 0},   {2, 32772, PAT_PLAIN, 0},   {10, 65536, PAT_CONSTANT, 0},
    {1, 1000003, PAT_PLAIN, 1},
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct {
    size_t rows, cols, n;
    float *x;                 /* host input */
    float *mag;               /* per element: the max |x| of its row */
    double *want;             /* reference */
    float *got;               /* host copy of the output */
    float *dx, *dy;           /* device, already offset */
    float *d_max, *d_shifted, *d_e, *d_sum; /* baseline scratch (or NULL) */
    void *alloc[6];           /* what to cudaFree */
} problem02;

static float *dev_at(problem02 *p, int slot, size_t count, size_t offset)
{
    p->alloc[slot] = fl_test_dev_alloc((count + offset) * sizeof(float));
    return (float *)p->alloc[slot] + offset;
}

static void fill_input(problem02 *p, int pattern, uint64_t seed)
{
    fl_fill_uniform(p->x, p->n, fl_seed(seed), -4.0f, 4.0f);
    for (size_t r = 0; r < p->rows; ++r) {
        float *xr = p->x + r * p->cols;
        for (size_t j = 0; j < p->cols; ++j) {
            if (pattern == PAT_OFFSET) xr[j] += kOffsets[r % 3];
            else if (pattern == PAT_CONSTANT) xr[j] = kConstants[r % 10];
        }
    }
}

/* want = softmax(x) row by row in double; mag = the row's max |x|. */
static void reference(problem02 *p)
{
    for (size_t r = 0; r < p->rows; ++r) {
        const float *xr = p->x + r * p->cols;
        double *wr = p->want + r * p->cols;
        double m = -INFINITY, big = 0.0, d = 0.0;
        for (size_t j = 0; j < p->cols; ++j) {
            m = fmax(m, (double)xr[j]);
            big = fmax(big, fabs((double)xr[j]));
        }
        for (size_t j = 0; j < p->cols; ++j) {
            wr[j] = exp((double)xr[j] - m);
            d += wr[j];
        }
        for (size_t j = 0; j < p->cols; ++j) {
            wr[j] /= d;
            p->mag[r * p->cols + j] = (float)big;
        }
    }
}

static void problem_init(problem02 *p, const shape02 *s, uint64_t seed, int scratch)
{
    memset(p, 0, sizeof *p);
    p->rows = s->rows;
    p->cols = s->cols;
    p->n = s->rows * s->cols;
    p->x = fl_test_host_alloc(p->n * sizeof(float));
    p->mag = fl_test_host_alloc(p->n * sizeof(float));
    p->want = fl_test_host_alloc(p->n * sizeof(double));
    p->got = fl_test_host_alloc(p->n * sizeof(float));
    fill_input(p, s->pattern, seed);
    reference(p);
    p->dx = dev_at(p, 0, p->n, s->offset);
    p->dy = dev_at(p, 1, p->n, s->offset);
    if (scratch) {
        p->d_max = dev_at(p, 2, p->rows, 0);
        p->d_shifted = dev_at(p, 3, p->n, s->offset);
        p->d_e = dev_at(p, 4, p->n, s->offset);
        p->d_sum = dev_at(p, 5, p->rows, 0);
    }
    FL_ASSERT_CUDA(fl_upload_f32(p->dx, p->x, p->n));
}

static void problem_free(problem02 *p)
{
    for (int i = 0; i < 6; ++i) (void)cudaFree(p->alloc[i]);
    free(p->x); free(p->mag); free(p->want); free(p->got);
}

static fl_compare_opts compare_opts(const problem02 *p)
{
    fl_compare_opts o = fl_compare_defaults("y", L02_ATOL, L02_RTOL);
    o.cols = p->cols;
    /* NaN/inf only in rows whose inputs are large: the overflow diagnosis */
    o.magnitude = p->mag;
    o.overflow_above = L02_OVERFLOW_ABOVE;
    o.overflow_hint = "rows with large values overflow exp (exp(89) is inf in float32, and "
                      "exp(-104) is 0, so the sum is 0 and 0/0 is NaN): subtract the row max "
                      "before exp (Part B)";
    return o;
}

/* 1 if every row of p->got sums to 1 within L02_ROWSUM_TOL; else a message. */
static int row_sums_ok(const problem02 *p, char *msg, size_t len)
{
    size_t bad = 0, first = 0;
    double first_sum = 0.0;
    for (size_t r = 0; r < p->rows; ++r) {
        double s = 0.0;
        for (size_t j = 0; j < p->cols; ++j) s += (double)p->got[r * p->cols + j];
        if (!(fabs(s - 1.0) <= L02_ROWSUM_TOL)) {
            if (bad++ == 0) {
                first = r;
                first_sum = s;
            }
        }
    }
    if (bad == 0) return 1;
    snprintf(msg, len,
             "%zu of %zu rows do not sum to 1 (within %g), first row %zu sums to %.9g -- "
             "is the sum taken over the whole row, and is every element divided by it?",
             bad, p->rows, L02_ROWSUM_TOL, first, first_sum);
    return 0;
}

static const char *describe(const shape02 *s)
{
    if (s->pattern == PAT_OFFSET) return " (rows offset by 0, +100, -100)";
    if (s->pattern == PAT_CONSTANT) return " (constant rows, up to +-1000)";
    if (s->offset) return " (misaligned pointers)";
    return "";
}

/* ---- the launchers under test, as harness callbacks ----------------------- */

static cudaError_t run_fused(void *ctx, cudaStream_t st)
{
    problem02 *p = ctx;
    return softmax_fused(p->dx, p->dy, p->rows, p->cols, st);
}

static cudaError_t run_unfused(void *ctx, cudaStream_t st)
{
    problem02 *p = ctx;
    return softmax_unfused(p->dx, p->d_max, p->d_shifted, p->d_e, p->d_sum, p->dy, p->rows,
                           p->cols, st);
}

typedef struct {
    const char *name; /* launcher, for messages */
    fl_run_fn run;
    int scratch;      /* 1: allocate the baseline's scratch */
    uint64_t seed;
} part02;

static const part02 kFused = {"softmax_fused", run_fused, 0, 0xA200};
static const part02 kBaseline = {"softmax_unfused", run_unfused, 1, 0xC200};

/* Poison y, run once, compare with the CPU reference, then check row sums. */
static void correct_case(const shape02 *s, const part02 *part)
{
    FL_REQUIRE_GPU();
    problem02 p;
    problem_init(&p, s, part->seed + s->rows * 7919 + s->cols, part->scratch);
    FL_ASSERT_CUDA(fl_poison(p.dy, p.n * sizeof(float), 0));
    fl_inputs in = {0};
    fl_test_inputs_add(&in, "x", p.dx, p.n * sizeof(float));
    FL_ASSERT_CUDA(part->run(&p, 0));
    FL_ASSERT_SYNC(part->name);
    FL_ASSERT_NO_OVERRUN(p.dy + p.n, part->name, "y");
    FL_ASSERT_INPUTS(&in, part->name);
    FL_ASSERT_CUDA(fl_download_f32(p.got, p.dy, p.n));
    fl_compare_opts o = compare_opts(&p);
    fl_compare_result r = fl_compare_f32(p.got, p.want, p.n, &o);
    cr_assert(r.n_bad == 0, "%s %zux%zu%s: %s", part->name, s->rows, s->cols, describe(s),
              r.message);
    char msg[512];
    cr_assert(row_sums_ok(&p, msg, sizeof msg), "%s %zux%zu%s: %s", part->name, s->rows,
              s->cols, describe(s), msg);
    problem_free(&p);
}

/* ---- Part A ---------------------------------------------------------------- */

ParameterizedTestParameters(A_rows, correct)
{
    return cr_make_param_array(shape02, kRowShapes, COUNT(kRowShapes));
}
ParameterizedTest(shape02 *s, A_rows, correct) { correct_case(s, &kFused); }

/* The same input twice must give the same bits: a softmax has no reason to
 * vary, so a difference means a race (a missing __syncthreads between writing
 * shared memory and reading it) or an order that changes from run to run
 * (float atomics). 8 warps per row, so the block reduction is exercised. */
Test(A_rows, deterministic)
{
    FL_REQUIRE_GPU();
    const shape02 s = {1024, 6000, PAT_PLAIN, 0};
    problem02 p;
    problem_init(&p, &s, 0xA2D0, 0);
    float *dy2 = fl_test_dev_alloc(p.n * sizeof(float));
    float *got2 = fl_test_host_alloc(p.n * sizeof(float));
    FL_ASSERT_CUDA(fl_poison(p.dy, p.n * sizeof(float), 0));
    FL_ASSERT_CUDA(fl_poison(dy2, p.n * sizeof(float), 0));
    FL_ASSERT_CUDA(softmax_fused(p.dx, p.dy, p.rows, p.cols, 0));
    FL_ASSERT_CUDA(softmax_fused(p.dx, dy2, p.rows, p.cols, 0));
    FL_ASSERT_SYNC("softmax_fused");
    FL_ASSERT_CUDA(fl_download_f32(p.got, p.dy, p.n));
    FL_ASSERT_CUDA(fl_download_f32(got2, dy2, p.n));

    /* Right first: two identical wrong answers are not the point. */
    fl_compare_opts o = compare_opts(&p);
    fl_compare_result r = fl_compare_f32(p.got, p.want, p.n, &o);
    cr_assert(r.n_bad == 0, "softmax_fused 1024x6000: %s", r.message);
    fl_compare_result d = fl_compare_runs_f32(p.got, got2, p.n, &o);
    cr_assert(d.n_bad == 0, "softmax_fused 1024x6000, run twice: %s", d.message);

    (void)cudaFree(dy2);
    free(got2);
    problem_free(&p);
}

/* ---- Part B ---------------------------------------------------------------- */

ParameterizedTestParameters(B_stable, correct)
{
    return cr_make_param_array(shape02, kStableShapes, COUNT(kStableShapes));
}
ParameterizedTest(shape02 *s, B_stable, correct) { correct_case(s, &kFused); }

/* ---- Part C ---------------------------------------------------------------- */

ParameterizedTestParameters(C_long_rows, correct)
{
    return cr_make_param_array(shape02, kLongShapes, COUNT(kLongShapes));
}
ParameterizedTest(shape02 *s, C_long_rows, correct) { correct_case(s, &kFused); }

/* ---- the baseline ---------------------------------------------------------- */

ParameterizedTestParameters(baseline, correct)
{
    return cr_make_param_array(shape02, kBaselineShapes, COUNT(kBaselineShapes));
}
ParameterizedTest(shape02 *s, baseline, correct) { correct_case(s, &kBaseline); }

/* ---- speed ----------------------------------------------------------------- */

/* A timed run's context: the problem, the rotor that gives every run fresh
 * inputs (both variants read the same x) and the shift of this variant's
 * last run. */
typedef struct {
    problem02 *p;
    fl_run_fn run;
    fl_rotor *rotor;
    size_t shift;
    const char *who;
} timed02;

static cudaError_t timed_run(void *ctx, cudaStream_t st)
{
    timed02 *t = ctx;
    return t->run(t->p, st);
}

/* Untimed, before every run: x rotated by a new number of rows, y poisoned. */
static cudaError_t prepare_run(void *ctx, cudaStream_t st)
{
    timed02 *t = ctx;
    CUDA_CHECK(fl_test_rotor_next(t->rotor, st));
    t->shift = t->rotor->shift;
    return fl_poison(t->p->dy, t->p->n * sizeof(float), st);
}

static int recheck(void *ctx, char *msg, size_t len)
{
    timed02 *t = ctx;
    problem02 *p = t->p;
    if (!fl_test_rotor_inputs_ok(t->rotor, t->who, msg, len)) return 0;
    if (fl_download_f32(p->got, p->dy, p->n) != cudaSuccess) {
        snprintf(msg, len, "could not read the output back");
        return 0;
    }
    fl_unrotate_f32(p->got, p->n, t->shift * p->cols);
    fl_compare_opts o = compare_opts(p);
    fl_compare_result r = fl_compare_f32(p->got, p->want, p->n, &o);
    snprintf(msg, len, "%s", r.message);
    return r.n_bad == 0;
}

Test(speed, fused_vs_unfused)
{
    FL_REQUIRE_GPU();
    const shape02 s = {L02_SPEED_ROWS, L02_SPEED_COLS, PAT_PLAIN, 0};
    problem02 p;
    problem_init(&p, &s, 0xD200, 1);

    /* Correct first: a fast wrong kernel earns nothing. */
    fl_rotor rotor;
    fl_test_rotor_init(&rotor, p.rows);
    fl_test_rotor_add(&rotor, "x", p.dx, p.cols * sizeof(float));
    timed02 tf = {&p, run_fused, &rotor, 0, "softmax_fused"};
    FL_ASSERT_CUDA(prepare_run(&tf, 0));
    FL_ASSERT_CUDA(run_fused(&p, 0));
    FL_ASSERT_SYNC("softmax_fused");
    char msg[1024];
    cr_assert(recheck(&tf, msg, sizeof msg), "softmax_fused 4096x4096: %s", msg);

    /* Each variant writes its own output. Before every run (warm-up or
     * timed) x is rotated and y poisoned; after every run y and x are
     * checked (untimed). */
    problem02 q = p;
    q.alloc[1] = NULL;
    q.dy = fl_test_dev_alloc(p.n * sizeof(float));
    q.got = fl_test_host_alloc(p.n * sizeof(float));
    timed02 tb = {&q, run_unfused, &rotor, 0, "softmax_unfused"};

    /* Bytes each version must move: unfused 5 reads + 3 writes of the
     * matrix, fused 1 + 1 (softmax.h). ~5 flops per element either way. */
    double flops = 5.0 * (double)p.n;
    fl_variant base = {.name = "unfused (5 kernels)", .run = timed_run, .ctx = &tb,
                       .bytes = SOFTMAX_UNFUSED_BYTES(p.rows, p.cols), .flops = flops,
                       .prepare = prepare_run, .check = recheck};
    fl_variant fused = {.name = "fused", .run = timed_run, .ctx = &tf,
                        .bytes = SOFTMAX_FUSED_BYTES(p.rows, p.cols), .flops = flops,
                        .prepare = prepare_run, .check = recheck};
    fl_test_speed("4096x4096", &base, &fused, L02_MIN_SPEEDUP, L02_MIN_PCT_CEILING);
    fl_test_rotor_free(&rotor);

    (void)cudaFree(q.dy);
    free(q.got);
    problem_free(&p);
}
