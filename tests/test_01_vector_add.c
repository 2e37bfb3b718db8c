/* tests/test_01_vector_add.c — lesson 01: vector add, then fused elementwise.
 *
 * Built twice: against lessons/01-vector-add/vector_add.cu (the student's
 * file; `./lab check 01`) and against solutions/01-vector-add (`./lab test`).
 *
 *   A_vector_add::*        Part A, c = a + b, compared bitwise (a float add is
 *                          exact and deterministic: there is one right answer)
 *     correct              n = 1, 127, 129, 2^20 + 3, 2^26; every pointer 4 or
 *                          12 bytes past a 16-byte boundary; only c shifted
 *     edges                n = 0 (a no-op: cudaSuccess, nothing written), then
 *                          n = 4099 with each pointer misaligned on its own,
 *                          all 8-byte aligned, all aligned but not at the start
 *                          of their allocation, all misaligned differently
 *     stream               queued on the stream it is given, and only there,
 *                          without waiting for the GPU (fl_test_stream_honoured)
 *     huge                 n past 2^32 (16 GiB an array) when the GPU has the
 *                          memory (else past 2^31; else skipped, saying so):
 *                          a and b are views of one buffer, aligned and then
 *                          misaligned; checked in stretches at the start,
 *                          around elements 2^31 and 2^32, at the end and at
 *                          8 places drawn after the run
 *   B_fused_elementwise::* Part B, y = (a + b) * s + c, against a double
 *                          reference; the same cases as Part A (a, b, c, y),
 *                          and
 *     scale                s = -2.75, 0, 1, 0.1, 1024.5 and one drawn from the
 *                          seed, then s = -3.5 on a + b that nearly cancel
 *                          (|a| in [1024, 4096), b = -a + [-1, 1)): add a + b
 *                          first, as the formula says
 *   baseline::*            the unfused baseline (complete; if it fails, the
 *                          course is broken, not your kernel)
 *   speed::*               fused vs unfused at n = 2^26. Before every run,
 *                          warm-ups included, a, b, c and s are drawn afresh
 *                          on the GPU from a new key (fl_test_fresh_key:
 *                          unpredictable, never the same twice) and y is
 *                          poisoned; after every run (untimed) 32 stretches of
 *                          1024 elements of y, drawn after the run, are
 *                          checked against a CPU reference computed from the
 *                          key, and the inputs' checksums. The full 2^26
 *                          output is checked by the correct cases.
 *
 * Tolerance of Part B (tests/thresholds.h): |y - ref| <= atol + rtol |ref|
 * with atol = L01_FUSED_ATOL_PER_Y (2|s| + 1): |a|, |b|, |c| <= 1 (and
 * |a + b| <= 2 on the cancelling inputs), so |y| <= 2|s| + 1, and a float32
 * kernel computing (a + b), the product and the sum rounds at most three
 * times, each by at most 2^-24 of that bound.
 */
#define _POSIX_C_SOURCE 200809L
#include "fl_test.h"
#include "thresholds.h"
#include "data.h"
#include "vector_add.h"
#include "vector_add_reference.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TestSuite(A_vector_add, .timeout = 60);
TestSuite(B_fused_elementwise, .timeout = 60);
TestSuite(baseline, .timeout = 60);
TestSuite(speed, .timeout = 180);

static const float kScale = 1.5f;

/* One problem: n elements, every array placed `offset` floats into its
 * allocation (offset 1 makes every pointer misaligned for float4), and the
 * output `out_shift` floats further (so an alignment check that looks only
 * at the inputs is caught). */
typedef struct {
    size_t n;
    size_t offset;
    size_t out_shift;
} shape01;

static shape01 kShapes[] = {
    {1, 0, 0}, {127, 0, 0}, {129, 0, 0}, {(1u << 20) + 3, 0, 0}, {(size_t)1 << 26, 0, 0},
    {1000, 1, 0}, {4097, 3, 0}, {4096, 0, 1},
};
#define N_SHAPES (sizeof kShapes / sizeof kShapes[0])

/* Where each array starts, in floats past a 16-byte-aligned allocation:
 * a, b, c (Part B's third input) and the output. */
enum { OFF_A, OFF_B, OFF_C, OFF_OUT, N_OFF };

typedef struct {
    size_t n;
    float s;                 /* Part B's scalar */
    float *a, *b, *c;        /* host inputs */
    float *got;              /* host copy of the output */
    double *want;            /* reference */
    float *da, *db, *dc, *dy;/* device, already offset */
    float *dt1, *dt2;        /* baseline scratch */
    void *alloc[6];          /* what to cudaFree */
} problem01;

static float *dev_at(problem01 *p, int slot, size_t offset)
{
    p->alloc[slot] = fl_test_dev_alloc((p->n + offset) * sizeof(float));
    return (float *)p->alloc[slot] + offset;
}

static void problem_init_at(problem01 *p, size_t n, const size_t off[N_OFF], uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->s = kScale;
    p->a = fl_test_host_alloc(n * sizeof(float));
    p->b = fl_test_host_alloc(n * sizeof(float));
    p->c = fl_test_host_alloc(n * sizeof(float));
    p->got = fl_test_host_alloc(n * sizeof(float));
    p->want = fl_test_host_alloc(n * sizeof(double));
    fl_fill_uniform(p->a, n, fl_seed(seed + 1), -1.0f, 1.0f);
    fl_fill_uniform(p->b, n, fl_seed(seed + 2), -1.0f, 1.0f);
    fl_fill_uniform(p->c, n, fl_seed(seed + 3), -1.0f, 1.0f);
    p->da = dev_at(p, 0, off[OFF_A]);
    p->db = dev_at(p, 1, off[OFF_B]);
    p->dc = dev_at(p, 2, off[OFF_C]);
    p->dy = dev_at(p, 3, off[OFF_OUT]);
    p->dt1 = dev_at(p, 4, off[OFF_A]);
    p->dt2 = dev_at(p, 5, off[OFF_A]);
    FL_ASSERT_CUDA(fl_upload_f32(p->da, p->a, n));
    FL_ASSERT_CUDA(fl_upload_f32(p->db, p->b, n));
    FL_ASSERT_CUDA(fl_upload_f32(p->dc, p->c, n));
}

static void problem_init(problem01 *p, size_t n, size_t offset, size_t out_shift,
                         uint64_t seed)
{
    const size_t off[N_OFF] = {offset, offset, offset, offset + out_shift};
    problem_init_at(p, n, off, seed);
}

static void problem_free(problem01 *p)
{
    for (int i = 0; i < 6; ++i) (void)cudaFree(p->alloc[i]);
    free(p->a); free(p->b); free(p->c); free(p->got); free(p->want);
}

/* p->want: Part A's reference (the float sum) or Part B's (in double), from
 * the lesson's reference module (vector_add_reference.h), which the bench
 * checks against too. */
static void reference(problem01 *p, int exact)
{
    if (exact) vector_add_reference(p->a, p->b, p->want, p->n);
    else fused_elementwise_reference(p->a, p->b, p->c, p->s, p->want, p->n);
}

/* ---- the three launchers under test, as harness callbacks ------------------ */

static cudaError_t run_add(void *ctx, cudaStream_t st)
{
    problem01 *p = ctx;
    return vector_add(p->da, p->db, p->dy, p->n, st);
}

static cudaError_t run_fused(void *ctx, cudaStream_t st)
{
    problem01 *p = ctx;
    return fused_elementwise(p->da, p->db, p->dc, p->s, p->dy, p->n, st);
}

static cudaError_t run_unfused(void *ctx, cudaStream_t st)
{
    problem01 *p = ctx;
    return unfused_elementwise(p->da, p->db, p->dc, p->s, p->dt1, p->dt2, p->dy, p->n, st);
}

typedef struct {
    const char *name;  /* launcher, for messages */
    const char *out;   /* output array name */
    fl_run_fn run;
    int exact;         /* 1: bitwise against the float sum (part A) */
    uint64_t seed;
} part01;

static const part01 kPartA = {"vector_add", "c", run_add, 1, 0xA000};
static const part01 kPartB = {"fused_elementwise", "y", run_fused, 0, 0xB000};
static const part01 kBaseline = {"unfused_elementwise", "y", run_unfused, 0, 0xC000};

static fl_compare_opts part_opts(const part01 *part, float s)
{
    return part->exact ? fl_compare_defaults(part->out, 0.0, 0.0)
                       : fl_compare_defaults(part->out, fused_elementwise_atol(s), L01_FUSED_RTOL);
}

/* Poison the output, run once on p's inputs, compare with the CPU
 * reference. `label` describes the case in messages; `hint` (or "") is
 * added to a wrong answer's message. */
static void check_case(problem01 *p, const part01 *part, const char *label, const char *hint)
{
    reference(p, part->exact);
    FL_ASSERT_CUDA(fl_poison(p->dy, p->n * sizeof(float), 0));
    fl_inputs in = {0};
    fl_test_inputs_add(&in, "a", p->da, p->n * sizeof(float));
    fl_test_inputs_add(&in, "b", p->db, p->n * sizeof(float));
    if (!part->exact) fl_test_inputs_add(&in, "c", p->dc, p->n * sizeof(float));
    cudaError_t e = part->run(p, 0);
    cr_assert(e == cudaSuccess, "%s: returned %s (%s)%s", label, cudaGetErrorName(e),
              cudaGetErrorString(e), fl_test_error_hint(e));
    FL_ASSERT_SYNC(label);
    FL_ASSERT_NO_OVERRUN(p->dy + p->n, part->name, part->out);
    FL_ASSERT_INPUTS(&in, part->name);
    FL_ASSERT_CUDA(fl_download_f32(p->got, p->dy, p->n));
    fl_compare_opts o = part_opts(part, p->s);
    fl_compare_result r = fl_compare_f32(p->got, p->want, p->n, &o);
    cr_assert(r.n_bad == 0, "%s: %s%s", label, r.message, hint);
}

/* The parameterized cases: one shape, s = 1.5. */
static void correct_case(const shape01 *s, const part01 *part)
{
    /* the sanitizer stage's skip, before CUDA starts and before the host
     * buffers (with the cases together a skipped case's would stay behind) */
    fl_test_skip_if_too_large((s->n + s->offset + s->out_shift) * sizeof(float));
    FL_REQUIRE_GPU();
    problem01 p;
    problem_init(&p, s->n, s->offset, s->out_shift, part->seed + s->n);
    char label[256];
    snprintf(label, sizeof label, "%s n=%zu%s", part->name, s->n,
             s->offset ? " (misaligned pointers)"
                       : s->out_shift ? " (inputs aligned, output misaligned)" : "");
    check_case(&p, part, label, "");
    problem_free(&p);
}

FL_PARAM_TEST(A_vector_add, correct, shape01, s, kShapes, N_SHAPES) { correct_case(s, &kPartA); }

FL_PARAM_TEST(B_fused_elementwise, correct, shape01, s, kShapes, N_SHAPES) { correct_case(s, &kPartB); }

FL_PARAM_TEST(baseline, correct, shape01, s, kShapes, N_SHAPES) { correct_case(s, &kBaseline); }

/* ---- n = 0, and every pointer alignment ------------------------------------- */

/* The API takes any float pointer. These offsets (in floats) put a, b, c and
 * the output at 0, 4, 8 or 12 bytes past a 16-byte boundary, one at a time
 * and together: a float4 path must check every pointer it casts. */
static const size_t kAlign[][N_OFF] = {
    {1, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 3, 0}, {0, 0, 0, 1},
    {2, 2, 2, 2}, {4, 4, 4, 4}, {3, 1, 2, 1},
};
#define EDGE_N ((size_t)4099)

/* "a, b, c, y start 4, 0, 0, 0 bytes past a 16-byte boundary (only a
 * misaligned)" for the arrays the launcher takes. */
static void describe_offsets(char *buf, size_t len, const part01 *part,
                             const size_t off[N_OFF])
{
    const char *names[N_OFF] = {"a", "b", "c", part->out};
    int uses[N_OFF] = {1, 1, !part->exact, 1};
    char list[64] = "", bytes[64] = "", bad[64] = "";
    int nbad = 0, nused = 0;
    for (int k = 0; k < N_OFF; ++k) {
        if (!uses[k]) continue;
        size_t b = (off[k] * sizeof(float)) % 16;
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", nused ? ", " : "",
                 names[k]);
        snprintf(bytes + strlen(bytes), sizeof bytes - strlen(bytes), "%s%zu", nused ? ", " : "",
                 b);
        if (b) {
            snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "%s%s", nbad ? ", " : "",
                     names[k]);
            nbad++;
        }
        nused++;
    }
    if (nbad == 0)
        snprintf(buf, len, "%s start %s bytes past a 16-byte boundary (all aligned)", list, bytes);
    else if (nbad == nused)
        snprintf(buf, len, "%s start %s bytes past a 16-byte boundary (all misaligned)", list,
                 bytes);
    else
        snprintf(buf, len, "%s start %s bytes past a 16-byte boundary (%s%s misaligned)", list,
                 bytes, nbad == 1 ? "only " : "", bad);
}

/* n = 0 must be a no-op: cudaSuccess, nothing launched, nothing written. */
static void empty_case(const part01 *part)
{
    problem01 p;
    problem_init(&p, 16, 0, 0, part->seed + 0xE0);
    FL_ASSERT_CUDA(fl_poison(p.dy, p.n * sizeof(float), 0));
    FL_ASSERT_CUDA(cudaDeviceSynchronize());
    size_t n = p.n;
    p.n = 0;
    cudaError_t e = part->run(&p, 0);
    p.n = n;
    cr_assert(e == cudaSuccess,
              "%s with n = 0 returned %s (%s): n = 0 is an empty array, not an error -- return "
              "cudaSuccess without launching (a grid of 0 blocks is an invalid launch)",
              part->name, cudaGetErrorName(e), cudaGetErrorString(e));
    FL_ASSERT_SYNC(part->name);
    FL_ASSERT_CUDA(fl_download_f32(p.got, p.dy, p.n));
    size_t written = 0;
    for (size_t i = 0; i < p.n; ++i) written += !fl_is_poison_f32(p.got[i]);
    cr_assert(written == 0,
              "%s with n = 0 wrote %zu of the first %zu elements of %s: with n = 0 there is "
              "nothing to write",
              part->name, written, p.n, part->out);
    problem_free(&p);
}

static void edges_case(const part01 *part)
{
    FL_REQUIRE_GPU();
    empty_case(part);
    for (size_t k = 0; k < sizeof kAlign / sizeof kAlign[0]; ++k) {
        const size_t *off = kAlign[k];
        /* Part A has no third input: a shift of c alone changes nothing */
        if (part->exact && off[OFF_A] % 4 == 0 && off[OFF_B] % 4 == 0 && off[OFF_OUT] % 4 == 0 &&
            off[OFF_C] % 4 != 0)
            continue;
        problem01 p;
        problem_init_at(&p, EDGE_N, off, part->seed + 0xED0 + k);
        char where[192], label[320];
        describe_offsets(where, sizeof where, part, off);
        snprintf(label, sizeof label, "%s n=%zu, %s", part->name, EDGE_N, where);
        check_case(&p, part, label,
                   " -- take a float4 path only when every pointer it casts is 16-byte aligned "
                   "(FL_ALIGNED16)");
        problem_free(&p);
    }
}

FL_TEST(A_vector_add, edges) { edges_case(&kPartA); }
FL_TEST(B_fused_elementwise, edges) { edges_case(&kPartB); }

/* ---- the scalar s ------------------------------------------------------------ */

/* Every other case passes s = 1.5: a kernel must use the s it is given, and
 * compute the formula as written. */
static const float kScales[] = {-2.75f, 0.0f, 1.0f, 0.1f, 1024.5f};
#define SCALE_N ((size_t)10007)

/* Inputs whose sum nearly cancels: |a| in [1024, 4096) with a random sign,
 * b = -a + d with d in [-1, 1), c in [-1, 1). a and -b are within a factor
 * 2 of each other, so a + b is exact in float32 (Sterbenz) and |a + b| <= 2:
 * the tolerance of the other cases still applies. a * s + b * s is not
 * exact: each product rounds at ~2^-24 of |a s| ~ 4096 |s|. */
static void fill_cancelling(problem01 *p, uint64_t seed)
{
    fl_rng r = fl_rng_make(fl_seed(seed));
    for (size_t i = 0; i < p->n; ++i) {
        double mag = 1024.0 + 3072.0 * fl_rng_uniform(&r);
        float a = (float)(fl_rng_uniform(&r) < 0.5 ? -mag : mag);
        float d = (float)(2.0 * fl_rng_uniform(&r) - 1.0);
        p->a[i] = a;
        p->b[i] = -a + d;
        p->c[i] = (float)(2.0 * fl_rng_uniform(&r) - 1.0);
    }
    FL_ASSERT_CUDA(fl_upload_f32(p->da, p->a, p->n));
    FL_ASSERT_CUDA(fl_upload_f32(p->db, p->b, p->n));
    FL_ASSERT_CUDA(fl_upload_f32(p->dc, p->c, p->n));
}

FL_TEST(B_fused_elementwise, scale)
{
    FL_REQUIRE_GPU();
    const size_t off[N_OFF] = {0, 0, 0, 0};
    problem01 p;
    problem_init_at(&p, SCALE_N, off, kPartB.seed + 0x5CA);
    const size_t ns = sizeof kScales / sizeof kScales[0];
    fl_rng r = fl_rng_make(fl_seed(0xB5CA1E));
    for (size_t k = 0; k <= ns; ++k) {
        /* the listed values, then one in [-8, 8) drawn from the seed */
        p.s = k < ns ? kScales[k] : (float)(16.0 * fl_rng_uniform(&r) - 8.0);
        char label[160];
        snprintf(label, sizeof label, "fused_elementwise n=%zu, s = %.9g", SCALE_N, (double)p.s);
        check_case(&p, &kPartB, label,
                   " -- use the s the launcher is given (every other check passes s = 1.5)");
    }
    fill_cancelling(&p, 0xB5CA2E);
    p.s = -3.5f;
    char label[256];
    snprintf(label, sizeof label,
             "fused_elementwise n=%zu, s = -3.5, a and b nearly cancelling (|a| in [1024, 4096), "
             "b = -a + [-1, 1))",
             SCALE_N);
    check_case(&p, &kPartB, label,
               " -- compute (a + b) first, as the formula says: a + b is exact here, while a * s "
               "+ b * s rounds each product at ~2^-24 of |a s| and loses what survives the "
               "cancellation");
    problem_free(&p);
}

/* ---- the stream argument ---------------------------------------------------- */

/* What fl_test_stream_honoured runs and checks. The check reads the output
 * on a stream of its own into pinned memory: while it runs, the legacy
 * default stream is held busy, so a plain cudaMemcpy would wait behind it. */
typedef struct {
    problem01 *p;
    const part01 *part;
    cudaStream_t readback;
    float *pinned;
} stream01;

static cudaError_t stream_run(void *ctx, cudaStream_t st)
{
    stream01 *t = ctx;
    return t->part->run(t->p, st);
}

static cudaError_t stream_poison(void *ctx, cudaStream_t st)
{
    stream01 *t = ctx;
    return fl_poison(t->p->dy, t->p->n * sizeof(float), st);
}

static int stream_check(void *ctx, char *msg, size_t len)
{
    stream01 *t = ctx;
    problem01 *p = t->p;
    cudaError_t e = cudaMemcpyAsync(t->pinned, p->dy, p->n * sizeof(float),
                                    cudaMemcpyDeviceToHost, t->readback);
    if (e == cudaSuccess) e = cudaStreamSynchronize(t->readback);
    if (e != cudaSuccess) {
        snprintf(msg, len, "could not read %s back: %s", t->part->out, cudaGetErrorString(e));
        return 0;
    }
    fl_compare_opts o = part_opts(t->part, p->s);
    fl_compare_result r = fl_compare_f32(t->pinned, p->want, p->n, &o);
    snprintf(msg, len, "%s", r.message);
    return r.n_bad == 0;
}

static void stream_case(const part01 *part)
{
    FL_REQUIRE_GPU();
    problem01 p;
    problem_init(&p, ((size_t)1 << 20) + 3, 0, 0, part->seed + 0x57);
    reference(&p, part->exact);
    stream01 t = {&p, part, NULL, NULL};
    FL_ASSERT_CUDA(cudaStreamCreateWithFlags(&t.readback, cudaStreamNonBlocking));
    FL_ASSERT_CUDA(cudaMallocHost((void **)&t.pinned, p.n * sizeof(float)));
    char who[128];
    snprintf(who, sizeof who, "%s n=%zu", part->name, p.n);
    fl_test_stream_honoured(who, stream_run, stream_poison, stream_check, &t);
    FL_ASSERT_SYNC(who);
    (void)cudaFreeHost(t.pinned);
    (void)cudaStreamDestroy(t.readback);
    problem_free(&p);
}

FL_TEST(A_vector_add, stream) { stream_case(&kPartA); }
FL_TEST(B_fused_elementwise, stream) { stream_case(&kPartB); }

/* ---- more than 2^31 (2^32) elements ----------------------------------------- */

/* The inputs are views of one buffer X, filled on the GPU from a key:
 * a = X + oa, b = X + ob, c = X + oc, so a[i] = X[i + oa] and the reference
 * of any element comes from the key (fl_uniform_at). Two runs: every view
 * 16-byte aligned (a float4 path), then every view misaligned (a scalar
 * path). Only stretches of the output are read back and checked. */
#define HUGE_PAD ((size_t)16)      /* X holds n + HUGE_PAD floats */
#define HUGE_STRETCH ((size_t)2048) /* elements per checked stretch */
#define HUGE_RANDOM 8               /* stretches drawn after the run */
#define HUGE_SECONDS 20.0           /* the runs take ~20 ms at full speed */
static const size_t kHugeViews[2][3] = {{0, 4, 8}, {1, 6, 11}};

/* The largest n of the two options (past 2^32, past 2^31) whose buffers,
 * X and the output, fit in this GPU's free memory with 1 GiB to spare; 0
 * when neither does. */
static size_t huge_n(double *need_gib, double *free_gib)
{
    size_t free_b = 0, total_b = 0;
    FL_ASSERT_CUDA(cudaMemGetInfo(&free_b, &total_b));
    *free_gib = (double)free_b / (double)(1u << 30);
    const size_t options[] = {((size_t)1 << 32) + 13, ((size_t)1 << 31) + 13};
    for (int k = 0; k < 2; ++k) {
        size_t need = (2 * options[k] + HUGE_PAD) * sizeof(float) + 2 * FL_GUARD_BYTES +
                      ((size_t)1 << 30);
        *need_gib = (double)need / (double)(1u << 30);
        if (need <= free_b) return options[k];
    }
    return 0;
}


static void huge_check_stretch(const part01 *part, const float *dy, size_t n, uint64_t key,
                               const size_t view[3], float s, size_t start, const char *who,
                               const char *where, float *got, double *want)
{
    size_t len = n - start < HUGE_STRETCH ? n - start : HUGE_STRETCH;
    FL_ASSERT_CUDA(fl_download_f32(got, dy + start, len));
    for (size_t i = 0; i < len; ++i) {
        float a = fl_uniform_at(key, start + i + view[0], -1.0f, 1.0f);
        float b = fl_uniform_at(key, start + i + view[1], -1.0f, 1.0f);
        if (part->exact) {
            want[i] = vector_add_ref(a, b);
        } else {
            float c = fl_uniform_at(key, start + i + view[2], -1.0f, 1.0f);
            want[i] = fused_elementwise_ref(a, b, s, c);
        }
    }
    fl_compare_opts o = part_opts(part, s);
    fl_compare_result r = fl_compare_f32(got, want, len, &o);
    cr_assert(r.n_bad == 0,
              "%s: %s[%zu .. %zu) (%s; the indices below count from %zu): %s -- past 2^31 "
              "elements every index must be a size_t: cast before multiplying "
              "((size_t)blockIdx.x * blockDim.x; blockIdx.x * blockDim.x is an unsigned int "
              "product that wraps at 2^32) and keep loop counters in size_t",
              who, part->out, start, start + len, where, start, r.message);
}

static void huge_case(const part01 *part)
{
    /* skipped under the sanitizer (up to 16 MiB a buffer) before CUDA starts,
     * which there costs an instrumented start per tool: its smallest buffer */
    fl_test_skip_if_too_large(((size_t)1 << 31) * sizeof(float));
    FL_REQUIRE_GPU();
    double need = 0.0, avail = 0.0;
    const size_t n = huge_n(&need, &avail);
    if (n == 0)
        cr_skip_test("the case past 2^31 elements needs %.1f GiB of free GPU memory, this GPU "
                     "has %.1f GiB free",
                     need, avail);
    const int past = n > ((size_t)1 << 32) ? 32 : 31;
    float *X = fl_test_dev_alloc((n + HUGE_PAD) * sizeof(float));
    float *Y = fl_test_dev_alloc(n * sizeof(float));
    const uint64_t key = fl_test_fresh_key();
    FL_ASSERT_CUDA(fl_fill_uniform_dev(X, n + HUGE_PAD, key, -1.0f, 1.0f, 0));
    fl_inputs in = {0};
    fl_test_inputs_add(&in, part->exact ? "a and b (views of one buffer)"
                                        : "a, b and c (views of one buffer)",
                       X, (n + HUGE_PAD) * sizeof(float));
    float *got = fl_test_host_alloc(HUGE_STRETCH * sizeof(float));
    double *want = fl_test_host_alloc(HUGE_STRETCH * sizeof(double));
    const float s = -2.25f;

    for (int v = 0; v < 2; ++v) {
        const size_t *view = kHugeViews[v];
        problem01 p;
        memset(&p, 0, sizeof p);
        p.n = n;
        p.s = s;
        p.da = X + view[0];
        p.db = X + view[1];
        p.dc = X + view[2];
        p.dy = Y;
        char who[320];
        snprintf(who, sizeof who,
                 "%s n=%zu (more than 2^%d elements; %s %s bytes into one buffer%s)", part->name,
                 n, past, part->exact ? "a, b at" : "a, b, c at",
                 v == 0 ? (part->exact ? "0, 16" : "0, 16, 32") : (part->exact ? "4, 24" : "4, 24, 44"),
                 v == 0 ? ", all 16-byte aligned" : ", all misaligned");
        FL_ASSERT_CUDA(fl_poison(Y, n * sizeof(float), 0));
        cudaError_t e = part->run(&p, 0);
        cr_assert(e == cudaSuccess, "%s: returned %s (%s)%s", who, cudaGetErrorName(e),
                  cudaGetErrorString(e), fl_test_error_hint(e));
        fl_test_sync_within(HUGE_SECONDS, who,
                            "at full speed it takes a few tens of milliseconds -- does a 32-bit "
                            "index wrap around? With an unsigned int i, `i < n` is always true "
                            "past 2^32 and i += stride cycles forever: use size_t");
        FL_ASSERT_NO_OVERRUN(Y + n, part->name, part->out);
        FL_ASSERT_INPUTS(&in, part->name);

        /* the start, both sides of 2^31 (and 2^32), the end, then stretches
         * drawn after the run */
        const size_t half = HUGE_STRETCH / 2;
        huge_check_stretch(part, Y, n, key, view, s, 0, who, "the start", got, want);
        huge_check_stretch(part, Y, n, key, view, s, ((size_t)1 << 31) - half, who,
                           "around element 2^31", got, want);
        if (past == 32)
            huge_check_stretch(part, Y, n, key, view, s, ((size_t)1 << 32) - half, who,
                               "around element 2^32", got, want);
        huge_check_stretch(part, Y, n, key, view, s, n - HUGE_STRETCH, who, "the end", got,
                           want);
        size_t idx[HUGE_RANDOM];
        fl_test_sample_rows(fl_test_fresh_key(), n / HUGE_STRETCH, HUGE_RANDOM, idx);
        for (int k = 0; k < HUGE_RANDOM; ++k)
            huge_check_stretch(part, Y, n, key, view, s, idx[k] * HUGE_STRETCH, who,
                               "a stretch drawn after the run", got, want);
    }
    free(got);
    free(want);
    (void)cudaFree(X);
    (void)cudaFree(Y);
}

Test(A_vector_add, huge, .timeout = 120) { huge_case(&kPartA); }
Test(B_fused_elementwise, huge, .timeout = 120) { huge_case(&kPartB); }

/* ---- speed ----------------------------------------------------------------- */

/* Fresh inputs for every timed run: before each run `prepare` draws a, b,
 * c and s from new keys (fl_test_fresh_key) on the GPU and poisons y; after
 * each run `check` compares SPEED_STRETCHES stretches of y, drawn after the
 * run, with a reference computed from the keys (fl_uniform_at). Nothing a
 * launcher saw before predicts the next inputs, so a result kept from an
 * earlier call is wrong. */
#define SPEED_STRETCH ((size_t)1024)
#define SPEED_STRETCHES 32

typedef struct {
    problem01 *p;          /* device buffers only (inputs shared by both variants) */
    fl_run_fn run;
    const char *who;
    uint64_t key[3];       /* a, b, c of the last prepare */
    float s;               /* s of the last prepare */
    fl_inputs sums;        /* checksums of what the last prepare wrote */
    int armed;             /* 1 between prepare and the first check after it */
    size_t *idx;           /* scratch of the check */
    float *got;
    double *want;
} timed01;

static cudaError_t timed_run(void *ctx, cudaStream_t st)
{
    timed01 *t = ctx;
    return t->run(t->p, st);
}

/* Untimed, before every run: new a, b, c and s; y poisoned. */
static cudaError_t prepare_run(void *ctx, cudaStream_t st)
{
    timed01 *t = ctx;
    problem01 *p = t->p;
    float *in[3] = {p->da, p->db, p->dc};
    for (int k = 0; k < 3; ++k) {
        t->key[k] = fl_test_fresh_key();
        CUDA_CHECK(fl_fill_uniform_dev(in[k], p->n, t->key[k], -1.0f, 1.0f, st));
    }
    t->s = fl_uniform_at(fl_test_fresh_key(), 0, 0.5f, 2.5f);
    p->s = t->s;
    CUDA_CHECK(cudaStreamSynchronize(st));
    CUDA_CHECK(fl_test_inputs_snapshot(&t->sums));
    t->armed = 1;
    return fl_poison(p->dy, p->n * sizeof(float), st);
}

static int recheck(void *ctx, char *msg, size_t len)
{
    timed01 *t = ctx;
    problem01 *p = t->p;
    /* the inputs are checked once after each prepare: the other variant's
     * prepare refills them before the check that ends the timing */
    if (t->armed) {
        t->armed = 0;
        if (!fl_test_inputs_unchanged(&t->sums, t->who, msg, len)) return 0;
    }
    fl_test_sample_rows(fl_test_fresh_key(), p->n / SPEED_STRETCH, SPEED_STRETCHES, t->idx);
    for (int k = 0; k < SPEED_STRETCHES; ++k) {
        size_t start = t->idx[k] * SPEED_STRETCH;
        if (fl_download_f32(t->got, p->dy + start, SPEED_STRETCH) != cudaSuccess) {
            snprintf(msg, len, "could not read the output back");
            return 0;
        }
        for (size_t i = 0; i < SPEED_STRETCH; ++i) {
            float a = fl_uniform_at(t->key[0], start + i, -1.0f, 1.0f);
            float b = fl_uniform_at(t->key[1], start + i, -1.0f, 1.0f);
            float c = fl_uniform_at(t->key[2], start + i, -1.0f, 1.0f);
            t->want[i] = fused_elementwise_ref(a, b, t->s, c);
        }
        fl_compare_opts o = fl_compare_defaults("y", fused_elementwise_atol(t->s), L01_FUSED_RTOL);
        fl_compare_result r = fl_compare_f32(t->got, t->want, SPEED_STRETCH, &o);
        if (r.n_bad) {
            snprintf(msg, len,
                     "y[%zu .. %zu) (s = %.9g; one of %d stretches drawn after the run; the "
                     "indices below count from %zu): %s",
                     start, start + SPEED_STRETCH, (double)t->s, SPEED_STRETCHES, start,
                     r.message);
            return 0;
        }
    }
    snprintf(msg, len, "%d stretches of %zu elements of y within tolerance", SPEED_STRETCHES,
             SPEED_STRETCH);
    return 1;
}

static void timed_init(timed01 *t, problem01 *p, fl_run_fn run, const char *who)
{
    memset(t, 0, sizeof *t);
    t->p = p;
    t->run = run;
    t->who = who;
    fl_test_inputs_add(&t->sums, "a", p->da, p->n * sizeof(float));
    fl_test_inputs_add(&t->sums, "b", p->db, p->n * sizeof(float));
    fl_test_inputs_add(&t->sums, "c", p->dc, p->n * sizeof(float));
    t->idx = fl_test_host_alloc(SPEED_STRETCHES * sizeof(size_t));
    t->got = fl_test_host_alloc(SPEED_STRETCH * sizeof(float));
    t->want = fl_test_host_alloc(SPEED_STRETCH * sizeof(double));
}

static void timed_free(timed01 *t)
{
    free(t->idx);
    free(t->got);
    free(t->want);
}

Test(speed, fused_vs_unfused)
{
    FL_REQUIRE_GPU();
    /* device buffers only: the inputs are drawn on the GPU before each run */
    problem01 p;
    memset(&p, 0, sizeof p);
    p.n = L01_SPEED_N;
    p.s = kScale;
    p.da = dev_at(&p, 0, 0);
    p.db = dev_at(&p, 1, 0);
    p.dc = dev_at(&p, 2, 0);
    p.dy = dev_at(&p, 3, 0);
    p.dt1 = dev_at(&p, 4, 0);
    p.dt2 = dev_at(&p, 5, 0);

    /* Correct first: a fast wrong kernel earns nothing. */
    timed01 tf;
    timed_init(&tf, &p, run_fused, "fused_elementwise");
    FL_ASSERT_CUDA(prepare_run(&tf, 0));
    FL_ASSERT_CUDA(run_fused(&p, 0));
    FL_ASSERT_SYNC("fused_elementwise");
    char msg[1024];
    cr_assert(recheck(&tf, msg, sizeof msg), "fused_elementwise n=2^26: %s", msg);

    /* Each variant writes its own output and has its own s; both read the
     * same input buffers. Before every run (warm-up or timed) the inputs are
     * drawn afresh and the output poisoned; after every run the output and
     * the inputs are checked (untimed). */
    problem01 q = p;
    q.alloc[3] = fl_test_dev_alloc(p.n * sizeof(float));
    q.dy = q.alloc[3];
    timed01 tb;
    timed_init(&tb, &q, run_unfused, "unfused_elementwise");

    fl_variant base = {.name = "unfused (3 kernels)", .run = timed_run, .ctx = &tb,
                       .bytes = ELEMENTWISE_UNFUSED_BYTES(p.n), .flops = 3.0 * p.n,
                       .prepare = prepare_run, .check = recheck};
    fl_variant fused = {.name = "fused", .run = timed_run, .ctx = &tf,
                        .bytes = ELEMENTWISE_FUSED_BYTES(p.n), .flops = 3.0 * p.n,
                        .prepare = prepare_run, .check = recheck};
    fl_test_speed("n=2^26", &base, &fused, L01_MIN_SPEEDUP, L01_MIN_PCT_CEILING);

    timed_free(&tf);
    timed_free(&tb);
    (void)cudaFree(q.dy);
    for (int i = 0; i < 6; ++i) (void)cudaFree(p.alloc[i]);
}
