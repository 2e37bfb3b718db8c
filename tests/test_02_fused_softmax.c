/* tests/test_02_fused_softmax.c — lesson 02: row-wise softmax in one kernel.
 *
 * Built twice: against lessons/02-fused-softmax/softmax_fused.cu (the
 * student's file; `./lab check 02`) and against solutions/02-fused-softmax
 * (`./lab test`).
 *
 *   A_rows::*       Part A, rows that fit on chip (up to 32768 columns):
 *     correct       1x1, 1x7, 3x1, 1823x781, 4096x4096, 7x16384, 5x32768 and a
 *                   misaligned 333x1024 and 9x5001, inputs in [-4, 4)
 *     deterministic two runs on the same input give the same bits
 *     limits        shapes past SOFTMAX_MAX_ROWS or SOFTMAX_MAX_COLS (2^31,
 *                   2^32 + 1 rows; 2^30 + 1, 2^32 + 4 columns: the last of
 *                   each is small once cut to 32 bits) are refused with an
 *                   error and write nothing; rows = 0 or cols = 0 write
 *                   nothing; then a normal call on the same buffers is right
 *     stream        queued on the stream it is given, and only there, without
 *                   waiting for the GPU (fl_test_stream_honoured)
 *     huge          1048577 x 4100, past 2^32 elements (16 GiB a matrix), when
 *                   the GPU has the memory (else 524289 x 4100, past 2^31; else
 *                   skipped, saying so), aligned and then misaligned: the
 *                   first, last and 16 drawn rows and the rows around
 *                   elements 2^31 and 2^32 checked
 *     max_rows      SOFTMAX_MAX_ROWS = 2^31 - 1 rows of 3 columns (past 2^32
 *                   elements, 24 GiB a matrix; else of 1 column, 8 GiB): 256
 *                   rows at the start, around elements 2^31 and 2^32 and at
 *                   the end, and 16 drawn rows checked
 *   B_stable::*     Part B, rows offset by +100 or -100, rows of one repeated
 *                   value (up to +-1000), and rows of four kinds, by row: a
 *                   wide spread ([-60, 60): only the row max as m keeps exp
 *                   finite), a large mean with a small spread (+1000 or
 *                   -20000, +-4), plain, and masked (-inf in all columns but
 *                   the last quarter, or but the last one)
 *   C_long_rows::*  Part C, rows too long to keep on chip (online softmax):
 *     correct       2x262144, 3x40001 (offset), 2x32772, 10x65536 (constant),
 *                   a misaligned 1x1000003 and 8x40000 of the four kinds
 *     max_cols      5 rows of SOFTMAX_MAX_COLS = 2^30 columns, past 2^32
 *                   elements (20 GiB a matrix; else 3 rows, else 1): x
 *                   repeats 65537 drawn values, so each row's max and sum
 *                   are computed exactly from them; 7 stretches of 4096
 *                   columns of every row checked
 *   baseline::*     the unfused baseline (complete; if it fails, the course
 *                   is broken, not your kernel) on every shape of correct
 *   speed::*        fused vs unfused at 4096 x 4096. Before every run,
 *                   warm-ups included, x is drawn afresh on the GPU from a new
 *                   key (fl_test_fresh_key: unpredictable, never the same
 *                   twice) and y is poisoned; after every run (untimed) 32
 *                   rows, drawn after the run, are checked against a CPU
 *                   reference computed from the key, and x's checksum. The
 *                   full 4096 x 4096 output is checked by A_rows::correct.
 *
 * Every correctness case poisons the output with NaN, runs once and checks
 *   |y - ref| <= 1e-13 + 1e-5 |ref| per element against a double-precision
 *   reference (a NaN or inf never passes; tests/thresholds.h derives the
 *   bound), then that every row sums to 1 within 1e-5 (the huge cases: every
 *   row checked; max_cols: no sums, the rows are 2^30 long), that nothing
 *   was written past the end of y and that x is unchanged.
 */
#define _POSIX_C_SOURCE 200809L
#include "fl_test.h"
#include "thresholds.h"
#include "data.h"
#include "softmax.h"
#include "softmax_reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TestSuite(A_rows, .timeout = 60);
TestSuite(B_stable, .timeout = 60);
TestSuite(C_long_rows, .timeout = 60);
TestSuite(baseline, .timeout = 120);
TestSuite(speed, .timeout = 180);

/* Plain inputs are uniform in [X_LO, X_HI). */
#define X_LO (-4.0f)
#define X_HI 4.0f

/* What the rows hold. */
enum {
    PAT_PLAIN = 0, /* uniform in [-4, 4): exp never overflows, stable or not */
    PAT_OFFSET,    /* the same plus 0, +100 or -100, by row (r % 3) */
    PAT_CONSTANT,  /* every element of row r equal: kConstants[r % 10] */
    PAT_KINDS      /* four kinds of rows, by r % 4: see enum row_kind */
};

/* PAT_KINDS: what row r holds, by r % 4. */
enum row_kind {
    KIND_WIDE = 0,  /* uniform in [-60, 60) */
    KIND_MEAN,      /* [-4, 4) plus +1000 (r / 4 even) or -20000 (odd) */
    KIND_PLAIN,     /* [-4, 4) */
    KIND_MASKED     /* [-4, 4), but -inf in every column before the last
                       quarter (r / 4 even) or before the last one (odd) */
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
    {333, 1024, PAT_PLAIN, 1},   {5, 32768, PAT_PLAIN, 0},   {9, 5001, PAT_PLAIN, 1},
};
static shape02 kStableShapes[] = {
    {96, 1000, PAT_OFFSET, 0}, {64, 517, PAT_CONSTANT, 0}, {12, 16384, PAT_OFFSET, 0},
    {128, 3000, PAT_KINDS, 0},
};
static shape02 kLongShapes[] = {
    {2, 262144, PAT_PLAIN, 0},   {3, 40001, PAT_OFFSET, 0},
    {2, 32772, PAT_PLAIN, 0},    {10, 65536, PAT_CONSTANT, 0},
    {1, 1000003, PAT_PLAIN, 1},  {8, 40000, PAT_KINDS, 0},
};
/* The baseline runs every shape above. */
static shape02 kBaselineShapes[] = {
    {1, 1, PAT_PLAIN, 0},        {1, 7, PAT_PLAIN, 0},       {3, 1, PAT_PLAIN, 0},
    {1823, 781, PAT_PLAIN, 0},   {4096, 4096, PAT_PLAIN, 0}, {7, 16384, PAT_PLAIN, 0},
    {333, 1024, PAT_PLAIN, 1},   {5, 32768, PAT_PLAIN, 0},   {9, 5001, PAT_PLAIN, 1},
    {96, 1000, PAT_OFFSET, 0},   {64, 517, PAT_CONSTANT, 0}, {12, 16384, PAT_OFFSET, 0},
    {128, 3000, PAT_KINDS, 0},   {2, 262144, PAT_PLAIN, 0},  {3, 40001, PAT_OFFSET, 0},
    {2, 32772, PAT_PLAIN, 0},    {10, 65536, PAT_CONSTANT, 0}, {1, 1000003, PAT_PLAIN, 1},
    {8, 40000, PAT_KINDS, 0},
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct {
    size_t rows, cols, n;
    float *x;                 /* host input */
    float *mag;               /* per element: the max finite |x| of its row */
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

static float kind_mean(size_t r)
{
    return (r / 4) % 2 ? -20000.0f : 1000.0f;
}

/* PAT_KINDS, KIND_MASKED: the columns before this one are -inf. */
static size_t masked_before(size_t r, size_t cols)
{
    return (r / 4) % 2 ? cols - 1 : cols - (cols / 4 > 0 ? cols / 4 : 1);
}

static void fill_input(problem02 *p, int pattern, uint64_t seed)
{
    fl_fill_uniform(p->x, p->n, fl_seed(seed), X_LO, X_HI);
    for (size_t r = 0; r < p->rows; ++r) {
        float *xr = p->x + r * p->cols;
        for (size_t j = 0; j < p->cols; ++j) {
            if (pattern == PAT_OFFSET) {
                xr[j] += kOffsets[r % 3];
            } else if (pattern == PAT_CONSTANT) {
                xr[j] = kConstants[r % 10];
            } else if (pattern == PAT_KINDS) {
                switch (r % 4) {
                case KIND_WIDE: xr[j] *= 15.0f; break;
                case KIND_MEAN: xr[j] += kind_mean(r); break;
                case KIND_MASKED:
                    if (j < masked_before(r, p->cols)) xr[j] = -INFINITY;
                    break;
                default: break;
                }
            }
        }
    }
}

/* want = softmax(x) row by row in double (the lesson's reference module,
 * which the bench checks against too); mag = the row's max finite |x|. */
static void reference(problem02 *p)
{
    softmax_reference(p->x, p->want, p->rows, p->cols);
    for (size_t r = 0; r < p->rows; ++r) {
        const float *xr = p->x + r * p->cols;
        double big = 0.0;
        for (size_t j = 0; j < p->cols; ++j)
            if (isfinite(xr[j])) big = fmax(big, fabs((double)xr[j]));
        for (size_t j = 0; j < p->cols; ++j) p->mag[r * p->cols + j] = (float)big;
    }
}

/* Device buffers only: x, y and (scratch) the baseline's scratch. */
static void problem_dev_init(problem02 *p, size_t rows, size_t cols, size_t offset, int scratch)
{
    memset(p, 0, sizeof *p);
    p->rows = rows;
    p->cols = cols;
    p->n = rows * cols;
    p->dx = dev_at(p, 0, p->n, offset);
    p->dy = dev_at(p, 1, p->n, offset);
    if (scratch) {
        p->d_max = dev_at(p, 2, p->rows, 0);
        p->d_shifted = dev_at(p, 3, p->n, offset);
        p->d_e = dev_at(p, 4, p->n, offset);
        p->d_sum = dev_at(p, 5, p->rows, 0);
    }
}

static void problem_init(problem02 *p, const shape02 *s, uint64_t seed, int scratch)
{
    problem_dev_init(p, s->rows, s->cols, s->offset, scratch);
    p->x = fl_test_host_alloc(p->n * sizeof(float));
    p->mag = fl_test_host_alloc(p->n * sizeof(float));
    p->want = fl_test_host_alloc(p->n * sizeof(double));
    p->got = fl_test_host_alloc(p->n * sizeof(float));
    fill_input(p, s->pattern, seed);
    reference(p);
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

/* 1 if every row of got sums to 1 within L02_ROWSUM_TOL; else a message.
 * Row numbers in it count from `first_row`. */
static int row_sums_ok(const float *got, size_t rows, size_t cols, size_t first_row, char *msg,
                       size_t len)
{
    size_t bad = 0, first = 0;
    double first_sum = 0.0;
    for (size_t r = 0; r < rows; ++r) {
        double s = 0.0;
        for (size_t j = 0; j < cols; ++j) s += (double)got[r * cols + j];
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
             bad, rows, L02_ROWSUM_TOL, first_row + first, first_sum);
    return 0;
}

static const char *describe(const shape02 *s)
{
    if (s->pattern == PAT_OFFSET) return " (rows offset by 0, +100, -100)";
    if (s->pattern == PAT_CONSTANT) return " (constant rows, up to +-1000)";
    if (s->pattern == PAT_KINDS)
        return " (rows of four kinds, by row % 4: spread [-60, 60); mean +1000 or -20000, "
               "spread 8; plain; masked, -inf before the last quarter or the last column)";
    if (s->offset) return " (misaligned pointers)";
    return "";
}

/* For a wrong PAT_KINDS case: what is special about the first wrong row. */
static void kind_hint(char *buf, size_t len, const shape02 *s, size_t row)
{
    buf[0] = '\0';
    if (s->pattern != PAT_KINDS) return;
    switch (row % 4) {
    case KIND_WIDE:
        snprintf(buf, len,
                 " [row %zu spans [-60, 60): exp(x - m) stays finite and keeps its precision "
                 "only with m the row's max]", row);
        break;
    case KIND_MEAN:
        snprintf(buf, len,
                 " [row %zu has mean %+.0f and a spread of 8: subtract the max from x itself; "
                 "anything of size |x| rounded before the subtraction (x * log2(e), for one) "
                 "carries an error of 2^-24 |x| into the exponent]",
                 row, (double)kind_mean(row));
        break;
    case KIND_MASKED:
        snprintf(buf, len,
                 " [row %zu is -inf (masked) in its first %zu columns: exp(-inf - m) = 0; a "
                 "running max that starts at -INFINITY makes -inf - (-inf) = NaN where a "
                 "thread sees only masked columns: start it at -FLT_MAX (README, Hint 5)]",
                 row, masked_before(row, s->cols));
        break;
    default: break;
    }
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
    /* the sanitizer stage's skip, before CUDA starts and before the host
     * buffers (with the cases together a skipped case's would stay behind) */
    fl_test_skip_if_too_large((s->rows * s->cols + s->offset) * sizeof(float));
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
    char hint[512];
    kind_hint(hint, sizeof hint, s, r.first_bad / p.cols);
    cr_assert(r.n_bad == 0, "%s %zux%zu%s: %s%s", part->name, s->rows, s->cols, describe(s),
              r.message, hint);
    char msg[512];
    cr_assert(row_sums_ok(p.got, p.rows, p.cols, 0, msg, sizeof msg), "%s %zux%zu%s: %s",
              part->name, s->rows, s->cols, describe(s), msg);
    problem_free(&p);
}

/* ---- inputs drawn on the GPU, checked a few rows at a time --------------- */

/* x's element i when x was filled on the GPU (fl_fill_uniform_dev) from
 * `key`, starting `offset` elements into the buffer, in [-4, 4); or, with
 * a period, the first `period` of those values (`values`, on the host)
 * repeated. */
typedef struct {
    uint64_t key;
    size_t offset;
    size_t period;
    const float *values;
} xgen02;

static float x_at(const xgen02 *g, size_t i)
{
    if (g->period) return g->values[(i + g->offset) % g->period];
    return fl_uniform_at(g->key, i + g->offset, X_LO, X_HI);
}

/* Check rows r0 .. r0 + nr of y (device, `cols` columns) against the
 * softmax of the same rows of x (g), sums included: 1 if right, else 0 and
 * a message. Reads those rows only. */
static int check_rows(const float *dy, size_t cols, const xgen02 *g, size_t r0, size_t nr,
                      char *msg, size_t len)
{
    size_t n = nr * cols;
    float *got = fl_test_host_alloc(n * sizeof(float));
    float *x = fl_test_host_alloc(n * sizeof(float));
    double *want = fl_test_host_alloc(n * sizeof(double));
    int ok = 0;
    if (fl_download_f32(got, dy + r0 * cols, n) != cudaSuccess) {
        snprintf(msg, len, "could not read y back");
        goto out;
    }
    for (size_t i = 0; i < n; ++i) x[i] = x_at(g, r0 * cols + i);
    softmax_reference(x, want, nr, cols);
    fl_compare_opts o = fl_compare_defaults("y", L02_ATOL, L02_RTOL);
    o.cols = nr > 1 ? cols : 0; /* one row: "index j" is the column */
    fl_compare_result r = fl_compare_f32(got, want, n, &o);
    char sums[512];
    if (r.n_bad) {
        if (nr > 1)
            snprintf(msg, len, "rows %zu .. %zu of y (the row numbers below count from %zu): %.800s",
                     r0, r0 + nr - 1, r0, r.message);
        else
            snprintf(msg, len, "row %zu of y (the index below is the column): %.800s", r0,
                     r.message);
    } else if (!row_sums_ok(got, nr, cols, r0, sums, sizeof sums)) {
        snprintf(msg, len, "%s", sums);
    } else {
        snprintf(msg, len, "%s", r.message);
        ok = 1;
    }
out:
    free(got);
    free(x);
    free(want);
    return ok;
}


/* What fl_test_sync_within says when a kernel runs past its time. */
static const char kWrapHint[] =
    "at full speed it takes well under a second -- does a 32-bit index or loop counter wrap "
    "around? Past 2^32 elements an unsigned int never reaches the end: use size_t";

/* The free GPU memory, and whether `arrays` matrices of rows x cols floats
 * (plus a float each) fit in it with 1 GiB to spare. */
static int fits(int arrays, size_t rows, size_t cols, double *need_gib, double *free_gib)
{
    size_t free_b = 0, total_b = 0;
    FL_ASSERT_CUDA(cudaMemGetInfo(&free_b, &total_b));
    size_t need = (size_t)arrays * ((rows * cols + 1) * sizeof(float) + FL_GUARD_BYTES) +
                  ((size_t)1 << 30);
    *need_gib = (double)need / (double)(1u << 30);
    *free_gib = (double)free_b / (double)(1u << 30);
    return need <= free_b;
}

#define HINT_SIZE_T                                                                        \
    " -- past 2^31 elements, compute row * cols and every index in size_t: "               \
    "(size_t)blockIdx.x * cols (blockIdx.x * cols is an unsigned int product that wraps " \
    "at 2^32; an int overflows at 2^31)"

/* ---- Part A ---------------------------------------------------------------- */

FL_PARAM_TEST(A_rows, correct, shape02, s, kRowShapes, COUNT(kRowShapes)) { correct_case(s, &kFused); }

/* The same input twice must give the same bits: a softmax has no reason to
 * vary, so a difference means a race (a missing __syncthreads between writing
 * shared memory and reading it) or an order that changes from run to run
 * (float atomics). 8 warps per row, so the block reduction is exercised. */
FL_TEST(A_rows, deterministic)
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

/* softmax.h: "Any rows >= 1 and 1 <= cols <= SOFTMAX_MAX_COLS", rows up to
 * SOFTMAX_MAX_ROWS. Past those the launcher must refuse (the worked one
 * returns cudaErrorInvalidValue) before it launches anything; the buffers
 * here are far too small for the shapes, so a launcher that went ahead
 * would write past them. 2^32 + 1 rows and 2^32 + 4 columns are 1 and 4
 * once cut to 32 bits: a check made after the cut passes them. */
#define LIMITS_N ((size_t)4096)

typedef struct {
    size_t rows, cols;
    const char *what;
} limit02;

static const limit02 kPastLimits[] = {
    {SOFTMAX_MAX_ROWS + 1, 1, "rows = SOFTMAX_MAX_ROWS + 1 = 2^31"},
    {((size_t)1 << 32) + 1, 4, "rows = 2^32 + 1 (1 once cut to 32 bits)"},
    {1, SOFTMAX_MAX_COLS + 1, "cols = SOFTMAX_MAX_COLS + 1 = 2^30 + 1"},
    {1, ((size_t)1 << 32) + 4, "cols = 2^32 + 4 (4 once cut to 32 bits)"},
    {SOFTMAX_MAX_ROWS + 1, SOFTMAX_MAX_COLS + 1, "rows and cols both past their limits"},
};
static const limit02 kEmpty[] = {
    {0, 16, "rows = 0"}, {16, 0, "cols = 0"}, {0, 0, "rows = cols = 0"},
};

static size_t count_written(const float *dy, float *host, size_t n)
{
    FL_ASSERT_CUDA(fl_download_f32(host, dy, n));
    size_t written = 0;
    for (size_t i = 0; i < n; ++i) written += !fl_is_poison_f32(host[i]);
    return written;
}

FL_TEST(A_rows, limits)
{
    FL_REQUIRE_GPU();
    const size_t n = LIMITS_N;
    float *dx = fl_test_dev_alloc(n * sizeof(float));
    float *dy = fl_test_dev_alloc(n * sizeof(float));
    float *host = fl_test_host_alloc(n * sizeof(float));
    xgen02 g = {fl_test_fresh_key(), 0, 0, NULL};
    FL_ASSERT_CUDA(fl_fill_uniform_dev(dx, n, g.key, X_LO, X_HI, 0));
    FL_ASSERT_CUDA(fl_poison(dy, n * sizeof(float), 0));
    fl_inputs in = {0};
    fl_test_inputs_add(&in, "x", dx, n * sizeof(float));

    for (size_t k = 0; k < COUNT(kPastLimits); ++k) {
        const limit02 *l = &kPastLimits[k];
        cudaError_t e = softmax_fused(dx, dy, l->rows, l->cols, 0);
        cr_assert(e != cudaSuccess,
                  "softmax_fused accepted %zu x %zu (%s): softmax.h accepts at most "
                  "SOFTMAX_MAX_ROWS = 2^31 - 1 rows and SOFTMAX_MAX_COLS = 2^30 columns -- "
                  "compare the size_t arguments with the limits before anything else (before "
                  "any cast to int or unsigned), and return cudaErrorInvalidValue",
                  l->rows, l->cols, l->what);
        (void)cudaGetLastError();
        FL_ASSERT_SYNC("softmax_fused (a refused shape)");
        size_t written = count_written(dy, host, n);
        cr_assert(written == 0,
                  "softmax_fused refused %zu x %zu (%s), but wrote %zu elements of y first: a "
                  "refused call must write nothing",
                  l->rows, l->cols, l->what, written);
        FL_ASSERT_NO_OVERRUN(dy + n, "softmax_fused (a refused shape)", "y");
        FL_ASSERT_INPUTS(&in, "softmax_fused (a refused shape)");
    }
    for (size_t k = 0; k < COUNT(kEmpty); ++k) {
        const limit02 *l = &kEmpty[k];
        cudaError_t e = softmax_fused(dx, dy, l->rows, l->cols, 0);
        cr_assert(e == cudaSuccess || e == cudaErrorInvalidValue,
                  "softmax_fused %zu x %zu (%s) returned %s (%s): an empty matrix is nothing "
                  "to do -- return cudaSuccess (or refuse it with cudaErrorInvalidValue) "
                  "without launching (a grid of 0 blocks is an invalid launch)",
                  l->rows, l->cols, l->what, cudaGetErrorName(e), cudaGetErrorString(e));
        (void)cudaGetLastError();
        FL_ASSERT_SYNC("softmax_fused (an empty matrix)");
        size_t written = count_written(dy, host, n);
        cr_assert(written == 0,
                  "softmax_fused %zu x %zu (%s) wrote %zu elements of y: an empty matrix has "
                  "none",
                  l->rows, l->cols, l->what, written);
    }
    /* and the same buffers still work */
    const size_t rows = 4, cols = n / 4;
    FL_ASSERT_CUDA(softmax_fused(dx, dy, rows, cols, 0));
    FL_ASSERT_SYNC("softmax_fused 4x1024, after the refused shapes");
    FL_ASSERT_NO_OVERRUN(dy + n, "softmax_fused", "y");
    char msg[1024];
    cr_assert(check_rows(dy, cols, &g, 0, rows, msg, sizeof msg),
              "softmax_fused 4x1024, after the refused shapes: %s", msg);
    free(host);
    (void)cudaFree(dx);
    (void)cudaFree(dy);
}

/* What fl_test_stream_honoured runs and checks. The check reads y on a
 * stream of its own into pinned memory: while it runs, the legacy default
 * stream is held busy, so a plain cudaMemcpy would wait behind it. */
typedef struct {
    problem02 *p;
    cudaStream_t readback;
    float *pinned;
} stream02;

static cudaError_t stream_run(void *ctx, cudaStream_t st)
{
    stream02 *t = ctx;
    return run_fused(t->p, st);
}

static cudaError_t stream_poison(void *ctx, cudaStream_t st)
{
    stream02 *t = ctx;
    return fl_poison(t->p->dy, t->p->n * sizeof(float), st);
}

static int stream_check(void *ctx, char *msg, size_t len)
{
    stream02 *t = ctx;
    problem02 *p = t->p;
    cudaError_t e = cudaMemcpyAsync(t->pinned, p->dy, p->n * sizeof(float),
                                    cudaMemcpyDeviceToHost, t->readback);
    if (e == cudaSuccess) e = cudaStreamSynchronize(t->readback);
    if (e != cudaSuccess) {
        snprintf(msg, len, "could not read y back: %s", cudaGetErrorString(e));
        return 0;
    }
    fl_compare_opts o = compare_opts(p);
    fl_compare_result r = fl_compare_f32(t->pinned, p->want, p->n, &o);
    snprintf(msg, len, "%s", r.message);
    return r.n_bad == 0;
}

FL_TEST(A_rows, stream)
{
    FL_REQUIRE_GPU();
    const shape02 s = {333, 1024, PAT_PLAIN, 0};
    problem02 p;
    problem_init(&p, &s, 0xA257, 0);
    stream02 t = {&p, NULL, NULL};
    FL_ASSERT_CUDA(cudaStreamCreateWithFlags(&t.readback, cudaStreamNonBlocking));
    FL_ASSERT_CUDA(cudaMallocHost((void **)&t.pinned, p.n * sizeof(float)));
    fl_test_stream_honoured("softmax_fused 333x1024", stream_run, stream_poison, stream_check,
                            &t);
    FL_ASSERT_SYNC("softmax_fused 333x1024");
    (void)cudaFreeHost(t.pinned);
    (void)cudaStreamDestroy(t.readback);
    problem_free(&p);
}

/* ---- past 2^31 (2^32) elements, and SOFTMAX_MAX_ROWS ------------------------- */

#define HUGE_DRAWN 16 /* rows drawn after the run, besides the fixed ones */

/* Rows of y to check after a huge run: the first and the last `span`, the
 * `span` around elements 2^31 and (past it) 2^32, and HUGE_DRAWN single rows
 * drawn after the run. 1 if all are right, else 0 and a message. */
static int check_huge(const float *dy, size_t rows, size_t cols, const xgen02 *g, size_t span,
                      char *msg, size_t len)
{
    const size_t n = rows * cols;
    size_t starts[4];
    int ns = 0;
    starts[ns++] = 0;
    for (int b = 31; b <= 32; ++b) {
        size_t at = ((size_t)1 << b) / cols;
        if (((size_t)1 << b) < n) starts[ns++] = at > span / 2 ? at - span / 2 : 0;
    }
    starts[ns++] = rows - span;
    for (int k = 0; k < ns; ++k) {
        size_t r0 = starts[k] + span > rows ? rows - span : starts[k];
        if (!check_rows(dy, cols, g, r0, span, msg, len)) return 0;
    }
    size_t idx[HUGE_DRAWN];
    fl_test_sample_rows(fl_test_fresh_key(), rows, HUGE_DRAWN, idx);
    for (int k = 0; k < HUGE_DRAWN; ++k)
        if (!check_rows(dy, cols, g, idx[k], 1, msg, len)) return 0;
    return 1;
}

/* One huge run: x (already filled) and y at `offset` floats into xa, ya;
 * y poisoned, run, checked. */
static void huge_run(float *xa, float *ya, size_t rows, size_t cols, size_t offset,
                     const xgen02 *g, size_t span, double seconds, const char *who,
                     const char *refused_hint)
{
    const size_t n = rows * cols;
    float *dx = xa + offset, *dy = ya + offset;
    FL_ASSERT_CUDA(fl_poison(ya, (n + 1) * sizeof(float), 0));
    fl_inputs in = {0};
    fl_test_inputs_add(&in, "x", xa, (n + 1) * sizeof(float));
    cudaError_t e = softmax_fused(dx, dy, rows, cols, 0);
    cr_assert(e == cudaSuccess, "%s: returned %s (%s)%s", who, cudaGetErrorName(e),
              cudaGetErrorString(e), refused_hint);
    fl_test_sync_within(seconds, who, kWrapHint);
    FL_ASSERT_NO_OVERRUN(ya + n + 1, "softmax_fused", "y");
    float past = 0.0f; /* the float after y (offset 0) or before it (offset 1) */
    FL_ASSERT_CUDA(fl_download_f32(&past, offset ? ya : ya + n, 1));
    cr_assert(fl_is_poison_f32(past), "%s: softmax_fused wrote %s y -- threads past the "
              "last row or column must do nothing", who, offset ? "just before" : "just past");
    FL_ASSERT_INPUTS(&in, "softmax_fused");
    char msg[1024];
    cr_assert(check_huge(dy, rows, cols, g, span, msg, sizeof msg), "%s: %s%s", who, msg,
              HINT_SIZE_T);
}

#define HUGE_COLS ((size_t)4100)

Test(A_rows, huge, .timeout = 120)
{
    /* skipped under the sanitizer (up to 16 MiB a buffer) before CUDA starts,
     * which there costs an instrumented start per tool: its smallest buffer */
    fl_test_skip_if_too_large((((size_t)1 << 19) + 1) * HUGE_COLS * sizeof(float));
    FL_REQUIRE_GPU();
    const size_t C = HUGE_COLS;
    const size_t options[] = {((size_t)1 << 20) + 1, ((size_t)1 << 19) + 1};
    size_t R = 0;
    double need = 0.0, avail = 0.0;
    for (int k = 0; k < 2 && R == 0; ++k)
        if (fits(2, options[k], C, &need, &avail)) R = options[k];
    if (R == 0)
        cr_skip_test("the case past 2^31 elements needs %.1f GiB of free GPU memory, this GPU "
                     "has %.1f GiB free",
                     need, avail);
    const size_t n = R * C;
    const int past = n > ((size_t)1 << 32) ? 32 : 31;
    float *xa = fl_test_dev_alloc((n + 1) * sizeof(float));
    float *ya = fl_test_dev_alloc((n + 1) * sizeof(float));
    const uint64_t key = fl_test_fresh_key();
    FL_ASSERT_CUDA(fl_fill_uniform_dev(xa, n + 1, key, X_LO, X_HI, 0));
    for (size_t offset = 0; offset < 2; ++offset) {
        xgen02 g = {key, offset, 0, NULL};
        char who[256];
        snprintf(who, sizeof who, "softmax_fused %zux%zu (%zu elements, more than 2^%d%s)", R,
                 C, n, past, offset ? "; x and y misaligned" : "");
        huge_run(xa, ya, R, C, offset, &g, 2, 20.0, who, "");
    }
    (void)cudaFree(xa);
    (void)cudaFree(ya);
}

/* SOFTMAX_MAX_ROWS rows: one block per row is 2^31 - 1 blocks, the most a
 * grid's x dimension holds; a launcher that rounds the row count up to
 * whole blocks of rows in int or unsigned overflows there. */
Test(A_rows, max_rows, .timeout = 180)
{
    /* skipped under the sanitizer (up to 16 MiB a buffer) before CUDA starts,
     * which there costs an instrumented start per tool: its smallest buffer */
    fl_test_skip_if_too_large(SOFTMAX_MAX_ROWS * sizeof(float));
    FL_REQUIRE_GPU();
    const size_t R = SOFTMAX_MAX_ROWS;
    const size_t options[] = {3, 1};
    size_t C = 0;
    double need = 0.0, avail = 0.0;
    for (int k = 0; k < 2 && C == 0; ++k)
        if (fits(2, R, options[k], &need, &avail)) C = options[k];
    if (C == 0)
        cr_skip_test("the case with SOFTMAX_MAX_ROWS = 2^31 - 1 rows needs %.1f GiB of free GPU "
                     "memory, this GPU has %.1f GiB free",
                     need, avail);
    const size_t n = R * C;
    float *xa = fl_test_dev_alloc((n + 1) * sizeof(float));
    float *ya = fl_test_dev_alloc((n + 1) * sizeof(float));
    xgen02 g = {fl_test_fresh_key(), 0, 0, NULL};
    FL_ASSERT_CUDA(fl_fill_uniform_dev(xa, n + 1, g.key, X_LO, X_HI, 0));
    char who[256];
    snprintf(who, sizeof who,
             "softmax_fused %zux%zu (SOFTMAX_MAX_ROWS = 2^31 - 1 rows%s)", R, C,
             n > ((size_t)1 << 32) ? ", more than 2^32 elements" : "");
    huge_run(xa, ya, R, C, 0, &g, 256, 120.0, who,
             " -- SOFTMAX_MAX_ROWS rows are allowed (softmax.h): refuse only rows > "
             "SOFTMAX_MAX_ROWS, and compute grid sizes in size_t (rows + k - 1 overflows an "
             "int here)");
    (void)cudaFree(xa);
    (void)cudaFree(ya);
}

/* ---- Part B ---------------------------------------------------------------- */

FL_PARAM_TEST(B_stable, correct, shape02, s, kStableShapes, COUNT(kStableShapes)) { correct_case(s, &kFused); }

/* ---- Part C ---------------------------------------------------------------- */

FL_PARAM_TEST(C_long_rows, correct, shape02, s, kLongShapes, COUNT(kLongShapes)) { correct_case(s, &kFused); }

/* SOFTMAX_MAX_COLS columns. A CPU reference of 2^30-element rows would
 * take seconds a row, so x repeats one period of MAXC_PERIOD values drawn
 * on the GPU: every row then holds every value of the period (its max is
 * theirs) and its sum is (cols / P) times the period's plus the sum of the
 * leftover stretch, which starts at a different phase in every row
 * (2^30 mod 65537 = 49153). */
#define MAXC_PERIOD ((size_t)65537)
#define MAXC_SPAN ((size_t)4096)
#define MAXC_DRAWN 4

/* y[r, c0 .. c0 + len) against exp(x - m) / d: 1 if right, else 0 and a message. */
static int check_span(const float *dy, size_t cols, const xgen02 *g, size_t r, size_t c0,
                      size_t len, double m, double d, float *got, double *want, char *msg,
                      size_t mlen)
{
    if (fl_download_f32(got, dy + r * cols + c0, len) != cudaSuccess) {
        snprintf(msg, mlen, "could not read y back");
        return 0;
    }
    for (size_t j = 0; j < len; ++j) want[j] = exp((double)x_at(g, r * cols + c0 + j) - m) / d;
    fl_compare_opts o = fl_compare_defaults("y", L02_ATOL, L02_RTOL);
    fl_compare_result res = fl_compare_f32(got, want, len, &o);
    if (res.n_bad == 0) return 1;
    snprintf(msg, mlen, "row %zu, columns %zu .. %zu (the indices below count from column %zu): %.800s",
             r, c0, c0 + len - 1, c0, res.message);
    return 0;
}

Test(C_long_rows, max_cols, .timeout = 300)
{
    /* skipped under the sanitizer (up to 16 MiB a buffer) before CUDA starts,
     * which there costs an instrumented start per tool: its smallest buffer */
    fl_test_skip_if_too_large(SOFTMAX_MAX_COLS * sizeof(float));
    FL_REQUIRE_GPU();
    const size_t C = SOFTMAX_MAX_COLS, P = MAXC_PERIOD;
    const size_t options[] = {5, 3, 1};
    size_t R = 0;
    double need = 0.0, avail = 0.0;
    for (int k = 0; k < 3 && R == 0; ++k)
        if (fits(2, options[k], C, &need, &avail)) R = options[k];
    if (R == 0)
        cr_skip_test("the case with SOFTMAX_MAX_COLS = 2^30 columns needs %.1f GiB of free GPU "
                     "memory, this GPU has %.1f GiB free",
                     need, avail);
    const size_t n = R * C;
    float *xa = fl_test_dev_alloc((n + 1) * sizeof(float));
    float *ya = fl_test_dev_alloc((n + 1) * sizeof(float));

    /* x: one period drawn on the GPU, then doubled in place up to n + 1 */
    const uint64_t key = fl_test_fresh_key();
    FL_ASSERT_CUDA(fl_fill_uniform_dev(xa, P, key, X_LO, X_HI, 0));
    for (size_t have = P; have < n + 1; have *= 2) {
        size_t more = n + 1 - have < have ? n + 1 - have : have;
        FL_ASSERT_CUDA(cudaMemcpy(xa + have, xa, more * sizeof(float), cudaMemcpyDeviceToDevice));
    }
    float *period = fl_test_host_alloc(P * sizeof(float));
    fl_fill_uniform_host(period, P, key, X_LO, X_HI);
    xgen02 g = {key, 0, P, period};

    /* every row's max is the period's; its sum, from the period's */
    double m = -INFINITY, sum_p = 0.0;
    for (size_t t = 0; t < P; ++t) m = fmax(m, (double)period[t]);
    double *e = fl_test_host_alloc(P * sizeof(double));
    for (size_t t = 0; t < P; ++t) sum_p += (e[t] = exp((double)period[t] - m));
    double d[5];
    for (size_t r = 0; r < R; ++r) {
        size_t phase = (r * C) % P, rem = C % P;
        d[r] = (double)(C / P) * sum_p;
        for (size_t t = 0; t < rem; ++t) d[r] += e[(phase + t) % P];
    }

    char who[256];
    snprintf(who, sizeof who, "softmax_fused %zux%zu (SOFTMAX_MAX_COLS = 2^30 columns%s)", R, C,
             n > ((size_t)1 << 32) ? ", more than 2^32 elements"
                                   : n > ((size_t)1 << 31) ? ", more than 2^31 elements" : "");
    FL_ASSERT_CUDA(fl_poison(ya, (n + 1) * sizeof(float), 0));
    fl_inputs in = {0};
    fl_test_inputs_add(&in, "x", xa, (n + 1) * sizeof(float));
    cudaError_t err = softmax_fused(xa, ya, R, C, 0);
    cr_assert(err == cudaSuccess,
              "%s: returned %s (%s) -- SOFTMAX_MAX_COLS columns are allowed (softmax.h): "
              "refuse only cols > SOFTMAX_MAX_COLS",
              who, cudaGetErrorName(err), cudaGetErrorString(err));
    fl_test_sync_within(120.0, who, kWrapHint);
    FL_ASSERT_NO_OVERRUN(ya + n + 1, "softmax_fused", "y");
    float past = 0.0f;
    FL_ASSERT_CUDA(fl_download_f32(&past, ya + n, 1));
    cr_assert(fl_is_poison_f32(past), "%s: softmax_fused wrote just past y", who);
    FL_ASSERT_INPUTS(&in, "softmax_fused");

    /* per row: the start, the middle, the end and stretches drawn after the run */
    float *got = fl_test_host_alloc(MAXC_SPAN * sizeof(float));
    double *want = fl_test_host_alloc(MAXC_SPAN * sizeof(double));
    char msg[1024];
    for (size_t r = 0; r < R; ++r) {
        size_t c0s[3 + MAXC_DRAWN] = {0, C / 2 - MAXC_SPAN / 2, C - MAXC_SPAN};
        size_t idx[MAXC_DRAWN];
        fl_test_sample_rows(fl_test_fresh_key(), C / MAXC_SPAN, MAXC_DRAWN, idx);
        for (int k = 0; k < MAXC_DRAWN; ++k) c0s[3 + k] = idx[k] * MAXC_SPAN;
        for (int k = 0; k < 3 + MAXC_DRAWN; ++k)
            cr_assert(check_span(ya, C, &g, r, c0s[k], MAXC_SPAN, m, d[r], got, want, msg,
                                 sizeof msg),
                      "%s: %s%s", who, msg, HINT_SIZE_T);
    }
    free(got);
    free(want);
    free(e);
    free(period);
    (void)cudaFree(xa);
    (void)cudaFree(ya);
}

/* ---- the baseline ---------------------------------------------------------- */

FL_PARAM_TEST(baseline, correct, shape02, s, kBaselineShapes, COUNT(kBaselineShapes)) { correct_case(s, &kBaseline); }

/* ---- speed ----------------------------------------------------------------- */

/* Fresh inputs for every timed run: before each run `prepare` draws x from
 * a new key (fl_test_fresh_key) on the GPU and poisons y; after each run
 * `check` compares SPEED_ROWS_CHECKED rows of y, drawn after the run, with
 * a reference computed from the key (fl_uniform_at). Nothing a launcher saw
 * before predicts the next input, so a result kept from an earlier call, or
 * recognised by content, is wrong. */
#define SPEED_ROWS_CHECKED 32

typedef struct {
    problem02 *p;      /* device buffers (x shared by both variants) */
    fl_run_fn run;
    const char *who;
    uint64_t key;      /* x of the last prepare */
    fl_inputs sums;    /* x's checksum after the last prepare */
    int armed;         /* 1 between prepare and the first check after it */
    size_t idx[SPEED_ROWS_CHECKED];
} timed02;

static cudaError_t timed_run(void *ctx, cudaStream_t st)
{
    timed02 *t = ctx;
    return t->run(t->p, st);
}

/* Untimed, before every run: a new x, y poisoned. */
static cudaError_t prepare_run(void *ctx, cudaStream_t st)
{
    timed02 *t = ctx;
    t->key = fl_test_fresh_key();
    CUDA_CHECK(fl_fill_uniform_dev(t->p->dx, t->p->n, t->key, X_LO, X_HI, st));
    CUDA_CHECK(cudaStreamSynchronize(st));
    CUDA_CHECK(fl_test_inputs_snapshot(&t->sums));
    t->armed = 1;
    return fl_poison(t->p->dy, t->p->n * sizeof(float), st);
}

static int recheck(void *ctx, char *msg, size_t len)
{
    timed02 *t = ctx;
    problem02 *p = t->p;
    /* x is checked once after each prepare: the other variant's prepare
     * draws it again before the check that ends the timing */
    if (t->armed) {
        t->armed = 0;
        if (!fl_test_inputs_unchanged(&t->sums, t->who, msg, len)) return 0;
    }
    xgen02 g = {t->key, 0, 0, NULL};
    fl_test_sample_rows(fl_test_fresh_key(), p->rows, SPEED_ROWS_CHECKED, t->idx);
    for (int k = 0; k < SPEED_ROWS_CHECKED; ++k) {
        char m[900];
        if (!check_rows(p->dy, p->cols, &g, t->idx[k], 1, m, sizeof m)) {
            snprintf(msg, len, "%s (one of %d rows drawn after the run)", m,
                     SPEED_ROWS_CHECKED);
            return 0;
        }
    }
    snprintf(msg, len, "%d rows of y within tolerance", SPEED_ROWS_CHECKED);
    return 1;
}

static void timed_init(timed02 *t, problem02 *p, fl_run_fn run, const char *who)
{
    memset(t, 0, sizeof *t);
    t->p = p;
    t->run = run;
    t->who = who;
    fl_test_inputs_add(&t->sums, "x", p->dx, p->n * sizeof(float));
}

Test(speed, fused_vs_unfused)
{
    FL_REQUIRE_GPU();
    problem02 p;
    problem_dev_init(&p, L02_SPEED_ROWS, L02_SPEED_COLS, 0, 1);

    /* Correct first: a fast wrong kernel earns nothing. */
    timed02 tf;
    timed_init(&tf, &p, run_fused, "softmax_fused");
    FL_ASSERT_CUDA(prepare_run(&tf, 0));
    FL_ASSERT_CUDA(run_fused(&p, 0));
    FL_ASSERT_SYNC("softmax_fused");
    char msg[1024];
    cr_assert(recheck(&tf, msg, sizeof msg), "softmax_fused 4096x4096: %s", msg);

    /* Each variant writes its own output; both read the same x. Before
     * every run (warm-up or timed) x is drawn afresh and y poisoned; after
     * every run y and x are checked (untimed). */
    problem02 q = p;
    q.alloc[1] = fl_test_dev_alloc(p.n * sizeof(float));
    q.dy = q.alloc[1];
    timed02 tb;
    timed_init(&tb, &q, run_unfused, "softmax_unfused");

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

    (void)cudaFree(q.dy);
    problem_free(&p);
}
