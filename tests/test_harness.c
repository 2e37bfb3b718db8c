/* tests/test_harness.c — the harness itself, on the CPU (runs in CI).
 *
 * The comparison and its diagnoses, the statistics and the hidden-work rule
 * of the timing protocol, the CSV writer and the seeded inputs.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "check.h"
#include "fl_test.h"
#include "compare.h"
#include "csv.h"
#include "data.h"
#include "guard.h"
#include "timing.h"
#include "evidence.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(compare, .timeout = 10);
TestSuite(stats, .timeout = 10);
TestSuite(csv, .timeout = 10);
TestSuite(data, .timeout = 10);
TestSuite(guard, .timeout = 10);
TestSuite(timing, .timeout = 10);
TestSuite(fresh, .timeout = 10);

#define N 4096

static float got[N];
static double want[N];

static float poison(void)
{
    float f;
    uint32_t bits = FL_POISON_F32_BITS;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* got == want, both ramps */
static void fill_good(size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        got[i] = (float)i * 0.5f;
        want[i] = (double)i * 0.5;
    }
}

Test(compare, all_correct_passes)
{
    fill_good(N);
    fl_compare_opts o = fl_compare_defaults("y", 0, 0);
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.n_bad, 0);
    cr_assert_eq(r.diagnosis, FL_DIAG_NONE);
    cr_assert_eq(r.first_bad, N);
    cr_assert(strstr(r.message, "all 4096 elements of y") != NULL, "%s", r.message);
}

Test(compare, tolerance_is_atol_plus_rtol)
{
    fill_good(N);
    got[100] = (float)(want[100] + 1e-3);           /* |want| = 50: 1e-3 < 1e-4 + 50 * 2e-5 */
    got[200] = (float)(want[200] + 0.0030);         /* 3e-3 > 1e-4 + 100 * 2e-5 = 2.1e-3 */
    fl_compare_opts o = fl_compare_defaults("y", 1e-4, 2e-5);
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.n_bad, 1, "%s", r.message);
    cr_assert_eq(r.first_bad, 200);
    cr_assert_float_eq(r.max_abs_err, 0.003, 1e-5);
    cr_assert_eq(r.max_err_index, 200);
}

Test(compare, nan_never_passes)
{
    fill_good(N);
    got[7] = NAN;
    fl_compare_opts o = fl_compare_defaults("y", 1e30, 1e30);
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.n_bad, 1);
    cr_assert_eq(r.n_nonfinite, 1);
    cr_assert_eq(r.diagnosis, FL_DIAG_NONFINITE, "%s", fl_diagnosis_name(r.diagnosis));
}

Test(compare, matching_infinity_passes)
{
    fill_good(N);
    got[3] = INFINITY;
    want[3] = INFINITY;
    fl_compare_opts o = fl_compare_defaults("y", 0, 0);
    cr_assert_eq(fl_compare_f32(got, want, N, &o).n_bad, 0);
}

Test(compare, nothing_written)
{
    for (size_t i = 0; i < N; ++i) { got[i] = poison(); want[i] = 1.0; }
    fl_compare_opts o = fl_compare_defaults("c", 0, 0);
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_UNWRITTEN_ALL);
    cr_assert_eq(r.n_unwritten, N);
    cr_assert(strstr(r.message, "never written") != NULL, "%s", r.message);
    cr_assert(strstr(r.message, "is the kernel launched") != NULL, "%s", r.message);
}

Test(compare, unwritten_tail_means_grid_too_small)
{
    fill_good(N);
    for (size_t i = 4000; i < N; ++i) got[i] = poison();
    fl_compare_opts o = fl_compare_defaults("c", 0, 0);
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_UNWRITTEN_TAIL, "%s", fl_diagnosis_name(r.diagnosis));
    cr_assert_eq(r.first_bad, 4000);
    cr_assert_eq(r.n_bad, 96);
    cr_assert(strstr(r.message, "index 4000") != NULL, "%s", r.message);
    cr_assert(strstr(r.message, "CEIL_DIV") != NULL, "%s", r.message);
}

Test(compare, holes_are_not_a_tail)
{
    fill_good(N);
    for (size_t i = 0; i < N; i += 2) got[i] = poison();
    fl_compare_opts o = fl_compare_defaults("c", 0, 0);
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_UNWRITTEN_SOME, "%s", fl_diagnosis_name(r.diagnosis));
}

Test(compare, wrong_tail_means_bounds)
{
    fill_good(N);
    got[N - 1] += 1.0f; /* the leftover element after the last float4 */
    got[N - 3] += 1.0f;
    fl_compare_opts o = fl_compare_defaults("c", 0, 0);
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_TAIL, "%s", fl_diagnosis_name(r.diagnosis));
    cr_assert(strstr(r.message, "bounds") != NULL, "%s", r.message);
}

Test(compare, end_of_each_row_wrong)
{
    fill_good(N); /* 32 rows of 128 */
    for (size_t row = 0; row < 32; ++row) got[row * 128 + 127] += 1.0f;
    fl_compare_opts o = fl_compare_defaults("out", 0, 0);
    o.cols = 128;
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_TAIL, "%s", fl_diagnosis_name(r.diagnosis));
    cr_assert(strstr(r.message, "row 0 col 127") != NULL, "%s", r.message);
    cr_assert(strstr(r.message, "end of each row") != NULL, "%s", r.message);
}

Test(compare, scattered_errors_are_not_a_tail)
{
    fill_good(127);
    for (size_t i = 117; i < 127; ++i) got[i] += 1.0f; /* the last ten */
    fl_compare_opts o = fl_compare_defaults("c", 0, 0);
    fl_compare_result r = fl_compare_f32(got, want, 127, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_TAIL, "%s", fl_diagnosis_name(r.diagnosis));
    fill_good(127);
    for (size_t i = 1; i < 127; ++i) got[i] += 1.0f; /* all but element 0 */
    r = fl_compare_f32(got, want, 127, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_WRONG, "%s", fl_diagnosis_name(r.diagnosis));
    fill_good(127);
    for (size_t i = 1; i < 127; i += 2) got[i] += 1.0f; /* every other element */
    r = fl_compare_f32(got, want, 127, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_WRONG, "%s", fl_diagnosis_name(r.diagnosis));
}

Test(compare, one_bad_element_is_not_a_row_end)
{
    fill_good(N);
    got[3 * 128 + 40] += 1.0f;
    fl_compare_opts o = fl_compare_defaults("out", 0, 0);
    o.cols = 128;
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_WRONG, "%s", fl_diagnosis_name(r.diagnosis));
    cr_assert(strstr(r.message, "row 3 col 40") != NULL, "%s", r.message);
}

Test(compare, unwritten_row_ends)
{
    fill_good(N); /* 32 rows of 128: columns 100.. never written */
    for (size_t row = 0; row < 32; ++row)
        for (size_t c = 100; c < 128; ++c) got[row * 128 + c] = poison();
    fl_compare_opts o = fl_compare_defaults("out", 0, 0);
    o.cols = 128;
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_UNWRITTEN_TAIL, "%s", fl_diagnosis_name(r.diagnosis));
    cr_assert(strstr(r.message, "end of each row") != NULL, "%s", r.message);
}

Test(compare, nonfinite_where_inputs_large_is_overflow)
{
    static float mag[N];
    fill_good(N);
    for (size_t i = 0; i < N; ++i) mag[i] = (i / 128) % 2 ? 150.0f : 3.0f;
    for (size_t i = 0; i < N; ++i)
        if (mag[i] > 100.0f) got[i] = NAN;
    fl_compare_opts o = fl_compare_defaults("out", 1e-6, 1e-5);
    o.cols = 128;
    o.magnitude = mag;
    o.overflow_above = 80.0;
    o.overflow_hint = "rows with large values overflow: subtract the row max";
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_OVERFLOW, "%s", fl_diagnosis_name(r.diagnosis));
    cr_assert(strstr(r.message, "subtract the row max") != NULL, "%s", r.message);
    cr_assert(strstr(r.message, "row 1 col 0") != NULL, "%s", r.message);
}

Test(compare, nonfinite_where_inputs_small_is_not_overflow)
{
    static float mag[N];
    fill_good(N);
    for (size_t i = 0; i < N; ++i) mag[i] = 1.0f;
    got[10] = INFINITY;
    fl_compare_opts o = fl_compare_defaults("out", 1e-6, 1e-5);
    o.magnitude = mag;
    o.overflow_above = 80.0;
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_NONFINITE, "%s", fl_diagnosis_name(r.diagnosis));
}

Test(compare, wrong_everywhere)
{
    fill_good(N);
    for (size_t i = 0; i < N; ++i) got[i] = (float)(want[i] * 2.0 + 1.0);
    fl_compare_opts o = fl_compare_defaults("y", 1e-6, 1e-6);
    fl_compare_result r = fl_compare_f32(got, want, N, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_WRONG);
    cr_assert_eq(r.n_bad, N);
    cr_assert(strstr(r.message, "got 1, want 0") != NULL, "%s", r.message);
}

Test(compare, runs_that_differ_are_a_race)
{
    static float run2[N];
    fill_good(N);
    memcpy(run2, got, sizeof got);
    run2[1234] = nextafterf(run2[1234], 1e9f);
    fl_compare_opts o = fl_compare_defaults("out", 0, 0);
    o.cols = 1024;
    fl_compare_result r = fl_compare_runs_f32(got, run2, N, &o);
    cr_assert_eq(r.diagnosis, FL_DIAG_RACE);
    cr_assert_eq(r.n_bad, 1);
    cr_assert(strstr(r.message, "row 1 col 210") != NULL, "%s", r.message);
    cr_assert(strstr(r.message, "__syncthreads") != NULL, "%s", r.message);
    cr_assert_eq(fl_compare_runs_f32(got, got, N, &o).n_bad, 0);
}

Test(compare, identical_unwritten_runs_are_not_a_pass)
{
    static float a[N], b[N];
    for (size_t i = 0; i < N; ++i) a[i] = b[i] = poison();
    fl_compare_opts o = fl_compare_defaults("out", 0, 0);
    fl_compare_result r = fl_compare_runs_f32(a, b, N, &o);
    cr_assert_eq(r.n_bad, N);
    cr_assert_eq(r.diagnosis, FL_DIAG_UNWRITTEN_ALL);
    cr_assert(strstr(r.message, "never written in either run") != NULL, "%s", r.message);
}

Test(compare, poison_pattern)
{
    cr_assert(fl_is_poison_f32(poison()));
    cr_assert(!fl_is_poison_f32(NAN));
    cr_assert(!fl_is_poison_f32(0.0f));
    cr_assert(isnan(poison()), "the poison must be a NaN so no tolerance accepts it");
}

/* ---- statistics and the timing rules --------------------------------------- */

Test(stats, median_odd_and_even)
{
    double a[] = {5, 1, 4, 2, 3};
    fl_stats s = fl_stats_of(a, 5);
    cr_assert_float_eq(s.median, 3.0, 1e-12);
    cr_assert_float_eq(s.min, 1.0, 1e-12);
    cr_assert_float_eq(s.max, 5.0, 1e-12);
    cr_assert_float_eq(s.mean, 3.0, 1e-12);
    double b[] = {4, 1, 3, 2};
    cr_assert_float_eq(fl_stats_of(b, 4).median, 2.5, 1e-12);
}

Test(stats, quantiles_interpolate)
{
    double x[11];
    for (int i = 0; i < 11; ++i) x[i] = 10.0 * (10 - i); /* 100 .. 0 */
    fl_stats s = fl_stats_of(x, 11);
    cr_assert_float_eq(s.p10, 10.0, 1e-12);
    cr_assert_float_eq(s.p90, 90.0, 1e-12);
    double one[] = {7};
    s = fl_stats_of(one, 1);
    cr_assert_float_eq(s.median, 7.0, 1e-12);
    cr_assert_float_eq(s.p90, 7.0, 1e-12);
}

Test(stats, median_ignores_outliers)
{
    double x[31];
    for (int i = 0; i < 31; ++i) x[i] = 100.0 + (i % 3);
    x[4] = 1e6; /* one sample hit by a context switch */
    cr_assert_float_eq(fl_stats_of(x, 31).median, 101.0, 1e-12);
}

Test(stats, hidden_work_rule)
{
    /* launch overhead only: honest */
    cr_assert(!fl_hidden_work(500.0, 515.0, 12.0));
    cr_assert(!fl_hidden_work(3.0, 25.0, 12.0));
    /* the events saw 2 us but the device was busy for 500 us: hidden */
    cr_assert(fl_hidden_work(2.0, 512.0, 12.0));
}

/* ---- CSV ------------------------------------------------------------------- */

Test(csv, field_count_honours_quotes)
{
    cr_assert_eq(fl_csv_count_fields("a,b,c"), 3);
    cr_assert_eq(fl_csv_count_fields("\"x,y\",b"), 2);
    cr_assert_eq(fl_csv_count_fields("\"say \"\"hi\"\", ok\",2"), 2);
    cr_assert_eq(fl_csv_count_fields(""), 1);
}

Test(csv, quote_only_when_needed)
{
    char out[64];
    cr_assert_eq(fl_csv_quote("NVIDIA H100 80GB HBM3", out, sizeof out), 0);
    cr_assert_str_eq(out, "NVIDIA H100 80GB HBM3");
    cr_assert_eq(fl_csv_quote("a,b", out, sizeof out), 0);
    cr_assert_str_eq(out, "\"a,b\"");
    cr_assert_eq(fl_csv_quote("say \"hi\"", out, sizeof out), 0);
    cr_assert_str_eq(out, "\"say \"\"hi\"\"\"");
    cr_assert_eq(fl_csv_quote("a,b", out, 4), -1);
}

Test(csv, writes_header_and_rows_and_refuses_bad_rows)
{
    char path[] = "/tmp/fl_csv_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    fl_csv *c = fl_csv_open(path, "n,unfused_us,fused_us");
    cr_assert_not_null(c);
    cr_assert_eq(fl_csv_row(c, "%d,%.1f,%.1f", 4096, 12.5, 6.5), 0);
    cr_assert_eq(fl_csv_row(c, "%d,%.1f", 1, 2.0), -1, "a short row must be refused");
    cr_assert_eq(fl_csv_close(c), 0);

    FILE *f = fopen(path, "r");
    char buf[256] = {0};
    size_t got_n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    remove(path);
    cr_assert(got_n > 0);
    cr_assert_str_eq(buf, "n,unfused_us,fused_us\n4096,12.5,6.5\n");
}

Test(csv, unwritable_path_is_an_error_not_a_crash)
{
    cr_assert_null(fl_csv_open("/nonexistent-dir/x.csv", "a"));
}

/* ---- data ------------------------------------------------------------------ */

Test(data, same_seed_same_inputs)
{
    static float x[1000], y[1000];
    fl_fill_uniform(x, 1000, 42, -1.0f, 1.0f);
    fl_fill_uniform(y, 1000, 42, -1.0f, 1.0f);
    cr_assert_arr_eq(x, y, sizeof x);
    fl_fill_uniform(y, 1000, 43, -1.0f, 1.0f);
    cr_assert(memcmp(x, y, sizeof x) != 0);
    for (int i = 0; i < 1000; ++i) cr_assert(x[i] >= -1.0f && x[i] < 1.0f);
}

Test(data, normal_has_the_asked_mean_and_spread)
{
    size_t n = 200000;
    float *x = malloc(n * sizeof *x);
    fl_fill_normal(x, n, 7, -2.3f, 0.5f);
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; ++i) s += x[i];
    double mean = s / n;
    for (size_t i = 0; i < n; ++i) s2 += (x[i] - mean) * (x[i] - mean);
    double sd = sqrt(s2 / (n - 1));
    free(x);
    cr_assert(fabs(mean + 2.3) < 0.01, "mean %f", mean);
    cr_assert(fabs(sd - 0.5) < 0.01, "std %f", sd);
}

/* A fill large enough to be shared among threads (fl_cpu_threads) gives
 * exactly the stream of one fl_rng drawn in turn: the inputs of a test do
 * not depend on how many CPUs drew them. */
Test(data, fills_are_the_stream_on_any_threads)
{
    size_t n = ((size_t)3 << 20) + 5;
    cr_assert(fl_cpu_threads(n) >= 1 && fl_cpu_threads(1000) == 1);
#ifdef _OPENMP
    /* the shared path is the one under test wherever there are threads */
    if (omp_get_max_threads() > 1) cr_assert(fl_cpu_threads(n) > 1);
#endif
    float *x = malloc(n * sizeof *x);
    cr_assert_not_null(x);
    fl_fill_normal(x, n, 11, 0.5f, 2.0f);
    fl_rng r = fl_rng_make(11);
    for (size_t i = 0; i < n; ++i) {
        float want = (float)(0.5f + 2.0f * fl_rng_normal(&r));
        cr_assert(memcmp(&x[i], &want, sizeof want) == 0, "normal x[%zu] = %.9g, want %.9g", i,
                  (double)x[i], (double)want);
    }
    fl_fill_uniform(x, n, 12, -3.0f, 5.0f);
    r = fl_rng_make(12);
    for (size_t i = 0; i < n; ++i) {
        float want = (float)(-3.0f + 8.0f * fl_rng_uniform(&r));
        cr_assert(memcmp(&x[i], &want, sizeof want) == 0, "uniform x[%zu] = %.9g, want %.9g", i,
                  (double)x[i], (double)want);
    }
    free(x);
}

Test(data, grade_seed_changes_inputs)
{
    unsetenv("FUSIONLAB_GRADE_SEED");
    uint64_t plain = fl_seed(5);
    cr_assert_eq(plain, 5);
    setenv("FUSIONLAB_GRADE_SEED", "spring-2027", 1);
    uint64_t a = fl_seed(5), b = fl_seed(5);
    setenv("FUSIONLAB_GRADE_SEED", "spring-2028", 1);
    uint64_t c = fl_seed(5);
    unsetenv("FUSIONLAB_GRADE_SEED");
    cr_assert_eq(a, b, "the same secret must give the same inputs");
    cr_assert_neq(a, plain);
    cr_assert_neq(a, c);
}

Test(data, ceil_div)
{
    cr_assert_eq(CEIL_DIV(0, 256), 0);
    cr_assert_eq(CEIL_DIV(1, 256), 1);
    cr_assert_eq(CEIL_DIV(256, 256), 1);
    cr_assert_eq(CEIL_DIV(257, 256), 2);
    cr_assert_eq(CEIL_DIV((size_t)1 << 40, (size_t)256), (size_t)1 << 32);
}

/* ---- guard.h: undoing a rotation ------------------------------------------------ */

Test(guard, unrotate_undoes_a_cyclic_shift)
{
    enum { LEN = 37 };
    float y[LEN], x[LEN];
    for (int i = 0; i < LEN; ++i) y[i] = (float)(i * 3 + 1);
    size_t shifts[] = {0, 1, 5, 36, 37, 40};
    for (size_t k = 0; k < sizeof shifts / sizeof shifts[0]; ++k) {
        size_t s = shifts[k];
        /* what a row-wise kernel gives for inputs shifted by s: y[(i + s) % n] */
        for (int i = 0; i < LEN; ++i) x[i] = y[(i + s) % LEN];
        fl_unrotate_f32(x, LEN, s);
        for (int i = 0; i < LEN; ++i)
            cr_assert(x[i] == y[i], "shift %zu: x[%d] = %g, want %g", s, i, x[i], y[i]);
    }
}

Test(guard, unrotate_by_rows)
{
    /* 4 rows of 3: inputs shifted by one row (3 elements) */
    float y[12], x[12];
    for (int i = 0; i < 12; ++i) y[i] = (float)i;
    for (int i = 0; i < 12; ++i) x[i] = y[(i + 3) % 12];
    fl_unrotate_f32(x, 12, 3);
    cr_assert(memcmp(x, y, sizeof x) == 0, "rows came back in the wrong order");
}

Test(timing, check_each_is_off_by_default)
{
    fl_timing_opts o = fl_timing_defaults();
    cr_assert(o.check_each == 0, "benches check once, after the loop");
    cr_assert(o.warmup > 0 && o.samples > 0);
}

/* ---- fresh keys: what the grader's re-judging relies on ------------------------ */

/* Three keys of fl_test_fresh_key drawn in a new process with `seed` and,
 * when `evidence`, FUSIONLAB_EVIDENCE set (the grader's runs). */
static void fresh_keys(const char *seed, int evidence, uint64_t k[3])
{
    int fd[2];
    cr_assert(pipe(fd) == 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        setenv("FUSIONLAB_GRADE_SEED", seed, 1);
        if (evidence) setenv("FUSIONLAB_EVIDENCE", "/dev/null", 1);
        else unsetenv("FUSIONLAB_EVIDENCE");
        uint64_t v[3];
        for (int i = 0; i < 3; ++i) v[i] = fl_test_fresh_key();
        ssize_t w = write(fd[1], v, sizeof v);
        _exit(w == (ssize_t)sizeof v ? 0 : 1);
    }
    close(fd[1]);
    ssize_t r = read(fd[0], k, 3 * sizeof *k);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(r == (ssize_t)(3 * sizeof *k) && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

Test(fresh, replayed_under_the_grader)
{
    uint64_t a[3], b[3], c[3];
    fresh_keys("seed-one", 1, a);
    fresh_keys("seed-one", 1, b);
    fresh_keys("seed-two", 1, c);
    for (int i = 0; i < 3; ++i) {
        cr_expect(a[i] == b[i], "key %d differs between two processes with one seed: the worked "
                  "solution's run could not re-judge the student's outputs", i);
        cr_expect(a[i] != c[i], "key %d does not depend on the seed", i);
    }
    cr_expect(a[0] != a[1] && a[1] != a[2] && a[0] != a[2], "keys repeat within a process");
}

Test(fresh, new_in_every_run_elsewhere)
{
    uint64_t a[3], b[3];
    fresh_keys("seed-one", 0, a);
    fresh_keys("seed-one", 0, b);
    cr_expect(a[0] != b[0] && a[1] != b[1], "outside the grader two runs drew the same keys");
    cr_expect(a[0] != a[1] && a[1] != a[2], "keys repeat within a process");
}

/* The switches the harness takes from the environment are read before main:
 * a launcher that rewrites its environment later (in place, past the object
 * scan's ban on setenv) changes nothing. */
Test(env, switches_are_read_before_any_test_code)
{
    int audit = fl_timing_audit(), sanitizing = fl_test_sanitizing();
    int untimed = fl_timing_untimed();
    const char *cases = getenv("FUSIONLAB_CASES");
    int started_together = cases != NULL && strcmp(cases, "together") == 0;
    cr_assert(setenv("FUSIONLAB_TIMING_AUDIT", audit ? "0" : "1", 1) == 0);
    cr_assert(setenv("FUSIONLAB_TIMING_UNTIMED", untimed ? "0" : "1", 1) == 0);
    cr_assert(setenv("FUSIONLAB_SANITIZE", sanitizing ? "0" : "1", 1) == 0);
    cr_assert(setenv("FUSIONLAB_CASES", "together", 1) == 0);
    cr_expect_eq(fl_timing_audit(), audit, "FUSIONLAB_TIMING_AUDIT set during a test switched the audit");
    cr_expect_eq(fl_timing_untimed(), untimed,
                 "FUSIONLAB_TIMING_UNTIMED set during a test stopped the timing");
    cr_expect_eq(fl_test_sanitizing(), sanitizing, "FUSIONLAB_SANITIZE set during a test took effect");
    if (!started_together)
        cr_expect(!fl_cases_begin("env/switches", 3, 0),
                  "FUSIONLAB_CASES set during a test put the cases together");
}

/* ---- FL_PARAM_TEST's cases in one process --------------------------------- */

/* Run by the suite `together`, below, in processes of their own: the
 * second case of `mixed` skips, every case of `all_skip` does. Each case's
 * output holds its first key of fl_test_fresh_key, so its evidence record's
 * key says which keys it drew. */
typedef struct {
    int skip;
    float value;
} mixed_case;
static mixed_case kMixed[] = {{0, 1.0f}, {1, 2.0f}, {0, 3.0f}, {0, 4.0f}};

TestSuite(cases, .timeout = 10);

FL_PARAM_TEST(cases, mixed, mixed_case, c, kMixed, 4)
{
    if (c->skip) FL_SKIP_CASE("case %.0f skipped on purpose", (double)c->value);
    double key = (double)(fl_test_fresh_key() % 1000u);
    float got[16];
    double want[16];
    for (int i = 0; i < 16; ++i) got[i] = (float)(want[i] = c->value * i + key);
    fl_compare_opts o = fl_compare_defaults("y", 0, 0);
    cr_assert_eq(fl_compare_f32(got, want, 16, &o).n_bad, 0);
}

FL_PARAM_TEST(cases, all_skip, mixed_case, c, kMixed, 3)
{
    FL_SKIP_CASE("nothing to do for case %.0f", (double)c->value);
}

TestSuite(together, .timeout = 30);

typedef struct {
    char report[1024], log[8192];
    int n;            /* evidence records */
    uint64_t pid[8], key[8];
} cases_run;

static void read_all(const char *path, char *buf, size_t cap)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) return;
    size_t len = fread(buf, 1, cap - 1, f);
    buf[len] = '\0';
    fclose(f);
}

/* This program's suite `cases` in a child: `procs` NULL, one process per
 * case; else FUSIONLAB_CASES=together with FUSIONLAB_CASES_PROCESSES=procs.
 * run_child: the tests `filter` names, with FUSIONLAB_TESTS_TOGETHER=group
 * (and FUSIONLAB_SANITIZE=1 when `sanitize`) where group is not NULL; the
 * child must exit 0 when `must_pass`. */
static void run_child(const char *procs, const char *filter, const char *group, int sanitize,
                      int must_pass, cases_run *out);
static void run_cases(const char *procs, cases_run *out)
{
    run_child(procs, "cases/*", NULL, 0, 1, out);
}

static void run_child(const char *procs, const char *filter, const char *group, int sanitize,
                      int must_pass, cases_run *out)
{
    memset(out, 0, sizeof *out);
    char dir[] = "/tmp/fl-cases-XXXXXX";
    cr_assert(mkdtemp(dir) != NULL);
    char report[64], evidence[64], log[64];
    snprintf(report, sizeof report, "%s/cases.txt", dir);
    snprintf(evidence, sizeof evidence, "%s/evidence.bin", dir);
    snprintf(log, sizeof log, "%s/out.log", dir);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        FILE *o = freopen(log, "w", stdout);
        if (o == NULL || dup2(fileno(stdout), 2) < 0) _exit(126);
        unsetenv("BXFI_MAP"); /* (Criterion's mark of its test processes) */
        unsetenv("FUSIONLAB_CASES");
        unsetenv("FUSIONLAB_CASES_PROCESSES");
        unsetenv("FUSIONLAB_TESTS_TOGETHER");
        unsetenv("FUSIONLAB_SANITIZE");
        if (group) setenv("FUSIONLAB_TESTS_TOGETHER", group, 1);
        if (sanitize) setenv("FUSIONLAB_SANITIZE", "1", 1);
        if (procs) {
            setenv("FUSIONLAB_CASES", "together", 1);
            setenv("FUSIONLAB_CASES_PROCESSES", procs, 1);
        }
        setenv("FUSIONLAB_CASES_REPORT", report, 1);
        setenv("FUSIONLAB_EVIDENCE", evidence, 1);
        setenv("FUSIONLAB_GRADE_SEED", "cases-together-test", 1);
        execl("/proc/self/exe", "test_harness", "--verbose", "--jobs", "1", "--filter", filter,
              (char *)NULL);
        _exit(127);
    }
    int st = 0;
    cr_assert(waitpid(pid, &st, 0) == pid);
    read_all(report, out->report, sizeof out->report);
    read_all(log, out->log, sizeof out->log);
    if (must_pass)
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child run failed (status %#x):\n%s",
                  (unsigned)st, out->log);
    else
        cr_assert(!WIFEXITED(st) || WEXITSTATUS(st) != 0, "the child run passed:\n%s", out->log);
    FILE *f = fopen(evidence, "rb");
    cr_assert(f != NULL || !must_pass, "no evidence");
    fl_evidence_head h;
    while (f != NULL && out->n < 8 && fread(&h, sizeof h, 1, f) == 1) {
        out->pid[out->n] = h.pid;
        out->key[out->n++] = h.key;
        cr_assert(fseek(f, (long)(h.count * sizeof(fl_evidence_sample)), SEEK_CUR) == 0);
    }
    if (f != NULL) fclose(f);
    unlink(report);
    unlink(evidence);
    unlink(log);
    rmdir(dir);
}

static void expect_lines(const cases_run *r, const char *const *want, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        cr_expect(strstr(r->report, want[i]) != NULL, "no line \"%.*s\" in the report:\n%s",
                  (int)strlen(want[i]) - 1, want[i], r->report);
}

/* The runner's "param" line and each process's "ran" line in
 * FUSIONLAB_CASES_REPORT; one evidence pid per case (the case in the high
 * bits, which is how the grader tells the cases of one process apart); and
 * each case draws the same keys whether it runs alone, after other cases,
 * or in a share of its own. */
Test(together, report_lines_evidence_pids_and_keys)
{
    cases_run apart, one, two;
    run_cases(NULL, &apart);
    run_cases("1", &one);
    run_cases("2", &two);

    cr_expect(apart.report[0] == '\0', "one process per case wrote lines:\n%s", apart.report);
    const char *want_one[] = {"param cases/mixed 4 1\n", "ran cases/mixed 4 0 3 1\n",
                              "param cases/all_skip 3 1\n", "ran cases/all_skip 3 0 0 3\n"};
    expect_lines(&one, want_one, sizeof want_one / sizeof *want_one);
    const char *want_two[] = {"param cases/mixed 4 2\n", "ran cases/mixed 4 0 1 1\n",
                              "ran cases/mixed 4 1 2 0\n", "param cases/all_skip 3 2\n",
                              "ran cases/all_skip 3 0 0 1\n", "ran cases/all_skip 3 1 0 2\n"};
    expect_lines(&two, want_two, sizeof want_two / sizeof *want_two);
    cr_expect(strstr(one.log, "nothing to do for case 1") != NULL,
              "the test whose every case skipped does not give the first case's reason:\n%s",
              one.log);

    /* three records each (cases 1, 3, 4) */
    cr_assert_eq(apart.n, 3);
    cr_assert_eq(one.n, 3);
    cr_assert_eq(two.n, 3);
    for (int i = 0; i < 3; ++i) {
        uint64_t want_case = i == 0 ? 1 : (uint64_t)i + 2;
        cr_expect_eq(one.pid[i] >> 32, want_case, "record %d: case %llu", i,
                     (unsigned long long)(one.pid[i] >> 32));
        cr_expect_eq(two.pid[i] >> 32, want_case);
        cr_expect_eq(apart.pid[i] >> 32, 0, "one process per case: no case in the pid");
        cr_expect(one.key[i] == apart.key[i] && two.key[i] == apart.key[i],
                  "case %llu drew other keys together than alone", (unsigned long long)want_case);
    }
    cr_expect(apart.key[0] != apart.key[1] && apart.key[1] != apart.key[2],
              "two cases drew the same keys");
    cr_expect((uint32_t)one.pid[0] == (uint32_t)one.pid[2], "P = 1: the cases ran in more than "
              "one process");
    cr_expect((uint32_t)two.pid[0] != (uint32_t)two.pid[1] &&
                  (uint32_t)two.pid[1] == (uint32_t)two.pid[2],
              "P = 2: cases 1 and 2 in one process, 3 and 4 in another");
}

/* ---- a suite's FL_TESTs in one process ------------------------------------ */

/* Run by the suite `together`, below, in processes of their own: `second`
 * skips; the others compare an output that holds their first key of
 * fl_test_fresh_key, so the evidence says which keys each drew. */
static void plain_compare(float scale)
{
    double key = (double)(fl_test_fresh_key() % 1000u);
    float got[16];
    double want[16];
    for (int i = 0; i < 16; ++i) got[i] = (float)(want[i] = scale * i + key);
    fl_compare_opts o = fl_compare_defaults("y", 0, 0);
    cr_assert_eq(fl_compare_f32(got, want, 16, &o).n_bad, 0);
}

TestSuite(plain, .timeout = 10);

FL_TEST(plain, first) { plain_compare(1.0f); }
FL_TEST(plain, second) { FL_SKIP_CASE("skipped on purpose"); }
FL_TEST(plain, third) { plain_compare(3.0f); }

/* Under the sanitizer stage, FUSIONLAB_TESTS_TOGETHER runs the named tests
 * in the first one's process, each meeting the keys it meets alone, and
 * says so in one line; a test that skips does not end the run; a name that
 * is no FL_TEST fails it; outside the sanitizer stage the variable does
 * nothing. */
Test(together, fl_tests_in_one_process)
{
    const char *group = "plain/first,plain/second,plain/third";
    cases_run apart, one, outside, unknown;
    run_child(NULL, "plain/*", NULL, 1, 1, &apart);
    run_child(NULL, "plain/first", group, 1, 1, &one);
    run_child(NULL, "plain/first", group, 0, 1, &outside);
    run_child(NULL, "plain/first", "plain/first,plain/nope", 1, 0, &unknown);

    cr_expect(strstr(one.log, "fusion-lab: plain/first: 3 tests in one process (2 ran, 1 skipped)")
                  != NULL, "no line for the tests together:\n%s", one.log);
    cr_expect(strstr(one.log, "[PASS] plain::first") != NULL, "the run did not pass:\n%s", one.log);
    cr_assert_eq(apart.n, 2);
    cr_assert_eq(one.n, 2, "the tests together left %d records, not 2:\n%s", one.n, one.log);
    cr_expect(one.key[0] == apart.key[0] && one.key[1] == apart.key[1],
              "a test drew other keys together than alone");
    cr_expect((uint32_t)one.pid[0] == (uint32_t)one.pid[1], "the tests ran in two processes");
    cr_expect((uint32_t)apart.pid[0] != (uint32_t)apart.pid[1], "apart: one process");

    cr_expect(strstr(outside.log, "tests in one process") == NULL && outside.n == 1,
              "FUSIONLAB_TESTS_TOGETHER took effect outside the sanitizer stage:\n%s", outside.log);
    cr_expect(strstr(unknown.log, "FUSIONLAB_TESTS_TOGETHER names plain/nope, which is no FL_TEST")
                  != NULL, "an unknown name did not fail the run:\n%s", unknown.log);
}
