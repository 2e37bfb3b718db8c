/* tests/test_04_memory_traffic.c — lesson 04: count, measure, fix an access pattern.
 *
 * Built twice: against lessons/04-memory-traffic/{traffic_model.c,transpose.cu}
 * (the student's files; `./lab check 04`) and against solutions/04-memory-traffic.
 *
 *   A_count::model_is_exact        part A on the CPU: each byte model exactly, reads
 *                                  and writes apart, at 17 fixed sizes, with hints
 *   A_count::model_at_drawn_sizes  each launcher's model at 64 sizes drawn for this
 *                                  run from fl_seed (the grading seed): 1 x 1, one
 *                                  row, one column, small odd shapes, below and above
 *                                  L2, past 2^31 and past 2^32 elements, and the
 *                                  edges the headers document (rows of 32767, 32768
 *                                  and 32769 floats for the fused softmax,
 *                                  SOFTMAX_MAX_COLS, SOFTMAX_MAX_ROWS,
 *                                  LAYERNORM_MAX_COLS)
 *   B_counters::*    part B: the models against the GPU's DRAM counters (ncu),
 *                    within 10% at sizes far beyond L2 (the row count drawn from
 *                    fl_seed; under the grader, the sizes and counters that the
 *                    worked solution's run measured once per GPU); skipped with
 *                    the reason where counters cannot be read
 *   C_transpose::correct           the tiled transpose at 6 fixed shapes, bitwise
 *   C_transpose::drawn_shapes      6 shapes drawn from fl_seed: one row, one column,
 *                                  tall and thin, wide and flat, sides that are not
 *                                  multiples of 16 (nor 32, 64), rows 64k +- 1 by
 *                                  cols 32k + 16
 *   C_transpose::misaligned        in and out 1 to 3 floats past a 16-byte boundary
 *                                  (the API takes any float pointer)
 *   C_transpose::repeated_calls    four calls on the same buffers: new contents,
 *                                  the shape swapped, a smaller shape
 *   C_transpose::stream_honoured   all work queued on the stream given, no wait
 *   C_transpose::past_2_32_elements  6.4e9 elements (2.1e9 where the GPU has
 *                                  less memory), sampled rows of out checked
 *   speed::*         part C: tiled vs naive transpose; every run gets inputs freshly
 *                    drawn on the GPU and is checked on sampled rows
 */
#include "fl_test.h"
#include "thresholds.h"
#include "data.h"
#include "counters.h"
#include "course_kernels.h"
#include "layernorm.h"
#include "softmax.h"
#include "traffic.h"
#include "transpose_reference.h"

#include <math.h>
#include <stdint.h>
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

/* kModels' entries for bytes_softmax_fused: rows up to SOFTMAX_ONCHIP_COLS
 * floats (read once), longer rows (read twice) */
#define SOFTMAX_FUSED_SHORT 3
#define SOFTMAX_FUSED_LONG 4
/* the widest row the worked fused softmax keeps on chip (the README, Part A) */
#define SOFTMAX_ONCHIP_COLS ((size_t)32768)

/* A model counts whole bytes: every term is an integer below 2^53, exact in
 * double whatever the order of the sums. Half a byte tells "exact" from "off". */
#define COUNT_ATOL 0.5

static int is_1d(const model_case *m)
{
    return m->model == m_elementwise_unfused || m->model == m_elementwise_fused;
}

/* What the launcher moves at (rows, cols): the passes of model_case m, in bytes. */
static void reference_bytes(const model_case *m, size_t rows, size_t cols, double *read,
                            double *write)
{
    double N = (double)rows * (double)cols, R = (double)rows, C = (double)cols;
    *read = 4.0 * (m->read_N * N + m->read_R * R + m->read_C * C);
    *write = 4.0 * (m->write_N * N + m->write_R * R + m->write_C * C);
}

/* The arguments as the call reads them: "n" for lesson 01, "rows, cols" else. */
static void size_label(const model_case *m, size_t rows, size_t cols, char *buf, size_t len)
{
    if (is_1d(m)) snprintf(buf, len, "%zu", rows);
    else snprintf(buf, len, "%zu, %zu", rows, cols);
}

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

static const char *direction(double got, double want)
{
    return got < want ? "too few" : "too many";
}

static const char *kTooManyReads =
    "more than the kernels read: is something counted twice, or is a per-row value "
    "counted once per element?";
static const char *kTooManyWrites = "more than the kernels write: count each output once";

FL_PARAM_TEST(A_count, model_is_exact, count_case, c, kCountCases,
              sizeof kCountCases / sizeof kCountCases[0])
{
    const model_case *m = &kModels[c->model];
    double want_r, want_w;
    reference_bytes(m, c->rows, c->cols, &want_r, &want_w);
    traffic_bytes got = m->model(c->rows, c->cols);
    char size[64];
    size_label(m, c->rows, c->cols, size, sizeof size);
    cr_expect(fabs(got.read - want_r) < COUNT_ATOL, "%s(%s): %s bytes read -- %s", m->name,
              size, direction(got.read, want_r),
              got.read < want_r ? m->hint_read : kTooManyReads);
    cr_expect(fabs(got.write - want_w) < COUNT_ATOL, "%s(%s): %s bytes written -- %s", m->name,
              size, direction(got.write, want_w),
              got.write < want_w ? m->hint_write : kTooManyWrites);
}

/* ---- part A at sizes drawn for this run --------------------------------------
 * The fixed sizes above are in every failure message: a model could be made
 * right at exactly those. These are drawn from fl_seed (FUSIONLAB_GRADE_SEED
 * when grading), over every shape the launcher accepts, in nine kinds. */

#define DRAWN_SIZES 64
#define DRAWN_MAX_ELEMENTS ((size_t)1 << 38) /* 1 TiB of floats: counts stay below 2^45 */

/* One launcher and the shapes its header accepts. */
typedef struct {
    int model;          /* kModels index (bytes_softmax_fused: SOFTMAX_FUSED_SHORT) */
    size_t max_rows;    /* n for the 1-D launchers */
    size_t max_cols;    /* 1 for the 1-D launchers */
} drawn_launcher;

static const drawn_launcher kDrawnLaunchers[] = {
    {0, DRAWN_MAX_ELEMENTS, 1},
    {1, DRAWN_MAX_ELEMENTS, 1},
    {2, SOFTMAX_MAX_ROWS, SOFTMAX_MAX_COLS},
    {SOFTMAX_FUSED_SHORT, SOFTMAX_MAX_ROWS, SOFTMAX_MAX_COLS},
    {5, DRAWN_MAX_ELEMENTS, LAYERNORM_MAX_COLS},
    {6, DRAWN_MAX_ELEMENTS, LAYERNORM_MAX_COLS},
    {7, DRAWN_MAX_ELEMENTS, LAYERNORM_MAX_COLS},
    {8, DRAWN_MAX_ELEMENTS, LAYERNORM_MAX_COLS},
};
#define N_DRAWN_LAUNCHERS (sizeof kDrawnLaunchers / sizeof kDrawnLaunchers[0])

/* The reference for a shape: the fused softmax's count depends on the row width. */
static const model_case *reference_for(int model, size_t cols)
{
    if (model == SOFTMAX_FUSED_SHORT && cols > SOFTMAX_ONCHIP_COLS)
        return &kModels[SOFTMAX_FUSED_LONG];
    return &kModels[model];
}

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* uniform in [lo, hi] */
static size_t draw_in(fl_rng *g, size_t lo, size_t hi)
{
    if (hi <= lo) return lo;
    return lo + (size_t)(fl_rng_u64(g) % (uint64_t)(hi - lo + 1));
}

/* log-uniform in [lo, hi], lo >= 1: small and large sizes alike */
static size_t draw_log(fl_rng *g, size_t lo, size_t hi)
{
    if (hi <= lo) return lo;
    double l = log((double)lo), h = log((double)hi + 1.0);
    size_t v = (size_t)exp(l + (h - l) * fl_rng_uniform(g));
    return v < lo ? lo : v > hi ? hi : v;
}

/* A shape of the launcher with rows * cols in [nlo, nhi]. */
static void draw_elements(fl_rng *g, const drawn_launcher *d, double nlo, double nhi,
                          size_t *rows, size_t *cols)
{
    if (d->max_cols == 1) {
        *rows = draw_in(g, (size_t)nlo, (size_t)nhi);
        *cols = 1;
        return;
    }
    double cmin = ceil(nlo / (double)d->max_rows);
    size_t c = draw_log(g, cmin < 2.0 ? 2 : (size_t)cmin, min_size(d->max_cols, (size_t)nhi));
    double rlo = ceil(nlo / (double)c), rhi = floor(nhi / (double)c);
    if (rhi > (double)d->max_rows) rhi = (double)d->max_rows;
    if (rlo < 1.0) rlo = 1.0;
    if (rhi < rlo) rhi = rlo;
    *rows = draw_in(g, (size_t)rlo, (size_t)rhi);
    *cols = c;
}

/* The documented edges: rows around the fused softmax's on-chip width and
 * its largest shapes (SOFTMAX_MAX_COLS, SOFTMAX_MAX_ROWS), LayerNorm's widest
 * rows, and for lesson 01 sizes next to a power of two. turn runs 0..6. */
static void draw_edge(fl_rng *g, const drawn_launcher *d, int turn, size_t *rows,
                      size_t *cols)
{
    if (d->max_cols == 1) {
        size_t p = (size_t)1 << draw_in(g, 20, 36);
        *rows = turn % 2 ? p + 1 : p - 1;
        *cols = 1;
    } else if (d->max_cols == LAYERNORM_MAX_COLS) {
        static const size_t kEdge[] = {LAYERNORM_MAX_COLS, LAYERNORM_MAX_COLS - 1, 0};
        *cols = kEdge[turn % 3] ? kEdge[turn % 3] : draw_in(g, 8193, LAYERNORM_MAX_COLS);
        *rows = draw_log(g, 1, (size_t)1 << 20);
    } else {
        size_t w = SOFTMAX_ONCHIP_COLS;
        *rows = draw_log(g, 1, 4096);
        switch (turn % 7) {
        case 0: *cols = w - 1; break;
        case 1: *cols = w; break;
        case 2: *cols = w + 1; break;
        case 3: *cols = draw_in(g, w / 2 + 1, w - 1); break;
        case 4: *cols = draw_in(g, w + 1, 8 * w - 1); break;
        case 5: *cols = SOFTMAX_MAX_COLS; *rows = draw_in(g, 1, 4); break;
        default: *rows = SOFTMAX_MAX_ROWS; *cols = draw_in(g, 1, 64); break;
        }
    }
}

/* Shape i of the DRAWN_SIZES a launcher is checked at: kind i % 9, so every
 * kind is in every run; the sizes within a kind come from the seed. */
static void draw_shape(fl_rng *g, const drawn_launcher *d, int i, size_t *rows, size_t *cols)
{
    int one_d = d->max_cols == 1;
    double two31 = 2147483648.0, two32 = 4294967296.0;
    switch (i % 9) {
    case 0: /* 1 x 1 (n = 1) first, then tiny shapes */
        *rows = i == 0 ? 1 : draw_in(g, 1, 8);
        *cols = i == 0 || one_d ? 1 : draw_in(g, 1, 8);
        break;
    case 1: /* one row (n: a few elements) */
        if (one_d) { *rows = draw_in(g, 2, 64); *cols = 1; }
        else { *rows = 1; *cols = draw_log(g, 2, min_size(d->max_cols, (size_t)1 << 24)); }
        break;
    case 2: /* one column (n: odd, a few thousand) */
        if (one_d) { *rows = 2 * draw_in(g, 32, 4999) + 1; *cols = 1; }
        else { *rows = draw_log(g, 2, (size_t)1 << 24); *cols = 1; }
        break;
    case 3: /* small and odd */
        *rows = 2 * draw_in(g, 0, 499) + 1;
        *cols = one_d ? 1 : 2 * draw_in(g, 1, 499) + 1;
        break;
    case 4: /* well below L2: at most 2^21 floats (8 MiB) */
        draw_elements(g, d, 1024.0, (double)((size_t)1 << 21), rows, cols);
        break;
    case 5: /* well above L2: 128 MiB to 1 GiB of floats */
        draw_elements(g, d, (double)((size_t)1 << 25), (double)((size_t)1 << 28), rows, cols);
        break;
    case 6: /* past 2^31 elements: a signed 32-bit count overflows */
        draw_elements(g, d, two31 + 1.0, two32 - 1.0, rows, cols);
        break;
    case 7: /* past 2^32 elements: an unsigned 32-bit count wraps */
        draw_elements(g, d, two32 + 1.0, (double)DRAWN_MAX_ELEMENTS, rows, cols);
        break;
    default: /* the edges the headers document */
        draw_edge(g, d, i / 9, rows, cols);
        break;
    }
}

/* The cases of model_at_drawn_sizes: each launcher's index. */
static int *drawn_launcher_indices(void)
{
    static int idx[N_DRAWN_LAUNCHERS];
    for (size_t i = 0; i < N_DRAWN_LAUNCHERS; ++i) idx[i] = (int)i;
    return idx;
}

typedef struct {
    size_t rows, cols;
    double got_r, got_w, want_r, want_w;
} drawn_result;

static int drawn_ok(const drawn_result *r)
{
    return fabs(r->got_r - r->want_r) < COUNT_ATOL && fabs(r->got_w - r->want_w) < COUNT_ATOL;
}

/* Why a model is wrong at some drawn sizes, from the pattern of its errors
 * (bad: the wrong results, smallest first; all: every result). */
static void drawn_diagnosis(const drawn_launcher *d, const drawn_result *all, int n_all,
                            const drawn_result *bad, int n_bad, char *buf, size_t len)
{
    const model_case *m = reference_for(d->model, bad[0].cols);
    int rounding = 1, big_only = 1, long_only = 1, short_only = 1;
    for (int k = 0; k < n_bad; ++k) {
        const drawn_result *r = &bad[k];
        double er = fabs(r->got_r - r->want_r), ew = fabs(r->got_w - r->want_w);
        if (er > 1e-6 * r->want_r || ew > 1e-6 * r->want_w) rounding = 0;
        if (r->cols <= SOFTMAX_ONCHIP_COLS) long_only = 0;
        else short_only = 0;
    }
    /* "big only": right at every drawn size whose counts fit 31 bits */
    for (int k = 0; k < n_all; ++k) {
        const drawn_result *r = &all[k];
        int fits = (double)r->rows * (double)r->cols < 2147483648.0 && r->want_r < 2147483648.0 &&
                   r->want_w < 2147483648.0;
        if (fits && !drawn_ok(r)) big_only = 0;
    }
    int softmax = d->model == SOFTMAX_FUSED_SHORT;
    const drawn_result *b = &bad[0];
    int reads_wrong = fabs(b->got_r - b->want_r) >= COUNT_ATOL;
    if (rounding)
        snprintf(buf, len, "off by a rounding error: is the count computed in float? float "
                           "holds whole numbers exactly only up to 2^24 (16.8 million): "
                           "compute in double");
    else if (big_only)
        snprintf(buf, len, "right at every drawn size whose counts fit in 31 bits, wrong at "
                           "the ones past 2^31 (or 2^32): is a size, an element count or a "
                           "byte count held in a 32-bit int or unsigned? compute in double "
                           "(or size_t)");
    else if (softmax && long_only)
        snprintf(buf, len, "wrong only for rows longer than %zu floats: %s", SOFTMAX_ONCHIP_COLS,
                 kModels[SOFTMAX_FUSED_LONG].hint_read);
    else if (softmax && short_only)
        snprintf(buf, len, "wrong only for rows of up to %zu floats: %s", SOFTMAX_ONCHIP_COLS,
                 kModels[SOFTMAX_FUSED_SHORT].hint_read);
    else if (reads_wrong)
        snprintf(buf, len, "%s", b->got_r < b->want_r ? m->hint_read : kTooManyReads);
    else
        snprintf(buf, len, "%s", b->got_w < b->want_w ? m->hint_write : kTooManyWrites);
}

static int by_elements(const void *a, const void *b)
{
    const drawn_result *x = a, *y = b;
    double nx = (double)x->rows * (double)x->cols, ny = (double)y->rows * (double)y->cols;
    return (nx > ny) - (nx < ny);
}

FL_PARAM_TEST(A_count, model_at_drawn_sizes, int, launcher, drawn_launcher_indices(),
              N_DRAWN_LAUNCHERS)
{
    const drawn_launcher *d = &kDrawnLaunchers[*launcher];
    fl_rng g = fl_rng_make(fl_seed(0x04A0 + (uint64_t)*launcher));
    drawn_result all[DRAWN_SIZES], bad[DRAWN_SIZES];
    int n_bad = 0;
    for (int i = 0; i < DRAWN_SIZES; ++i) {
        drawn_result *r = &all[i];
        draw_shape(&g, d, i, &r->rows, &r->cols);
        const model_case *m = reference_for(d->model, r->cols);
        reference_bytes(m, r->rows, r->cols, &r->want_r, &r->want_w);
        traffic_bytes got = m->model(r->rows, r->cols);
        r->got_r = got.read;
        r->got_w = got.write;
        if (!drawn_ok(r)) bad[n_bad++] = *r;
    }
    if (n_bad == 0) return;
    qsort(bad, (size_t)n_bad, sizeof bad[0], by_elements);
    const model_case *m = reference_for(d->model, bad[0].cols);
    char size[64], why[512];
    size_label(m, bad[0].rows, bad[0].cols, size, sizeof size);
    drawn_diagnosis(d, all, DRAWN_SIZES, bad, n_bad, why, sizeof why);
    const drawn_result *b = &bad[0];
    char what[96];
    if (fabs(b->got_r - b->want_r) >= COUNT_ATOL && fabs(b->got_w - b->want_w) >= COUNT_ATOL)
        snprintf(what, sizeof what, "%s bytes read and %s written", direction(b->got_r, b->want_r),
                 direction(b->got_w, b->want_w));
    else if (fabs(b->got_r - b->want_r) >= COUNT_ATOL)
        snprintf(what, sizeof what, "%s bytes read", direction(b->got_r, b->want_r));
    else
        snprintf(what, sizeof what, "%s bytes written", direction(b->got_w, b->want_w));
    cr_assert_fail("%s: wrong at %d of the %d sizes drawn for this run; the smallest, %s(%s): "
                   "%s -- %s", m->name, n_bad, DRAWN_SIZES, m->name, size, what, why);
}

/* ---- part B: the models against the DRAM counters ------------------------- */

/* Parameters are copied into a fresh test process: no pointers in here (the
 * worker's string literals live at other addresses), so the name is inline. */
typedef struct {
    char kernel[32];    /* course_kernels.h name */
    int model;          /* index into kModels */
    size_t rows, cols;  /* filled in for this run: see below */
} counter_case;

/* Sizes far beyond any L2 (hundreds of MiB per array), so the few MiB of
 * write-back still in L2 when a kernel ends are under 10% of the total
 * (thresholds.h). cols 1 marks lesson 01's launchers, sized n. */
static counter_case kCounterCases[] = {
    {"elementwise_unfused", 0, 0, 1},
    {"elementwise_fused", 1, 0, 1},
    {"softmax_unfused", 2, 0, L04_COUNTER_COLS},
    {"softmax_fused", 3, 0, L04_COUNTER_COLS},
    {"layernorm_fwd_unfused", 5, 0, L04_COUNTER_COLS},
    {"layernorm_fwd_fused", 6, 0, L04_COUNTER_COLS},
    {"layernorm_bwd_unfused", 7, 0, L04_COUNTER_COLS},
    {"layernorm_bwd_fused", 8, 0, L04_COUNTER_COLS},
};

/* Under the grader, the worked solution's run of this suite once per GPU
 * saves each measurement (FUSIONLAB_COUNTERS_SAVE, a file in the run's own
 * folder), and every submission's run is given that file read-only
 * (FUSIONLAB_COUNTERS_FROM): it checks the models at the sizes measured
 * there against those counters, instead of an ncu run of the same course
 * kernel per case (about 3 s each). Both read once, before main. A launcher
 * the file does not name is measured as usual. One line per measurement:
 *   kernel rows cols read_bytes write_bytes kernels */
static char g_counters_from[4096], g_counters_save[4096];

__attribute__((constructor)) static void counters_env_init(void)
{
    const char *from = getenv("FUSIONLAB_COUNTERS_FROM");
    const char *save = getenv("FUSIONLAB_COUNTERS_SAVE");
    if (from && strlen(from) < sizeof g_counters_from) strcpy(g_counters_from, from);
    if (save && strlen(save) < sizeof g_counters_save) strcpy(g_counters_save, save);
}

/* The measurement of `kernel` in FUSIONLAB_COUNTERS_FROM (rows and cols as
 * measured): 1, or 0 when there is none. */
static int counters_given(const char *kernel, size_t *rows, size_t *cols, counters_result *out)
{
    if (g_counters_from[0] == '\0') return 0;
    FILE *f = fopen(g_counters_from, "r");
    if (f == NULL) return 0;
    char line[256], name[64];
    unsigned long long r, c;
    double rd, wr;
    int nk, found = 0;
    while (!found && fgets(line, sizeof line, f))
        if (sscanf(line, "%63s %llu %llu %lf %lf %d", name, &r, &c, &rd, &wr, &nk) == 6 &&
            strcmp(name, kernel) == 0 && r > 0 && c > 0 && rd > 0 && wr > 0 && nk > 0) {
            memset(out, 0, sizeof *out);
            *rows = (size_t)r;
            *cols = (size_t)c;
            out->read = rd;
            out->write = wr;
            out->nkernels = nk;
            found = 1;
        }
    fclose(f);
    return found;
}

/* The row count comes from fl_seed: L04_COUNTER_ROWS_MIN to _MAX in steps of
 * 128 (one draw per run, shared by every launcher); lesson 01's launchers move
 * rows x L04_COUNTER_COLS elements; or the sizes of FUSIONLAB_COUNTERS_FROM.
 * No CUDA here: this runs in the runner. */
ParameterizedTestParameters(B_counters, model_matches_dram)
{
    fl_rng g = fl_rng_make(fl_seed(0x04B0));
    size_t steps = (L04_COUNTER_ROWS_MAX - L04_COUNTER_ROWS_MIN) / 128;
    size_t rows = L04_COUNTER_ROWS_MIN + 128 * draw_in(&g, 0, steps);
    for (size_t i = 0; i < sizeof kCounterCases / sizeof kCounterCases[0]; ++i) {
        counter_case *c = &kCounterCases[i];
        counters_result given;
        size_t r, k;
        if (counters_given(c->kernel, &r, &k, &given) && (c->cols == 1) == (k == 1)) {
            c->rows = r;
            c->cols = k;
        } else {
            c->rows = c->cols == 1 ? rows * L04_COUNTER_COLS : rows;
        }
    }
    return FL_PARAMS(counter_case, kCounterCases,
                               sizeof kCounterCases / sizeof kCounterCases[0]);
}

ParameterizedTest(counter_case *c, B_counters, model_matches_dram)
{
    FL_REQUIRE_GPU();
    counters_result meas;
    char why[1024];
    size_t r, k;
    int given = counters_given(c->kernel, &r, &k, &meas) && r == c->rows && k == c->cols;
    if (!given) {
        int rc = counters_measure(c->kernel, c->rows, c->cols, &meas, why, sizeof why);
        if (rc == -1) cr_skip_test("%s", why);
        cr_assert(rc == 0, "%s: %s", c->kernel, why);
        if (g_counters_save[0]) {
            FILE *f = fopen(g_counters_save, "a");
            if (f) {
                fprintf(f, "%s %zu %zu %.17g %.17g %d\n", c->kernel, c->rows, c->cols, meas.read,
                        meas.write, meas.nkernels);
                fclose(f);
            }
        }
    }
    const model_case *m = &kModels[c->model];
    traffic_bytes pred = m->model(c->rows, c->cols);
    char size[64];
    size_label(m, c->rows, c->cols, size, sizeof size);
    double er = fabs(meas.read - pred.read) / meas.read;
    double ew = fabs(meas.write - pred.write) / meas.write;
    fprintf(stderr, "counters %-22s (%s) predicted read %8.1f MB write %8.1f MB | %s "
            "read %8.1f MB write %8.1f MB (%d kernels)\n", c->kernel, size, pred.read / 1e6,
            pred.write / 1e6, given ? "measured once for the batch" : "measured", meas.read / 1e6,
            meas.write / 1e6, meas.nkernels);
    cr_expect(er <= L04_COUNTER_TOLERANCE,
              "%s (%s): the model predicts %.1f MB read, the DRAM counters saw %.1f MB (%.0f%% "
              "off, need <= %.0f%%) -- %s", c->kernel, size, pred.read / 1e6, meas.read / 1e6,
              100 * er, 100 * L04_COUNTER_TOLERANCE, m->hint_read);
    cr_expect(ew <= L04_COUNTER_TOLERANCE,
              "%s (%s): the model predicts %.1f MB written, the DRAM counters saw %.1f MB (%.0f%% "
              "off, need <= %.0f%%) -- %s", c->kernel, size, pred.write / 1e6, meas.write / 1e6,
              100 * ew, 100 * L04_COUNTER_TOLERANCE, m->hint_write);
}

/* ---- part C: the transpose -------------------------------------------------- */

typedef struct {
    size_t rows, cols;
} shape04;

static shape04 kTransposeShapes[] = {
    {1, 1}, {1, 1000}, {1000, 1}, {33, 65}, {1823, 781}, {4096, 4096},
};

typedef struct {
    size_t rows, cols;
    float *in, *out;          /* device, `in_off` and `out_off` floats into their allocations */
    void *alloc_in, *alloc_out;
    float *h_in, *h_out;      /* host */
    double *want;
} transpose_problem;

/* A (rows, cols) problem with inputs from `seed`, its device arrays placed
 * in_off and out_off floats past the start of their allocations (cudaMalloc
 * returns 256-byte aligned memory: an offset of 1 to 3 floats leaves the
 * array 4-byte aligned but not 16-byte aligned). The guard zone follows the
 * last element of out either way. */
static void transpose_init_at(transpose_problem *p, size_t rows, size_t cols, uint64_t seed,
                              size_t in_off, size_t out_off)
{
    size_t n = rows * cols;
    /* the sanitizer stage's skip, before the host buffers (with the cases
     * together in one process a skipped case's buffers would stay behind) */
    fl_test_skip_if_too_large((n + (in_off > out_off ? in_off : out_off)) * sizeof(float));
    p->rows = rows;
    p->cols = cols;
    p->h_in = fl_test_host_alloc(n * sizeof(float));
    p->h_out = fl_test_host_alloc(n * sizeof(float));
    p->want = fl_test_host_alloc(n * sizeof(double));
    fl_fill_uniform(p->h_in, n, fl_seed(seed), -1.0f, 1.0f);
    transpose_reference(p->h_in, p->want, rows, cols);
    p->alloc_in = fl_test_dev_alloc((n + in_off) * sizeof(float));
    p->alloc_out = fl_test_dev_alloc((n + out_off) * sizeof(float));
    p->in = (float *)p->alloc_in + in_off;
    p->out = (float *)p->alloc_out + out_off;
    FL_ASSERT_CUDA(fl_upload_f32(p->in, p->h_in, n));
}

static void transpose_init(transpose_problem *p, size_t rows, size_t cols, uint64_t seed)
{
    transpose_init_at(p, rows, cols, seed, 0, 0);
}

static void transpose_free(transpose_problem *p)
{
    (void)cudaFree(p->alloc_in);
    (void)cudaFree(p->alloc_out);
    free(p->h_in); free(p->h_out); free(p->want);
}

static fl_compare_result transpose_check(transpose_problem *p)
{
    FL_ASSERT_CUDA(fl_download_f32(p->h_out, p->out, p->rows * p->cols));
    fl_compare_opts o = fl_compare_defaults("out", 0.0, 0.0);
    o.cols = p->rows; /* out is (cols, rows) */
    return fl_compare_f32(p->h_out, p->want, p->rows * p->cols, &o);
}

/* One call on the legacy default stream: poison out, run, then every check
 * (the GPU's report, the guard zone, the input, the values, bitwise).
 * `label` starts every message ("transpose_tiled 33x65 ..."). */
static void transpose_case(transpose_problem *p, const char *label)
{
    size_t n = p->rows * p->cols;
    FL_ASSERT_CUDA(fl_poison(p->out, n * sizeof(float), 0));
    fl_inputs in = {0};
    fl_test_inputs_add(&in, "in", p->in, n * sizeof(float));
    FL_ASSERT_CUDA(transpose_tiled(p->in, p->out, p->rows, p->cols, 0));
    FL_ASSERT_SYNC(label);
    FL_ASSERT_NO_OVERRUN(p->out + n, "transpose_tiled", "out");
    FL_ASSERT_INPUTS(&in, "transpose_tiled");
    fl_compare_result r = transpose_check(p);
    cr_assert(r.n_bad == 0, "%s: %s", label, r.message);
}

FL_PARAM_TEST(C_transpose, correct, shape04, s, kTransposeShapes,
              sizeof kTransposeShapes / sizeof kTransposeShapes[0])
{
    FL_REQUIRE_GPU();
    transpose_problem p;
    transpose_init(&p, s->rows, s->cols, 0x0401 + s->rows * 7 + s->cols);
    char label[96];
    snprintf(label, sizeof label, "transpose_tiled %zux%zu", s->rows, s->cols);
    transpose_case(&p, label);
    transpose_free(&p);
}

/* ---- shapes drawn for this run ----------------------------------------------
 * Six kinds, the sizes from fl_seed: a transpose must not depend on the
 * fixed shapes above. Every side stays under 2^21, so any grid of 32-wide
 * tiles fits gridDim.y (65535); at most 1.8e6 elements (7 MiB per array:
 * quick under the sanitizer stage too). */
typedef struct {
    size_t rows, cols;
    int kind; /* index into kDrawnKinds */
} drawn_shape04;

#define N_DRAWN_TRANSPOSES 6
static drawn_shape04 kDrawnTransposes[N_DRAWN_TRANSPOSES];
static const char *const kDrawnKinds[N_DRAWN_TRANSPOSES] = {
    "one row", "one column", "tall and thin", "wide and flat",
    "sides not multiples of 16", "rows 64k +- 1, cols 32k + 16",
};

/* a side in [lo, hi] that is not a multiple of 16 (so neither of 32 nor 64) */
static size_t side_off_tiles(fl_rng *g, size_t lo, size_t hi)
{
    size_t v = draw_in(g, lo, hi);
    return v % 16 ? v : v + draw_in(g, 1, 15);
}

/* The shapes of drawn_shapes, drawn from the run's seed (the same in the
 * runner and in the test's process). */
static drawn_shape04 *drawn_transposes(void)
{
    fl_rng g = fl_rng_make(fl_seed(0x0410));
    drawn_shape04 *s = kDrawnTransposes;
    s[0].rows = 1;                                 s[0].cols = draw_log(&g, 33, (size_t)1 << 20);
    s[1].rows = draw_log(&g, 33, (size_t)1 << 20); s[1].cols = 1;
    s[2].rows = draw_in(&g, 4096, 40000);          s[2].cols = draw_in(&g, 2, 31);
    s[3].rows = draw_in(&g, 2, 31);                s[3].cols = draw_in(&g, 4096, 40000);
    s[4].rows = side_off_tiles(&g, 65, 1200);      s[4].cols = side_off_tiles(&g, 65, 1200);
    s[5].rows = 64 * draw_in(&g, 2, 20) + (draw_in(&g, 0, 1) ? 1 : 63);
    s[5].cols = 32 * draw_in(&g, 2, 40) + 16;
    for (int k = 0; k < N_DRAWN_TRANSPOSES; ++k) s[k].kind = k;
    return kDrawnTransposes;
}

FL_PARAM_TEST(C_transpose, drawn_shapes, drawn_shape04, s, drawn_transposes(), N_DRAWN_TRANSPOSES)
{
    FL_REQUIRE_GPU();
    transpose_problem p;
    transpose_init(&p, s->rows, s->cols, 0x0411 + s->rows * 7 + s->cols);
    char label[128];
    snprintf(label, sizeof label, "transpose_tiled %zux%zu (%s, a shape drawn for this run)",
             s->rows, s->cols, kDrawnKinds[s->kind]);
    transpose_case(&p, label);
    transpose_free(&p);
}

/* ---- misaligned pointers ------------------------------------------------------
 * The API takes any float pointer (a sub-matrix view starts anywhere): in and
 * out each 0 to 3 floats past a 16-byte boundary, with cols and rows
 * multiples of 4 in some cases, so a float4 path that only looks at the
 * shape takes a misaligned address. */
typedef struct {
    size_t rows, cols;
    size_t in_off, out_off; /* floats past a 256-byte boundary */
} misaligned04;

static misaligned04 kMisaligned[] = {
    {1000, 1024, 1, 0}, {1024, 1000, 0, 2}, {259, 96, 3, 1},
};

FL_PARAM_TEST(C_transpose, misaligned, misaligned04, s, kMisaligned,
              sizeof kMisaligned / sizeof kMisaligned[0])
{
    FL_REQUIRE_GPU();
    transpose_problem p;
    transpose_init_at(&p, s->rows, s->cols, 0x0412 + s->rows + s->in_off, s->in_off, s->out_off);
    char label[160];
    snprintf(label, sizeof label, "transpose_tiled %zux%zu with in %zu bytes and out %zu bytes "
             "past a 16-byte boundary (any float pointer is valid)", s->rows, s->cols,
             4 * s->in_off, 4 * s->out_off);
    transpose_case(&p, label);
    transpose_free(&p);
}

/* ---- repeated calls -----------------------------------------------------------
 * Four calls on the same two buffers, each with new contents in `in`: the
 * same shape again, the shape swapped (same element count), a smaller one.
 * A result kept from an earlier call (by pointer, size or shape) is stale. */
FL_TEST(C_transpose, repeated_calls)
{
    FL_REQUIRE_GPU();
    static const struct {
        size_t rows, cols;
        const char *what;
    } kCalls[] = {
        {1823, 781, "the first call"},
        {1823, 781, "the same shape, new contents"},
        {781, 1823, "the shape swapped, new contents"},
        {33, 65, "a smaller shape, new contents"},
    };
    const int ncalls = (int)(sizeof kCalls / sizeof kCalls[0]);
    size_t cap = kCalls[0].rows * kCalls[0].cols;
    float *in = fl_test_dev_alloc(cap * sizeof(float));
    float *out = fl_test_dev_alloc(cap * sizeof(float));
    float *h_in = fl_test_host_alloc(cap * sizeof(float));
    float *h_out = fl_test_host_alloc(cap * sizeof(float));
    double *want = fl_test_host_alloc(cap * sizeof(double));
    for (int k = 0; k < ncalls; ++k) {
        size_t rows = kCalls[k].rows, cols = kCalls[k].cols, n = rows * cols;
        fl_fill_uniform(h_in, n, fl_seed(0x0420 + (uint64_t)k), -1.0f, 1.0f);
        transpose_reference(h_in, want, rows, cols);
        FL_ASSERT_CUDA(fl_upload_f32(in, h_in, n));
        FL_ASSERT_CUDA(fl_poison(out, cap * sizeof(float), 0));
        fl_inputs inputs = {0};
        fl_test_inputs_add(&inputs, "in", in, n * sizeof(float));
        FL_ASSERT_CUDA(transpose_tiled(in, out, rows, cols, 0));
        FL_ASSERT_SYNC("transpose_tiled");
        FL_ASSERT_NO_OVERRUN(out + cap, "transpose_tiled", "out");
        FL_ASSERT_INPUTS(&inputs, "transpose_tiled");
        FL_ASSERT_CUDA(fl_download_f32(h_out, out, cap));
        fl_compare_opts o = fl_compare_defaults("out", 0.0, 0.0);
        o.cols = rows;
        fl_compare_result r = fl_compare_f32(h_out, want, n, &o);
        cr_assert(r.n_bad == 0, "transpose_tiled call %d of %d on the same buffers (%zux%zu, %s): "
                  "%s -- each call must transpose what `in` holds now: keep nothing from an "
                  "earlier call", k + 1, ncalls, rows, cols, kCalls[k].what, r.message);
        size_t past = 0;
        for (size_t i = n; i < cap; ++i) past += !fl_is_poison_f32(h_out[i]);
        cr_assert(past == 0, "transpose_tiled call %d of %d (%zux%zu): wrote %zu elements past "
                  "element %zu of out, the last of a %zux%zu result (out is larger here) -- "
                  "write only the rows * cols elements of the transpose", k + 1, ncalls, rows,
                  cols, past, n - 1, cols, rows);
    }
    (void)cudaFree(in);
    (void)cudaFree(out);
    free(h_in); free(h_out); free(want);
}

/* ---- the stream argument ------------------------------------------------------
 * fl_test_stream_honoured runs the launcher on a fresh non-blocking stream
 * while the legacy default stream is held busy, waits for that stream alone
 * and checks the output: work queued anywhere else is not done yet, and a
 * launcher that waits for the GPU never returns in time. The check reads out
 * back on a stream of its own, into pinned memory: nothing it does waits for
 * the busy default stream. */
typedef struct {
    transpose_problem *p;
    cudaStream_t copy;
    float *h_pinned;
} stream_case;

static cudaError_t stream_run(void *ctx, cudaStream_t s)
{
    transpose_problem *p = ((stream_case *)ctx)->p;
    return transpose_tiled(p->in, p->out, p->rows, p->cols, s);
}

static cudaError_t stream_poison(void *ctx, cudaStream_t s)
{
    transpose_problem *p = ((stream_case *)ctx)->p;
    return fl_poison(p->out, p->rows * p->cols * sizeof(float), s);
}

static int stream_check(void *ctx, char *msg, size_t len)
{
    stream_case *sc = ctx;
    transpose_problem *p = sc->p;
    size_t n = p->rows * p->cols;
    cudaError_t e = cudaMemcpyAsync(sc->h_pinned, p->out, n * sizeof(float),
                                    cudaMemcpyDeviceToHost, sc->copy);
    if (e == cudaSuccess) e = cudaStreamSynchronize(sc->copy);
    if (e != cudaSuccess) {
        snprintf(msg, len, "could not read out back: %s", cudaGetErrorString(e));
        return 0;
    }
    fl_compare_opts o = fl_compare_defaults("out", 0.0, 0.0);
    o.cols = p->rows;
    fl_compare_result r = fl_compare_f32(sc->h_pinned, p->want, n, &o);
    snprintf(msg, len, "%s", r.message);
    return r.n_bad == 0;
}

FL_TEST(C_transpose, stream_honoured)
{
    FL_REQUIRE_GPU();
    transpose_problem p;
    transpose_init(&p, 1823, 781, 0x0430);
    stream_case sc = {&p, NULL, NULL};
    FL_ASSERT_CUDA(cudaStreamCreateWithFlags(&sc.copy, cudaStreamNonBlocking));
    FL_ASSERT_CUDA(cudaMallocHost((void **)&sc.h_pinned, p.rows * p.cols * sizeof(float)));
    fl_test_stream_honoured("transpose_tiled 1823x781", stream_run, stream_poison, stream_check,
                            &sc);
    (void)cudaFreeHost(sc.h_pinned);
    (void)cudaStreamDestroy(sc.copy);
    transpose_free(&p);
}

/* ---- sampled rows of out ------------------------------------------------------
 * For inputs drawn on the GPU (fl_fill_uniform_dev: in[i] = fl_uniform_at(key,
 * i)), the reference of any element is known without the whole input: out
 * row c (column c of in) is fl_uniform_at(key, r * cols + c), r < rows.
 * check_sampled_rows compares k such rows, bitwise, in one comparison. */
typedef struct {
    size_t k;          /* rows compared */
    float *got;        /* k x rows, host */
    double *want;
} row_sample;

static void row_sample_init(row_sample *s, size_t k, size_t rows)
{
    s->k = k;
    s->got = fl_test_host_alloc(k * rows * sizeof(float));
    s->want = fl_test_host_alloc(k * rows * sizeof(double));
}

static void row_sample_free(row_sample *s)
{
    free(s->got);
    free(s->want);
}

/* 1 if out rows idx[0..s->k) hold the transpose of the input drawn from key;
 * else 0 and a message naming `who`, the row and what is wrong with it. */
static int check_sampled_rows(const float *out, size_t rows, size_t cols, uint64_t key,
                              const size_t *idx, row_sample *s, const char *who, char *msg,
                              size_t len)
{
    for (size_t j = 0; j < s->k; ++j) {
        size_t c = idx[j];
        cudaError_t e = cudaMemcpy(s->got + j * rows, out + c * rows, rows * sizeof(float),
                                   cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) {
            snprintf(msg, len, "%s: could not read out back: %s", who, cudaGetErrorString(e));
            return 0;
        }
        for (size_t r = 0; r < rows; ++r)
            s->want[j * rows + r] = fl_uniform_at(key, r * cols + c, -1.0f, 1.0f);
    }
    fl_compare_opts o = fl_compare_defaults("out", 0.0, 0.0);
    fl_compare_result all = fl_compare_f32(s->got, s->want, s->k * rows, &o);
    if (all.n_bad == 0) return 1;
    /* say it for the first wrong row alone, in that row's own positions */
    size_t j = all.first_bad / rows, bad_rows = 0;
    for (size_t q = 0; q < s->k; ++q)
        for (size_t r = 0; r < rows; ++r)
            if (!(s->got[q * rows + r] == (float)s->want[q * rows + r])) {
                bad_rows++;
                break;
            }
    fl_compare_opts o_row = fl_compare_defaults("the row", 0.0, 0.0);
    fl_compare_result one = fl_compare_f32(s->got + j * rows, s->want + j * rows, rows, &o_row);
    snprintf(msg, len, "%s: row %zu of out (column %zu of in) is wrong, %zu of the %zu rows of "
             "out checked: %s", who, idx[j], idx[j], bad_rows, s->k, one.message);
    return 0;
}

/* ---- past 2^32 elements -------------------------------------------------------
 * rows * cols beyond 2^32 (an index held in int goes negative past 2^31, one
 * held in unsigned wraps past 2^32): 6.4e9 elements, 2 x 25.8 GB. A GPU
 * without that much free memory runs the 2.1e9-element shape (past 2^31
 * only, 2 x 8.6 GB) and says so; one without even that skips. The input is
 * drawn on the GPU, and out is checked on L04_SAMPLED_ROWS rows drawn after
 * the call (the first and last among them) and on the rows where the offset
 * into out crosses 2^31 and 2^32. */
typedef struct {
    size_t rows, cols;
    const char *what;
} big_shape;

static const big_shape kBigShapes[] = {
    {98311, 65521, "6.4e9 elements, past 2^32"},
    {46349, 46351, "2.1e9 elements, past 2^31 only: this GPU lacks the memory for 2^32"},
};

Test(C_transpose, past_2_32_elements, .timeout = 120)
{
    if (fl_test_sanitizing())
        cr_skip_test("too large for the sanitizer stage (tens of GB per array)");
    FL_REQUIRE_GPU();
    size_t free_b = 0, total_b = 0;
    FL_ASSERT_CUDA(cudaMemGetInfo(&free_b, &total_b));
    const big_shape *s = NULL;
    double need = 0.0;
    for (size_t k = 0; k < sizeof kBigShapes / sizeof kBigShapes[0] && s == NULL; ++k) {
        need = 2.0 * 4.0 * (double)kBigShapes[k].rows * (double)kBigShapes[k].cols +
               (double)L04_BIG_SLACK_BYTES;
        if (need <= (double)free_b) s = &kBigShapes[k];
    }
    if (s == NULL)
        cr_skip_test("a transpose past 2^31 elements needs %.1f GiB of free GPU memory; this "
                     "GPU has %.1f GiB free", need / (1 << 30), (double)free_b / (1 << 30));
    size_t rows = s->rows, cols = s->cols, n = rows * cols;
    char label[160];
    snprintf(label, sizeof label, "transpose_tiled %zux%zu (%s)", rows, cols, s->what);
    fprintf(stderr, "%s\n", label);

    float *in = fl_test_dev_alloc(n * sizeof(float));
    float *out = fl_test_dev_alloc(n * sizeof(float));
    uint64_t key = fl_test_fresh_key();
    FL_ASSERT_CUDA(fl_fill_uniform_dev(in, n, key, -1.0f, 1.0f, 0));
    FL_ASSERT_CUDA(fl_poison(out, n * sizeof(float), 0));
    fl_inputs inputs = {0};
    fl_test_inputs_add(&inputs, "in", in, n * sizeof(float));
    FL_ASSERT_CUDA(transpose_tiled(in, out, rows, cols, 0));
    FL_ASSERT_SYNC(label);
    FL_ASSERT_NO_OVERRUN(out + n, "transpose_tiled", "out");
    FL_ASSERT_INPUTS(&inputs, "transpose_tiled");

    /* drawn rows, then the rows of out whose offsets straddle 2^31 and 2^32 */
    size_t idx[L04_SAMPLED_ROWS + 2], k = L04_SAMPLED_ROWS;
    fl_test_sample_rows(fl_test_fresh_key(), cols, L04_SAMPLED_ROWS, idx);
    size_t cross31 = ((size_t)1 << 31) / rows, cross32 = ((size_t)1 << 32) / rows;
    if (cross31 < cols) idx[k++] = cross31;
    if (cross32 < cols) idx[k++] = cross32;
    row_sample smp;
    row_sample_init(&smp, k, rows);
    char msg[1536];
    int ok = check_sampled_rows(out, rows, cols, key, idx, &smp, label, msg, sizeof msg);
    cr_assert(ok, "%s -- rows * cols is past 2^31 here: compute every index in size_t (an int "
              "or unsigned index, or a product of two of them, overflows)", msg);
    row_sample_free(&smp);
    (void)cudaFree(in);
    (void)cudaFree(out);
}

/* ---- speed ------------------------------------------------------------------ */

/* A timed variant: its own input and output (so each run's check sees the
 * input that run read), the key its input was last drawn from, the input's
 * checksum after that draw, and room for the sampled rows. Before every run
 * `prepare` draws a new input under a new fl_test_fresh_key() (unpredictable
 * without the grading secret: no earlier run saw it) and poisons the output;
 * after it, `recheck` compares rows of out drawn after the run. */
typedef struct {
    const char *who;
    float *in, *out;
    size_t rows, cols;
    uint64_t key;
    fl_inputs inputs;
    row_sample smp;
} transpose_ctx;

static cudaError_t run_naive(void *ctx, cudaStream_t st)
{
    transpose_ctx *t = ctx;
    return transpose_naive(t->in, t->out, t->rows, t->cols, st);
}

static cudaError_t run_tiled(void *ctx, cudaStream_t st)
{
    transpose_ctx *t = ctx;
    return transpose_tiled(t->in, t->out, t->rows, t->cols, st);
}

static cudaError_t prepare_run(void *ctx, cudaStream_t st)
{
    transpose_ctx *t = ctx;
    size_t n = t->rows * t->cols;
    t->key = fl_test_fresh_key();
    CUDA_CHECK(fl_fill_uniform_dev(t->in, n, t->key, -1.0f, 1.0f, st));
    CUDA_CHECK(fl_poison(t->out, n * sizeof(float), st));
    CUDA_CHECK(cudaStreamSynchronize(st));
    return fl_test_inputs_snapshot(&t->inputs);
}

static int recheck(void *ctx, char *msg, size_t len)
{
    transpose_ctx *t = ctx;
    if (!fl_test_inputs_unchanged(&t->inputs, t->who, msg, len)) return 0;
    size_t idx[L04_SAMPLED_ROWS];
    fl_test_sample_rows(fl_test_fresh_key(), t->cols, L04_SAMPLED_ROWS, idx);
    return check_sampled_rows(t->out, t->rows, t->cols, t->key, idx, &t->smp, t->who, msg, len);
}

static void ctx_init(transpose_ctx *t, const char *who, float *in, float *out, size_t rows,
                     size_t cols)
{
    memset(t, 0, sizeof *t);
    t->who = who;
    t->in = in;
    t->out = out;
    t->rows = rows;
    t->cols = cols;
    fl_test_inputs_add(&t->inputs, "in", in, rows * cols * sizeof(float));
    row_sample_init(&t->smp, L04_SAMPLED_ROWS, rows);
}

Test(speed, tiled_vs_naive_transpose)
{
    FL_REQUIRE_GPU();
    /* the whole output once, at the speed test's size, before timing */
    transpose_problem p;
    transpose_init(&p, L04_TRANSPOSE_N, L04_TRANSPOSE_N, 0x0402);
    char label[64];
    snprintf(label, sizeof label, "transpose_tiled %zux%zu", p.rows, p.cols);
    transpose_case(&p, label);

    size_t n = p.rows * p.cols;
    transpose_ctx naive, tiled;
    ctx_init(&naive, "transpose_naive", fl_test_dev_alloc(n * sizeof(float)),
             fl_test_dev_alloc(n * sizeof(float)), p.rows, p.cols);
    ctx_init(&tiled, "transpose_tiled", p.in, p.out, p.rows, p.cols);
    double bytes = 2.0 * 4.0 * (double)n;
    fl_variant base = {.name = "naive transpose", .run = run_naive, .ctx = &naive,
                       .bytes = bytes, .prepare = prepare_run, .check = recheck};
    fl_variant cand = {.name = "tiled transpose", .run = run_tiled, .ctx = &tiled,
                       .bytes = bytes, .prepare = prepare_run, .check = recheck};
    fl_test_speed("8192x8192", &base, &cand, L04_MIN_TRANSPOSE_SPEEDUP,
                  L04_MIN_TRANSPOSE_PCT_CEILING);
    row_sample_free(&naive.smp);
    row_sample_free(&tiled.smp);
    (void)cudaFree(naive.in);
    (void)cudaFree(naive.out);
    transpose_free(&p);
}
