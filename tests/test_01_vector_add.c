/* tests/test_01_vector_add.c — lesson 01: vector add, then fused elementwise.
 *
 * Built twice: against lessons/01-vector-add/vector_add.cu (the student's
 * file; `./lab check 01`) and against solutions/01-vector-add (`./lab test`).
 *
 *   A_vector_add::*       Part A, c = a + b, compared bitwise (a float add is
 *                         exact and deterministic: there is one right answer)
 *   B_fused_elementwise::* Part B, y = (a + b) * s + c, against a double
 *                         reference with a few float roundings of slack
 *   baseline::*           the unfused baseline (complete; if it fails, the
 *                         course is broken, not your kernel)
 *   speed::*              fused vs unfused at n = 2^26
 */
#include "fl_test.h"
#include "thresholds.h"
#include "data.h"
#include "vector_add.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

typedef struct {
    size_t n;
    float *a, *b, *c;        /* host inputs */
    float *got;              /* host copy of the output */
    double *want;            /* reference */
    float *da, *db, *dc, *dy;/* device, already offset */
    float *dt1, *dt2;        /* baseline scratch */
    void *alloc[6];          /* what to cudaFree */
    fl_run_fn run_timed;     /* speed: the launcher this copy times */
} problem01;

static float *dev_at(problem01 *p, int slot, size_t offset)
{
    p->alloc[slot] = fl_test_dev_alloc((p->n + offset) * sizeof(float));
    return (float *)p->alloc[slot] + offset;
}

static void problem_init(problem01 *p, size_t n, size_t offset, size_t out_shift,
                         uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->a = fl_test_host_alloc(n * sizeof(float));
    p->b = fl_test_host_alloc(n * sizeof(float));
    p->c = fl_test_host_alloc(n * sizeof(float));
    p->got = fl_test_host_alloc(n * sizeof(float));
    p->want = fl_test_host_alloc(n * sizeof(double));
    fl_fill_uniform(p->a, n, fl_seed(seed + 1), -1.0f, 1.0f);
    fl_fill_uniform(p->b, n, fl_seed(seed + 2), -1.0f, 1.0f);
    fl_fill_uniform(p->c, n, fl_seed(seed + 3), -1.0f, 1.0f);
    p->da = dev_at(p, 0, offset);
    p->db = dev_at(p, 1, offset);
    p->dc = dev_at(p, 2, offset);
    p->dy = dev_at(p, 3, offset + out_shift);
    p->dt1 = dev_at(p, 4, offset);
    p->dt2 = dev_at(p, 5, offset);
    FL_ASSERT_CUDA(fl_upload_f32(p->da, p->a, n));
    FL_ASSERT_CUDA(fl_upload_f32(p->db, p->b, n));
    FL_ASSERT_CUDA(fl_upload_f32(p->dc, p->c, n));
}

static void problem_free(problem01 *p)
{
    for (int i = 0; i < 6; ++i) (void)cudaFree(p->alloc[i]);
    free(p->a); free(p->b); free(p->c); free(p->got); free(p->want);
}

/* Part A's reference: the float sum, exactly what IEEE float addition gives. */
static void ref_add(problem01 *p)
{
    for (size_t i = 0; i < p->n; ++i) p->want[i] = (double)(p->a[i] + p->b[i]);
}

/* Part B's reference, accumulated in double. */
static void ref_fused(problem01 *p)
{
    for (size_t i = 0; i < p->n; ++i)
        p->want[i] = ((double)p->a[i] + (double)p->b[i]) * (double)kScale + (double)p->c[i];
}

static fl_compare_result check_output(problem01 *p, const char *what, double atol,
                                      double rtol)
{
    FL_ASSERT_CUDA(fl_download_f32(p->got, p->dy, p->n));
    fl_compare_opts o = fl_compare_defaults(what, atol, rtol);
    return fl_compare_f32(p->got, p->want, p->n, &o);
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
    return fused_elementwise(p->da, p->db, p->dc, kScale, p->dy, p->n, st);
}

static cudaError_t run_unfused(void *ctx, cudaStream_t st)
{
    problem01 *p = ctx;
    return unfused_elementwise(p->da, p->db, p->dc, kScale, p->dt1, p->dt2, p->dy, p->n, st);
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

/* Poison the output, run once, compare with the CPU reference. */
static void correct_case(const shape01 *s, const part01 *part)
{
    FL_REQUIRE_GPU();
    problem01 p;
    problem_init(&p, s->n, s->offset, s->out_shift, part->seed + s->n);
    if (part->exact) ref_add(&p);
    else ref_fused(&p);
    FL_ASSERT_CUDA(fl_poison(p.dy, p.n * sizeof(float), 0));
    fl_inputs in = {0};
    fl_test_inputs_add(&in, "a", p.da, p.n * sizeof(float));
    fl_test_inputs_add(&in, "b", p.db, p.n * sizeof(float));
    if (!part->exact) fl_test_inputs_add(&in, "c", p.dc, p.n * sizeof(float));
    FL_ASSERT_CUDA(part->run(&p, 0));
    FL_ASSERT_SYNC(part->name);
    FL_ASSERT_NO_OVERRUN(p.dy + p.n, part->name, part->out);
    FL_ASSERT_INPUTS(&in, part->name);
    fl_compare_result r = part->exact
                              ? check_output(&p, part->out, 0.0, 0.0)
                              : check_output(&p, part->out, L01_FUSED_ATOL, L01_FUSED_RTOL);
    cr_assert(r.n_bad == 0, "%s n=%zu%s: %s", part->name, s->n,
              s->offset ? " (misaligned pointers)"
                        : s->out_shift ? " (inputs aligned, output misaligned)" : "",
              r.message);
    problem_free(&p);
}

ParameterizedTestParameters(A_vector_add, correct)
{
    return cr_make_param_array(shape01, kShapes, N_SHAPES);
}
ParameterizedTest(shape01 *s, A_vector_add, correct) { correct_case(s, &kPartA); }

ParameterizedTestParameters(B_fused_elementwise, correct)
{
    return cr_make_param_array(shape01, kShapes, N_SHAPES);
}
ParameterizedTest(shape01 *s, B_fused_elementwise, correct) { correct_case(s, &kPartB); }

ParameterizedTestParameters(baseline, correct)
{
    return cr_make_param_array(shape01, kShapes, N_SHAPES);
}
ParameterizedTest(shape01 *s, baseline, correct) { correct_case(s, &kBaseline); }

/* ---- speed ----------------------------------------------------------------- */

/* A timed run's context: the problem, the rotor that gives every run fresh
 * inputs (shared by both variants: they read the same buffers) and the
 * shift this variant's last run saw. */
typedef struct {
    problem01 *p;
    fl_rotor *rotor;
    size_t shift;
    const char *who;
} timed01;

static cudaError_t timed_run(void *ctx, cudaStream_t st)
{
    timed01 *t = ctx;
    return t->p->run_timed(t->p, st);
}

/* Untimed, before every run: fresh inputs (shifted by a new number of
 * elements), a poisoned output. */
static cudaError_t prepare_run(void *ctx, cudaStream_t st)
{
    timed01 *t = ctx;
    CUDA_CHECK(fl_test_rotor_next(t->rotor, st));
    t->shift = t->rotor->shift;
    return fl_poison(t->p->dy, t->p->n * sizeof(float), st);
}

static int recheck(void *ctx, char *msg, size_t len)
{
    timed01 *t = ctx;
    problem01 *p = t->p;
    if (!fl_test_rotor_inputs_ok(t->rotor, t->who, msg, len)) return 0;
    if (fl_download_f32(p->got, p->dy, p->n) != cudaSuccess) {
        snprintf(msg, len, "could not read the output back");
        return 0;
    }
    fl_unrotate_f32(p->got, p->n, t->shift);
    fl_compare_opts o = fl_compare_defaults("y", L01_FUSED_ATOL, L01_FUSED_RTOL);
    fl_compare_result r = fl_compare_f32(p->got, p->want, p->n, &o);
    snprintf(msg, len, "%s", r.message);
    return r.n_bad == 0;
}

Test(speed, fused_vs_unfused)
{
    FL_REQUIRE_GPU();
    problem01 p;
    problem_init(&p, L01_SPEED_N, 0, 0, 0xD000);
    ref_fused(&p);

    /* Correct first: a fast wrong kernel earns nothing. */
    fl_rotor rotor;
    fl_test_rotor_init(&rotor, p.n);
    fl_test_rotor_add(&rotor, "a", p.da, sizeof(float));
    fl_test_rotor_add(&rotor, "b", p.db, sizeof(float));
    fl_test_rotor_add(&rotor, "c", p.dc, sizeof(float));
    p.run_timed = run_fused;
    timed01 tf = {&p, &rotor, 0, "fused_elementwise"};
    FL_ASSERT_CUDA(prepare_run(&tf, 0));
    FL_ASSERT_CUDA(run_fused(&p, 0));
    FL_ASSERT_SYNC("fused_elementwise");
    char msg[1024];
    cr_assert(recheck(&tf, msg, sizeof msg), "fused_elementwise n=2^26: %s", msg);

    /* Each variant writes its own output. Before every run (warm-up or
     * timed) the inputs are rotated and the output poisoned; after every
     * run the output and the inputs are checked (untimed). */
    problem01 q = p;
    q.alloc[3] = NULL;
    q.dy = fl_test_dev_alloc(p.n * sizeof(float));
    q.got = fl_test_host_alloc(p.n * sizeof(float));
    q.run_timed = run_unfused;
    timed01 tb = {&q, &rotor, 0, "unfused_elementwise"};

    fl_variant base = {.name = "unfused (3 kernels)", .run = timed_run, .ctx = &tb,
                       .bytes = ELEMENTWISE_UNFUSED_BYTES(p.n), .flops = 3.0 * p.n,
                       .prepare = prepare_run, .check = recheck};
    fl_variant fused = {.name = "fused", .run = timed_run, .ctx = &tf,
                        .bytes = ELEMENTWISE_FUSED_BYTES(p.n), .flops = 3.0 * p.n,
                        .prepare = prepare_run, .check = recheck};
    fl_test_speed("n=2^26", &base, &fused, L01_MIN_SPEEDUP, L01_MIN_PCT_CEILING);

    fl_test_rotor_free(&rotor);
    (void)cudaFree(q.dy);
    free(q.got);
    problem_free(&p);
}
