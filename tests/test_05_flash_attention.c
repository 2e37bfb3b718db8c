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
 *   A_memory::*         Part A allocates no O(seq²) buffer: it runs at a seq
 *                       where S alone would not fit in this GPU's memory, with
 *                       the free device memory read around the call
 *   B_fused_f16::*      Part B (bonus), float16: error against the float32
 *                       reference at most 2x the unfused float16 path's, plus
 *                       1e-3 (about one float16 rounding of a value near 1)
 *   baseline::*         the unfused baseline (complete; if it fails, the
 *                       course is broken, not your kernel)
 *   speed::*            Part A: fused >= 1.0x unfused, float32, seq 4096
 *   speed_bonus_f16::*  Part B: fused >= 2.0x unfused, float16, seq 4096
 */
#include "fl_test.h"
#include "thresholds.h"
#include "data.h"
#include "attention.h"

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

/* ---- shapes ------------------------------------------------------------------ */

typedef struct {
    int seq, head_dim, causal, batch_heads;
    float amp; /* standard deviation of Q and K; 6 makes scores of +-100 */
} shape05;

/* seq 1, 7, 97, 113 are below or between tile sizes; 1024 and 4096 span many
 * tiles. Both head sizes, with and without the causal mask. */
#define SHAPES_ALL_SEQ(d, c)                                                         \
    {1, d, c, 3, 1.0f}, {7, d, c, 3, 1.0f}, {97, d, c, 3, 1.0f}, {113, d, c, 3, 1.0f}, \
        {1024, d, c, 2, 1.0f}, {4096, d, c, 2, 1.0f}

static shape05 kShapesF32[] = {
    SHAPES_ALL_SEQ(64, 0),  SHAPES_ALL_SEQ(64, 1),   SHAPES_ALL_SEQ(128, 0),
    SHAPES_ALL_SEQ(128, 1), {97, 64, 0, 3, 6.0f},    {113, 128, 1, 2, 6.0f},
};
static shape05 kShapesF16[] = {
    SHAPES_ALL_SEQ(64, 0), SHAPES_ALL_SEQ(64, 1), SHAPES_ALL_SEQ(128, 0), SHAPES_ALL_SEQ(128, 1),
};
#define N_F32 (sizeof kShapesF32 / sizeof kShapesF32[0])
#define N_F16 (sizeof kShapesF16 / sizeof kShapesF16[0])

static void shape_label(const shape05 *s, char *buf, size_t len)
{
    snprintf(buf, len, "seq=%d head_dim=%d batch_heads=%d%s%s", s->seq, s->head_dim,
             s->batch_heads, s->causal ? " causal" : "",
             s->amp > 1.0f ? " (large scores: Q, K ~ N(0, 36))" : "");
}

/* ---- one problem: inputs, reference, device buffers ------------------------- */

typedef struct {
    shape05 s;
    attn_dtype dtype;
    size_t n;              /* elements per tensor: batch_heads * seq * head_dim */
    float scale;           /* 1 / sqrt(head_dim) */
    float *q, *k, *v;      /* host inputs as float (float16 problems: the float16 values) */
    uint16_t *hq, *hk, *hv;/* host float16 inputs (float16 problems) */
    double *want;          /* the reference O */
    float *got;            /* an output read back, as float */
    uint16_t *hgot;        /* an output read back, float16 */
    void *dq, *dk, *dv;    /* device inputs in the problem's dtype */
    void *dout;            /* device output */
} problem05;

static size_t elem_size(attn_dtype t) { return t == ATTN_F16 ? 2 : 4; }

static void problem_init(problem05 *p, const shape05 *s, attn_dtype dtype, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->s = *s;
    p->dtype = dtype;
    p->n = (size_t)s->batch_heads * s->seq * s->head_dim;
    p->scale = 1.0f / sqrtf((float)s->head_dim);
    size_t n = p->n;
    p->q = fl_test_host_alloc(n * sizeof(float));
    p->k = fl_test_host_alloc(n * sizeof(float));
    p->v = fl_test_host_alloc(n * sizeof(float));
    p->want = fl_test_host_alloc(n * sizeof(double));
    p->got = fl_test_host_alloc(n * sizeof(float));
    fl_fill_normal(p->q, n, fl_seed(seed + 1), 0.0f, s->amp);
    fl_fill_normal(p->k, n, fl_seed(seed + 2), 0.0f, s->amp);
    fl_fill_normal(p->v, n, fl_seed(seed + 3), 0.0f, 1.0f);
    size_t bytes = n * elem_size(dtype);
    p->dq = fl_test_dev_alloc(bytes);
    p->dk = fl_test_dev_alloc(bytes);
    p->dv = fl_test_dev_alloc(bytes);
    p->dout = fl_test_dev_alloc(bytes);
    if (dtype == ATTN_F16) {
        /* round to float16, and keep the rounded values as float: the
         * reference is the exact attention of the float16 inputs */
        uint16_t **h[3] = {&p->hq, &p->hk, &p->hv};
        float *f[3] = {p->q, p->k, p->v};
        void *d[3] = {p->dq, p->dk, p->dv};
        for (int i = 0; i < 3; ++i) {
            *h[i] = fl_test_host_alloc(n * sizeof(uint16_t));
            attention_f32_to_f16(f[i], *h[i], n);
            attention_f16_to_f32(*h[i], f[i], n);
            FL_ASSERT_CUDA(cudaMemcpy(d[i], *h[i], n * sizeof(uint16_t), cudaMemcpyHostToDevice));
        }
        p->hgot = fl_test_host_alloc(n * sizeof(uint16_t));
    } else {
        FL_ASSERT_CUDA(fl_upload_f32(p->dq, p->q, n));
        FL_ASSERT_CUDA(fl_upload_f32(p->dk, p->k, n));
        FL_ASSERT_CUDA(fl_upload_f32(p->dv, p->v, n));
    }
}

static void problem_free(problem05 *p)
{
    (void)cudaFree(p->dq);
    (void)cudaFree(p->dk);
    (void)cudaFree(p->dv);
    (void)cudaFree(p->dout);
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

/* ---- the CPU reference, in double ---------------------------------------------- */

/* O[h, i, :] of (bh, seq, d) float inputs; s is seq doubles of scratch. */
static void cpu_row(const float *q, const float *k, const float *v, int seq, int d, int causal,
                    double scale, int h, int i, double *s, double *out)
{
    const float *qi = q + ((size_t)h * seq + i) * d;
    const float *kh = k + (size_t)h * seq * d, *vh = v + (size_t)h * seq * d;
    int keys = causal ? i + 1 : seq;
    double mx = -INFINITY;
    for (int j = 0; j < keys; ++j) {
        const float *kj = kh + (size_t)j * d;
        double acc = 0.0;
        for (int c = 0; c < d; ++c) acc += (double)qi[c] * (double)kj[c];
        s[j] = acc * scale;
        if (s[j] > mx) mx = s[j];
    }
    double l = 0.0;
    for (int c = 0; c < d; ++c) out[c] = 0.0;
    for (int j = 0; j < keys; ++j) {
        double w = exp(s[j] - mx);
        l += w;
        const float *vj = vh + (size_t)j * d;
        for (int c = 0; c < d; ++c) out[c] += w * (double)vj[c];
    }
    for (int c = 0; c < d; ++c) out[c] /= l;
}

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
        cpu_row(p->q, p->k, p->v, p->s.seq, d, p->s.causal, p->scale, head[i], row[i], scratch,
                want + (size_t)i * d);
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
 * seq <= CPU_MAX_SEQ, else the unfused float32 path after checking it
 * against the CPU on sampled rows. */
static void make_reference(problem05 *p)
{
    const shape05 *s = &p->s;
    int d = s->head_dim;
    if (s->seq <= CPU_MAX_SEQ) {
        double *scratch = fl_test_host_alloc((size_t)s->seq * sizeof(double));
        for (int h = 0; h < s->batch_heads; ++h)
            for (int i = 0; i < s->seq; ++i)
                cpu_row(p->q, p->k, p->v, s->seq, d, s->causal, p->scale, h, i, scratch,
                        p->want + ((size_t)h * s->seq + i) * d);
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

/* ---- A_fused_f32 ------------------------------------------------------------------ */

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

/* Under the sanitizer stage: only the short shapes (seq 1, 7, 97, 113: a
 * partial tile, two tiles, both head sizes, causal or not). racecheck and
 * initcheck follow every shared-memory access of every tile: at seq 1024
 * they take minutes per case. */
#define SANITIZE_MAX_SEQ 128
static void skip_if_sanitizing(const shape05 *s)
{
    if (fl_test_sanitizing() && s->seq > SANITIZE_MAX_SEQ)
        cr_skip_test("seq %d is too long for the sanitizer stage (it runs seq <= %d)", s->seq,
                     SANITIZE_MAX_SEQ);
}

static void f32_case(const shape05 *s)
{
    FL_REQUIRE_GPU();
    skip_if_sanitizing(s);
    char label[128];
    shape_label(s, label, sizeof label);
    problem05 p;
    problem_init(&p, s, ATTN_F32, 0xA500 + (uint64_t)s->seq * 4 + s->head_dim + s->causal);
    make_reference(&p);
    run_guarded(&p, "attention_fused_f32");
    read_output(&p, p.dout);
    fl_compare_opts o = fl_compare_defaults("O", L05_F32_ATOL, L05_F32_RTOL);
    o.cols = (size_t)s->head_dim;
    fl_compare_result r = fl_compare_f32(p.got, p.want, p.n, &o);
    cr_assert(r.n_bad == 0, "attention_fused_f32 %s: %s (rows are head * seq + query)%s", label,
              r.message, attention_hint(s, &r));
    problem_free(&p);
}

ParameterizedTestParameters(A_fused_f32, correct)
{
    return cr_make_param_array(shape05, kShapesF32, N_F32);
}
ParameterizedTest(shape05 *s, A_fused_f32, correct) { f32_case(s); }

/* Two runs on the same input must agree bit for bit: a missing
 * __syncthreads() shows up as a difference. */
Test(A_fused_f32, same_result_twice)
{
    FL_REQUIRE_GPU();
    shape05 s = {1024, 64, 1, 2, 1.0f};
    /* the sanitizer's racecheck looks for the same races directly */
    skip_if_sanitizing(&s);
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

/* ---- A_memory ----------------------------------------------------------------------- */

Test(A_memory, no_seq_squared_buffer)
{
    FL_REQUIRE_GPU();
    size_t free0 = 0, total = 0;
    FL_ASSERT_CUDA(cudaMemGetInfo(&free0, &total));
    /* enough heads that S alone, seq² floats per head, is 1.25x this GPU */
    const int seq = L05_MEM_SEQ, d = 64;
    double s_per_head = (double)seq * seq * sizeof(float);
    int bh = (int)(1.25 * (double)total / s_per_head) + 1;
    if (bh < 2) bh = 2;
    shape05 s = {seq, d, 1, bh, 1.0f};
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

/* ---- B_fused_f16 ----------------------------------------------------------------------- */

/* The unfused float16 path's output on p, in a new device buffer. */
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

/* Max |out - want| of the unfused float16 path on p, checked to be sane. */
static double unfused_f16_error(problem05 *p, const char *label)
{
    uint16_t *out = run_unfused_f16(p);
    read_output(p, out);
    (void)cudaFree(out);
    fl_compare_opts o = fl_compare_defaults("O (unfused float16)", L05_F16_BASELINE_ATOL, 0.0);
    o.cols = (size_t)p->s.head_dim;
    fl_compare_result r = fl_compare_f32(p->got, p->want, p->n, &o);
    cr_assert(r.n_bad == 0,
              "the course's unfused float16 path at %s is off by more than %g (the course is "
              "broken, not your kernel): %s",
              label, L05_F16_BASELINE_ATOL, r.message);
    return r.max_abs_err;
}

static void f16_case(const shape05 *s)
{
    FL_REQUIRE_GPU();
    skip_if_sanitizing(s);
    char label[128];
    shape_label(s, label, sizeof label);
    problem05 p;
    problem_init(&p, s, ATTN_F16, 0xB500 + (uint64_t)s->seq * 4 + s->head_dim + s->causal);
    make_reference(&p);
    double err_unfused = unfused_f16_error(&p, label);
    double bound = L05_F16_FACTOR * err_unfused + L05_F16_ATOL;

    run_guarded(&p, "attention_fused_f16");
    read_output(&p, p.dout);
    fl_compare_opts o = fl_compare_defaults("O", bound, 0.0);
    o.cols = (size_t)s->head_dim;
    fl_compare_result r = fl_compare_f32(p.got, p.want, p.n, &o);
    cr_assert(r.n_bad == 0,
              "attention_fused_f16 %s: %s (rows are head * seq + query; allowed error %.2e = "
              "%.0f x the unfused float16 path's %.2e + %.0e)%s%s",
              label, r.message, bound, L05_F16_FACTOR, err_unfused, L05_F16_ATOL,
              attention_hint(s, &r),
              r.n_bad > 0 && r.n_unwritten == 0 && r.n_nonfinite == 0
                  ? " -- and keep S, m, l and the O accumulator in float32: only the mma "
                    "operands (Q, K, V and P) are float16"
                  : "");
    problem_free(&p);
}

ParameterizedTestParameters(B_fused_f16, correct)
{
    return cr_make_param_array(shape05, kShapesF16, N_F16);
}
ParameterizedTest(shape05 *s, B_fused_f16, correct) { f16_case(s); }

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

ParameterizedTestParameters(baseline, f32)
{
    return cr_make_param_array(shape05, kShapesF32, N_F32);
}
ParameterizedTest(shape05 *s, baseline, f32) { baseline_f32_case(s); }

static void baseline_f16_case(const shape05 *s)
{
    FL_REQUIRE_GPU();
    char label[128];
    shape_label(s, label, sizeof label);
    problem05 p;
    problem_init(&p, s, ATTN_F16, 0xD500 + (uint64_t)s->seq * 4 + s->head_dim + s->causal);
    make_reference(&p);
    (void)unfused_f16_error(&p, label);
    problem_free(&p);
}

ParameterizedTestParameters(baseline, f16)
{
    return cr_make_param_array(shape05, kShapesF16, N_F16);
}
ParameterizedTest(shape05 *s, baseline, f16) { baseline_f16_case(s); }

/* The S/P size and its overflow; too big for the GPU: a clean refusal, and
 * the GPU still works afterwards. (The size checks need no GPU, but a lesson
 * whose only checks that ran are CPU ones would read as passed in
 * `./lab check` on a machine without one.) */
Test(baseline, refuses_what_does_not_fit)
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
    shape05 s = {97, 64, 1, 2, 1.0f};
    problem05 p;
    problem_init(&p, &s, ATTN_F32, 0xC5EE);
    float *out = run_unfused_f32(&p);
    (void)cudaFree(out);
    problem_free(&p);
}

/* ---- speed ------------------------------------------------------------------------------ */

typedef struct {
    problem05 *p;
    void *out;         /* this variant's output */
    void *ws;          /* unfused: workspace */
    size_t ws_bytes;
    int fused;
    double atol;       /* check after timing: |out - want| <= atol + rtol |want| */
    double rtol;
    float *got;        /* host scratch */
    uint16_t *hgot;
    fl_rotor *rotor;   /* fresh inputs for every run: Q, K, V shifted by heads */
    size_t shift;      /* heads, of this variant's last run */
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

/* Untimed, before every run: Q, K and V rotated by a new number of heads,
 * the output poisoned. */
static cudaError_t speed_prepare(void *c, cudaStream_t st)
{
    speed_ctx *x = c;
    CUDA_CHECK(fl_test_rotor_next(x->rotor, st));
    x->shift = x->rotor->shift;
    return fl_poison(x->out, x->p->n * elem_size(x->p->dtype), st);
}

static int speed_check(void *c, char *msg, size_t len)
{
    speed_ctx *x = c;
    problem05 *p = x->p;
    size_t n = p->n;
    if (!fl_test_rotor_inputs_ok(x->rotor, x->who, msg, len)) return 0;
    if (p->dtype == ATTN_F16) {
        if (cudaMemcpy(x->hgot, x->out, n * sizeof(uint16_t), cudaMemcpyDeviceToHost) != cudaSuccess) {
            snprintf(msg, len, "could not read the output back");
            return 0;
        }
        attention_f16_to_f32(x->hgot, x->got, n);
    } else if (fl_download_f32(x->got, x->out, n) != cudaSuccess) {
        snprintf(msg, len, "could not read the output back");
        return 0;
    }
    /* the output's heads come out shifted with the inputs' */
    fl_unrotate_f32(x->got, n, x->shift * (size_t)p->s.seq * (size_t)p->s.head_dim);
    fl_compare_opts o = fl_compare_defaults("O", x->atol, x->rtol);
    o.cols = (size_t)p->s.head_dim;
    fl_compare_result r = fl_compare_f32(x->got, p->want, n, &o);
    snprintf(msg, len, "%s", r.message);
    return r.n_bad == 0;
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
    cr_assert(speedup >= min_speedup,
              "fused %s: %.2fx faster than unfused (%.1f us vs %.1f us, %.1f TFLOP/s), need >= "
              "%.2fx: %s",
              label, speedup, t[1].us.median, t[0].us.median, t[1].tflops, min_speedup, hint);
}

static void speed_test(attn_dtype dtype, double min_speedup, const char *hint)
{
    FL_REQUIRE_GPU();
    shape05 s = {L05_SPEED_SEQ, L05_SPEED_HEAD_DIM, 0, L05_SPEED_BATCH_HEADS, 1.0f};
    const char *name = dtype == ATTN_F16 ? "attention_fused_f16" : "attention_fused_f32";
    char label[128];
    snprintf(label, sizeof label, "%s seq=%d head_dim=%d batch_heads=%d",
             dtype == ATTN_F16 ? "float16" : "float32", s.seq, s.head_dim, s.batch_heads);
    problem05 p;
    problem_init(&p, &s, dtype, dtype == ATTN_F16 ? 0xE516 : 0xE532);
    make_reference(&p);

    speed_ctx base = {.p = &p, .fused = 0};
    speed_ctx fused = {.p = &p, .out = p.dout, .fused = 1};
    base.out = fl_test_dev_alloc(p.n * elem_size(dtype));
    FL_ASSERT_CUDA(attention_unfused_workspace_alloc(dtype, s.batch_heads, s.seq, &base.ws));
    base.ws_bytes = attention_unfused_workspace_bytes(dtype, s.batch_heads, s.seq);
    base.got = fused.got = p.got;
    base.hgot = fused.hgot = p.hgot;
    if (dtype == ATTN_F16) {
        double err_unfused = unfused_f16_error(&p, label);
        base.atol = L05_F16_BASELINE_ATOL;
        fused.atol = L05_F16_FACTOR * err_unfused + L05_F16_ATOL;
    } else {
        base.atol = fused.atol = L05_F32_ATOL;
        base.rtol = fused.rtol = L05_F32_RTOL;
    }

    fl_rotor rotor;
    size_t head_bytes = (size_t)s.seq * (size_t)s.head_dim * elem_size(dtype);
    fl_test_rotor_init(&rotor, (size_t)s.batch_heads);
    fl_test_rotor_add(&rotor, "Q", p.dq, head_bytes);
    fl_test_rotor_add(&rotor, "K", p.dk, head_bytes);
    fl_test_rotor_add(&rotor, "V", p.dv, head_bytes);
    base.rotor = fused.rotor = &rotor;
    base.who = dtype == ATTN_F16 ? "attention_unfused_f16" : "attention_unfused_f32";
    fused.who = name;

    /* Correct first: a fast wrong kernel earns nothing. */
    char msg[1024];
    FL_ASSERT_CUDA(speed_prepare(&fused, 0));
    FL_ASSERT_CUDA(speed_run(&fused, 0));
    FL_ASSERT_SYNC(name);
    cr_assert(speed_check(&fused, msg, sizeof msg), "%s %s: %s", name, label, msg);

    speed_case(label, &base, &fused, min_speedup, hint);
    fl_test_rotor_free(&rotor);
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
