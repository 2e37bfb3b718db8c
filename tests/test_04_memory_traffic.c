/* tests/test_04_memory_traffic.c — lesson 04: count, measure, fix an access pattern.
 *
 * Built twice: against lessons/04-memory-traffic/{traffic_model.c,transpose.cu}
 * (the student's files; `./lab check 04`) and against solutions/04-memory-traffic.
 *
 *   A_count::*       part A on the CPU: the byte models, exact, with hints
 *   B_counters::*    part B: the models against the GPU's DRAM counters (ncu),
 *                    within 10% at sizes far beyond L2; skipped with the reason
 *                    where counters cannot be read
 *   C_transpose::*   part C: the tiled transpose, compared bitwise
 *   speed::*         part C: tiled vs naive transpose
 */
#include "fl_test.h"
#include "thresholds.h"
#include "data.h"
#include "counters.h"
#include "course_kernels.h"
#include "traffic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(A_count, .timeout = 10);
TestSuite(B_counters, .timeout = 180);
TestSuite(C_transpose, .timeout = 60);
TestSuite(speed, .timeout = 180);

/* ---- part A: the reference counts and what to say when a model is off ------ */

typedef traffic_bytes (*model_fn)(size_t rows, size_t cols);

static traffic_bytes m_elementwise_unfused(size_t n, size_t c) { (void)c; return bytes_elementwise_unfused(n); }
static traffic_bytes m_elementwise_fused(size_t n, size_t c) { (void)c; return bytes_elementwise_fused(n); }

/* A launcher's traffic as passes over arrays: matrix-sized (N floats),
 * row-vector-sized (R = rows floats) and column-vector-sized (C = cols). */
typedef struct {
    const char *name;
    model_fn model;
    double read_N, read_R, read_C;
    double write_N, write_R, write_C;
    const char *hint_read;   /* said when the reads are too few */
    const char *hint_write;  /* said when the writes are too few */
} model_case;

static const model_case kModels[] = {
    {"bytes_elementwise_unfused", m_elementwise_unfused, 5, 0, 0, 3, 0, 0,
     "each of the three kernels reads its inputs in full, and the intermediates t1 and t2 "
     "are read back by the kernel after the one that wrote them",
     "each kernel writes its whole result: t1, t2 and y"},
    {"bytes_elementwise_fused", m_elementwise_fused, 3, 0, 0, 1, 0, 0,
     "the fused kernel reads each input once",
     "the fused kernel writes only y"},
    {"bytes_softmax_unfused", bytes_softmax_unfused, 5, 2, 0, 3, 2, 0,
     "count the five kernels one by one: the intermediate after exp is written and read "
     "again (by the row sum and by the divide), and the kernels that subtract the max and "
     "divide by the sum each read one float per row",
     "the two reductions each write one float per row; subtract, exp and divide each "
     "write a whole matrix"},
    {"bytes_softmax_fused", bytes_softmax_fused, 1, 0, 0, 1, 0, 0,
     "the fused kernel reads each row once while it fits on chip (up to 32768 floats); "
     "longer rows are read a second time",
     "the fused kernel writes y once"},
    {"bytes_softmax_fused", bytes_softmax_fused, 2, 0, 0, 1, 0, 0,
     "a row of more than 32768 floats does not fit on chip: the worked kernel reads it "
     "twice (the online max/sum pass, then the output pass)",
     "the fused kernel writes y once"},
    {"bytes_layernorm_fwd_unfused", bytes_layernorm_fwd_unfused, 7, 3, 2, 5, 3, 0,
     "list the eight kernels: every intermediate (xc, sq, xhat, yw) is written and read "
     "back; the kernels that use mean, rstd, weight or bias read those vectors once each",
     "five kernels write a whole matrix and three write one float per row (mean, var, rstd)"},
    {"bytes_layernorm_fwd_fused", bytes_layernorm_fwd_fused, 1, 0, 2, 1, 2, 0,
     "the fused forward reads x once, and weight and bias once each",
     "the fused forward writes y, and mean and rstd for the backward"},
    {"bytes_layernorm_bwd_unfused", bytes_layernorm_bwd_unfused, 16, 5, 1, 9, 2, 2,
     "list the thirteen operations: xhat is rebuilt from x (two kernels), and every "
     "product, mean and difference reads its inputs back from memory",
     "nine operations write a whole matrix, the two row means write a float per row and "
     "the two column sums (dweight, dbias) a float per column"},
    {"bytes_layernorm_bwd_fused", bytes_layernorm_bwd_fused, 2, 2, 1, 1, 0, 2,
     "the fused backward reads dy and x once, weight once, and mean and rstd once per row",
     "the fused backward writes dx, dweight and dbias"},
};
#define N_MODELS (sizeof kModels / sizeof kModels[0])

typedef struct {
    int model;
    size_t rows, cols;
} count_case;

static count_case kCountCases[] = {
    {0, 1000, 1}, {0, (size_t)1 << 26, 1}, {1, 1000, 1}, {1, (size_t)1 << 26, 1},
    {2, 4096, 4096}, {2, 1823, 781}, {3, 4096, 4096}, {3, 7, 32768}, {4, 2, 262144},
    {5, 4096, 4096}, {5, 1151, 8192}, {6, 4096, 4096}, {6, 3, 17}, {7, 4096, 4096},
    {7, 12288, 768}, {8, 4096, 4096}, {8, 8192, 512},
};

ParameterizedTestParameters(A_count, model_is_exact)
{
    return cr_make_param_array(count_case, kCountCases,
                               sizeof kCountCases / sizeof kCountCases[0]);
}

static const char *direction(double got, double want)
{
    return got < want ? "too few" : "too many";
}

ParameterizedTest(count_case *c, A_count, model_is_exact)
{
    const model_case *m = &kModels[c->model];
    double N = (double)c->rows * (double)c->cols, R = (double)c->rows, C = (double)c->cols;
    double want_r = 4.0 * (m->read_N * N + m->read_R * R + m->read_C * C);
    double want_w = 4.0 * (m->write_N * N + m->write_R * R + m->write_C * C);
    traffic_bytes got = m->model(c->rows, c->cols);
    char size[64];
    if (m->read_R == 0 && m->write_R == 0 && c->cols == 1)
        snprintf(size, sizeof size, "%zu", c->rows);
    else
        snprintf(size, sizeof size, "%zu, %zu", c->rows, c->cols);
    cr_expect(fabs(got.read - want_r) < 0.5, "%s(%s): %s bytes read -- %s", m->name, size,
              direction(got.read, want_r),
              got.read < want_r ? m->hint_read
                                : "more than the kernels read: is something counted twice, "
                                  "or is a per-row value counted once per element?");
    cr_expect(fabs(got.write - want_w) < 0.5, "%s(%s): %s bytes written -- %s", m->name, size,
              direction(got.write, want_w),
              got.write < want_w ? m->hint_write
                                 : "more than the kernels write: count each output once");
}

/* ---- part B: the models against the DRAM counters ------------------------- */

/* Parameters are copied into a fresh test process: no pointers in here (the
 * worker's string literals live at other addresses), so the name is inline. */
typedef struct {
    char kernel[32];    /* course_kernels.h name */
    int model;          /* index into kModels */
    size_t rows, cols;
} counter_case;

/* Sizes far beyond any L2 (hundreds of MiB per array), so the few MiB of
 * write-back still in L2 when a kernel ends are under 10% of the total. */
static counter_case kCounterCases[] = {
    {"elementwise_unfused", 0, (size_t)1 << 27, 1},
    {"elementwise_fused", 1, (size_t)1 << 27, 1},
    {"softmax_unfused", 2, 32768, 4096},
    {"softmax_fused", 3, 32768, 4096},
    {"layernorm_fwd_unfused", 5, 32768, 4096},
    {"layernorm_fwd_fused", 6, 32768, 4096},
    {"layernorm_bwd_unfused", 7, 32768, 4096},
    {"layernorm_bwd_fused", 8, 32768, 4096},
};

ParameterizedTestParameters(B_counters, model_matches_dram)
{
    return cr_make_param_array(counter_case, kCounterCases,
                               sizeof kCounterCases / sizeof kCounterCases[0]);
}

ParameterizedTest(counter_case *c, B_counters, model_matches_dram)
{
    FL_REQUIRE_GPU();
    counters_result meas;
    char why[1024];
    int rc = counters_measure(c->kernel, c->rows, c->cols, &meas, why, sizeof why);
    if (rc == -1) cr_skip_test("%s", why);
    cr_assert(rc == 0, "%s: %s", c->kernel, why);
    traffic_bytes pred = kModels[c->model].model(c->rows, c->cols);
    double er = fabs(meas.read - pred.read) / meas.read;
    double ew = fabs(meas.write - pred.write) / meas.write;
    fprintf(stderr, "counters %-22s predicted read %8.1f MB write %8.1f MB | measured read "
            "%8.1f MB write %8.1f MB (%d kernels)\n", c->kernel, pred.read / 1e6,
            pred.write / 1e6, meas.read / 1e6, meas.write / 1e6, meas.nkernels);
    cr_expect(er <= L04_COUNTER_TOLERANCE,
              "%s: the model predicts %.1f MB read, the DRAM counters saw %.1f MB (%.0f%% off, "
              "need <= %.0f%%) -- %s", c->kernel, pred.read / 1e6, meas.read / 1e6, 100 * er,
              100 * L04_COUNTER_TOLERANCE, kModels[c->model].hint_read);
    cr_expect(ew <= L04_COUNTER_TOLERANCE,
              "%s: the model predicts %.1f MB written, the DRAM counters saw %.1f MB (%.0f%% "
              "off, need <= %.0f%%) -- %s", c->kernel, pred.write / 1e6, meas.write / 1e6,
              100 * ew, 100 * L04_COUNTER_TOLERANCE, kModels[c->model].hint_write);
}

/* ---- part C: the transpose -------------------------------------------------- */

typedef struct {
    size_t rows, cols;
} shape04;

static shape04 kTransposeShapes[] = {
    {1, 1}, {1, 1000}, {1000, 1}, {33, 65}, {1823, 781}, {4096, 4096},
};

ParameterizedTestParameters(C_transpose, correct)
{
    return cr_make_param_array(shape04, kTransposeShapes,
                               sizeof kTransposeShapes / sizeof kTransposeShapes[0]);
}

typedef struct {
    size_t rows, cols;
    float *in, *out;       /* device */
    float *h_in, *h_out;   /* host */
    double *want;
} transpose_problem;

static void transpose_init(transpose_problem *p, size_t rows, size_t cols, uint64_t seed)
{
    size_t n = rows * cols;
    p->rows = rows;
    p->cols = cols;
    p->h_in = fl_test_host_alloc(n * sizeof(float));
    p->h_out = fl_test_host_alloc(n * sizeof(float));
    p->want = fl_test_host_alloc(n * sizeof(double));
    fl_fill_uniform(p->h_in, n, fl_seed(seed), -1.0f, 1.0f);
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) p->want[c * rows + r] = p->h_in[r * cols + c];
    p->in = fl_test_dev_alloc(n * sizeof(float));
    p->out = fl_test_dev_alloc(n * sizeof(float));
    FL_ASSERT_CUDA(fl_upload_f32(p->in, p->h_in, n));
}

static void transpose_free(transpose_problem *p)
{
    (void)cudaFree(p->in);
    (void)cudaFree(p->out);
    free(p->h_in); free(p->h_out); free(p->want);
}

static fl_compare_result transpose_check(transpose_problem *p)
{
    FL_ASSERT_CUDA(fl_download_f32(p->h_out, p->out, p->rows * p->cols));
    fl_compare_opts o = fl_compare_defaults("out", 0.0, 0.0);
    o.cols = p->rows; /* out is (cols, rows) */
    return fl_compare_f32(p->h_out, p->want, p->rows * p->cols, &o);
}

ParameterizedTest(shape04 *s, C_transpose, correct)
{
    FL_REQUIRE_GPU();
    transpose_problem p;
    transpose_init(&p, s->rows, s->cols, 0x0401 + s->rows * 7 + s->cols);
    FL_ASSERT_CUDA(fl_poison(p.out, s->rows * s->cols * sizeof(float), 0));
    fl_inputs in = {0};
    fl_test_inputs_add(&in, "in", p.in, s->rows * s->cols * sizeof(float));
    FL_ASSERT_CUDA(transpose_tiled(p.in, p.out, s->rows, s->cols, 0));
    FL_ASSERT_SYNC("transpose_tiled");
    FL_ASSERT_NO_OVERRUN(p.out + s->rows * s->cols, "transpose_tiled", "out");
    FL_ASSERT_INPUTS(&in, "transpose_tiled");
    fl_compare_result r = transpose_check(&p);
    cr_assert(r.n_bad == 0, "transpose_tiled %zux%zu: %s", s->rows, s->cols, r.message);
    transpose_free(&p);
}

/* ---- speed ------------------------------------------------------------------ */

/* A timed run: the problem, this variant's output, the rotor that gives
 * every run fresh inputs (in shifted by a new number of rows) and the shift
 * this variant's last run saw. */
typedef struct {
    transpose_problem *p;
    float *out;
    fl_rotor *rotor;
    size_t shift;
    const char *who;
} transpose_ctx;

static cudaError_t run_naive(void *ctx, cudaStream_t st)
{
    transpose_ctx *t = ctx;
    return transpose_naive(t->p->in, t->out, t->p->rows, t->p->cols, st);
}

static cudaError_t run_tiled(void *ctx, cudaStream_t st)
{
    transpose_ctx *t = ctx;
    return transpose_tiled(t->p->in, t->out, t->p->rows, t->p->cols, st);
}

static cudaError_t prepare_run(void *ctx, cudaStream_t st)
{
    transpose_ctx *t = ctx;
    CUDA_CHECK(fl_test_rotor_next(t->rotor, st));
    t->shift = t->rotor->shift;
    return fl_poison(t->out, t->p->rows * t->p->cols * sizeof(float), st);
}

static int recheck(void *ctx, char *msg, size_t len)
{
    transpose_ctx *t = ctx;
    transpose_problem *p = t->p;
    if (!fl_test_rotor_inputs_ok(t->rotor, t->who, msg, len)) return 0;
    if (fl_download_f32(p->h_out, t->out, p->rows * p->cols) != cudaSuccess) {
        snprintf(msg, len, "could not read the output back");
        return 0;
    }
    /* in shifted by k rows: every row of out (a column of in) shifts by k */
    for (size_t c = 0; c < p->cols; ++c) fl_unrotate_f32(p->h_out + c * p->rows, p->rows, t->shift);
    fl_compare_opts o = fl_compare_defaults("out", 0.0, 0.0);
    o.cols = p->rows; /* out is (cols, rows) */
    fl_compare_result r = fl_compare_f32(p->h_out, p->want, p->rows * p->cols, &o);
    snprintf(msg, len, "%s", r.message);
    return r.n_bad == 0;
}

Test(speed, tiled_vs_naive_transpose)
{
    FL_REQUIRE_GPU();
    transpose_problem p;
    transpose_init(&p, L04_TRANSPOSE_N, L04_TRANSPOSE_N, 0x0402);
    FL_ASSERT_CUDA(fl_poison(p.out, p.rows * p.cols * sizeof(float), 0));
    FL_ASSERT_CUDA(transpose_tiled(p.in, p.out, p.rows, p.cols, 0));
    FL_ASSERT_SYNC("transpose_tiled");
    fl_compare_result r = transpose_check(&p);
    cr_assert(r.n_bad == 0, "transpose_tiled %zux%zu: %s", p.rows, p.cols, r.message);

    fl_rotor rotor;
    fl_test_rotor_init(&rotor, p.rows);
    fl_test_rotor_add(&rotor, "in", p.in, p.cols * sizeof(float));
    transpose_ctx naive = {&p, fl_test_dev_alloc(p.rows * p.cols * sizeof(float)), &rotor, 0,
                           "transpose_naive"};
    transpose_ctx tiled = {&p, p.out, &rotor, 0, "transpose_tiled"};
    double bytes = 2.0 * 4.0 * (double)p.rows * (double)p.cols;
    fl_variant base = {.name = "naive transpose", .run = run_naive, .ctx = &naive,
                       .bytes = bytes, .prepare = prepare_run, .check = recheck};
    fl_variant cand = {.name = "tiled transpose", .run = run_tiled, .ctx = &tiled,
                       .bytes = bytes, .prepare = prepare_run, .check = recheck};
    fl_test_speed("8192x8192", &base, &cand, L04_MIN_TRANSPOSE_SPEEDUP,
                  L04_MIN_TRANSPOSE_PCT_CEILING);
    fl_test_rotor_free(&rotor);
    (void)cudaFree(naive.out);
    transpose_free(&p);
}
