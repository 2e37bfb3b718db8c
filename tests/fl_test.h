/* tests/fl_test.h — what every Criterion test of the course shares.
 *
 * Criterion runs each test in its own process; CUDA is touched only inside
 * tests, never in parameter generators (those run in the runner process).
 */
#ifndef FUSIONLAB_FL_TEST_H
#define FUSIONLAB_FL_TEST_H

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <setjmp.h>
#include <string.h>

#include "check.h"
#include "compare.h"
#include "guard.h"
#include "timing.h"

/* Skip the calling test when this machine has no usable GPU. */
#define FL_REQUIRE_GPU()                                                      \
    do {                                                                      \
        if (fl_test_gpu_count() == 0) FL_SKIP_CASE("no CUDA device");         \
    } while (0)

/* Assert that a CUDA call (or launcher) succeeded, naming it. */
#define FL_ASSERT_CUDA(call)                                                  \
    do {                                                                      \
        cudaError_t fl_e_ = (call);                                           \
        cr_assert(fl_e_ == cudaSuccess, "%s failed: %s (%s)%s", #call,        \
                  cudaGetErrorName(fl_e_), cudaGetErrorString(fl_e_),         \
                  fl_test_error_hint(fl_e_));                                 \
    } while (0)

/* Wait for the GPU and turn a fault in the kernel into an actionable failure. */
#define FL_ASSERT_SYNC(what)                                                  \
    do {                                                                      \
        cudaError_t fl_e_ = cudaDeviceSynchronize();                          \
        cr_assert(fl_e_ == cudaSuccess, "%s: the GPU reported %s (%s)%s",     \
                  (what), cudaGetErrorName(fl_e_), cudaGetErrorString(fl_e_), \
                  fl_test_error_hint(fl_e_));                                 \
    } while (0)

int fl_test_gpu_count(void);
/* 1 under the sanitizer stage (FUSIONLAB_SANITIZE set, not "0"). */
int fl_test_sanitizing(void);
const char *fl_test_error_hint(cudaError_t e);

/* The cases of a parameterized test, for its ParameterizedTestParameters,
 * every one a test process of its own (Criterion's way):
 *     return FL_PARAMS(counter_case, kCases, N_CASES);
 * The course's tests use FL_PARAM_TEST instead wherever the cases can run
 * one after another in one process (below); FL_PARAMS is left for those
 * that cannot (what profiles or times: never under the sanitizer). */
struct criterion_test_params fl_test_params(void *cases, size_t size, size_t n,
                                           const char *together);
#define FL_PARAMS(Type, Array, Len) fl_test_params((Array), sizeof(Type), (Len), NULL)
#define FL_CASES_MAX 4096 /* cases of one FL_PARAM_TEST */

/* A parameterized test: Criterion's ParameterizedTestParameters, whose
 * cases are the Len elements of Array, and its ParameterizedTest, whose
 * body follows, with `Type *var` the case:
 *
 *     FL_PARAM_TEST(A_vector_add, correct, shape01, s, kShapes, N_SHAPES)
 *     {
 *         correct_case(s, &kPartA);
 *     }
 *
 * Each case is a test process of its own, as Criterion runs them, unless
 * the process starts with FUSIONLAB_CASES=together (the grader's runs and
 * tools/sanitize set it): then Criterion starts P processes (P: the
 * variable FUSIONLAB_CASES_PROCESSES, 1 when unset, at most the number of
 * cases), and each runs its share of the cases (consecutive, as even as
 * can be) one after another. Each process that starts CUDA costs about
 * 0.2 s, and the driver starts them one at a time across the whole machine
 * (under compute-sanitizer about a second of CPU time): a test of 20 cases
 * so costs P starts instead of 20. Every case, together or not, draws the
 * keys of fl_test_fresh_key that belong to it (fl_cases_keys_from: its
 * index in Array), so a case meets the same inputs either way, and no two
 * cases of a process meet the same ones. Criterion's parameters are the
 * cases' indices (0 .. Len-1, at most FL_CASES_MAX), or, together, the
 * shares' (0 .. P-1); the body takes the case from Array by its index. A case that skips (FL_SKIP_CASE,
 * FL_REQUIRE_GPU, fl_test_skip_if_too_large) goes on to the next; after
 * its last case each process prints
 *     fusion-lab: SUITE/TEST: N cases in one process (R ran, S skipped)
 * (N: its share) and skips the test, with the first case's reason, when
 * none ran (the line says the loop got past the last case; a case that
 * skipped counts in it). With FUSIONLAB_CASES_REPORT naming a file, the
 * runner appends
 *     param SUITE/TEST N P
 * when it starts such a test (N cases in P processes) and each process, at
 * its end,
 *     ran SUITE/TEST N C R S
 * (C: which of the P shares, 0 first) so that the grader can count the
 * cases one Criterion result stands for. Whoever reads the results takes
 * them only when every process got past its last case and every case
 * passed (or every case skipped); otherwise the test runs again, one
 * process per case, and that run counts (tools/sanitize,
 * grader/stage_run.c). Len is evaluated in the runner and in the test's
 * processes, Array in the test's processes: an array filled at run time is
 * filled by a function that the expression calls, from the seed, the same
 * every time. */
#define FL_PARAM_TEST(Suite, Name, Type, var, Array, Len)                           \
    static void fl_case_##Suite##_##Name(Type *var);                              \
    ParameterizedTestParameters(Suite, Name)                                      \
    {                                                                             \
        return fl_test_params((Array), sizeof(Type), (Len), #Suite "/" #Name);    \
    }                                                                             \
    ParameterizedTest(Type *var, Suite, Name)                                     \
    {                                                                             \
        Type *fl_all_ = (Array);                                                  \
        size_t fl_n_ = (size_t)(Len), fl_k_;                                      \
        memcpy(&fl_k_, var, sizeof fl_k_); /* (the parameter is an index) */      \
        if (!fl_cases_begin(#Suite "/" #Name, fl_n_, fl_k_)) {                    \
            cr_assert(fl_k_ < fl_n_, #Suite "/" #Name ": case %zu of %zu: the "    \
                      "runner and the test process count the cases differently",  \
                      fl_k_, fl_n_);                                              \
            fl_cases_keys_from(fl_k_);                                            \
            fl_case_##Suite##_##Name(&fl_all_[fl_k_]);                            \
            return;                                                               \
        }                                                                         \
        for (size_t fl_i_; (fl_i_ = fl_cases_next()) != (size_t)-1;)              \
            if (setjmp(fl_cases_jmp) == 0) {                                      \
                fl_cases_keys_from(fl_i_);                                        \
                fl_case_##Suite##_##Name(&fl_all_[fl_i_]);                        \
                fl_cases_ran();                                                   \
            }                                                                     \
        fl_cases_end();                                                           \
    }                                                                             \
    static void fl_case_##Suite##_##Name(Type *var)

/* A test of Criterion's (no options: a test with a .timeout stays a Test),
 * whose body follows:
 *
 *     FL_TEST(A_forward, eps)
 *     {
 *         ...
 *     }
 *
 * It runs as Test(Suite, Name) would, a process of its own, except under the
 * sanitizer stage: there tools/sanitize runs a suite's FL_TESTs one after
 * another in one process (under compute-sanitizer each process that starts
 * CUDA costs seconds of CPU time). It starts the first of them, the leader,
 * with FUSIONLAB_TESTS_TOGETHER=SUITE/LEADER,SUITE/B,... (read before main,
 * honoured only with FUSIONLAB_SANITIZE set): the leader's process then runs
 * each named test's body in turn, as a case of an FL_PARAM_TEST runs (a
 * test that skips goes on to the next, fl_test_fresh_key starts again at
 * each, an error a CUDA call left behind is cleared between them), and
 * prints, after the last,
 *     fusion-lab: SUITE/LEADER: N tests in one process (R ran, S skipped)
 * A failure ends the whole run; tools/sanitize then runs the tests again,
 * one process each, and only that run counts, as for an FL_PARAM_TEST. */
#define FL_TEST(Suite, Name)                                                    \
    static void fl_test_##Suite##_##Name(void);                                 \
    __attribute__((constructor)) static void fl_test_register_##Suite##_##Name(void) \
    {                                                                           \
        fl_tests_register(#Suite "/" #Name, fl_test_##Suite##_##Name);          \
    }                                                                           \
    Test(Suite, Name)                                                           \
    {                                                                           \
        fl_tests_run(#Suite "/" #Name, fl_test_##Suite##_##Name);               \
    }                                                                           \
    static void fl_test_##Suite##_##Name(void)

/* FL_TEST's machinery (tests/fl_test.c). */
void fl_tests_register(const char *id, void (*body)(void));
void fl_tests_run(const char *id, void (*body)(void));

/* Skip the case: cr_skip_test, or, with the cases of an FL_PARAM_TEST
 * (or a suite's FL_TESTs) together in one process, go on to the next case. */
#define FL_SKIP_CASE(...)                                                     \
    do {                                                                      \
        if (fl_cases_skip(__VA_ARGS__)) longjmp(fl_cases_jmp, 1);             \
        cr_skip_test(__VA_ARGS__);                                            \
    } while (0)

/* FL_PARAM_TEST's machinery (tests/fl_test.c). */
extern jmp_buf fl_cases_jmp;
int fl_cases_begin(const char *test, size_t n, size_t share);
/* fl_test_fresh_key's keys from here on: those of case `index`, the same
 * whether it runs in a process of its own or after other cases. */
void fl_cases_keys_from(size_t index);
size_t fl_cases_next(void);
void fl_cases_ran(void);
int fl_cases_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fl_cases_end(void);

/* cudaMalloc that asserts, with the size in the message. Every allocation
 * is followed by FL_GUARD_BYTES of a known pattern: fl_test_no_overrun()
 * tells whether a kernel wrote past the end of the `bytes` asked for.
 * When the environment variable FUSIONLAB_SANITIZE is set (and not "0"), as
 * tools/sanitize sets it, an allocation above 16 MiB skips the calling case
 * instead ("too large for the sanitizer stage: N MiB"; FL_SKIP_CASE): under
 * compute-sanitizer only the small correctness cases run. */
void *fl_test_dev_alloc(size_t bytes);
/* The same skip, for a buffer of `bytes` a test is about to allocate: called
 * before FL_REQUIRE_GPU and the case's host buffers, a case the sanitizer
 * stage skips costs no CUDA start of its own (under compute-sanitizer every
 * process that starts CUDA costs seconds) and, with the cases together in
 * one process, leaves nothing allocated behind. */
void fl_test_skip_if_too_large(size_t bytes);

#define FL_GUARD_BYTES 4096
#define FL_GUARD_BYTE 0xA5

/* 1 if the guard zone at `end` (= what fl_test_dev_alloc returned + the
 * bytes asked for) is intact; else 0 and a message naming `who` (the
 * launcher) and `what` (the output). */
int fl_test_no_overrun(const void *end, const char *who, const char *what, char *msg,
                       size_t len);
#define FL_ASSERT_NO_OVERRUN(end, who, what)                                  \
    do {                                                                      \
        char fl_m_[512];                                                      \
        cr_assert(fl_test_no_overrun((end), (who), (what), fl_m_, sizeof fl_m_), \
                  "%s", fl_m_);                                               \
    } while (0)

/* The inputs of a call, checksummed on the GPU when added (or when
 * fl_test_inputs_snapshot re-takes them): a launcher must not write to
 * them. FL_ASSERT_INPUTS fails naming the input that changed. */
#define FL_MAX_INPUTS 8
typedef struct {
    int n;
    const char *name[FL_MAX_INPUTS];
    const void *ptr[FL_MAX_INPUTS];
    size_t bytes[FL_MAX_INPUTS];
    uint64_t sum[FL_MAX_INPUTS];
} fl_inputs;

void fl_test_inputs_add(fl_inputs *g, const char *name, const void *d, size_t bytes);
cudaError_t fl_test_inputs_snapshot(fl_inputs *g);
int fl_test_inputs_unchanged(const fl_inputs *g, const char *who, char *msg, size_t len);
#define FL_ASSERT_INPUTS(g, who)                                              \
    do {                                                                      \
        char fl_m_[512];                                                      \
        cr_assert(fl_test_inputs_unchanged((g), (who), fl_m_, sizeof fl_m_), "%s", fl_m_); \
    } while (0)
/* malloc that asserts. */
void *fl_test_host_alloc(size_t bytes);

/* Fresh inputs for every timed run. A rotor holds the pristine contents of
 * a problem's inputs (each a number of equal rows: `row_bytes` apiece) and,
 * before each run, writes into the same device buffers the inputs cyclically
 * shifted by a different number of rows. An output row-wise in the inputs
 * comes out shifted the same way, so the test checks it against its one
 * reference after undoing the shift (fl_unrotate_f32). A launcher that keeps
 * a result by pointer or by content, or skips "repeated" inputs, returns
 * stale numbers and fails the check. The rotor also checksums the inputs it
 * wrote, so the check can tell whether the launcher changed them. */
typedef struct {
    size_t rows;   /* shifts are taken modulo rows */
    int n;
    const char *name[FL_MAX_INPUTS];
    void *dev[FL_MAX_INPUTS];
    void *orig[FL_MAX_INPUTS];
    size_t row_bytes[FL_MAX_INPUTS];
    fl_inputs sums; /* checksums of what the last fl_test_rotor_next wrote */
    int calls;
    size_t shift;   /* rows, of the last fl_test_rotor_next */
    int armed;      /* 1 between fl_test_rotor_next and the input check */
} fl_rotor;

void fl_test_rotor_init(fl_rotor *r, size_t rows);
/* Register a device input of rows x row_bytes (its contents now become the
 * pristine copy). */
void fl_test_rotor_add(fl_rotor *r, const char *name, void *dev, size_t row_bytes);
/* Shift every input by the next number of rows (never the same twice in a
 * row), wait for it, and checksum the result. */
cudaError_t fl_test_rotor_next(fl_rotor *r, cudaStream_t stream);
/* After a run: 1 if the inputs still hold what fl_test_rotor_next wrote (or
 * nothing was armed); else 0 and a message naming `who` and the input. */
int fl_test_rotor_inputs_ok(fl_rotor *r, const char *who, char *msg, size_t len);
void fl_test_rotor_free(fl_rotor *r);

/* Fresh inputs. A new key on every call, for fl_fill_uniform_dev and
 * fl_uniform_at (common/guard.h): mixed from fl_seed (so the grading secret
 * goes into it) and a counter (per case of an FL_PARAM_TEST, else per
 * process: fl_cases_keys_from), so no launcher can tell from
 * earlier calls what the next inputs will be; outside the grader the clock
 * and the process id go in too. Under the grader (FUSIONLAB_EVIDENCE set)
 * they stay out: the worked solution's run must draw the same keys, in the
 * same order, to re-judge the student's outputs (grader/verify.c). A kernel
 * that found the seed in its process could then foresee them; the grader's
 * speed audit runs each passing speed check again without an evidence file,
 * with clock-drawn keys, and a wrong output there scores the lesson 0
 * (grader/audit.c). */
uint64_t fl_test_fresh_key(void);

/* k row indices in [0, rows) for checking a sample of an output: idx[0] = 0
 * and idx[1] = rows - 1 (the edges, where k >= 2), the rest drawn from `key`
 * (repeats possible). Draw the key after the run, so the launcher cannot
 * know which rows are checked. */
void fl_test_sample_rows(uint64_t key, size_t rows, size_t k, size_t *idx);

/* Wait for all the GPU's work, at most `seconds`, polling: a kernel that
 * never ends (a 32-bit index that wraps around past 2^32, say) fails here
 * with "WHO: the kernel was still running after N s (HINT)" instead of at
 * the suite's time-out, which would not say why. */
void fl_test_sync_within(double seconds, const char *who, const char *hint);

/* Assert that run(ctx, s) queues all its work on s and returns without
 * waiting for the GPU. The legacy default stream is held by a spinning block
 * (fl_hold_begin, up to FL_HOLD_SECONDS); run is called with a fresh
 * cudaStreamNonBlocking stream s; the test waits for s alone, and then calls
 * check(ctx, msg, len) while the spinner still holds the default stream.
 * Work queued on the default stream, on a stream created with the default
 * flags or on cudaStreamPerThread waits behind the spinner, so the output is
 * not complete when check reads it. check must read on a stream of its own
 * created with cudaStreamNonBlocking (cudaMemcpy and fl_checksum use the
 * default stream and would wait for the spinner).
 * Before the hold, run is called once unheld and waited for: the first launch
 * of a kernel loads its code onto the GPU (CUDA loads modules lazily), and
 * that load waits for the device, which is the runtime's doing, not the
 * launcher's. poison(ctx, s) then overwrites the outputs (on s; the test
 * waits for it), so that what check sees was written by the held run. Under
 * the sanitizer stage only the output is checked.
 * Name every test that calls it stream* (Test(A_rows, stream)): the grader
 * runs the worked solution's stream* tests with the CUDA connections it
 * gives the tests before a batch (grader/stage_run.c, connections_check),
 * since this check needs the launcher's stream to run while the default one
 * is held. */
#define FL_HOLD_SECONDS 4.0
void fl_test_stream_honoured(const char *who, fl_run_fn run, fl_run_fn poison, fl_check_fn check,
                             void *ctx);

/* The speed rule of a lesson: time baseline and candidate with the course's
 * protocol (interleaved), print the measured figures, and assert
 *   candidate speedup >= min_speedup  and  candidate >= min_pct of the copy
 *   ceiling,
 * that both re-checks after timing passed and that no work hid outside the
 * timed stream. `label` names the size, e.g. "n=2^26". */
void fl_test_speed(const char *label, fl_variant *baseline, fl_variant *candidate,
                   double min_speedup, double min_pct_ceiling);

/* A variant's bandwidth above this multiple of the measured copy ceiling is
 * not believed (the ceiling is the most of cudaMemcpy, copy kernels and a
 * read-only stream, so the best kernels stay near 1.0x; the slack covers a
 * noisy machine): the work was skipped, cached or hidden. */
#define FL_ROOFLINE_SLACK 1.5

/* 1 unless t->gbs exceeds FL_ROOFLINE_SLACK x ceiling_gbs (> 0). */
int fl_test_within_roofline(const fl_timing *t, double ceiling_gbs);

/* Assert what fl_test_speed asserts of one timed variant besides its speed:
 * every checked run right (o->check_each) and the re-check after the loop,
 * no work hidden from the timed stream, no bandwidth beyond the roofline.
 * For tests with their own speed rule (lesson 05). Under the grader's speed
 * audit (fl_timing_audit()) only the outputs: the times are the profiler's,
 * and the speed thresholds are not asserted either; likewise in the worked
 * solution's untimed verifying runs (fl_timing_untimed()), which have no
 * times at all. */
void fl_test_assert_timing_honest(const fl_timing *t, const char *label,
                                  const fl_timing_opts *o, double ceiling_gbs);

/* The speed log the grader reads. When the environment variable
 * FUSIONLAB_SPEED_LOG names a file, append one JSON line to it for the
 * calling speed check: suite, test, label, the median times, speedup,
 * % of the copy ceiling (0 where not judged), the thresholds and whether
 * the check passes. fl_test_speed() calls it; a test with its own speed rule
 * calls it before its asserts. Nothing is written when the variable is unset
 * (or the tests were built without cJSON), nor in an untimed run
 * (fl_timing_untimed(): no times to record). */
void fl_test_speed_record(const char *label, double baseline_us, double candidate_us,
                          double min_speedup, double pct_of_ceiling, double min_pct,
                          int passed);

#endif /* FUSIONLAB_FL_TEST_H */
