/* tests/test_05_flash_attention.c — lesson 05: flash-attention-lite.
 *
 * Built twice: against lessons/05-flash-attention/attention_fused.cu (the
 * student's file; `./lab check 05`) and against solutions/05-flash-attention
 * (`./lab test`).
 *
 *   A_fused_f32::*      Part A, float32: |O - ref| <= 1e-4 + 1e-4 |ref| against
 *                       a double-precision CPU reference (seq <= 1024), or
 *                       against the unfused float32 path (seq 4096), itself
 *                       checked against the CPU on sampled rows
 *     correct           seq 1, 7, 97, 113, 1024, 4096; head_dim 64 and 128;
 *                       causal or not; scores near +-100
 *     tile_edges        seq 63, 64, 65, 127, 128, 129, 255, 257 (the edges of
 *                       every power-of-two tile from 32 to 256), causal or not
 *     scale             scale 0.3, 0.02 and 1.0 instead of 1/sqrt(head_dim)
 *     shifted_scores    every score of every row far below zero (about -128
 *                       and -181 after the scale): softmax is shift-invariant,
 *                       and a running max started at 0 makes every weight 0
 *     limits            head_dim 0, -64, 32, 63, 65, 96, 127, 129, 256 are
 *                       refused (an error, O untouched, no error left behind);
 *                       seq 0 and batch_heads 0 write nothing, negative ones
 *                       are refused; a pointer one element off 16-byte
 *                       alignment (each of q, k, v, o in turn) is refused
 *                       or handled right, never a crash; pointers 16, 32 and
 *                       48 bytes past a cudaMalloc start work
 *     batch_heads_limit 65535 heads (the most a grid's y dimension holds)
 *                       right; 65542 heads right or refused, writing nothing
 *     huge              more than 2^32 elements per tensor (2^31 where the
 *                       GPU's memory does not allow that; skipped where it
 *                       allows neither), sampled rows and the rows at the
 *                       2^31 and 2^32 element boundaries
 *     stream            all work queued on the stream it is given (the legacy
 *                       default stream held busy meanwhile), and the
 *                       launcher returns without waiting for the GPU
 *     same_result_twice bit-identical runs (races)
 *   A_memory::*         Part A allocates no O(seq²) buffer: it runs at a seq
 *                       where S alone would not fit in this GPU's memory, with
 *                       the free device memory read around the call
 *   B_fused_f16::*      Part B (bonus), float16: error against the float32
 *                       reference at most 2x the unfused float16 path's, plus
 *                       1e-3 (about one float16 rounding of a value near 1)
 *     correct, tile_edges, scale, shifted_scores, limits, batch_heads_limit,
 *                       huge, stream as in Part A (scales 0.3, 0.02, 0.2)
 *     range_edges       inputs at float16's range edges: Q·K past 65504 (a
 *                       small scale brings the scores back), V near 65504, V
 *                       in the subnormal range, scores near +-100, a scale of
 *                       300 with |Q| up to 200 (Q times the scale past 65504);
 *                       the 1e-3 scales with the largest |O|
 *   baseline::*         the unfused baseline (complete; if it fails, the
 *                       course is broken, not your kernel)
 *   speed::*            Part A: fused >= 1.0x unfused, float32, seq 4096
 *   speed_bonus_f16::*  Part B: fused >= 2.0x unfused, float16, seq 4096
 *
 * The speed checks first check one run against the full reference, then give
 * every warm-up and timed run freshly drawn inputs (from keys nobody can
 * predict without the grading secret), and check each run's output on rows
 * drawn after the run against the CPU: a result kept from an earlier call,
 * by pointer or by content, is wrong there.
 */
#include "fl_test.h"
#include "thresholds.h"
#include "data.h"
#include "attention.h"
#include "attention_reference.h"

#ifdef FL_TEST_WGMMA
/* test_05_flash_attention_wgmma (CMakeLists.txt): this file again, built
 * against the worked solution with its sm_90a code, where every call of
 * attention_fused_f16 below is a call of the going-further Hopper kernel's
 * launcher (attention.h) and Part B's suite is run (ctest
 * 05-flash-attention/solution-wgmma). It needs a Hopper GPU: elsewhere that
 * launcher says cudaErrorNotSupported, and every case skips. */
#define attention_fused_f16 attention_fused_f16_wgmma
#undef FL_REQUIRE_GPU
#define FL_REQUIRE_GPU()                                                      \
    do {                                                                      \
        if (fl_test_gpu_count() == 0) FL_SKIP_CASE("no CUDA device");         \
        if (!hopper_here())                                                   \
            FL_SKIP_CASE("no Hopper GPU (compute capability 9.0): the wgmma " \
                         "kernel runs only there");                           \
    } while (0)
static int hopper_here(void)
{
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
        return 0;
    return major == 9 && minor == 0;
}
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(A_fused_f32, .timeout = 120);
TestSuite(A_memory, .timeout = 120);
TestSuite(B_fused_f16, .timeout = 120);
TestSuite(baseline, .timeout = 120);
TestSuite(speed, .timeout = 180);
TestSuite(speed_bonus_f16, .timeout = 180);

/* Largest seq with a full CPU reference (its cost grows as seq²). */
#define CPU_MAX_SEQ 1024

/* The most blocks a grid holds in its y (and z) dimension. */
#define GRID_Y_MAX 65535

/* ---- shapes ------------------------------------------------------------------ */

typedef struct {
    int seq, head_dim, causal, batch_heads;
    float amp;   /* standard deviation of Q and K; 6 makes scores of +-100 */
    float scale; /* 0: the usual 1/sqrt(head_dim); else the scale passed */
} shape05;

/* seq 1, 7, 97, 113 are below or between tile sizes; 1024 and 4096 span many
 * tiles. Both head sizes, with and without the causal mask. */
#define SHAPES_ALL_SEQ(d, c)                                                               \
    {1, d, c, 3, 1.0f, 0.0f}, {7, d, c, 3, 1.0f, 0.0f}, {97, d, c, 3, 1.0f, 0.0f},         \
        {113, d, c, 3, 1.0f, 0.0f}, {1024, d, c, 2, 1.0f, 0.0f}, {4096, d, c, 2, 1.0f, 0.0f}

static shape05 kShapesF32[] = {
    SHAPES_ALL_SEQ(64, 0),  SHAPES_ALL_SEQ(64, 1),   SHAPES_ALL_SEQ(128, 0),
    SHAPES_ALL_SEQ(128, 1), {97, 64, 0, 3, 6.0f, 0.0f}, {113, 128, 1, 2, 6.0f, 0.0f},
};
static shape05 kShapesF16[] = {
    SHAPES_ALL_SEQ(64, 0), SHAPES_ALL_SEQ(64, 1), SHAPES_ALL_SEQ(128, 0), SHAPES_ALL_SEQ(128, 1),
};
#define N_F32 (sizeof kShapesF32 / sizeof kShapesF32[0])
#define N_F16 (sizeof kShapesF16 / sizeof kShapesF16[0])

/* Tile edges: one below, at and one above 64 and 128, and around 256; every
 * power-of-two tile from 32 to 256 rows or keys has an edge among them. */
static const int kEdgeSeqs[] = {63, 64, 65, 127, 128, 129, 255, 257};
#define N_EDGE_SEQS (sizeof kEdgeSeqs / sizeof kEdgeSeqs[0])
static int kHeadDims[] = {64, 128};

/* Scales other than 1/sqrt(head_dim) (0.125 and 0.088): larger, much smaller
 * and (float32) 1.0, where the scores reach +-25. float16 stops at 0.3: the
 * unfused float16 path keeps S in float16, and its own error (the yardstick
 * of Part B) grows with |S|. */
static const shape05 kScaleF32[] = {
    {97, 64, 0, 3, 1.0f, 0.3f}, {113, 128, 1, 2, 1.0f, 0.02f}, {129, 64, 1, 2, 1.0f, 1.0f}};
static const shape05 kScaleF16[] = {
    {97, 64, 0, 3, 1.0f, 0.3f}, {113, 128, 1, 2, 1.0f, 0.02f}, {129, 128, 0, 2, 1.0f, 0.2f}};
#define N_SCALES 3

static void shape_label(const shape05 *s, char *buf, size_t len)
{
    char scale[48] = "";
    if (s->scale > 0.0f) snprintf(scale, sizeof scale, " scale=%g", (double)s->scale);
    snprintf(buf, len, "seq=%d head_dim=%d batch_heads=%d%s%s%s", s->seq, s->head_dim,
             s->batch_heads, s->causal ? " causal" : "", scale,
             s->amp > 1.0f ? " (large scores: Q, K ~ N(0, 36))" : "");
}

static const char *who_of(attn_dtype t)
{
    return t == ATTN_F16 ? "attention_fused_f16" : "attention_fused_f32";
}

/* Under the sanitizer stage: only the short shapes (seq 1, 7, 97, 113: a
 * partial tile, two tiles, both head sizes, causal or not). racecheck and
 * initcheck follow every shared-memory access of every tile: at seq 1024
 * they take minutes per case. */
#define SANITIZE_MAX_SEQ 128
static void skip_if_sanitizing(const shape05 *s)
{
    if (fl_test_sanitizing() && s->seq > SANITIZE_MAX_SEQ)
        FL_SKIP_CASE("seq %d is too long for the sanitizer stage (it runs seq <= %d)", s->seq,
                     SANITIZE_MAX_SEQ);
}

/* ---- one problem: inputs, reference, device buffers ------------------------- */

typedef struct {
    shape05 s;
    attn_dtype dtype;
    size_t n;              /* elements per tensor: batch_heads * seq * head_dim */
    float scale;           /* s.scale, or 1 / sqrt(head_dim) */
    float *q, *k, *v;      /* host inputs as float (float16 problems: the float16 values) */
    uint16_t *hq, *hk, *hv;/* host float16 inputs (float16 problems) */
    double *want;          /* the reference O */
    double smax;           /* largest |score| the CPU reference saw (0: not computed) */
    float *got;            /* an output read back, as float */
    uint16_t *hgot;        /* an output read back, float16 */
    void *dq, *dk, *dv;    /* device inputs in the problem's dtype */
    void *dout;            /* device output */
    void *base[4];         /* the allocations dq, dk, dv, dout sit in */
} problem05;

static size_t elem_size(attn_dtype t) { return t == ATTN_F16 ? 2 : 4; }

/* Host and device buffers for shape s; device tensor i starts off[i] bytes
 * into an allocation that ends where the tensor does (so the guard zone
 * still follows O). off NULL: at the start, as cudaMalloc returns them. */
static void problem_alloc(problem05 *p, const shape05 *s, attn_dtype dtype, const size_t *off)
{
    memset(p, 0, sizeof *p);
    p->s = *s;
    p->dtype = dtype;
    p->n = (size_t)s->batch_heads * s->seq * s->head_dim;
    p->scale = s->scale > 0.0f ? s->scale : 1.0f / sqrtf((float)s->head_dim);
    size_t n = p->n;
    p->q = fl_test_host_alloc(n * sizeof(float));
    p->k = fl_test_host_alloc(n * sizeof(float));
    p->v = fl_test_host_alloc(n * sizeof(float));
    p->want = fl_test_host_alloc(n * sizeof(double));
    p->got = fl_test_host_alloc(n * sizeof(float));
    if (dtype == ATTN_F16) {
        p->hq = fl_test_host_alloc(n * sizeof(uint16_t));
        p->hk = fl_test_host_alloc(n * sizeof(uint16_t));
        p->hv = fl_test_host_alloc(n * sizeof(uint16_t));
        p->hgot = fl_test_host_alloc(n * sizeof(uint16_t));
    }
    size_t bytes = n * elem_size(dtype);
    void **d[4] = {&p->dq, &p->dk, &p->dv, &p->dout};
    for (int i = 0; i < 4; ++i) {
        size_t o = off ? off[i] : 0;
        p->base[i] = fl_test_dev_alloc(bytes + o);
        *d[i] = (char *)p->base[i] + o;
    }
}

/* Copy the host inputs to the device. float16: round them to float16 first
 * and keep the rounded values as float, so the reference is the exact
 * attention of the float16 inputs. */
static void problem_upload(problem05 *p)
{
    size_t n = p->n;
    float *f[3] = {p->q, p->k, p->v};
    void *d[3] = {p->dq, p->dk, p->dv};
    if (p->dtype == ATTN_F16) {
        uint16_t *h[3] = {p->hq, p->hk, p->hv};
        for (int i = 0; i < 3; ++i) {
            attention_f32_to_f16(f[i], h[i], n);
            attention_f16_to_f32(h[i], f[i], n);
            FL_ASSERT_CUDA(cudaMemcpy(d[i], h[i], n * sizeof(uint16_t), cudaMemcpyHostToDevice));
        }
    } else {
        for (int i = 0; i < 3; ++i) FL_ASSERT_CUDA(fl_upload_f32(d[i], f[i], n));
    }
}

static void problem_init_at(problem05 *p, const shape05 *s, attn_dtype dtype, uint64_t seed,
                            const size_t *off)
{
    problem_alloc(p, s, dtype, off);
    fl_fill_normal(p->q, p->n, fl_seed(seed + 1), 0.0f, s->amp);
    fl_fill_normal(p->k, p->n, fl_seed(seed + 2), 0.0f, s->amp);
    fl_fill_normal(p->v, p->n, fl_seed(seed + 3), 0.0f, 1.0f);
    problem_upload(p);
}

static void problem_init(problem05 *p, const shape05 *s, attn_dtype dtype, uint64_t seed)
{
    problem_init_at(p, s, dtype, seed, NULL);
}

static void problem_free(problem05 *p)
{
    for (int i = 0; i < 4; ++i) (void)cudaFree(p->base[i]);
    free(p->q); free(p->k); free(p->v); free(p->want); free(p->got);
    free(p->hq); free(p->hk); free(p->hv); free(p->hgot);
}

/* Read an output back as float (float16 converted; its poison stays poison). */
static void read_output(problem05 *p, const void *dev)
{
    if (p->dtype == ATTN_F16) {
        FL_ASSERT_CUDA(cudaMemcpy(p->hgot, dev, p->n * sizeof(uint16_t), cudaMemcpyDeviceToHost));
        attention_f16_to_f32(p->hgot, p->got, p->n);
    } else {
        FL_ASSERT_CUDA(fl_download_f32(p->got, dev, p->n));
    }
}

/* ---- the CPU reference (attention_reference.h, which the bench uses too) ---- */

/* Rows checked against the CPU where the full reference would be too slow:
 * the first, the middle and the last rows of the first and the last head,
 * and a few drawn at random. */
#define N_SAMPLED 20
static void sampled_rows(const shape05 *s, uint64_t seed, int *head, int *row)
{
    int fixed[6] = {0, 1, 2, s->seq / 2, s->seq - 2, s->seq - 1};
    fl_rng r = fl_rng_make(seed);
    for (int i = 0; i < N_SAMPLED; ++i) {
        head[i] = (i / 6) % 2 ? s->batch_heads - 1 : 0;
        row[i] = i < 12 ? fixed[i % 6] : (int)(fl_rng_u64(&r) % (uint64_t)s->seq);
        if (row[i] < 0) row[i] = 0;
        if (i >= 12) head[i] = (int)(fl_rng_u64(&r) % (uint64_t)s->batch_heads);
    }
}

/* Compare rows (head[i], row[i]) of a device output with the CPU. */
static fl_compare_result check_sampled(const problem05 *p, const void *dev_out,
                                       const char *what, double atol, double rtol)
{
    int d = p->s.head_dim, head[N_SAMPLED], row[N_SAMPLED];
    sampled_rows(&p->s, 0x5A3D, head, row);
    float *got = fl_test_host_alloc((size_t)N_SAMPLED * d * sizeof(float));
    uint16_t *hgot = fl_test_host_alloc((size_t)d * sizeof(uint16_t));
    double *want = fl_test_host_alloc((size_t)N_SAMPLED * d * sizeof(double));
    double *scratch = fl_test_host_alloc((size_t)p->s.seq * sizeof(double));
    for (int i = 0; i < N_SAMPLED; ++i) {
        size_t off = ((size_t)head[i] * p->s.seq + row[i]) * d;
        attention_reference_row(p->q, p->k, p->v, p->s.seq, d, p->s.causal, p->scale, head[i],
                                row[i], scratch, want + (size_t)i * d);
        if (p->dtype == ATTN_F16) {
            FL_ASSERT_CUDA(cudaMemcpy(hgot, (const uint16_t *)dev_out + off,
                                      d * sizeof(uint16_t), cudaMemcpyDeviceToHost));
            attention_f16_to_f32(hgot, got + (size_t)i * d, d);
        } else {
            FL_ASSERT_CUDA(cudaMemcpy(got + (size_t)i * d, (const float *)dev_out + off,
                                      d * sizeof(float), cudaMemcpyDeviceToHost));
        }
    }
    fl_compare_opts o = fl_compare_defaults(what, atol, rtol);
    o.cols = (size_t)d;
    fl_compare_result r = fl_compare_f32(got, want, (size_t)N_SAMPLED * d, &o);
    free(got); free(hgot); free(want); free(scratch);
    return r;
}

/* The unfused float32 path on p's inputs (float16 problems: their float
 * values) into a new device buffer; the caller frees it. */
static float *run_unfused_f32(const problem05 *p)
{
    const shape05 *s = &p->s;
    size_t bytes = p->n * sizeof(float);
    float *q = (float *)p->dq, *k = (float *)p->dk, *v = (float *)p->dv;
    float *tmp[3] = {NULL, NULL, NULL};
    if (p->dtype == ATTN_F16) { /* float copies of the float16 values */
        const float *h[3] = {p->q, p->k, p->v};
        for (int i = 0; i < 3; ++i) {
            tmp[i] = fl_test_dev_alloc(bytes);
            FL_ASSERT_CUDA(fl_upload_f32(tmp[i], h[i], p->n));
        }
        q = tmp[0]; k = tmp[1]; v = tmp[2];
    }
    float *out = fl_test_dev_alloc(bytes);
    void *ws = NULL;
    FL_ASSERT_CUDA(attention_unfused_workspace_alloc(ATTN_F32, s->batch_heads, s->seq, &ws));
    FL_ASSERT_CUDA(attention_unfused_f32(q, k, v, out, s->batch_heads, s->seq, s->head_dim,
                                         p->scale, s->causal, ws,
                                         attention_unfused_workspace_bytes(ATTN_F32, s->batch_heads, s->seq),
                                         0));
    FL_ASSERT_SYNC("attention_unfused_f32 (the reference)");
    (void)cudaFree(ws);
    for (int i = 0; i < 3; ++i) (void)cudaFree(tmp[i]);
    return out;
}

/* p->want = the float32 reference of p's inputs: the CPU's for
 * seq <= CPU_MAX_SEQ (p->smax: its largest |score|), else the unfused
 * float32 path after checking it against the CPU on sampled rows. */
static void make_reference(problem05 *p)
{
    const shape05 *s = &p->s;
    int d = s->head_dim;
    if (s->seq <= CPU_MAX_SEQ) {
        double *scratch = fl_test_host_alloc((size_t)s->seq * sizeof(double));
        p->smax = 0.0;
        for (int h = 0; h < s->batch_heads; ++h)
            for (int i = 0; i < s->seq; ++i) {
                double m = attention_reference_row(p->q, p->k, p->v, s->seq, d, s->causal,
                                                   p->scale, h, i, scratch,
                                                   p->want + ((size_t)h * s->seq + i) * d);
                if (m > p->smax) p->smax = m;
            }
        free(scratch);
        return;
    }
    float *ref = run_unfused_f32(p);
    problem05 as_f32 = *p;
    as_f32.dtype = ATTN_F32;
    fl_compare_result r = check_sampled(&as_f32, ref, "O (unfused float32)", L05_F32_ATOL, L05_F32_RTOL);
    char label[128];
    shape_label(s, label, sizeof label);
    cr_assert(r.n_bad == 0,
              "the course's unfused float32 path, used as the reference at %s, disagrees "
              "with the CPU on sampled rows (the course is broken, not your kernel): %s",
              label, r.message);
    FL_ASSERT_CUDA(fl_download_f32(p->got, ref, p->n));
    for (size_t i = 0; i < p->n; ++i) p->want[i] = (double)p->got[i];
    (void)cudaFree(ref);
}

/* What to look at when the fused output is wrong, from the shape. */
static const char *attention_hint(const shape05 *s, const fl_compare_result *r)
{
    if (r->n_unwritten == r->n)
        return "";
    if (r->n_nonfinite > 0 && s->amp > 1.0f)
        return " -- with scores near 100, exp overflows unless every exponent is taken "
               "against the running max (exp2(s - m_new) <= 1)";
    if (r->n_nonfinite > 0)
        return " -- NaN/inf: a row with every key masked so far has m = -inf, and "
               "exp2(-inf - (-inf)) is NaN: take exponents against 0 while m is -inf; "
               "and divide by the row's l summed over all its threads";
    if (s->causal)
        return " -- causal: a key after the query must be -inf before the row max is "
               "taken (key > query), and tiles past the diagonal must not add anything";
    if (s->seq % 64 != 0)
        return " -- seq is not a multiple of the tile: keys past seq must be masked "
               "(-inf) even though their K rows are zeros, and rows past seq are never stored";
    return " -- check the rescaling: when m grows, both l and the O accumulator must be "
           "multiplied by exp2(m_old - m_new) before the new tile is added";
}

/* ---- running the fused kernels, judging their output ------------------------- */

static cudaError_t launch_fused(const problem05 *p, void *out, cudaStream_t st)
{
    const shape05 *s = &p->s;
    if (p->dtype == ATTN_F16)
        return attention_fused_f16(p->dq, p->dk, p->dv, out, s->batch_heads, s->seq,
                                   s->head_dim, p->scale, s->causal, st);
    return attention_fused_f32(p->dq, p->dk, p->dv, out, s->batch_heads, s->seq, s->head_dim,
                               p->scale, s->causal, st);
}

/* Run the fused launcher once on poisoned output; assert it neither wrote
 * past the end of O nor changed Q, K or V. */
static void run_guarded(problem05 *p, const char *name)
{
    size_t bytes = p->n * elem_size(p->dtype);
    FL_ASSERT_CUDA(fl_poison(p->dout, bytes, 0));
    fl_inputs in = {0};
    fl_test_inputs_add(&in, "Q", p->dq, bytes);
    fl_test_inputs_add(&in, "K", p->dk, bytes);
    fl_test_inputs_add(&in, "V", p->dv, bytes);
    FL_ASSERT_CUDA(launch_fused(p, p->dout, 0));
    FL_ASSERT_SYNC(name);
    FL_ASSERT_NO_OVERRUN((char *)p->dout + bytes, name, "O");
    FL_ASSERT_INPUTS(&in, name);
}

/* Max |out - want| of the unfused float16 path on p, checked to be within
 * `sanity` (else the course is broken). */
static uint16_t *run_unfused_f16(const problem05 *p)
{
    const shape05 *s = &p->s;
    uint16_t *out = fl_test_dev_alloc(p->n * sizeof(uint16_t));
    void *ws = NULL;
    FL_ASSERT_CUDA(attention_unfused_workspace_alloc(ATTN_F16, s->batch_heads, s->seq, &ws));
    FL_ASSERT_CUDA(attention_unfused_f16(p->dq, p->dk, p->dv, out, s->batch_heads, s->seq,
                                         s->head_dim, p->scale, s->causal, ws,
                                         attention_unfused_workspace_bytes(ATTN_F16, s->batch_heads, s->seq),
                                         0));
    FL_ASSERT_SYNC("attention_unfused_f16");
    (void)cudaFree(ws);
    return out;
}

static double unfused_f16_error(problem05 *p, const char *label, double sanity)
{
    uint16_t *out = run_unfused_f16(p);
    read_output(p, out);
    (void)cudaFree(out);
    fl_compare_opts o = fl_compare_defaults("O (unfused float16)", sanity, 0.0);
    o.cols = (size_t)p->s.head_dim;
    fl_compare_result r = fl_compare_f32(p->got, p->want, p->n, &o);
    cr_assert(r.n_bad == 0,
              "the course's unfused float16 path at %s is off by more than %g (the course is "
              "broken, not your kernel): %s",
              label, sanity, r.message);
    return r.max_abs_err;
}

/* The allowed error of a fused output: |O - want| <= atol + rtol |want|.
 * float16: atol = L05_F16_FACTOR x the unfused float16 path's error on the
 * same inputs + L05_F16_ATOL x mag (mag: 1 for inputs of about unit size,
 * the largest |O| for the range cases). */
typedef struct {
    double atol, rtol;
    double err_unfused, extra; /* float16: the two terms of atol */
} tol05;

static tol05 fused_tol(problem05 *p, const char *label, double mag, double sanity)
{
    tol05 t = {L05_F32_ATOL, L05_F32_RTOL, 0.0, 0.0};
    if (p->dtype == ATTN_F16) {
        t.err_unfused = unfused_f16_error(p, label, sanity);
        t.extra = L05_F16_ATOL * mag;
        t.atol = L05_F16_FACTOR * t.err_unfused + t.extra;
        t.rtol = 0.0;
    }
    return t;
}

/* Assert that the fused output at dev (p's shape and dtype) matches want.
 * hint: what to look at when it does not (NULL: a guess from the shape). */
static void assert_output(problem05 *p, const void *dev, const double *want, const tol05 *t,
                          const char *label, const char *hint)
{
    read_output(p, dev);
    fl_compare_opts o = fl_compare_defaults("O", t->atol, t->rtol);
    o.cols = (size_t)p->s.head_dim;
    fl_compare_result r = fl_compare_f32(p->got, want, p->n, &o);
    const char *h = r.n_unwritten == r.n ? "" : hint ? hint : attention_hint(&p->s, &r);
    if (p->dtype == ATTN_F32) {
        cr_assert(r.n_bad == 0, "attention_fused_f32 %s: %s (rows are head * seq + query)%s",
                  label, r.message, h);
        return;
    }
    cr_assert(r.n_bad == 0,
              "attention_fused_f16 %s: %s (rows are head * seq + query; allowed error %.2e = "
              "%.0f x the unfused float16 path's %.2e + %.0e)%s%s",
              label, r.message, t->atol, L05_F16_FACTOR, t->err_unfused, t->extra, h,
              r.n_bad > 0 && r.n_unwritten == 0 && r.n_nonfinite == 0
                  ? " -- and keep S, m, l and the O accumulator in float32: only the mma "
                    "operands (Q, K, V and P) are float16"
                  : "");
}

/* One shape, start to end: inputs, reference, a guarded run, the check. */
static void fused_case(const shape05 *s, attn_dtype dtype, uint64_t seed, const char *hint)
{
    char label[128];
    shape_label(s, label, sizeof label);
    problem05 p;
    problem_init(&p, s, dtype, seed);
    make_reference(&p);
    tol05 t = fused_tol(&p, label, 1.0, L05_F16_BASELINE_ATOL);
    run_guarded(&p, who_of(dtype));
    assert_output(&p, p.dout, p.want, &t, label, hint);
    problem_free(&p);
}

/* ---- A_fused_f32 and B_fused_f16: shapes --------------------------------------- */

FL_PARAM_TEST(A_fused_f32, correct, shape05, s, kShapesF32, N_F32)
{
    skip_if_sanitizing(s); /* before CUDA starts: a skipped case costs no context */
    FL_REQUIRE_GPU();
    fused_case(s, ATTN_F32, 0xA500 + (uint64_t)s->seq * 4 + s->head_dim + s->causal, NULL);
}

FL_PARAM_TEST(B_fused_f16, correct, shape05, s, kShapesF16, N_F16)
{
    skip_if_sanitizing(s); /* before CUDA starts: a skipped case costs no context */
    FL_REQUIRE_GPU();
    fused_case(s, ATTN_F16, 0xB500 + (uint64_t)s->seq * 4 + s->head_dim + s->causal, NULL);
}

/* Every seq of kEdgeSeqs, causal and not, at one head size. */
static void tile_edges_case(attn_dtype dtype, int d)
{
    if (fl_test_sanitizing())
        FL_SKIP_CASE("the sanitizer stage runs the short shapes of `correct` (the same code "
                     "paths: a partial tile, two tiles)");
    FL_REQUIRE_GPU();
    for (size_t i = 0; i < N_EDGE_SEQS; ++i)
        for (int causal = 0; causal < 2; ++causal) {
            shape05 s = {kEdgeSeqs[i], d, causal, 2, 1.0f, 0.0f};
            fused_case(&s, dtype, 0xED00 + 16 * i + 2 * causal + (uint64_t)d + dtype, NULL);
        }
}

FL_PARAM_TEST(A_fused_f32, tile_edges, int, d, kHeadDims, 2) { tile_edges_case(ATTN_F32, *d); }

FL_PARAM_TEST(B_fused_f16, tile_edges, int, d, kHeadDims, 2) { tile_edges_case(ATTN_F16, *d); }

/* The scale argument at values other than 1/sqrt(head_dim). */
static void scale_case(attn_dtype dtype)
{
    if (fl_test_sanitizing())
        FL_SKIP_CASE("the scale changes no memory access: the sanitizer stage runs `correct`");
    FL_REQUIRE_GPU();
    const shape05 *tab = dtype == ATTN_F16 ? kScaleF16 : kScaleF32;
    for (int i = 0; i < N_SCALES; ++i) {
        char hint[256];
        snprintf(hint, sizeof hint,
                 " -- this case passes scale=%g where the others pass 1/sqrt(head_dim) = %.4g: "
                 "S = Q Kᵀ · scale with the scale argument as given (scale_log2 = scale · "
                 "log2 e), never one recomputed from head_dim",
                 (double)tab[i].scale, 1.0 / sqrt((double)tab[i].head_dim));
        fused_case(&tab[i], dtype, 0x5CA0 + 4 * (uint64_t)i + dtype, hint);
    }
}

FL_TEST(A_fused_f32, scale) { scale_case(ATTN_F32); }
FL_TEST(B_fused_f16, scale) { scale_case(ATTN_F16); }

/* ---- limits: what the launchers refuse, and alignment --------------------------- */

/* Poison O (p's whole output), call the launcher on p's buffers with these
 * arguments, wait for the GPU and tell whether O changed. fault_hint: what
 * to say when the GPU reports an error (NULL: the usual hint). */
static cudaError_t call_watching_o(problem05 *p, int bh, int seq, int d, float scale, int causal,
                                   const char *what, const char *fault_hint, int *touched)
{
    const char *who = who_of(p->dtype);
    size_t bytes = p->n * elem_size(p->dtype);
    uint64_t before = 0, after = 0;
    FL_ASSERT_CUDA(fl_poison(p->dout, bytes, 0));
    FL_ASSERT_CUDA(cudaDeviceSynchronize());
    FL_ASSERT_CUDA(fl_checksum(p->dout, bytes, &before));
    cudaError_t e = p->dtype == ATTN_F16
                        ? attention_fused_f16(p->dq, p->dk, p->dv, p->dout, bh, seq, d, scale,
                                              causal, 0)
                        : attention_fused_f32(p->dq, p->dk, p->dv, p->dout, bh, seq, d, scale,
                                              causal, 0);
    cudaError_t se = cudaDeviceSynchronize();
    cr_assert(se == cudaSuccess, "%s with %s returned %s, then the GPU reported %s (%s)%s", who,
              what, cudaGetErrorName(e), cudaGetErrorName(se), cudaGetErrorString(se),
              fault_hint ? fault_hint : fl_test_error_hint(se));
    cudaError_t le = cudaGetLastError();
    cr_assert(le == cudaSuccess,
              "%s with %s returned %s but left %s in CUDA's last-error slot: a launcher that "
              "refuses or fails must not leave an error for the caller's next check to find",
              who, what, cudaGetErrorName(e), cudaGetErrorName(le));
    FL_ASSERT_CUDA(fl_checksum(p->dout, bytes, &after));
    *touched = before != after;
    return e;
}

/* head_dim other than 64 and 128; seq or batch_heads 0 or negative. */
static void limits_sizes(attn_dtype dtype)
{
    static const int bad_dims[] = {0, -64, 32, 63, 65, 96, 127, 129, 256};
    static const struct { int bh, seq, empty; } sizes[] = {
        {2, 0, 1}, {0, 7, 1}, {0, 0, 1}, {2, -1, 0}, {-1, 7, 0}, {-2, -7, 0}};
    const char *who = who_of(dtype);
    char what[160];
    int touched = 0;
    /* buffers for head_dim 256, so that a launcher that runs anyway stays inside them */
    shape05 wide = {7, 256, 0, 2, 1.0f, 0.0f};
    problem05 w;
    problem_init(&w, &wide, dtype, 0x11A0);
    for (size_t i = 0; i < sizeof bad_dims / sizeof bad_dims[0]; ++i) {
        snprintf(what, sizeof what, "head_dim=%d (seq=7 batch_heads=2)", bad_dims[i]);
        cudaError_t e = call_watching_o(&w, 2, 7, bad_dims[i], 0.125f, 0, what, NULL, &touched);
        cr_assert(e != cudaSuccess && !touched,
                  "%s with %s returned %s and %s O: the API takes head_dim 64 or 128 only: "
                  "refuse any other with an error (cudaErrorInvalidValue) before launching "
                  "anything, and write nothing",
                  who, what, cudaGetErrorName(e), touched ? "wrote into" : "did not write");
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        snprintf(what, sizeof what, "batch_heads=%d seq=%d head_dim=64", sizes[i].bh,
                 sizes[i].seq);
        cudaError_t e = call_watching_o(&w, sizes[i].bh, sizes[i].seq, 64, 0.125f, 1, what,
                                        NULL, &touched);
        if (sizes[i].empty)
            cr_assert(!touched,
                      "%s with %s returned %s and wrote into O: there is nothing to compute; "
                      "return before launching anything",
                      who, what, cudaGetErrorName(e));
        else
            cr_assert(e != cudaSuccess && !touched,
                      "%s with %s returned %s and %s O: a negative size must be refused with an "
                      "error (cudaErrorInvalidValue), writing nothing",
                      who, what, cudaGetErrorName(e), touched ? "wrote into" : "did not write");
    }
    problem_free(&w);
}

/* Each pointer in turn one element past a 16-byte boundary: refused, or
 * right; then all four 16-byte aligned but not where cudaMalloc puts them. */
static void limits_alignment(attn_dtype dtype)
{
    static const char *names[4] = {"q", "k", "v", "o"};
    const char *who = who_of(dtype);
    shape05 s = {97, 64, 1, 2, 1.0f, 0.0f};
    char label[128], what[256];
    shape_label(&s, label, sizeof label);
    problem05 p0; /* cudaMalloc's pointers: the reference and the tolerance */
    problem_init(&p0, &s, dtype, 0x11A1);
    make_reference(&p0);
    tol05 t = fused_tol(&p0, label, 1.0, L05_F16_BASELINE_ATOL);
    size_t el = elem_size(dtype);
    int touched = 0;
    for (int i = 0; i < 4; ++i) {
        size_t off[4] = {0, 0, 0, 0};
        off[i] = el;
        problem05 pm; /* the same inputs (same seed), one pointer misaligned */
        problem_init_at(&pm, &s, dtype, 0x11A1, off);
        snprintf(what, sizeof what, "%s %zu bytes past a 16-byte boundary (%s)", names[i], el,
                 label);
        cudaError_t e = call_watching_o(
            &pm, s.batch_heads, s.seq, s.head_dim, pm.scale, s.causal, what,
            " -- the API takes 16-byte aligned pointers only (cudaMalloc's are): the launcher "
            "must check q, k, v and o (FL_ALIGNED16) and refuse any other with "
            "cudaErrorInvalidValue before launching anything",
            &touched);
        if (e != cudaSuccess)
            cr_assert(!touched, "%s with %s refused it (%s) but wrote into O: a refusal writes "
                      "nothing", who, what, cudaGetErrorName(e));
        else
            assert_output(&pm, pm.dout, p0.want, &t, what,
                          " -- a pointer that is not 16-byte aligned must be refused "
                          "(cudaErrorInvalidValue), or read without 16-byte vector accesses");
        problem_free(&pm);
    }
    size_t off16[4] = {16, 32, 48, 16};
    problem05 pa;
    problem_init_at(&pa, &s, dtype, 0x11A1, off16);
    snprintf(what, sizeof what,
             "q, k, v and o 16, 32, 48 and 16 bytes past the start of their allocations (%s)",
             label);
    cudaError_t e = call_watching_o(&pa, s.batch_heads, s.seq, s.head_dim, pa.scale, s.causal,
                                    what, NULL, &touched);
    cr_assert(e == cudaSuccess,
              "%s with %s returned %s: these pointers are 16-byte aligned, as the API asks; "
              "only cudaMalloc's own start on 256 bytes",
              who, what, cudaGetErrorName(e));
    FL_ASSERT_NO_OVERRUN((char *)pa.dout + pa.n * el, who, "O");
    assert_output(&pa, pa.dout, p0.want, &t, what,
                  " -- these pointers are 16-byte aligned but not 128- or 256-byte aligned: "
                  "assume no more alignment than the API promises");
    problem_free(&pa);
    problem_free(&p0);
}

FL_TEST(A_fused_f32, limits)
{
    FL_REQUIRE_GPU();
    limits_sizes(ATTN_F32);
    limits_alignment(ATTN_F32);
}

FL_TEST(B_fused_f16, limits)
{
    FL_REQUIRE_GPU();
    limits_sizes(ATTN_F16);
    limits_alignment(ATTN_F16);
}

/* Two runs on the same input must agree bit for bit: a missing
 * __syncthreads() shows up as a difference. */
FL_TEST(A_fused_f32, same_result_twice)
{
    shape05 s = {1024, 64, 1, 2, 1.0f, 0.0f};
    /* the sanitizer's racecheck looks for the same races directly */
    skip_if_sanitizing(&s);
    FL_REQUIRE_GPU();
    problem05 p;
    problem_init(&p, &s, ATTN_F32, 0xA5F0);
    float *second = fl_test_host_alloc(p.n * sizeof(float));
    for (int run = 0; run < 2; ++run) {
        FL_ASSERT_CUDA(fl_poison(p.dout, p.n * sizeof(float), 0));
        FL_ASSERT_CUDA(launch_fused(&p, p.dout, 0));
        FL_ASSERT_SYNC("attention_fused_f32");
        FL_ASSERT_CUDA(fl_download_f32(run ? second : p.got, p.dout, p.n));
    }
    fl_compare_opts o = fl_compare_defaults("O", 0.0, 0.0);
    o.cols = 64;
    fl_compare_result r = fl_compare_runs_f32(p.got, second, p.n, &o);
    cr_assert(r.n_bad == 0, "attention_fused_f32 seq=1024 head_dim=64 causal: %s", r.message);
    free(second);
    problem_free(&p);
}

/* ---- many heads, huge tensors ------------------------------------------------------ */

/* Inputs that repeat every PERIOD_HEADS heads: generated once on the host,
 * copied across the device by doubling. Prime, so that an index that wraps
 * at a power of two lands on a head with other data. */
#define PERIOD_HEADS 61

typedef struct {
    attn_dtype dtype;
    int bh, seq, d, causal;
    float scale;
    size_t n, per, period;      /* elements per tensor, per head; heads of host data */
    float *hq, *hk, *hv;        /* `period` heads (float16 problems: float16 values) */
    void *dq, *dk, *dv, *dout;
} big05;

static void big_init(big05 *b, attn_dtype dtype, int bh, int seq, int d, int causal,
                     uint64_t seed)
{
    memset(b, 0, sizeof *b);
    b->dtype = dtype;
    b->bh = bh;
    b->seq = seq;
    b->d = d;
    b->causal = causal;
    b->scale = 1.0f / sqrtf((float)d);
    b->per = (size_t)seq * d;
    b->n = b->per * bh;
    b->period = bh < PERIOD_HEADS ? (size_t)bh : PERIOD_HEADS;
    size_t el = elem_size(dtype), np = b->per * b->period;
    float **h[3] = {&b->hq, &b->hk, &b->hv};
    void **dev[3] = {&b->dq, &b->dk, &b->dv};
    uint16_t *bits = dtype == ATTN_F16 ? fl_test_host_alloc(np * sizeof(uint16_t)) : NULL;
    for (int t = 0; t < 3; ++t) {
        *h[t] = fl_test_host_alloc(np * sizeof(float));
        fl_fill_uniform(*h[t], np, fl_seed(seed + t), -2.0f, 2.0f);
        const void *src = *h[t];
        if (bits) {
            attention_f32_to_f16(*h[t], bits, np);
            attention_f16_to_f32(bits, *h[t], np);
            src = bits;
        }
        char *d_t = fl_test_dev_alloc(b->n * el);
        *dev[t] = d_t;
        FL_ASSERT_CUDA(cudaMemcpy(d_t, src, np * el, cudaMemcpyHostToDevice));
        for (size_t have = b->period; have < (size_t)bh;) {
            size_t c = have < (size_t)bh - have ? have : (size_t)bh - have;
            FL_ASSERT_CUDA(cudaMemcpy(d_t + have * b->per * el, d_t, c * b->per * el,
                                      cudaMemcpyDeviceToDevice));
            have += c;
        }
    }
    free(bits);
    b->dout = fl_test_dev_alloc(b->n * el);
}

static void big_free(big05 *b)
{
    (void)cudaFree(b->dq);
    (void)cudaFree(b->dk);
    (void)cudaFree(b->dv);
    (void)cudaFree(b->dout);
    free(b->hq); free(b->hk); free(b->hv);
}

static cudaError_t big_launch(const big05 *b, int bh)
{
    if (b->dtype == ATTN_F16)
        return attention_fused_f16(b->dq, b->dk, b->dv, b->dout, bh, b->seq, b->d, b->scale,
                                   b->causal, 0);
    return attention_fused_f32(b->dq, b->dk, b->dv, b->dout, bh, b->seq, b->d, b->scale,
                               b->causal, 0);
}

/* Compare output rows rows[0 .. nrows) (head * seq + query) with the CPU.
 * float16: no unfused run fits these sizes; the bound is the one derived in
 * thresholds.h (L05_F16_SAMPLED_VTOL x max |V| + L05_F16_ATOL; |V| <= 2). */
static fl_compare_result big_check(const big05 *b, const size_t *rows, size_t nrows,
                                   size_t *bad_row)
{
    int d = b->d;
    size_t el = elem_size(b->dtype);
    float *got = fl_test_host_alloc(nrows * d * sizeof(float));
    double *want = fl_test_host_alloc(nrows * d * sizeof(double));
    double *scratch = fl_test_host_alloc((size_t)b->seq * sizeof(double));
    uint16_t *bits = fl_test_host_alloc((size_t)d * sizeof(uint16_t));
    for (size_t r = 0; r < nrows; ++r) {
        size_t h = rows[r] / (size_t)b->seq, src = h % b->period;
        int i = (int)(rows[r] % (size_t)b->seq);
        attention_reference_attend(b->hq + (src * b->seq + i) * d, b->hk + src * b->per,
                                   b->hv + src * b->per, b->causal ? i + 1 : b->seq, d, b->scale,
                                   scratch, want + r * d);
        const char *at = (const char *)b->dout + rows[r] * d * el;
        if (b->dtype == ATTN_F16) {
            FL_ASSERT_CUDA(cudaMemcpy(bits, at, d * el, cudaMemcpyDeviceToHost));
            attention_f16_to_f32(bits, got + r * d, d);
        } else {
            FL_ASSERT_CUDA(cudaMemcpy(got + r * d, at, d * el, cudaMemcpyDeviceToHost));
        }
    }
    fl_compare_opts o = b->dtype == ATTN_F16
                            ? fl_compare_defaults("O", attention_f16_sampled_atol(2.0), 0.0)
                            : fl_compare_defaults("O", L05_F32_ATOL, L05_F32_RTOL);
    o.cols = (size_t)d;
    fl_compare_result res = fl_compare_f32(got, want, nrows * d, &o);
    *bad_row = res.n_bad ? rows[res.first_bad / d] : 0;
    free(got); free(want); free(scratch); free(bits);
    return res;
}

#define N_BIG_ROWS 24

/* batch_heads at the edge of gridDim.y (65535) and past it. */
static void heads_case(attn_dtype dtype)
{
    if (fl_test_sanitizing())
        FL_SKIP_CASE("65535 heads are too many for the sanitizer stage");
    FL_REQUIRE_GPU();
    const char *who = who_of(dtype);
    const int seq = 7, d = 64, past = GRID_Y_MAX + 7;
    big05 b;
    big_init(&b, dtype, past, seq, d, 0, 0x4EAD + dtype);
    size_t el = elem_size(dtype);
    for (int run = 0; run < 2; ++run) {
        int bh = run ? past : GRID_Y_MAX;
        size_t bytes = (size_t)bh * seq * d * el, all = b.n * el;
        uint64_t before = 0, after = 0, tail0 = 0, tail1 = 0;
        FL_ASSERT_CUDA(fl_poison(b.dout, all, 0));
        FL_ASSERT_CUDA(cudaDeviceSynchronize());
        FL_ASSERT_CUDA(fl_checksum(b.dout, all, &before));
        if (all > bytes) FL_ASSERT_CUDA(fl_checksum((char *)b.dout + bytes, all - bytes, &tail0));
        cudaError_t e = big_launch(&b, bh);
        cudaError_t se = cudaDeviceSynchronize();
        cr_assert(se == cudaSuccess, "%s batch_heads=%d seq=%d head_dim=%d returned %s, then "
                  "the GPU reported %s (%s)%s", who, bh, seq, d, cudaGetErrorName(e),
                  cudaGetErrorName(se), cudaGetErrorString(se), fl_test_error_hint(se));
        (void)cudaGetLastError();
        if (!run)
            cr_assert(e == cudaSuccess,
                      "%s batch_heads=65535 seq=%d head_dim=%d returned %s: 65535 heads fit in "
                      "a grid's y dimension (exactly its limit): take them",
                      who, seq, d, cudaGetErrorName(e));
        if (e != cudaSuccess) {
            FL_ASSERT_CUDA(fl_checksum(b.dout, all, &after));
            cr_assert(before == after,
                      "%s batch_heads=%d seq=%d head_dim=%d refused it (%s) but wrote into O: "
                      "a refusal writes nothing", who, bh, seq, d, cudaGetErrorName(e));
            continue;
        }
        if (all > bytes) {
            FL_ASSERT_CUDA(fl_checksum((char *)b.dout + bytes, all - bytes, &tail1));
            cr_assert(tail0 == tail1, "%s batch_heads=%d seq=%d head_dim=%d wrote past the end "
                      "of O (into head %d and beyond)", who, bh, seq, d, bh);
        }
        /* sampled rows, and every row of the last 8 heads (past 65535 on the second run) */
        size_t rows[N_BIG_ROWS + 8 * 7], nrows = N_BIG_ROWS;
        fl_test_sample_rows(fl_test_fresh_key(), (size_t)bh * seq, N_BIG_ROWS, rows);
        for (size_t r = (size_t)(bh - 8) * seq; r < (size_t)bh * seq; ++r) rows[nrows++] = r;
        size_t bad_row = 0;
        fl_compare_result res = big_check(&b, rows, nrows, &bad_row);
        cr_assert(res.n_bad == 0,
                  "%s batch_heads=%d seq=%d head_dim=%d returned cudaSuccess; on %zu checked "
                  "rows: %s (rows are the checked ones in order; the first wrong is head %zu, "
                  "query %zu)%s",
                  who, bh, seq, d, nrows, res.message, bad_row / seq, bad_row % seq,
                  run ? " -- batch_heads is past gridDim.y's limit of 65535: cover every head "
                        "(heads on gridDim.x, a loop over blockIdx.y + k * gridDim.y, or one "
                        "launch per 65535 heads), or refuse with cudaErrorInvalidValue and "
                        "write nothing; never compute some heads and return cudaSuccess"
                      : " -- 65535 heads fill gridDim.y exactly: check the head index "
                        "(blockIdx.y) and the head's offset in the tensors");
    }
    big_free(&b);
}

FL_TEST(A_fused_f32, batch_heads_limit) { heads_case(ATTN_F32); }
FL_TEST(B_fused_f16, batch_heads_limit) { heads_case(ATTN_F16); }

/* Room the huge case leaves free besides its four tensors. */
#define HUGE_SLACK_BYTES ((double)(1ull << 30))

/* Tensors of more than 2^32 elements (65535 heads x 520 rows x 128), or of
 * more than 2^31 (x 264 rows) where the GPU's memory does not allow that. */
static void huge_case(attn_dtype dtype, int causal)
{
    if (fl_test_sanitizing()) FL_SKIP_CASE("tensors past 2^31 elements: not under the sanitizer");
    FL_REQUIRE_GPU();
    static const int seqs[2] = {520, 264};
    const int d = 128, bh = GRID_Y_MAX;
    const char *who = who_of(dtype);
    size_t el = elem_size(dtype), free_b = 0, total = 0;
    FL_ASSERT_CUDA(cudaMemGetInfo(&free_b, &total));
    int seq = 0;
    double need = 0.0;
    for (int i = 0; i < 2 && !seq; ++i) {
        need = 4.0 * ((double)bh * seqs[i] * d * el + FL_GUARD_BYTES) + HUGE_SLACK_BYTES;
        if (need <= (double)free_b) seq = seqs[i];
    }
    if (!seq)
        FL_SKIP_CASE("needs %.1f GiB of free device memory (Q, K, V and O of more than 2^31 "
                     "%s elements each); this GPU has %.1f GiB free",
                     need / 1073741824.0, dtype == ATTN_F16 ? "float16" : "float32",
                     (double)free_b / 1073741824.0);
    big05 b;
    big_init(&b, dtype, bh, seq, d, causal, 0x8160 + (uint64_t)seq + dtype);
    int log2n = b.n > ((size_t)1 << 32) ? 32 : 31;
    char label[160];
    snprintf(label, sizeof label,
             "batch_heads=%d seq=%d head_dim=%d%s (%.3g elements per tensor, past 2^%d)", bh,
             seq, d, causal ? " causal" : "", (double)b.n, log2n);
    const char *hint = " -- an element index computed in 32-bit arithmetic wraps past 2^31 "
                       "(int) or 2^32 (unsigned): compute offsets such as head * seq * "
                       "head_dim, and row * head_dim, in size_t";
    FL_ASSERT_CUDA(fl_poison(b.dout, b.n * el, 0));
    cudaError_t e = big_launch(&b, bh);
    cr_assert(e == cudaSuccess, "%s %s returned %s: the API takes any size its int arguments "
              "hold", who, label, cudaGetErrorName(e));
    cudaError_t se = cudaDeviceSynchronize();
    cr_assert(se == cudaSuccess, "%s %s: the GPU reported %s (%s)%s", who, label,
              cudaGetErrorName(se), cudaGetErrorString(se), hint);
    FL_ASSERT_NO_OVERRUN((char *)b.dout + b.n * el, who, "O");
    /* sampled rows, and the rows on each side of element 2^31 (and 2^32) */
    size_t rows[N_BIG_ROWS + 4], nrows = N_BIG_ROWS;
    fl_test_sample_rows(fl_test_fresh_key(), (size_t)bh * seq, N_BIG_ROWS, rows);
    for (int p = 31; p <= log2n; ++p) {
        size_t r = ((size_t)1 << p) / (size_t)d;
        rows[nrows++] = r - 1;
        rows[nrows++] = r;
    }
    size_t bad_row = 0;
    fl_compare_result res = big_check(&b, rows, nrows, &bad_row);
    cr_assert(res.n_bad == 0,
              "%s %s, on %zu checked rows: %s (rows are the checked ones in order; the first "
              "wrong is head %zu, query %zu)%s",
              who, label, nrows, res.message, bad_row / seq, bad_row % seq, hint);
    big_free(&b);
}

FL_TEST(A_fused_f32, huge) { huge_case(ATTN_F32, 1); }
FL_TEST(B_fused_f16, huge) { huge_case(ATTN_F16, 0); }

/* ---- the stream ------------------------------------------------------------------- */

typedef struct {
    problem05 *p;
    tol05 t;
    void *pinned; /* O read back here, on a stream of the check's own */
} stream_ctx;

static cudaError_t stream_run(void *c, cudaStream_t s)
{
    stream_ctx *x = c;
    return launch_fused(x->p, x->p->dout, s);
}

static cudaError_t stream_poison(void *c, cudaStream_t s)
{
    stream_ctx *x = c;
    return fl_poison(x->p->dout, x->p->n * elem_size(x->p->dtype), s);
}

/* Called while the legacy default stream is still held: nothing here may
 * touch it (no cudaMemcpy, no cudaDeviceSynchronize). */
static int stream_check(void *c, char *msg, size_t len)
{
    stream_ctx *x = c;
    problem05 *p = x->p;
    size_t bytes = p->n * elem_size(p->dtype);
    cudaStream_t rs;
    if (cudaStreamCreateWithFlags(&rs, cudaStreamNonBlocking) != cudaSuccess) {
        snprintf(msg, len, "could not create a stream to read O back");
        return 0;
    }
    cudaError_t e = cudaMemcpyAsync(x->pinned, p->dout, bytes, cudaMemcpyDeviceToHost, rs);
    if (e == cudaSuccess) e = cudaStreamSynchronize(rs);
    (void)cudaStreamDestroy(rs);
    if (e != cudaSuccess) {
        snprintf(msg, len, "could not read O back: %s", cudaGetErrorName(e));
        return 0;
    }
    if (p->dtype == ATTN_F16)
        attention_f16_to_f32(x->pinned, p->got, p->n);
    else
        memcpy(p->got, x->pinned, bytes);
    fl_compare_opts o = fl_compare_defaults("O", x->t.atol, x->t.rtol);
    o.cols = (size_t)p->s.head_dim;
    fl_compare_result r = fl_compare_f32(p->got, p->want, p->n, &o);
    snprintf(msg, len, "%s", r.message);
    return r.n_bad == 0;
}

static void stream_case(attn_dtype dtype)
{
    if (fl_test_sanitizing())
        FL_SKIP_CASE("the sanitizer runs one kernel at a time: the stream check needs the "
                     "default stream held while the launcher's stream runs");
    FL_REQUIRE_GPU();
    shape05 s = {256, 64, 1, 4, 1.0f, 0.0f};
    char label[128];
    shape_label(&s, label, sizeof label);
    problem05 p;
    problem_init(&p, &s, dtype, 0x57E0 + dtype);
    make_reference(&p);
    stream_ctx x = {.p = &p};
    x.t = fused_tol(&p, label, 1.0, L05_F16_BASELINE_ATOL);
    size_t bytes = p.n * elem_size(dtype);
    FL_ASSERT_CUDA(cudaMallocHost(&x.pinned, bytes));
    fl_test_stream_honoured(who_of(dtype), stream_run, stream_poison, stream_check, &x);
    (void)cudaFreeHost(x.pinned);
    problem_free(&p);
}

FL_TEST(A_fused_f32, stream) { stream_case(ATTN_F32); }
FL_TEST(B_fused_f16, stream) { stream_case(ATTN_F16); }

/* ---- B_fused_f16: float16's range edges -------------------------------------------- */

/* The allowed error of a float16 output where the inputs are far from unit
 * size: the 1e-3 scales with the largest |O|, and the unfused path (the
 * yardstick) rounds S to float16, so each weight exp(S) moves by up to
 * |S|max u (u = 2^-11) and O by twice that times |O|max. */
static tol05 range_tol(problem05 *p, const char *label)
{
    double mag = 0.0;
    for (size_t i = 0; i < p->n; ++i)
        if (fabs(p->want[i]) > mag) mag = fabs(p->want[i]);
    double sanity = (L05_F16_BASELINE_ATOL + 2.0 * p->smax * L05_F16_UNIT_ROUNDOFF) * mag;
    return fused_tol(p, label, mag, sanity);
}

typedef struct {
    const char *what;  /* the inputs, for the message */
    shape05 s;
    const char *hint;  /* NULL: the shape's usual hint */
} range05;

static const range05 kRanges[] = {
    {"Q and K in [-200, 200): Q·K reaches about 4e5, past float16's largest value 65504",
     {113, 64, 0, 2, 1.0f, 2.5e-5f},
     " -- Q·K here passes float16's largest value (65504) before the scale brings it back to "
     "a few units: accumulate S = Q Kᵀ in float32 (mma.sync with .f32 accumulators) and scale "
     "the float32 sums"},
    {"|V| in [50000, 65000), near float16's largest value 65504",
     {97, 128, 1, 2, 1.0f, 0.0f},
     " -- |V| here is near float16's largest value (65504): the unnormalised O (up to l x "
     "65000) fits only in float32: keep the O accumulator in float32 and divide by l before "
     "converting to float16"},
    {"|V| < 1e-5, float16 subnormals (below 6.1e-5)",
     {129, 64, 1, 2, 1.0f, 0.0f},
     " -- V here is subnormal in float16: convert without flushing subnormals to zero, and "
     "keep the O accumulator in float32"},
    {"scores near +-100", {113, 128, 1, 2, 6.0f, 0.0f}, NULL},
    {"scale 300, |Q| up to 200: Q times the scale passes float16's largest value 65504",
     {97, 64, 1, 2, 1.0f, 300.0f},
     " -- scale here is 300 and |Q| up to 200 (K below 1e-4, so the scores are a few tens): "
     "Q times the scale (up to 6e4, 8.7e4 with log2 e) does not fit in float16; apply the "
     "scale to the float32 scores, not to Q in float16"},
};
#define N_RANGES (sizeof kRanges / sizeof kRanges[0])

FL_TEST(B_fused_f16, range_edges)
{
    if (fl_test_sanitizing())
        FL_SKIP_CASE("the values change no memory access: the sanitizer stage runs `correct`");
    FL_REQUIRE_GPU();
    for (size_t c = 0; c < N_RANGES; ++c) {
        const range05 *rc = &kRanges[c];
        char label[320];
        shape_label(&rc->s, label, sizeof label);
        size_t len = strlen(label);
        snprintf(label + len, sizeof label - len, ", %s", rc->what);
        problem05 p;
        uint64_t seed = 0x4A00 + 8 * (uint64_t)c;
        problem_init(&p, &rc->s, ATTN_F16, seed);
        size_t n = p.n, d = (size_t)rc->s.head_dim;
        if (c == 0) {
            fl_fill_uniform(p.q, n, fl_seed(seed + 4), -200.0f, 200.0f);
            fl_fill_uniform(p.k, n, fl_seed(seed + 5), -200.0f, 200.0f);
        } else if (c == 1) {
            /* one sign per column, so the averages stay near 57500 */
            fl_fill_uniform(p.v, n, fl_seed(seed + 6), 50000.0f, 65000.0f);
            for (size_t i = 0; i < n; ++i)
                if ((i % d) % 2) p.v[i] = -p.v[i];
        } else if (c == 2) {
            fl_fill_uniform(p.v, n, fl_seed(seed + 6), -1e-5f, 1e-5f);
        } else if (c == 4) {
            fl_fill_uniform(p.q, n, fl_seed(seed + 4), -200.0f, 200.0f);
            fl_fill_uniform(p.k, n, fl_seed(seed + 5), -1e-4f, 1e-4f);
        }
        problem_upload(&p);
        make_reference(&p);
        tol05 t = range_tol(&p, label);
        run_guarded(&p, "attention_fused_f16");
        assert_output(&p, p.dout, p.want, &t, label, rc->hint);
        problem_free(&p);
    }
}

/* ---- A_fused_f32 and B_fused_f16: every score of a row far below zero ------------------ */

/* Softmax is shift-invariant: exp(s - m) / sum exp(s - m) is the same for
 * every m, and the running max m is there only to keep exp(s - m) in
 * [0, 1]. Here Q is drawn from [-4.5, -3.5) and K from [3.5, 4.5), so every
 * Q·K is about -16 head_dim and every score of every row about -128 (head_dim
 * 64) or -181 (128) after the scale, spread by a few units from key to key:
 * the answer is an ordinary weighted mean of V. A running max that starts
 * at 0 instead of -INFINITY never falls to the row's max, and exp(s - 0)
 * underflows to 0 for every key (below about -104, even float's subnormals
 * end): l = 0 and O = 0 / 0. The other tests' rows all have a score above
 * zero, which hides that. */
static const shape05 kShifted[] = {{97, 64, 0, 2, 1.0f, 0.0f}, {113, 128, 1, 2, 1.0f, 0.0f}};
#define N_SHIFTED (sizeof kShifted / sizeof kShifted[0])

static void shifted_case(attn_dtype dtype)
{
    if (fl_test_sanitizing())
        FL_SKIP_CASE("the values change no memory access: the sanitizer stage runs `correct`");
    FL_REQUIRE_GPU();
    for (size_t c = 0; c < N_SHIFTED; ++c) {
        const shape05 *s = &kShifted[c];
        char label[256];
        shape_label(s, label, sizeof label);
        size_t len = strlen(label);
        snprintf(label + len, sizeof label - len,
                 ", Q in [-4.5, -3.5) and K in [3.5, 4.5): every score about %.0f",
                 -16.0 * s->head_dim / sqrt((double)s->head_dim));
        problem05 p;
        uint64_t seed = 0x5F00 + 8 * (uint64_t)c + dtype;
        problem_init(&p, s, dtype, seed);
        fl_fill_uniform(p.q, p.n, fl_seed(seed + 4), -4.5f, -3.5f);
        fl_fill_uniform(p.k, p.n, fl_seed(seed + 5), 3.5f, 4.5f);
        problem_upload(&p);
        make_reference(&p);
        /* float16: S is about 16 head_dim before the scale, as range_edges
         * allows it */
        tol05 t = dtype == ATTN_F16 ? range_tol(&p, label)
                                    : fused_tol(&p, label, 1.0, L05_F16_BASELINE_ATOL);
        run_guarded(&p, who_of(dtype));
        assert_output(&p, p.dout, p.want, &t, label,
                      " -- every score of these rows is far below zero, and softmax does not "
                      "care where its scores sit: start the running max m at -INFINITY (not 0), "
                      "so that the first tile sets it to the row's max and exp(s - m) stays in "
                      "[0, 1] (from 0, exp(s - 0) underflows to 0 for every key, l = 0 and "
                      "O = 0 / 0)");
        problem_free(&p);
    }
}

FL_TEST(A_fused_f32, shifted_scores) { shifted_case(ATTN_F32); }
FL_TEST(B_fused_f16, shifted_scores) { shifted_case(ATTN_F16); }

/* ---- A_memory ----------------------------------------------------------------------- */

FL_TEST(A_memory, no_seq_squared_buffer)
{
    FL_REQUIRE_GPU();
    size_t free0 = 0, total = 0;
    FL_ASSERT_CUDA(cudaMemGetInfo(&free0, &total));
    /* enough heads that S alone, seq² floats per head, is 1.25x this GPU */
    const int seq = L05_MEM_SEQ, d = 64;
    double s_per_head = (double)seq * seq * sizeof(float);
    int bh = (int)(1.25 * (double)total / s_per_head) + 1;
    if (bh < 2) bh = 2;
    shape05 s = {seq, d, 1, bh, 1.0f, 0.0f};
    size_t per_head = (size_t)seq * d, n = per_head * bh;

    /* one head of random data, copied to every head (the check samples rows) */
    float *h[3];
    float *dev[4];
    for (int i = 0; i < 3; ++i) {
        h[i] = fl_test_host_alloc(per_head * sizeof(float));
        fl_fill_normal(h[i], per_head, fl_seed(0xA6E0 + i), 0.0f, 1.0f);
    }
    for (int i = 0; i < 4; ++i) dev[i] = fl_test_dev_alloc(n * sizeof(float));
    for (int i = 0; i < 3; ++i)
        for (int b = 0; b < bh; ++b)
            FL_ASSERT_CUDA(fl_upload_f32(dev[i] + (size_t)b * per_head, h[i], per_head));
    FL_ASSERT_CUDA(fl_poison(dev[3], n * sizeof(float), 0));
    FL_ASSERT_CUDA(cudaDeviceSynchronize());

    size_t before = 0, during = 0, after = 0;
    FL_ASSERT_CUDA(cudaMemGetInfo(&before, &total));
    cudaError_t e = attention_fused_f32(dev[0], dev[1], dev[2], dev[3], bh, seq, d,
                                        1.0f / sqrtf((float)d), 1, 0);
    /* launches are asynchronous: the kernel is most likely still running */
    FL_ASSERT_CUDA(cudaMemGetInfo(&during, &total));
    cr_assert(e == cudaSuccess,
              "attention_fused_f32 at seq=%d head_dim=%d batch_heads=%d causal failed with %s: "
              "here S alone would take %.0f GiB, more than this GPU has (%.0f GiB) -- the fused "
              "path must not allocate anything of size seq²",
              seq, d, bh, cudaGetErrorName(e), s_per_head * bh / 1073741824.0,
              (double)total / 1073741824.0);
    FL_ASSERT_SYNC("attention_fused_f32 (seq 32768)");
    FL_ASSERT_CUDA(cudaMemGetInfo(&after, &total));
    size_t low = during < after ? during : after;
    double used_mib = before > low ? (double)(before - low) / 1048576.0 : 0.0;
    cr_assert(used_mib <= L05_MEM_SLACK_MIB,
              "attention_fused_f32 at seq=%d batch_heads=%d took %.0f MiB of device memory "
              "while it ran (allowed: %d MiB; S would be %.0f GiB): the fused path allocates "
              "nothing -- its only state is registers and shared memory",
              seq, bh, used_mib, L05_MEM_SLACK_MIB, s_per_head * bh / 1073741824.0);

    /* and the answer is right, on sampled rows (all heads hold the same data) */
    problem05 p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.s.batch_heads = 1;
    p.dtype = ATTN_F32;
    p.scale = 1.0f / sqrtf((float)d);
    p.q = h[0]; p.k = h[1]; p.v = h[2];
    fl_compare_result r = check_sampled(&p, dev[3] + (size_t)(bh - 1) * per_head, "O",
                                        L05_F32_ATOL, L05_F32_RTOL);
    cr_assert(r.n_bad == 0,
              "attention_fused_f32 seq=%d head_dim=%d causal, last head, %d sampled rows: %s",
              seq, d, N_SAMPLED, r.message);
    for (int i = 0; i < 4; ++i) (void)cudaFree(dev[i]);
    for (int i = 0; i < 3; ++i) free(h[i]);
}

/* ---- baseline ------------------------------------------------------------------------------ */

static void baseline_f32_case(const shape05 *s)
{
    FL_REQUIRE_GPU();
    char label[128];
    shape_label(s, label, sizeof label);
    problem05 p;
    problem_init(&p, s, ATTN_F32, 0xC500 + (uint64_t)s->seq * 4 + s->head_dim + s->causal);
    float *out = run_unfused_f32(&p);
    fl_compare_result r;
    if (s->seq <= CPU_MAX_SEQ) {
        make_reference(&p);
        read_output(&p, out);
        fl_compare_opts o = fl_compare_defaults("O", L05_F32_ATOL, L05_F32_RTOL);
        o.cols = (size_t)s->head_dim;
        r = fl_compare_f32(p.got, p.want, p.n, &o);
    } else {
        r = check_sampled(&p, out, "O (sampled rows)", L05_F32_ATOL, L05_F32_RTOL);
    }
    cr_assert(r.n_bad == 0, "attention_unfused_f32 %s: %s", label, r.message);
    (void)cudaFree(out);
    problem_free(&p);
}

FL_PARAM_TEST(baseline, f32, shape05, s, kShapesF32, N_F32) { baseline_f32_case(s); }

static void baseline_f16_case(const shape05 *s)
{
    FL_REQUIRE_GPU();
    char label[128];
    shape_label(s, label, sizeof label);
    problem05 p;
    problem_init(&p, s, ATTN_F16, 0xD500 + (uint64_t)s->seq * 4 + s->head_dim + s->causal);
    make_reference(&p);
    (void)unfused_f16_error(&p, label, L05_F16_BASELINE_ATOL);
    problem_free(&p);
}

FL_PARAM_TEST(baseline, f16, shape05, s, kShapesF16, N_F16) { baseline_f16_case(s); }

/* The S/P size and its overflow; too big for the GPU: a clean refusal, and
 * the GPU still works afterwards. (The size checks need no GPU, but a lesson
 * whose only checks that ran are CPU ones would read as passed in
 * `./lab check` on a machine without one.) */
FL_TEST(baseline, refuses_what_does_not_fit)
{
    FL_REQUIRE_GPU();
    cr_assert(attention_unfused_workspace_bytes(ATTN_F32, 2, 1024) == (size_t)2 * 2 * 1024 * 1024 * 4,
              "S and P in float32 at batch_heads 2, seq 1024 are 2 x 2 x 1024² x 4 bytes");
    cr_assert(attention_unfused_workspace_bytes(ATTN_F16, 3, 7) == (size_t)2 * 3 * 49 * 2);
    cr_assert(attention_unfused_workspace_bytes(ATTN_F32, 0, 7) == 0);
    cr_assert(attention_unfused_workspace_bytes(ATTN_F32, 2147483647, 2147483647) == SIZE_MAX,
              "a size past size_t must come back as SIZE_MAX, not wrap around");
    size_t free_b = 0, total = 0;
    FL_ASSERT_CUDA(cudaMemGetInfo(&free_b, &total));
    /* 64 heads at seq 2^17: S and P are 2 x 64 x 2^34 x 4 bytes = 8 TiB */
    const int bh = 64, seq = 1 << 17;
    void *ws = (void *)1;
    cudaError_t e = attention_unfused_workspace_alloc(ATTN_F32, bh, seq, &ws);
    cr_assert(e == cudaErrorMemoryAllocation && ws == NULL,
              "attention_unfused_workspace_alloc of %.0f GiB (GPU: %.0f GiB) returned %s and %p; "
              "want cudaErrorMemoryAllocation and NULL",
              (double)attention_unfused_workspace_bytes(ATTN_F32, bh, seq) / 1073741824.0,
              (double)total / 1073741824.0, cudaGetErrorName(e), ws);
    cr_assert(cudaGetLastError() == cudaSuccess,
              "the failed allocation was left in CUDA's last-error slot");
    e = attention_unfused_f32(NULL, NULL, NULL, NULL, bh, seq, 64, 0.125f, 0, NULL, 0, 0);
    cr_assert(e == cudaErrorMemoryAllocation,
              "attention_unfused_f32 without its workspace returned %s, want "
              "cudaErrorMemoryAllocation", cudaGetErrorName(e));
    /* and the GPU is fine */
    shape05 s = {97, 64, 1, 2, 1.0f, 0.0f};
    problem05 p;
    problem_init(&p, &s, ATTN_F32, 0xC5EE);
    float *out = run_unfused_f32(&p);
    (void)cudaFree(out);
    problem_free(&p);
}

/* ---- speed ------------------------------------------------------------------------------ */

/* Fresh inputs for every timed run. float32: Q, K and V drawn on the GPU
 * from three new keys (fl_fill_uniform_dev; fl_uniform_at gives any element
 * on the host). float16 (C has no float16 generator on the GPU): a pool of
 * 2n float16 values drawn once, and each tensor a window of it at an offset
 * drawn from a new key: three fresh offsets per run, any element, so no
 * row, head or tensor of one run repeats in the next. Each run's output is
 * checked on FRESH_ROWS rows drawn after the run. */
#define FRESH_LO -2.0f
#define FRESH_HI 2.0f
#define FRESH_ROWS 12

typedef struct {
    uint64_t key[3]; /* float32: Q, K, V[i] = fl_uniform_at(key, i, FRESH_LO, FRESH_HI) */
    size_t off[3];   /* float16: Q, K, V[i] = pool[off + i] */
} fresh_draw;

typedef struct {
    problem05 *p;    /* the device inputs the draws are written into */
    uint16_t *dpool; /* float16: the pool on the device ... */
    float *pool;     /* ... and its values on the host */
    size_t pool_n;
    fl_inputs sums;  /* checksums of what the last draw wrote */
    int armed;       /* 1 from a draw until the next check looked at the inputs */
} fresh_src;

static void fresh_init(fresh_src *src, problem05 *p)
{
    memset(src, 0, sizeof *src);
    src->p = p;
    size_t bytes = p->n * elem_size(p->dtype);
    fl_test_inputs_add(&src->sums, "Q", p->dq, bytes);
    fl_test_inputs_add(&src->sums, "K", p->dk, bytes);
    fl_test_inputs_add(&src->sums, "V", p->dv, bytes);
    if (p->dtype != ATTN_F16) return;
    src->pool_n = 2 * p->n;
    src->pool = fl_test_host_alloc(src->pool_n * sizeof(float));
    uint16_t *bits = fl_test_host_alloc(src->pool_n * sizeof(uint16_t));
    fl_fill_uniform_host(src->pool, src->pool_n, fl_test_fresh_key(), FRESH_LO, FRESH_HI);
    attention_f32_to_f16(src->pool, bits, src->pool_n);
    attention_f16_to_f32(bits, src->pool, src->pool_n);
    src->dpool = fl_test_dev_alloc(src->pool_n * sizeof(uint16_t));
    FL_ASSERT_CUDA(cudaMemcpy(src->dpool, bits, src->pool_n * sizeof(uint16_t),
                              cudaMemcpyHostToDevice));
    free(bits);
}

static void fresh_free(fresh_src *src)
{
    free(src->pool);
    (void)cudaFree(src->dpool);
}

static fresh_draw fresh_next(const fresh_src *src)
{
    fresh_draw d;
    for (int t = 0; t < 3; ++t) {
        d.key[t] = fl_test_fresh_key();
        d.off[t] = src->pool_n ? (size_t)(d.key[t] % (uint64_t)(src->pool_n - src->p->n + 1)) : 0;
    }
    return d;
}

static float fresh_value(const fresh_src *src, const fresh_draw *d, int t, size_t i)
{
    if (src->pool_n) return src->pool[d->off[t] + i];
    return fl_uniform_at(d->key[t], i, FRESH_LO, FRESH_HI);
}

/* Write draw d into the device inputs (on st), wait, checksum them. */
static cudaError_t fresh_write(fresh_src *src, const fresh_draw *d, cudaStream_t st)
{
    problem05 *p = src->p;
    void *dst[3] = {p->dq, p->dk, p->dv};
    for (int t = 0; t < 3; ++t) {
        if (src->pool_n)
            CUDA_CHECK(cudaMemcpyAsync(dst[t], src->dpool + d->off[t], p->n * sizeof(uint16_t),
                                       cudaMemcpyDeviceToDevice, st));
        else
            CUDA_CHECK(fl_fill_uniform_dev(dst[t], p->n, d->key[t], FRESH_LO, FRESH_HI, st));
    }
    CUDA_CHECK(cudaStreamSynchronize(st));
    CUDA_CHECK(fl_test_inputs_snapshot(&src->sums));
    src->armed = 1;
    return cudaSuccess;
}

/* The host copy of draw d, in p->q, p->k, p->v (for a full reference). */
static void fresh_materialize(const fresh_src *src, const fresh_draw *d, problem05 *p)
{
    float *h[3] = {p->q, p->k, p->v};
    for (int t = 0; t < 3; ++t) {
        if (src->pool_n)
            memcpy(h[t], src->pool + d->off[t], p->n * sizeof(float));
        else
            fl_fill_uniform_host(h[t], p->n, d->key[t], FRESH_LO, FRESH_HI);
    }
}

typedef struct {
    problem05 *p;
    fresh_src *src;
    void *out;          /* this variant's output */
    void *ws;           /* unfused: workspace */
    size_t ws_bytes;
    int fused;
    double atol, rtol;  /* each run: |out - ref| <= atol + rtol |ref| on sampled rows */
    fresh_draw draw;    /* the inputs of this variant's last run */
    const char *who;
} speed_ctx;

static cudaError_t speed_run(void *c, cudaStream_t st)
{
    speed_ctx *x = c;
    const shape05 *s = &x->p->s;
    if (x->fused) return launch_fused(x->p, x->out, st);
    if (x->p->dtype == ATTN_F16)
        return attention_unfused_f16(x->p->dq, x->p->dk, x->p->dv, x->out, s->batch_heads,
                                     s->seq, s->head_dim, x->p->scale, s->causal, x->ws,
                                     x->ws_bytes, st);
    return attention_unfused_f32(x->p->dq, x->p->dk, x->p->dv, x->out, s->batch_heads, s->seq,
                                 s->head_dim, x->p->scale, s->causal, x->ws, x->ws_bytes, st);
}

/* Untimed, before every run: fresh Q, K and V, the output poisoned. */
static cudaError_t speed_prepare(void *c, cudaStream_t st)
{
    speed_ctx *x = c;
    x->draw = fresh_next(x->src);
    CUDA_CHECK(fresh_write(x->src, &x->draw, st));
    return fl_poison(x->out, x->p->n * elem_size(x->p->dtype), st);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* After a run: the inputs unchanged, and FRESH_ROWS rows of the output,
 * drawn now, right for the inputs of this variant's last run. */
static int speed_check(void *c, char *msg, size_t len)
{
    speed_ctx *x = c;
    fresh_src *src = x->src;
    const shape05 *s = &x->p->s;
    if (src->armed) {
        src->armed = 0;
        if (!fl_test_inputs_unchanged(&src->sums, x->who, msg, len)) return 0;
    }
    int seq = s->seq, d = s->head_dim;
    size_t el = elem_size(x->p->dtype), per = (size_t)seq * d;
    size_t rows[FRESH_ROWS];
    fl_test_sample_rows(fl_test_fresh_key(), (size_t)s->batch_heads * seq, FRESH_ROWS, rows);
    qsort(rows, FRESH_ROWS, sizeof rows[0], cmp_size); /* rows of one head together */
    float *kh = fl_test_host_alloc(2 * per * sizeof(float)), *vh = kh + per;
    float *qi = fl_test_host_alloc((size_t)d * sizeof(float));
    float *got = fl_test_host_alloc((size_t)FRESH_ROWS * d * sizeof(float));
    double *want = fl_test_host_alloc((size_t)FRESH_ROWS * d * sizeof(double));
    double *scratch = fl_test_host_alloc((size_t)seq * sizeof(double));
    uint16_t *bits = fl_test_host_alloc((size_t)d * sizeof(uint16_t));
    size_t cur = (size_t)-1;
    cudaError_t e = cudaSuccess;
    for (int r = 0; r < FRESH_ROWS && e == cudaSuccess; ++r) {
        size_t h = rows[r] / seq;
        int i = (int)(rows[r] % seq);
        if (h != cur) {
            for (size_t j = 0; j < per; ++j) {
                kh[j] = fresh_value(src, &x->draw, 1, h * per + j);
                vh[j] = fresh_value(src, &x->draw, 2, h * per + j);
            }
            cur = h;
        }
        for (int j = 0; j < d; ++j) qi[j] = fresh_value(src, &x->draw, 0, rows[r] * d + j);
        attention_reference_attend(qi, kh, vh, s->causal ? i + 1 : seq, d, x->p->scale, scratch,
                                   want + (size_t)r * d);
        const char *at = (const char *)x->out + rows[r] * d * el;
        if (x->p->dtype == ATTN_F16) {
            e = cudaMemcpy(bits, at, d * el, cudaMemcpyDeviceToHost);
            attention_f16_to_f32(bits, got + (size_t)r * d, d);
        } else {
            e = cudaMemcpy(got + (size_t)r * d, at, d * el, cudaMemcpyDeviceToHost);
        }
    }
    int ok = 0;
    if (e != cudaSuccess) {
        snprintf(msg, len, "could not read the output back: %s", cudaGetErrorName(e));
    } else {
        fl_compare_opts o = fl_compare_defaults("O", x->atol, x->rtol);
        o.cols = (size_t)d;
        fl_compare_result r = fl_compare_f32(got, want, (size_t)FRESH_ROWS * d, &o);
        ok = r.n_bad == 0;
        if (ok)
            snprintf(msg, len, "%s", r.message);
        else
            snprintf(msg, len,
                     "%s (%d rows drawn after the run, in order; the first wrong is head %zu, "
                     "query %zu; each run gets new Q, K and V)",
                     r.message, FRESH_ROWS, rows[r.first_bad / d] / seq,
                     rows[r.first_bad / d] % seq);
    }
    free(kh); free(qi); free(got); free(want); free(scratch); free(bits);
    return ok;
}

/* Time unfused and fused (interleaved, the course's protocol), print the
 * figures on a "speed" line and assert the ratio. */
static void speed_case(const char *label, speed_ctx *base, speed_ctx *fused, double min_speedup,
                       const char *hint)
{
    const shape05 *s = &fused->p->s;
    double flops = ATTENTION_FLOPS(s->batch_heads, s->seq, s->head_dim, s->causal);
    double e = (double)elem_size(fused->p->dtype);
    fl_variant v[2] = {
        {.name = "unfused (cuBLAS + softmax + cuBLAS)", .run = speed_run, .ctx = base,
         .bytes = ATTENTION_UNFUSED_BYTES(s->batch_heads, s->seq, s->head_dim, e),
         .flops = flops, .prepare = speed_prepare, .check = speed_check},
        {.name = "fused", .run = speed_run, .ctx = fused,
         .bytes = ATTENTION_FUSED_BYTES(s->batch_heads, s->seq, s->head_dim, e),
         .flops = flops, .prepare = speed_prepare, .check = speed_check},
    };
    fl_timing t[2];
    fl_timing_opts o = fl_timing_defaults();
    o.samples = 20;
    o.check_each = 1;
    FL_ASSERT_CUDA(fl_time_variants(v, 2, &o, t));
    if (fl_timing_untimed()) {
        /* the worked solution's verifying run: every run's outputs, no times */
        fprintf(stderr, "speed %s: untimed (FUSIONLAB_TIMING_UNTIMED): %d and %d runs checked\n",
                label, t[0].check_runs, t[1].check_runs);
        for (int k = 0; k < 2; ++k) fl_test_assert_timing_honest(&t[k], label, &o, 0.0);
        return;
    }
    double speedup = t[0].us.median / t[1].us.median;
    fprintf(stderr,
            "speed %s: %s %.1f us (%.1f TFLOP/s) | %s %.1f us (%.1f TFLOP/s) | speedup %.2fx | "
            "need >= %.2fx\n",
            label, t[0].name, t[0].us.median, t[0].tflops, t[1].name, t[1].us.median,
            t[1].tflops, speedup, min_speedup);
    /* the grader's speed log: attention is judged by the ratio alone */
    fl_test_speed_record(label, t[0].us.median, t[1].us.median, min_speedup, 0.0, 0.0,
                         t[0].check_ok && t[1].check_ok && !t[0].hidden_work &&
                             !t[1].hidden_work && speedup >= min_speedup);
    /* every run right, nothing hidden (attention is bound by arithmetic, not
     * by bytes: no roofline on bandwidth) */
    for (int k = 0; k < 2; ++k) fl_test_assert_timing_honest(&t[k], label, &o, 0.0);
    if (fl_timing_audit()) return; /* the times are the profiler's (fl_test_speed) */
    cr_assert(speedup >= min_speedup,
              "fused %s: %.2fx faster than unfused (%.1f us vs %.1f us, %.1f TFLOP/s), need >= "
              "%.2fx: %s",
              label, speedup, t[1].us.median, t[0].us.median, t[1].tflops, min_speedup, hint);
}

static void speed_test(attn_dtype dtype, double min_speedup, const char *hint)
{
    FL_REQUIRE_GPU();
    shape05 s = {L05_SPEED_SEQ, L05_SPEED_HEAD_DIM, 0, L05_SPEED_BATCH_HEADS, 1.0f, 0.0f};
    const char *name = who_of(dtype);
    char label[128];
    snprintf(label, sizeof label, "%s seq=%d head_dim=%d batch_heads=%d",
             dtype == ATTN_F16 ? "float16" : "float32", s.seq, s.head_dim, s.batch_heads);
    problem05 p;
    problem_alloc(&p, &s, dtype, NULL);
    fresh_src src;
    fresh_init(&src, &p);

    /* Correct first, on the whole output: a fast wrong kernel earns nothing.
     * The first draw, kept on the host too, gets the full reference. */
    fresh_draw d0 = fresh_next(&src);
    FL_ASSERT_CUDA(fresh_write(&src, &d0, 0));
    fresh_materialize(&src, &d0, &p);
    make_reference(&p);

    speed_ctx base = {.p = &p, .src = &src, .fused = 0};
    speed_ctx fused = {.p = &p, .src = &src, .out = p.dout, .fused = 1, .draw = d0};
    base.out = fl_test_dev_alloc(p.n * elem_size(dtype));
    FL_ASSERT_CUDA(attention_unfused_workspace_alloc(dtype, s.batch_heads, s.seq, &base.ws));
    base.ws_bytes = attention_unfused_workspace_bytes(dtype, s.batch_heads, s.seq);
    tol05 t = fused_tol(&p, label, 1.0, L05_F16_BASELINE_ATOL);
    fused.atol = t.atol;
    fused.rtol = t.rtol;
    base.atol = dtype == ATTN_F16 ? L05_F16_BASELINE_ATOL : L05_F32_ATOL;
    base.rtol = dtype == ATTN_F16 ? 0.0 : L05_F32_RTOL;
    base.who = dtype == ATTN_F16 ? "attention_unfused_f16" : "attention_unfused_f32";
    fused.who = name;

    run_guarded(&p, name);
    char what[192];
    snprintf(what, sizeof what, "%s, the first run", label);
    assert_output(&p, p.dout, p.want, &t, what,
                  " -- the speed test runs this shape with fresh inputs every time");

    speed_case(label, &base, &fused, min_speedup, hint);
    fresh_free(&src);
    (void)cudaFree(base.out);
    (void)cudaFree(base.ws);
    problem_free(&p);
}

Test(speed, fused_f32_vs_unfused)
{
    speed_test(ATTN_F32, L05_MIN_SPEEDUP_F32,
               "each thread should compute a block of S and of O (8 x 8) from float4 reads of "
               "shared memory, not one row; and skip the masks on tiles that need none");
}

Test(speed_bonus_f16, fused_f16_vs_unfused)
{
    speed_test(ATTN_F16, L05_MIN_SPEEDUP_F16,
               "keep Q in registers, P in the S accumulators (no trip through shared memory), "
               "and load the next K/V tile while this one computes");
}
