/* tests/fl_test.c — see fl_test.h. */
#define _POSIX_C_SOURCE 200809L
#include "fl_test.h"
#include "device.h"
#include "data.h"
#include "evidence.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef FUSIONLAB_HAVE_CJSON
#include <cJSON.h>
#endif

int fl_test_gpu_count(void) { return fl_device_count(); }

const char *fl_test_error_hint(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
        return " -- a kernel read or wrote outside its arrays: check the bounds "
               "mask and the index arithmetic (compute-sanitizer names the line)";
    case cudaErrorMisalignedAddress:
        return " -- a vector load/store (float4) on an address that is not "
               "16-byte aligned: check alignment before taking the vector path";
    case cudaErrorLaunchOutOfResources:
        return " -- the block uses too many registers or threads: lower "
               "threads per block";
    case cudaErrorInvalidConfiguration:
        return " -- invalid launch configuration: 1..1024 threads per block, "
               "at least one block, grid.x below 2^31";
    case cudaErrorNoKernelImageForDevice:
        return " -- the build has no code for this GPU: reconfigure with "
               "-DCMAKE_CUDA_ARCHITECTURES=native";
    case cudaErrorMemoryAllocation:
        return " -- out of device memory: is a buffer sized in elements where bytes "
               "were meant (or the reverse), or freed nowhere?";
    case cudaErrorLaunchTimeout:
        return " -- the kernel ran too long (an endless loop?)";
    default:
        return "";
    }
}

/* Under the sanitizer stage (tools/sanitize sets FUSIONLAB_SANITIZE) every
 * access is checked, 10 to 100 times slower: only the small cases run. */
#define FL_SANITIZE_MAX_BYTES ((size_t)16 << 20)

/* FUSIONLAB_SANITIZE, FUSIONLAB_CASES, FUSIONLAB_CASES_REPORT and
 * FUSIONLAB_TESTS_TOGETHER, read once
 * before main (before any code of a student's runs: a launcher that
 * rewrote the environment in place must not change how the tests run). */
static int g_sanitizing = -1, g_cases_together = -1;
static int g_cases_fd = -1; /* FUSIONLAB_CASES_REPORT, opened for appending */
#define FL_CASES_MAX_PROCESSES 64
static size_t g_cases_procs = 1; /* FUSIONLAB_CASES_PROCESSES */
static size_t g_cases_index[FL_CASES_MAX]; /* 0, 1, ...: FL_PARAM_TEST's parameters */
static uint64_t g_key_calls; /* fl_test_fresh_key's count (a case's: fl_cases_keys_from) */
static char g_tests_together[1024]; /* FUSIONLAB_TESTS_TOGETHER, under the sanitizer only */

__attribute__((constructor)) static void test_env_init(void)
{
    if (g_sanitizing >= 0) return;
    const char *sanitize = getenv("FUSIONLAB_SANITIZE");
    g_sanitizing = sanitize != NULL && sanitize[0] != '\0' &&
                   !(sanitize[0] == '0' && sanitize[1] == '\0');
    const char *cases = getenv("FUSIONLAB_CASES");
    g_cases_together = cases != NULL && strcmp(cases, "together") == 0;
    const char *procs = getenv("FUSIONLAB_CASES_PROCESSES");
    if (procs != NULL) {
        char *end = NULL;
        unsigned long p = strtoul(procs, &end, 10);
        if (end != procs && *end == '\0' && p >= 1)
            g_cases_procs = p < FL_CASES_MAX_PROCESSES ? p : FL_CASES_MAX_PROCESSES;
    }
    for (size_t i = 0; i < FL_CASES_MAX; ++i) g_cases_index[i] = i;
    const char *tests = getenv("FUSIONLAB_TESTS_TOGETHER");
    if (g_sanitizing && tests != NULL) {
        if (strlen(tests) >= sizeof g_tests_together) {
            fprintf(stderr, "FUSIONLAB_TESTS_TOGETHER: longer than %zu characters\n",
                    sizeof g_tests_together - 1);
            _exit(70);
        }
        strcpy(g_tests_together, tests);
    }
    const char *report = getenv("FUSIONLAB_CASES_REPORT");
    if (g_cases_together && report != NULL && report[0] != '\0') {
        g_cases_fd = open(report, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (g_cases_fd < 0) { /* the grader could not count the cases */
            fprintf(stderr, "FUSIONLAB_CASES_REPORT: cannot open %s\n", report);
            _exit(70);
        }
    }
}

int fl_test_sanitizing(void)
{
    if (g_sanitizing < 0) test_env_init();
    return g_sanitizing;
}

static int cases_together(void)
{
    if (g_cases_together < 0) test_env_init();
    return g_cases_together;
}

/* One line to FUSIONLAB_CASES_REPORT, with one write() (whole lines only,
 * whatever else appends); a line that cannot be written ends the process:
 * the grader must not count a test's cases from half a report. */
static void cases_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cases_report(const char *fmt, ...)
{
    if (g_cases_fd < 0) return;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (len <= 0 || (size_t)len >= sizeof line ||
        write(g_cases_fd, line, (size_t)len) != (ssize_t)len) {
        fprintf(stderr, "FUSIONLAB_CASES_REPORT: a line could not be written\n");
        abort();
    }
}

/* How many processes run a test of n cases together. */
static size_t cases_processes(size_t n)
{
    return g_cases_procs < n ? g_cases_procs : n;
}

struct criterion_test_params fl_test_params(void *cases, size_t size, size_t n,
                                           const char *together)
{
    if (together == NULL) /* FL_PARAMS: the cases themselves */
        return (struct criterion_test_params){.size = size, .params = cases, .length = n};
    /* FL_PARAM_TEST: the cases' indices, or, together, P processes' shares */
    (void)cases;
    if (n > FL_CASES_MAX) {
        fprintf(stderr, "%s: %zu cases, more than FL_CASES_MAX (%d)\n", together, n,
                FL_CASES_MAX);
        abort();
    }
    if (n > 1 && cases_together()) {
        size_t p = cases_processes(n);
        cases_report("param %s %zu %zu\n", together, n, p);
        n = p;
    }
    return (struct criterion_test_params){
        .size = sizeof g_cases_index[0], .params = g_cases_index, .length = n};
}

/* FL_PARAM_TEST's cases in one process: which test, how many cases, this
 * process's share [lo, hi), the next case, how many ran and skipped, why
 * the first skip skipped. One test per process (Criterion's). */
jmp_buf fl_cases_jmp;
static struct {
    const char *test;
    size_t n, share, lo, hi, next, ran, skipped;
    int active; /* inside a case of the loop */
    const char *what; /* "case" (an FL_PARAM_TEST's) or "test" (a suite's FL_TESTs) */
    char why[256];
} g_cases;

/* A loop over cases [lo, hi) of n starts. */
static void cases_start(const char *test, const char *what, size_t n, size_t share, size_t lo,
                        size_t hi)
{
    g_cases.test = test;
    g_cases.what = what;
    g_cases.n = n;
    g_cases.share = share;
    g_cases.lo = g_cases.next = lo;
    g_cases.hi = hi;
    g_cases.ran = g_cases.skipped = 0;
    g_cases.active = 0;
    g_cases.why[0] = '\0';
}

int fl_cases_begin(const char *test, size_t n, size_t share)
{
    if (!cases_together() || n <= 1) return 0;
    size_t p = cases_processes(n);
    cr_assert(share < p, "%s: share %zu of %zu: the runner and the test process count the "
              "cases differently", test, share, p);
    cases_start(test, "case", n, share, share * n / p, (share + 1) * n / p);
    return 1;
}

size_t fl_cases_next(void)
{
    g_cases.active = g_cases.next < g_cases.hi;
    if (!g_cases.active) return (size_t)-1;
    return g_cases.next++;
}

void fl_cases_ran(void)
{
    g_cases.ran++;
    g_cases.active = 0;
}

int fl_cases_skip(const char *fmt, ...)
{
    if (!g_cases.active) return 0;
    if (g_cases.skipped++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_cases.why, sizeof g_cases.why, fmt, ap);
        va_end(ap);
    }
    g_cases.active = 0;
    return 1;
}

void fl_cases_end(void)
{
    fprintf(stderr, "fusion-lab: %s: %zu %ss in one process (%zu ran, %zu skipped)\n",
            g_cases.test, g_cases.hi - g_cases.lo, g_cases.what, g_cases.ran, g_cases.skipped);
    fflush(stderr);
    if (strcmp(g_cases.what, "case") == 0) /* (the report counts FL_PARAM_TESTs' cases) */
        cases_report("ran %s %zu %zu %zu %zu\n", g_cases.test, g_cases.n, g_cases.share,
                     g_cases.ran, g_cases.skipped);
    if (g_cases.ran == 0 && g_cases.why[0])
        cr_skip_test("%s", g_cases.why);
    else if (g_cases.ran == 0)
        cr_skip_test("every %s skipped", g_cases.what);
}

void fl_cases_keys_from(size_t index)
{
    g_key_calls = (uint64_t)(index + 1) << 32;
}

/* FL_TEST's registry: every FL_TEST of the program, filled before main. */
#define FL_TESTS_MAX 128
static struct {
    const char *id;
    void (*body)(void);
} g_tests[FL_TESTS_MAX];
static size_t g_n_tests;

void fl_tests_register(const char *id, void (*body)(void))
{
    if (g_n_tests == FL_TESTS_MAX) {
        fprintf(stderr, "fl_tests_register: more than %d FL_TESTs\n", FL_TESTS_MAX);
        abort();
    }
    g_tests[g_n_tests].id = id;
    g_tests[g_n_tests].body = body;
    g_n_tests++;
}

static void (*tests_find(const char *id, size_t len))(void)
{
    for (size_t i = 0; i < g_n_tests; ++i)
        if (strlen(g_tests[i].id) == len && strncmp(g_tests[i].id, id, len) == 0)
            return g_tests[i].body;
    return NULL;
}

/* The leader's process of a suite's FL_TESTs together: each named test in
 * turn, through the loop of an FL_PARAM_TEST's cases together (fl_cases_*). */
static void tests_together(const char *leader)
{
    size_t n = 1;
    for (const char *c = g_tests_together; *c; ++c) n += *c == ',';
    cases_start(leader, "test", n, 0, 0, n);
    const char *volatile at = g_tests_together; /* (live across setjmp) */
    while (fl_cases_next() != (size_t)-1) {
        size_t len = strcspn(at, ",");
        void (*volatile body)(void) = tests_find(at, len);
        cr_assert(body != NULL, "FUSIONLAB_TESTS_TOGETHER names %.*s, which is no FL_TEST of "
                  "this program", (int)len, at);
        at += len + (at[len] == ',');
        g_key_calls = 0; /* the keys of a process of its own */
        if (setjmp(fl_cases_jmp) == 0) {
            body();
            fl_cases_ran();
            /* a launch error left pending dies with a process of its own */
            (void)cudaGetLastError();
        }
    }
    fl_cases_end();
}

void fl_tests_run(const char *id, void (*body)(void))
{
    if (g_sanitizing < 0) test_env_init();
    size_t len = strcspn(g_tests_together, ",");
    if (len > 0 && strlen(id) == len && strncmp(g_tests_together, id, len) == 0)
        tests_together(id);
    else
        body();
}

/* The case of the loop running now (1, 2, ...), 0 outside the loop. */
static uint64_t cases_current(void)
{
    return g_cases.active ? (uint64_t)g_cases.next : 0;
}

void fl_test_skip_if_too_large(size_t bytes)
{
    if (fl_test_sanitizing() && bytes > FL_SANITIZE_MAX_BYTES)
        FL_SKIP_CASE("too large for the sanitizer stage: %zu MiB (the stage runs cases of up "
                     "to %zu MiB per buffer)", (bytes + ((size_t)1 << 20) - 1) >> 20,
                     FL_SANITIZE_MAX_BYTES >> 20);
}

void *fl_test_dev_alloc(size_t bytes)
{
    fl_test_skip_if_too_large(bytes);
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes + FL_GUARD_BYTES);
    cr_assert(e == cudaSuccess, "cudaMalloc of %zu bytes failed: %s", bytes,
              cudaGetErrorString(e));
    e = cudaMemset((char *)p + bytes, FL_GUARD_BYTE, FL_GUARD_BYTES);
    cr_assert(e == cudaSuccess, "cudaMemset of the guard zone failed: %s", cudaGetErrorString(e));
    return p;
}

int fl_test_no_overrun(const void *end, const char *who, const char *what, char *msg,
                       size_t len)
{
    unsigned char got[FL_GUARD_BYTES];
    cudaError_t e = cudaMemcpy(got, end, sizeof got, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        snprintf(msg, len, "could not read the guard zone after %s: %s", what,
                 cudaGetErrorString(e));
        return 0;
    }
    size_t changed = 0, first = 0;
    for (size_t i = 0; i < sizeof got; ++i)
        if (got[i] != FL_GUARD_BYTE && changed++ == 0) first = i;
    if (changed == 0) return 1;
    snprintf(msg, len,
             "%s wrote past the end of %s: %zu of the %d bytes after its last element changed "
             "(the first %zu bytes past the end) -- threads whose index is past the last "
             "element must do nothing: check the bounds test (i < n) in every kernel",
             who, what, changed, FL_GUARD_BYTES, first);
    return 0;
}

void fl_test_inputs_add(fl_inputs *g, const char *name, const void *d, size_t bytes)
{
    cr_assert(g->n < FL_MAX_INPUTS, "fl_test_inputs_add: more than %d inputs", FL_MAX_INPUTS);
    int k = g->n++;
    g->name[k] = name;
    g->ptr[k] = d;
    g->bytes[k] = bytes;
    FL_ASSERT_CUDA(fl_checksum(d, bytes, &g->sum[k]));
}

cudaError_t fl_test_inputs_snapshot(fl_inputs *g)
{
    for (int k = 0; k < g->n; ++k) CUDA_CHECK(fl_checksum(g->ptr[k], g->bytes[k], &g->sum[k]));
    return cudaSuccess;
}

int fl_test_inputs_unchanged(const fl_inputs *g, const char *who, char *msg, size_t len)
{
    for (int k = 0; k < g->n; ++k) {
        uint64_t now = 0;
        cudaError_t e = fl_checksum(g->ptr[k], g->bytes[k], &now);
        if (e != cudaSuccess) {
            snprintf(msg, len, "could not checksum the input %s: %s", g->name[k],
                     cudaGetErrorString(e));
            return 0;
        }
        if (now != g->sum[k]) {
            snprintf(msg, len,
                     "%s changed its input %s (%zu bytes, checksummed before and after the "
                     "call): inputs are read-only -- keep intermediates in registers, shared "
                     "memory or scratch of your own",
                     who, g->name[k], g->bytes[k]);
            return 0;
        }
    }
    return 1;
}

void *fl_test_host_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    cr_assert(p != NULL, "malloc of %zu bytes failed", bytes);
    return p;
}

void fl_test_rotor_init(fl_rotor *r, size_t rows)
{
    memset(r, 0, sizeof *r);
    r->rows = rows ? rows : 1;
}

void fl_test_rotor_add(fl_rotor *r, const char *name, void *dev, size_t row_bytes)
{
    cr_assert(r->n < FL_MAX_INPUTS, "fl_test_rotor_add: more than %d inputs", FL_MAX_INPUTS);
    int k = r->n++;
    size_t bytes = r->rows * row_bytes;
    r->name[k] = name;
    r->dev[k] = dev;
    r->row_bytes[k] = row_bytes;
    r->orig[k] = fl_test_dev_alloc(bytes);
    FL_ASSERT_CUDA(cudaMemcpy(r->orig[k], dev, bytes, cudaMemcpyDeviceToDevice));
}

cudaError_t fl_test_rotor_next(fl_rotor *r, cudaStream_t stream)
{
    /* a shift that moves every row and differs from the last one: steps of
     * about rows/phi, so successive shifts spread over the whole range */
    size_t step = (size_t)((double)r->rows * 0.6180339887) | 1u;
    r->calls++;
    r->shift = r->rows > 1 ? 1 + ((size_t)r->calls * step) % (r->rows - 1) : 0;
    for (int k = 0; k < r->n; ++k)
        CUDA_CHECK(fl_rotate(r->dev[k], r->orig[k], r->rows, r->row_bytes[k], r->shift, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    r->sums.n = 0;
    for (int k = 0; k < r->n; ++k) {
        int j = r->sums.n++;
        r->sums.name[j] = r->name[k];
        r->sums.ptr[j] = r->dev[k];
        r->sums.bytes[j] = r->rows * r->row_bytes[k];
    }
    CUDA_CHECK(fl_test_inputs_snapshot(&r->sums));
    r->armed = 1;
    return cudaSuccess;
}

int fl_test_rotor_inputs_ok(fl_rotor *r, const char *who, char *msg, size_t len)
{
    if (!r->armed) return 1;
    r->armed = 0;
    return fl_test_inputs_unchanged(&r->sums, who, msg, len);
}

void fl_test_rotor_free(fl_rotor *r)
{
    for (int k = 0; k < r->n; ++k) (void)cudaFree(r->orig[k]);
    r->n = 0;
}

int fl_test_within_roofline(const fl_timing *t, double ceiling_gbs)
{
    return !(ceiling_gbs > 0.0 && t->gbs > FL_ROOFLINE_SLACK * ceiling_gbs);
}

void fl_test_assert_timing_honest(const fl_timing *t, const char *label,
                                  const fl_timing_opts *o, double ceiling_gbs)
{
    if (t->check_failed_run) {
        int run = t->check_failed_run, warm = o->warmup;
        cr_assert_fail("%s %s: wrong during the timed runs: run %d of %d (%s %d) gave a wrong "
                       "output, after %d right (each run gets fresh inputs and a poisoned "
                       "output): %s -- an answer must not depend on earlier calls (no caching, "
                       "no skipped work, no state kept between calls)",
                       t->name, label, run, warm + o->samples,
                       run <= warm ? "warm-up" : "timed sample", run <= warm ? run : run - warm,
                       run - 1, t->check_msg);
    }
    cr_assert(t->check_ok != 0, "%s %s: wrong after the timed runs (it was right before): %s",
              t->name, label, t->check_msg);
    /* Under the speed audit the profiler times each kernel and adds its own
     * overhead to the wall clock: the outputs are judged, not the times
     * (the audit measures those; the graded run judged them) */
    if (fl_timing_audit() || fl_timing_untimed()) return;
    cr_assert(!t->hidden_work,
              "%s %s: the GPU was busy %.1f us per run but the timed stream saw only %.1f us: "
              "launch all work on the stream you are given",
              t->name, label, t->wall_median_us, t->event_median_us);
    cr_assert(fl_test_within_roofline(t, ceiling_gbs),
              "%s %s: %.0f GB/s is faster than this GPU's memory allows (%.0f GB/s measured "
              "copy bandwidth; more than %.1fx of it cannot be honest): the timed runs did not "
              "move the bytes the work needs -- skipped, cached or hidden work",
              t->name, label, t->gbs, ceiling_gbs, FL_ROOFLINE_SLACK);
}

void fl_test_speed(const char *label, fl_variant *baseline, fl_variant *candidate,
                   double min_speedup, double min_pct_ceiling)
{
    double ceiling = 0.0; /* of a kernel moving the candidate's bytes */
    if (!fl_timing_untimed()) FL_ASSERT_CUDA(fl_copy_ceiling_for(candidate->bytes, &ceiling));
    fl_variant v[2] = {*baseline, *candidate};
    fl_timing t[2];
    fl_timing_opts o = fl_timing_defaults();
    o.ceiling_gbs = ceiling;
    o.check_each = 1;
    FL_ASSERT_CUDA(fl_time_variants(v, 2, &o, t));
    if (fl_timing_untimed()) {
        /* the worked solution's verifying run: every run's outputs, no times */
        fprintf(stderr, "speed %s: untimed (FUSIONLAB_TIMING_UNTIMED): %d and %d runs checked\n",
                label, t[0].check_runs, t[1].check_runs);
        for (int k = 0; k < 2; ++k) fl_test_assert_timing_honest(&t[k], label, &o, ceiling);
        return;
    }

    double speedup = t[0].us.median / t[1].us.median;
    fprintf(stderr,
            "speed %s: %s %.1f us (%.0f GB/s) | %s %.1f us (%.0f GB/s, %.0f%% of "
            "the %.0f GB/s copy ceiling) | speedup %.2fx | need >= %.2fx and >= "
            "%.0f%%\n",
            label, t[0].name, t[0].us.median, t[0].gbs, t[1].name, t[1].us.median,
            t[1].gbs, t[1].pct_of_ceiling, ceiling, speedup, min_speedup,
            min_pct_ceiling);

    int passed = t[0].check_ok && t[1].check_ok && !t[0].hidden_work &&
                 !t[1].hidden_work && speedup >= min_speedup &&
                 t[1].pct_of_ceiling >= min_pct_ceiling &&
                 fl_test_within_roofline(&t[0], ceiling) &&
                 fl_test_within_roofline(&t[1], ceiling);
    fl_test_speed_record(label, t[0].us.median, t[1].us.median, min_speedup,
                         t[1].pct_of_ceiling, min_pct_ceiling, passed);

    for (int k = 0; k < 2; ++k) fl_test_assert_timing_honest(&t[k], label, &o, ceiling);
    if (fl_timing_audit()) return; /* the times are the profiler's (above) */
    cr_assert(speedup >= min_speedup,
              "%s %s: %.2fx faster than %s, need >= %.2fx (%.1f us vs %.1f us): "
              "is every intermediate kept in registers, and is each input read "
              "only once?",
              t[1].name, label, speedup, t[0].name, min_speedup, t[1].us.median,
              t[0].us.median);
    cr_assert(t[1].pct_of_ceiling >= min_pct_ceiling,
              "%s %s: %.0f GB/s is %.0f%% of this GPU's %.0f GB/s copy "
              "bandwidth, need >= %.0f%%: use coalesced (and 16-byte) loads and "
              "enough threads to keep many loads in flight",
              t[1].name, label, t[1].gbs, t[1].pct_of_ceiling, ceiling,
              min_pct_ceiling);
}

void fl_test_speed_record(const char *label, double baseline_us, double candidate_us,
                          double min_speedup, double pct_of_ceiling, double min_pct,
                          int passed)
{
    const char *path = getenv("FUSIONLAB_SPEED_LOG");
    if (path == NULL || path[0] == '\0' || fl_timing_untimed()) return; /* no times to record */
#ifdef FUSIONLAB_HAVE_CJSON
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return;
    cJSON_AddStringToObject(o, "suite", criterion_current_suite ? criterion_current_suite->name : "");
    cJSON_AddStringToObject(o, "test", criterion_current_test ? criterion_current_test->name : "");
    cJSON_AddStringToObject(o, "label", label);
    cJSON_AddNumberToObject(o, "baseline_us", baseline_us);
    cJSON_AddNumberToObject(o, "candidate_us", candidate_us);
    cJSON_AddNumberToObject(o, "speedup", candidate_us > 0.0 ? baseline_us / candidate_us : 0.0);
    cJSON_AddNumberToObject(o, "min_speedup", min_speedup);
    cJSON_AddNumberToObject(o, "pct_of_ceiling", pct_of_ceiling);
    cJSON_AddNumberToObject(o, "min_pct", min_pct);
    cJSON_AddBoolToObject(o, "passed", passed != 0);
    char *line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (line == NULL) return;
    /* one write of one line: the grader reads whole lines only */
    FILE *f = fopen(path, "a");
    if (f != NULL) {
        fprintf(f, "%s\n", line);
        fclose(f);
    } else {
        fprintf(stderr, "FUSIONLAB_SPEED_LOG: cannot append to %s\n", path);
    }
    cJSON_free(line);
#else
    (void)label; (void)baseline_us; (void)candidate_us; (void)min_speedup;
    (void)pct_of_ceiling; (void)min_pct; (void)passed;
    fprintf(stderr, "FUSIONLAB_SPEED_LOG is set, but the tests were built without cJSON: "
                    "no speed record written\n");
#endif
}

/* ---- evidence for the grader (common/evidence.h) --------------------------- */

static int g_evidence_fd = -1;
static uint64_t g_evidence_salt;

static void copy_name(char *dst, size_t cap, const char *src)
{
    memset(dst, 0, cap);
    if (src) strncpy(dst, src, cap - 1);
}

/* One record per comparison, written with one write() on a descriptor
 * opened for appending: the grader reads whole records only. A record that
 * cannot be made or written ends the test process (abort): a case that
 * passed without its records would look, to the grader, like one that
 * compared nothing, which the worked solution's run vouches for. */
static void evidence_observer(const float *got, const double *want, size_t n,
                              const fl_compare_opts *o, const fl_compare_result *r)
{
    size_t m = fl_evidence_count(n);
    size_t bytes = sizeof(fl_evidence_head) + m * sizeof(fl_evidence_sample);
    unsigned char *rec = calloc(1, bytes);
    if (rec == NULL) {
        fprintf(stderr, "FUSIONLAB_EVIDENCE: no memory for a record\n");
        abort();
    }
    fl_evidence_head *h = (fl_evidence_head *)rec;
    memcpy(h->magic, FL_EVIDENCE_MAGIC, sizeof FL_EVIDENCE_MAGIC);
    copy_name(h->suite, sizeof h->suite, criterion_current_suite ? criterion_current_suite->name : "");
    copy_name(h->test, sizeof h->test, criterion_current_test ? criterion_current_test->name : "");
    copy_name(h->what, sizeof h->what, o->what);
    h->n = n;
    h->key = fl_evidence_key(want, n, g_evidence_salt);
    /* one process per case, or the cases together: the case in the high bits */
    h->pid = (uint64_t)getpid() | cases_current() << 32;
    h->atol = o->atol;
    h->rtol = o->rtol;
    h->count = (uint32_t)m;
    h->verdict = r->n_bad == 0;
    fl_evidence_sample *s = (fl_evidence_sample *)(rec + sizeof *h);
    for (size_t k = 0; k < m; ++k) {
        size_t i = (size_t)fl_evidence_index(k, n, g_evidence_salt);
        s[k].index = i;
        s[k].want = want[i];
        s[k].got = got[i];
    }
    if (write(g_evidence_fd, rec, bytes) != (ssize_t)bytes) {
        fprintf(stderr, "FUSIONLAB_EVIDENCE: a record could not be written\n");
        abort();
    }
    free(rec);
}

__attribute__((constructor)) static void evidence_init(void)
{
    const char *path = getenv("FUSIONLAB_EVIDENCE");
    if (path == NULL || path[0] == '\0') return;
    const char *salt = getenv("FUSIONLAB_EVIDENCE_SALT");
    g_evidence_salt = salt ? strtoull(salt, NULL, 16) : 0;
    g_evidence_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (g_evidence_fd < 0) { /* no test may pass without its records */
        fprintf(stderr, "FUSIONLAB_EVIDENCE: cannot open %s\n", path);
        _exit(70);
    }
    fl_compare_set_observer(evidence_observer);
}

/* ---- fresh inputs, sampled rows, the stream check ------------------------- */

static uint64_t fl_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t fl_test_fresh_key(void)
{
    static int replayed = -1;
    uint64_t z = fl_seed(0xF2E5C0DE5EEDull) ^ fl_mix64(++g_key_calls * 0x9E3779B97F4A7C15ull);
    /* Under the grader (FUSIONLAB_EVIDENCE names the evidence file) the
     * worked solution's run must meet the same inputs to re-judge what the
     * student's run compared: the k-th key of a case is a function of the
     * secret seed, the case and k alone (of a test process, for a test that
     * is not an FL_PARAM_TEST), new at every call and unknown to code that
     * cannot read the seed. Elsewhere the clock and the process make
     * every run's keys new too. */
    if (replayed < 0) {
        const char *ev = getenv("FUSIONLAB_EVIDENCE");
        replayed = ev != NULL && ev[0] != '\0';
    }
    if (replayed) return fl_mix64(z);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    uint64_t clock_ns = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
    return fl_mix64(z ^ fl_mix64(clock_ns ^ ((uint64_t)getpid() << 40)));
}

void fl_test_sample_rows(uint64_t key, size_t rows, size_t k, size_t *idx)
{
    if (rows == 0) {
        for (size_t i = 0; i < k; ++i) idx[i] = 0;
        return;
    }
    fl_rng r = fl_rng_make(key);
    for (size_t i = 0; i < k; ++i) {
        if (i == 0) idx[i] = 0;
        else if (i == 1) idx[i] = rows - 1;
        else idx[i] = (size_t)(fl_rng_u64(&r) % rows);
    }
}

void fl_test_sync_within(double seconds, const char *who, const char *hint)
{
    cudaEvent_t done;
    FL_ASSERT_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    FL_ASSERT_CUDA(cudaEventRecord(done, 0));
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (cudaEventQuery(done) == cudaErrorNotReady) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        double waited = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
        cr_assert(waited < seconds, "%s: the kernel was still running after %.0f s (%s)", who,
                  seconds, hint);
        const struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    (void)cudaEventDestroy(done);
    FL_ASSERT_SYNC(who);
}

void fl_test_stream_honoured(const char *who, fl_run_fn run, fl_run_fn poison, fl_check_fn check,
                             void *ctx)
{
    char msg[1024];
    cudaStream_t s = NULL;
    FL_ASSERT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    FL_ASSERT_CUDA(poison(ctx, s));
    FL_ASSERT_CUDA(cudaStreamSynchronize(s));
    if (fl_test_sanitizing()) {
        /* The sanitizer serialises and slows the GPU: only the output counts. */
        FL_ASSERT_CUDA(run(ctx, s));
        FL_ASSERT_SYNC(who);
        int ok = check(ctx, msg, sizeof msg);
        (void)cudaStreamDestroy(s);
        cr_assert(ok, "%s", msg);
        return;
    }
    /* Unheld first run: loads the launcher's kernels (lazy module loading
     * waits for the device), then the outputs are poisoned again. The wait
     * is for the whole device: a launcher that wrongly uses another stream
     * must not finish its first run after the poison (its output would
     * then be complete before the held run, and the check would pass). */
    cudaError_t ew = run(ctx, s);
    if (ew == cudaSuccess) ew = cudaDeviceSynchronize();
    cr_assert(ew == cudaSuccess, "%s on a stream of its own (cudaStreamNonBlocking) failed: %s (%s)%s",
              who, cudaGetErrorName(ew), cudaGetErrorString(ew), fl_test_error_hint(ew));
    FL_ASSERT_CUDA(poison(ctx, s));
    FL_ASSERT_CUDA(cudaStreamSynchronize(s));
    fl_hold hold;
    FL_ASSERT_CUDA(cudaDeviceSynchronize());
    FL_ASSERT_CUDA(fl_hold_begin(&hold, cudaStreamLegacy, FL_HOLD_SECONDS));
    cr_assert(fl_hold_active(&hold),
              "the test could not hold the default stream (its spinning block never ran)");
    cudaError_t e = run(ctx, s);
    int held_after_run = fl_hold_active(&hold);
    cudaError_t es = e == cudaSuccess ? cudaStreamSynchronize(s) : cudaSuccess;
    int held_after_sync = fl_hold_active(&hold);
    int ok = e == cudaSuccess && es == cudaSuccess && held_after_run && held_after_sync
                 ? check(ctx, msg, sizeof msg)
                 : 1;
    int held_after_check = fl_hold_active(&hold);
    int timed_out = 0;
    cudaError_t eh = fl_hold_end(&hold, &timed_out);
    (void)cudaStreamDestroy(s);
    cr_assert(e == cudaSuccess, "%s on a stream of its own (cudaStreamNonBlocking) failed: %s (%s)%s",
              who, cudaGetErrorName(e), cudaGetErrorString(e), fl_test_error_hint(e));
    cr_assert(es == cudaSuccess, "%s: the GPU reported %s (%s)%s", who, cudaGetErrorName(es),
              cudaGetErrorString(es), fl_test_error_hint(es));
    cr_assert(eh == cudaSuccess, "the test's spinning block failed: %s", cudaGetErrorString(eh));
    cr_assert(held_after_run,
              "%s waited for the GPU: it returned only after other work on the device had "
              "finished (a cudaDeviceSynchronize, a cudaMemcpy or cudaMalloc/cudaFree in the "
              "launcher?) -- a launcher queues its kernels on the stream it was given and "
              "returns at once; the caller decides when to wait",
              who);
    cr_assert(held_after_sync,
              "%s: the work it queued on the stream it was given waited for other work on the "
              "device (for the default stream, or for an event of another stream), or took "
              "more than %.0f s -- queue everything on that stream, with no dependence on "
              "the default stream",
              who, FL_HOLD_SECONDS);
    cr_assert(ok,
              "%s queued work outside the stream it was given: with the default stream kept "
              "busy, its output was not complete once that stream had finished (%s) -- launch "
              "every kernel and copy with <<<grid, block, shared, stream>>> or the *Async(..., "
              "stream) form, never on the default stream 0, cudaStreamPerThread or a stream "
              "of your own",
              who, msg);
    cr_assert(held_after_check || timed_out == 0,
              "the test's check of %s outlasted its hold on the default stream (%.0f s)", who,
              FL_HOLD_SECONDS);
}
