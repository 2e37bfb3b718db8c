/* grader/stage_run.c — the run stage: each suite the rubric names on its
 * own (a --filter per suite), one test at a time, with Criterion's JSON
 * report, the speed log and a hard wall-clock limit; a suite killed at its
 * limit costs only itself. The worked solution's runs on the same suites
 * and inputs (verify_runs), one suite after another. Then, last, when the
 * rubric gives the sanitizer check points, the test program under
 * compute-sanitizer (tools/sanitize, its own limit).
 */
#define _XOPEN_SOURCE 700
#include "stages.h"
#include "../common/evidence.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEST_OUTPUT_KEEP (2u << 20) /* head and tail of a suite's output kept */

/* ---- 4. running the suites --------------------------------------------------- */

static void case_add(suite_run *sr, const char *test, cr_status st, const char *msg,
                     const char *extra)
{
    sr->cases = xrealloc(sr->cases, (size_t)(sr->n + 1) * sizeof *sr->cases);
    cr_case *c = &sr->cases[sr->n++];
    c->test = xstrdup(test);
    c->status = st;
    c->message = xstrdup(msg ? msg : "");
    c->extra = xstrdup(extra ? extra : "");
}

/* Strip "test_01_vector_add.c:151: " from a Criterion message. */
static const char *strip_location(const char *m)
{
    const char *colon = strstr(m, ".c:");
    if (colon == NULL || colon - m > 64) return m;
    const char *p = colon + 3;
    while (*p >= '0' && *p <= '9') ++p;
    if (p[0] == ':' && p[1] == ' ') return p + 2;
    return m;
}

static cr_status status_from_json(const char *s, const char *first_msg)
{
    if (strcmp(s, "PASSED") == 0) return CR_PASSED;
    if (strcmp(s, "SKIPPED") == 0) return CR_SKIPPED;
    if (first_msg && strstr(first_msg, "timed out")) return CR_TIMED_OUT;
    if (strcmp(s, "ERRORED") == 0 || (first_msg && strstr(first_msg, "crashed"))) return CR_CRASHED;
    return CR_FAILED;
}

/* Criterion's JSON report, in run order (it lists the last test first). */
static int parse_report(const char *path, const char *suite, suite_run *sr)
{
    char *text = read_step_file(path, 64u << 20, NULL, NULL);
    if (text == NULL) return -1;
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (root == NULL) return -1;
    const cJSON *suites = cJSON_GetObjectItemCaseSensitive(root, "test_suites");
    const cJSON *su;
    cJSON_ArrayForEach(su, suites)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(su, "name");
        if (!cJSON_IsString(name) || strcmp(name->valuestring, suite) != 0) continue;
        const cJSON *tests = cJSON_GetObjectItemCaseSensitive(su, "tests");
        int n = cJSON_GetArraySize(tests);
        for (int i = n - 1; i >= 0; --i) {
            const cJSON *t = cJSON_GetArrayItem(tests, i);
            const cJSON *tn = cJSON_GetObjectItemCaseSensitive(t, "name");
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(t, "status");
            const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(t, "messages");
            sbuf m = {0};
            const cJSON *it;
            const char *first = NULL;
            cJSON_ArrayForEach(it, msgs)
            {
                if (!cJSON_IsString(it) || it->valuestring[0] == '\0') continue;
                if (!first) first = it->valuestring;
                if (m.len) sbuf_add(&m, "\n");
                sbuf_add(&m, strip_location(it->valuestring));
            }
            case_add(sr, cJSON_IsString(tn) ? tn->valuestring : "?",
                     status_from_json(cJSON_IsString(st) ? st->valuestring : "", first),
                     sbuf_str(&m), NULL);
            sbuf_free(&m);
        }
    }
    cJSON_Delete(root);
    return 0;
}

/* The verbose output, in run order: what each case printed, and (when the
 * JSON report is missing) its status and messages. */
static void parse_log(const char *log, const char *suite, suite_run *out)
{
    char *copy = xstrdup(log);
    char *save = NULL;
    char *cur = NULL;
    sbuf msg = {0}, extra = {0};
    size_t sl = strlen(suite);
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *name = NULL;
        int tag = 0; /* 1 run, 2 pass, 3 fail, 4 skip */
        if (starts_with(line, "[RUN ] ")) tag = 1;
        else if (starts_with(line, "[PASS] ")) tag = 2;
        else if (starts_with(line, "[FAIL] ")) tag = 3;
        else if (starts_with(line, "[SKIP] ")) tag = 4;
        if (tag) {
            name = line + 7;
            /* --filter still lists the other suites' tests, as disabled */
            if (strncmp(name, suite, sl) != 0 || name[sl] != ':' || name[sl + 1] != ':') continue;
            name += sl + 2;
        }
        if (tag == 1) {
            free(cur);
            cur = xstrdup(name);
            msg.len = extra.len = 0;
            if (msg.s) msg.s[0] = '\0';
            if (extra.s) extra.s[0] = '\0';
            continue;
        }
        if (tag >= 2) {
            char *colon = strstr((char *)name, ": ");
            char *rest = colon ? colon + 2 : (char *)"";
            if (colon) *colon = '\0';
            cr_status st = CR_PASSED;
            if (tag == 3) st = strstr(rest, "CRASH") ? CR_CRASHED
                             : strstr(rest, "Timed out") ? CR_TIMED_OUT : CR_FAILED;
            if (tag == 4) {
                st = CR_SKIPPED;
                if (msg.len == 0) sbuf_add(&msg, rest);
            }
            case_add(out, name, st, sbuf_str(&msg), sbuf_str(&extra));
            free(cur);
            cur = NULL;
            msg.len = extra.len = 0;
            if (msg.s) msg.s[0] = '\0';
            if (extra.s) extra.s[0] = '\0';
            continue;
        }
        if (cur == NULL) continue;
        if (starts_with(line, "[----]   ")) {
            const char *m = line + 9;
            if (*m) {
                if (msg.len) sbuf_add(&msg, "\n");
                sbuf_add(&msg, m);
            }
        } else if (starts_with(line, "[----] ") || starts_with(line, "[====] ")) {
            continue;
        } else if (strcmp(line, "[----]") != 0) {
            if (extra.len < 4000) {
                sbuf_add(&extra, line);
                sbuf_add(&extra, "\n");
            }
        }
    }
    if (cur) /* the run ended inside this case: it was killed */
        case_add(out, cur, CR_KILLED, "", sbuf_str(&extra));
    free(cur);
    sbuf_free(&msg);
    sbuf_free(&extra);
    free(copy);
}

/* A speed record from its JSON object (a line of the speed log, or an entry
 * of the shared reference): 0, or -1 when suite, test or label is missing
 * (r is then untouched). `label` may be left out where `need_label` is 0. */
int speed_rec_from_json(const cJSON *o, int need_label, speed_rec *r)
{
    const cJSON *su = cJSON_GetObjectItemCaseSensitive(o, "suite");
    const cJSON *te = cJSON_GetObjectItemCaseSensitive(o, "test");
    const cJSON *la = cJSON_GetObjectItemCaseSensitive(o, "label");
    if (!cJSON_IsString(su) || !cJSON_IsString(te) || (need_label && !cJSON_IsString(la)))
        return -1;
    memset(r, 0, sizeof *r);
    r->suite = xstrdup(su->valuestring);
    r->test = xstrdup(te->valuestring);
    r->label = xstrdup(cJSON_IsString(la) ? la->valuestring : "");
#define NUM(field)                                                                    \
    do {                                                                              \
        const cJSON *v_ = cJSON_GetObjectItemCaseSensitive(o, #field);                \
        r->field = cJSON_IsNumber(v_) ? v_->valuedouble : 0.0;                        \
    } while (0)
    NUM(baseline_us);
    NUM(candidate_us);
    NUM(speedup);
    NUM(min_speedup);
    NUM(pct_of_ceiling);
    NUM(min_pct);
    NUM(audit_speedup);
#undef NUM
    const cJSON *bn = cJSON_GetObjectItemCaseSensitive(o, "audit_baseline_n");
    r->audit_baseline_n = cJSON_IsNumber(bn) && bn->valuedouble >= 0 && bn->valuedouble < 1e9
                              ? (int)bn->valuedouble
                              : 0;
    const cJSON *hn = cJSON_GetObjectItemCaseSensitive(o, "audit_harness_n");
    r->audit_harness_n = cJSON_IsNumber(hn) && hn->valuedouble >= 0 && hn->valuedouble < 1e9
                             ? (int)hn->valuedouble
                             : 0;
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(o, "audit_tool");
    if (cJSON_IsString(tool)) snprintf(r->audit_tool, sizeof r->audit_tool, "%s", tool->valuestring);
    r->passed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "passed"));
    return 0;
}

static void speed_log_load(const char *path, speed_log *log)
{
    char *text = read_step_file(path, 4u << 20, NULL, NULL);
    if (text == NULL) return;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cJSON *o = cJSON_Parse(line);
        if (o == NULL) continue;
        speed_rec r;
        if (speed_rec_from_json(o, 0, &r) == 0) {
            log->v = xrealloc(log->v, (size_t)(log->n + 1) * sizeof *log->v);
            log->v[log->n++] = r;
        }
        cJSON_Delete(o);
    }
    free(text);
}

static void speed_log_free(speed_log *log)
{
    for (int i = 0; i < log->n; ++i) {
        free(log->v[i].suite);
        free(log->v[i].test);
        free(log->v[i].label);
    }
    free(log->v);
    memset(log, 0, sizeof *log);
}

/* The last record of suite::test (of `lesson`, when given: lessons share
 * suite and test names, e.g. speed::fused_vs_unfused). */
const speed_rec *speed_find(const speed_log *log, const char *lesson, const char *suite,
                            const char *test)
{
    const speed_rec *found = NULL;
    for (int i = 0; i < log->n; ++i)
        if ((!lesson || strcmp(log->v[i].lesson, lesson) == 0) &&
            strcmp(log->v[i].suite, suite) == 0 && (!test || strcmp(log->v[i].test, test) == 0))
            found = &log->v[i];
    return found;
}

/* No report: keep what the output says about the cases that ended (their
 * statuses: the verify stage still bears out every pass), and why. */
static void suite_no_report(const proc_result *r, const suite_run *logged, suite_run *sr)
{
    /* statuses only: without a report, the messages would be raw output */
    for (int i = 0; i < logged->n; ++i)
        case_add(sr, logged->cases[i].test, logged->cases[i].status, "", "");
    if (r->interrupted) {
        sr->state = SR_KILLED;
        sr->why = xstrdup("grading was interrupted");
    } else if (r->timed_out) {
        sr->state = SR_KILLED;
        sr->why = xasprintf("the suite was killed after %.0f s, its time limit: a kernel "
                            "or a loop that never ends?", r->elapsed_s);
    } else {
        sr->state = SR_NO_REPORT;
        if (r->term_signal)
            sr->why = xasprintf("the test program died of signal %d before it could report",
                                r->term_signal);
        else
            sr->why = xasprintf("the test program wrote no report (exit status %d)",
                                r->exit_code);
        /* what it printed stays in the instructors' log: a student sees
         * only what the grader itself says */
    }
}

/* "CUDA_DEVICE_MAX_CONNECTIONS=N" for a step that times nothing (suite NULL:
 * the sanitizer), or NULL: the driver's own number of connections. Each
 * connection is a channel the driver sets up when a process's context is
 * made and takes down when it ends; with one, a CUDA process starts and ends
 * sooner (on an H100: context 120 ms to 62 ms, its end 66 to 29 ms). The
 * streams keep their meaning; only how many kernels of different streams can
 * be queued to the GPU at once changes, which the speed suites (left alone)
 * could notice. Of the other tests only the stream tests need two streams'
 * work to run at once (the student's stream while the default one is held):
 * connections_check runs the worked solution's before the batch, and the
 * batch keeps the driver's own when one of them does not pass. */
static char *cuda_connections_env(const grader *g, const char *suite)
{
    if (g->cuda_connections <= 0 || (suite && rubric_speed_suite(&g->rub, suite))) return NULL;
    return xasprintf("CUDA_DEVICE_MAX_CONNECTIONS=%d", g->cuda_connections);
}

/* One run of `suite` (of the tests that `tests` matches, a Criterion
 * pattern: NULL for all of them); with `cases_out`, each FL_PARAM_TEST's
 * cases in one process (FUSIONLAB_CASES=together), and *cases_out what the
 * program wrote to FUSIONLAB_CASES_REPORT (NULL: nothing). */
static void run_suite_once(grader *g, step_kind kind, const submission_keys *keys,
                           const char *binary, const char *suite, const char *tests,
                           const char *tag, int jobs, double timeout, suite_run *sr,
                           char **log_out, char **evidence_out, char **cases_out)
{
    if (cases_out) *cases_out = NULL;
    memset(sr, 0, sizeof *sr);
    sr->suite = xstrdup(suite);
    if (evidence_out) *evidence_out = NULL;
    /* a fresh scratch folder per run: the report, the speed log and the
     * evidence are written there, and nowhere else can the run write */
    char *name = xasprintf("%s-%s%s", kind == STEP_TRUSTED ? "trusted" : "test", suite, tag);
    for (char *p = name; *p; ++p)
        if (*p == '/') *p = '_';
    char *scratch = step_scratch(g, name);
    free(name);
    if (scratch == NULL) {
        sr->state = SR_NOT_RUN;
        sr->why = xstrdup("the grader could not make the run's scratch folder");
        return;
    }
    char *json = path_join(scratch, "report.json");
    char *speed = path_join(scratch, "speed.jsonl");
    char *evidence = path_join(scratch, "evidence.bin");
    char *json_opt = xasprintf("--json=%s", json);
    char *filter = xasprintf("%s/%s", suite, tests ? tests : "*");
    char *speed_env = xasprintf("FUSIONLAB_SPEED_LOG=%s", speed);
    char *evidence_env = xasprintf("FUSIONLAB_EVIDENCE=%s", evidence);
    char *salt_env = xasprintf("FUSIONLAB_EVIDENCE_SALT=%s", keys && keys->salt ? keys->salt : "0");
    char *seed_env = keys && keys->seed ? xasprintf("FUSIONLAB_GRADE_SEED=%s", keys->seed) : NULL;
    char *cases = path_join(scratch, "cases.txt");
    char *cases_env = xasprintf("FUSIONLAB_CASES_REPORT=%s", cases);
    /* as many processes for a test's cases as tests run side by side */
    char *procs_env = xasprintf("FUSIONLAB_CASES_PROCESSES=%d", jobs > 1 ? jobs : 1);
    char tmo[32], njobs[16];
    snprintf(tmo, sizeof tmo, "%g", g->test_timeout);
    snprintf(njobs, sizeof njobs, "%d", jobs > 1 ? jobs : 1);
    char *argv[12];
    int k = 0;
    argv[k++] = (char *)binary;
    argv[k++] = "--jobs";
    argv[k++] = njobs;
    argv[k++] = "--short-filename";
    argv[k++] = "--verbose";
    argv[k++] = json_opt;
    argv[k++] = "--filter";
    argv[k++] = filter;
    if (g->test_timeout > 0) {
        argv[k++] = "--timeout";
        argv[k++] = tmo;
    }
    argv[k] = NULL;
    char *conn_env = cuda_connections_env(g, suite);
    /* the CPU threads each test process may draw its inputs and compute its
     * references on (common/data.c, fl_cpu_threads): this worker's CPUs
     * shared among the processes side by side, so that workers and jobs
     * together ask for no more than --jobs */
    int per_proc = g->jobs / (jobs > 1 ? jobs : 1);
    char *omp_env = xasprintf("OMP_NUM_THREADS=%d", per_proc > 1 ? per_proc : 1);
    const char *env_set[16] = {speed_env, evidence_env, salt_env, omp_env, NULL};
    int e = 4;
    /* the verify stage's runs of the worked solution are there for the
     * references of what the student's run compared (the same keys, drawn
     * in the same order: common/timing.c, run_untimed), not for its times */
    if (kind == STEP_TRUSTED && g->trusted_untimed) env_set[e++] = "FUSIONLAB_TIMING_UNTIMED=1";
    if (conn_env) env_set[e++] = conn_env;
    if (cases_out) {
        env_set[e++] = "FUSIONLAB_CASES=together";
        env_set[e++] = cases_env;
        env_set[e++] = procs_env;
    }
    if (seed_env) env_set[e++] = seed_env;
    if (g->no_gpu) env_set[e++] = "CUDA_VISIBLE_DEVICES=";
    if (g->step_env) env_set[e++] = g->step_env;
    env_set[e] = NULL;
    proc_opts o = {.timeout_s = timeout, .head = TEST_OUTPUT_KEEP, .tail = TEST_OUTPUT_KEEP};
    proc_result r;
    run_step(g, kind, NULL, scratch, argv, env_set, &o, &r);
    sr->elapsed = r.elapsed_s;

    suite_run logged = {0};
    parse_log(r.output, suite, &logged);
    int have_report = !r.timed_out && !r.interrupted && parse_report(json, suite, sr) == 0;
    if (have_report) {
        sr->state = SR_OK;
        if (logged.n == sr->n) /* same cases, same order: attach what each printed */
            for (int i = 0; i < sr->n; ++i) {
                free(sr->cases[i].extra);
                sr->cases[i].extra = logged.cases[i].extra;
                logged.cases[i].extra = NULL;
            }
    } else {
        suite_no_report(&r, &logged, sr);
    }
    for (int i = 0; i < logged.n; ++i) {
        free(logged.cases[i].test);
        free(logged.cases[i].message);
        free(logged.cases[i].extra);
    }
    free(logged.cases);
    speed_log_load(speed, &sr->speed);
    if (log_out) *log_out = xstrdup(r.output);
    proc_result_free(&r);
    if (evidence_out && is_file(evidence)) *evidence_out = xstrdup(evidence);
    if (cases_out && is_file(cases)) *cases_out = read_step_file(cases, 1u << 20, NULL, NULL);
    free(cases);
    free(cases_env);
    free(procs_env);
    free(conn_env);
    free(omp_env);
    free(json);
    free(speed);
    free(evidence);
    free(json_opt);
    free(filter);
    free(speed_env);
    free(evidence_env);
    free(salt_env);
    free(seed_env);
    free(scratch);
}

/* How run_suite_part runs an FL_PARAM_TEST's cases: one process each; together
 * (unless --cases apart), a test whose results stand for no case then run
 * again one process per case; or together, such a test left to the caller
 * as one failed case. */
typedef enum { CASES_APART, CASES_TOGETHER, CASES_TOGETHER_CALLER_RETRIES } cases_mode;

static void run_suite_part(grader *g, step_kind kind, const submission_keys *keys,
                           const char *binary, const char *suite, const char *tests,
                           const char *tag, int jobs, double timeout, cases_mode mode,
                           suite_run *sr, char **log_out, char **evidence_out);

void run_suite(grader *g, step_kind kind, const submission_keys *keys, const char *binary,
               const char *suite, double timeout, suite_run *sr, char **log_out,
               char **evidence_out)
{
    run_suite_part(g, kind, keys, binary, suite, NULL, "", 1, timeout, CASES_TOGETHER, sr,
                   log_out, evidence_out);
}

/* ---- one CUDA connection: does the worked solution hold up on this GPU? ------ */

void connections_check(grader *g)
{
    if (!g->gpu || g->cuda_connections <= 0) return;
    int passed = 0;
    char *bad = NULL;
    for (int i = 0; i < g->lessons.n && !bad; ++i) {
        const lesson_info *li = manifest_find(&g->man, g->lessons.v[i]);
        const rubric_lesson *rl = rubric_find(&g->rub, g->lessons.v[i]);
        if (!li || !rl || !li->solution_test || !is_file(li->b.solution_test_bin)) continue;
        strlist suites = {0};
        rubric_suites(rl, 0, &suites);
        for (int k = 0; k < suites.n && !bad && !proc_interrupted(); ++k) {
            suite_run sr;
            gpu_hold(g, GPU_SHARED);
            run_suite_part(g, STEP_TRUSTED, &g->reference_keys, li->b.solution_test_bin,
                           suites.v[k], "stream*", "-connections", 1, g->suite_timeout,
                           CASES_APART, &sr, NULL, NULL);
            gpu_release(g);
            if (sr.state != SR_OK)
                bad = xasprintf("lesson %s %s/stream*: %s", li->number, suites.v[k],
                                sr.why ? sr.why : "no report");
            for (int c = 0; c < sr.n && !bad; ++c) {
                if (sr.cases[c].status == CR_PASSED) ++passed;
                else if (sr.cases[c].status != CR_SKIPPED)
                    bad = xasprintf("lesson %s %s::%s: %s", li->number, suites.v[k],
                                    sr.cases[c].test, sr.cases[c].message ? sr.cases[c].message
                                                                          : "did not pass");
            }
            suite_run_free(&sr);
        }
        strlist_free(&suites);
    }
    if (bad) {
        strlist_addf(&g->reference_notes, "with CUDA_DEVICE_MAX_CONNECTIONS=%d the worked "
                     "solution failed a stream test on this GPU (%s): every step of this batch "
                     "runs with the driver's own connections", g->cuda_connections, bad);
        g->cuda_connections = 0;
        free(bad);
    } else {
        strlist_addf(&g->reference_notes, "with CUDA_DEVICE_MAX_CONNECTIONS=%d the worked "
                     "solution's stream tests passed on this GPU (%d): the steps that time "
                     "nothing run with it", g->cuda_connections, passed);
    }
}

/* ---- 4a. several workers on one GPU ------------------------------------------- */

/* Every case ran and passed, and the run ended with its report. */
static int came_out_clean(const suite_run *sr)
{
    if (sr->state != SR_OK || sr->n == 0) return 0;
    for (int i = 0; i < sr->n; ++i)
        if (sr->cases[i].status != CR_PASSED) return 0;
    return 1;
}

static int case_cmp(const void *a, const void *b)
{
    const cr_case *x = a, *y = b;
    int c = strcmp(x->test, y->test);
    return c;
}

/* Append the cases, speed records and state of `b` to `a` (b is freed):
 * the tests come out in Criterion's own order (by name within a suite,
 * what one run of the whole suite gives), each test's cases in the order
 * they ran (mergesort-like: a stable sort of whole tests). */
static void merge_runs(suite_run *a, suite_run *b)
{
    int n = a->n + b->n;
    cr_case *all = xmalloc((size_t)(n + 1) * sizeof *all);
    /* stable: a test's cases are all in a or all in b, each in its order */
    int k = 0;
    for (int i = 0; i < a->n; ++i) all[k++] = a->cases[i];
    for (int i = 0; i < b->n; ++i) all[k++] = b->cases[i];
    for (int i = 1; i < n; ++i) { /* insertion sort: stable, and n is small */
        cr_case c = all[i];
        int j = i - 1;
        while (j >= 0 && case_cmp(&all[j], &c) > 0) {
            all[j + 1] = all[j];
            --j;
        }
        all[j + 1] = c;
    }
    free(a->cases);
    free(b->cases);
    a->cases = all;
    a->n = n;
    b->cases = NULL;
    b->n = 0;
    if (b->state != SR_OK && a->state == SR_OK) a->state = b->state;
    if (b->why) {
        char *w = a->why ? xasprintf("%s; %s", a->why, b->why) : xstrdup(b->why);
        free(a->why);
        a->why = w;
    }
    a->elapsed += b->elapsed;
    a->again += b->again;
    for (int i = 0; i < b->speed.n; ++i) {
        a->speed.v = xrealloc(a->speed.v, (size_t)(a->speed.n + 1) * sizeof *a->speed.v);
        a->speed.v[a->speed.n++] = b->speed.v[i];
    }
    free(b->speed.v);
    b->speed.v = NULL;
    b->speed.n = 0;
    suite_run_free(b);
}

/* 1 when `name` is one of the names of the list "a|b|c" (NULL: none). */
static int name_listed(const char *list, const char *name)
{
    if (list == NULL) return 0;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, '|');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        if (end == NULL) break;
        p = end + 1;
    }
    return 0;
}

/* Drop the cases of tests that the run's pattern left out (Criterion's report
 * lists them as skipped): keep those whose test is in `names` ("a|b"), or,
 * with `in` 0, those whose test is not. */
static void keep_tests(suite_run *sr, const char *names, int in)
{
    int k = 0;
    for (int i = 0; i < sr->n; ++i) {
        if (name_listed(names, sr->cases[i].test) == in) {
            sr->cases[k++] = sr->cases[i];
        } else {
            free(sr->cases[i].test);
            free(sr->cases[i].message);
            free(sr->cases[i].extra);
        }
    }
    sr->n = k;
    /* and their speed records (the audit checks every passing one) */
    int m = 0;
    for (int i = 0; i < sr->speed.n; ++i) {
        speed_rec *r = &sr->speed.v[i];
        if (name_listed(names, r->test) == in) {
            sr->speed.v[m++] = *r;
        } else {
            free(r->suite);
            free(r->test);
            free(r->label);
        }
    }
    sr->speed.n = m;
}

/* Copy the whole, well-formed evidence records of data[0..len) to f, less
 * those of the tests in `drop` ("a|b", or NULL): a record cut short (the
 * case was killed while it wrote) and all that follows it is left out, as
 * verify.c's reader leaves it. 0, 1 when something was left out so, or -1
 * when f could not be written. */
static int ev_copy(FILE *f, const char *data, size_t len, const char *drop)
{
    size_t off = 0;
    while (off + sizeof(fl_evidence_head) <= len) {
        fl_evidence_head h;
        memcpy(&h, data + off, sizeof h);
        size_t rec = sizeof h + (size_t)h.count * sizeof(fl_evidence_sample);
        if (memcmp(h.magic, FL_EVIDENCE_MAGIC, sizeof FL_EVIDENCE_MAGIC) != 0 ||
            h.count > FL_EVIDENCE_SAMPLES || off + rec > len)
            break;
        h.test[sizeof h.test - 1] = '\0';
        int skip = name_listed(drop, h.test);
        if (!skip && fwrite(data + off, 1, rec, f) != rec) return -1;
        off += rec;
    }
    return off == len ? 0 : 1;
}

/* The evidence files `parts` (each freed; NULL ones skipped) as one file of
 * the grader's, run_dir/evidence-SUITE-TAG.bin: their whole records, less
 * those of the first file's tests in `drop_first` ("a|b": those tests ran
 * again, and only the new run's records may bear them out). NULL when no
 * part was there. A file the grader cannot write comes out as damaged (no
 * record borne out). */
static char *evidence_join(grader *g, const char *suite, const char *tag, char *first,
                           const char *drop_first, char *second)
{
    if (first == NULL && second == NULL) return NULL;
    char *name = xasprintf("evidence-%s%s.bin", suite, tag);
    char *path = path_join(g->run_dir, name);
    free(name);
    unlink(path);
    const char *drop = drop_first;
    FILE *f = fopen(path, "wb");
    int ok = f != NULL, damaged = 0;
    char *parts[2] = {first, second};
    for (int i = 0; i < 2; ++i) {
        if (parts[i] == NULL) continue;
        size_t len = 0;
        int cut = 0;
        char *data = read_step_file(parts[i], 256u << 20, &len, &cut);
        int rc = data && ok ? ev_copy(f, data, len, i == 0 ? drop : NULL) : 0;
        if (rc < 0) ok = 0;
        /* (the first part's tests that ran again: a record cut short there
         * is one of theirs, a case killed as it wrote, and does not count) */
        if ((rc > 0 || data == NULL || cut) && !(i == 0 && drop)) damaged = 1;
        free(data);
        free(parts[i]);
    }
    /* a part that could not be read whole leaves a tail shorter than a
     * record: verify.c then says the evidence is damaged, as it says of a
     * file that was never put together, and still reads every whole record */
    if (ok && damaged && fputs("damaged", f) == EOF) ok = 0;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) {
        FILE *bad = fopen(path, "wb");
        if (bad) {
            fputs("(the grader could not put this suite's evidence together)", bad);
            fclose(bad);
        }
    }
    return path;
}

/* The tests of sr with a case that did not pass ("a|b"), or NULL. */
static char *failing_tests(const suite_run *sr)
{
    sbuf b = {0};
    for (int i = 0; i < sr->n; ++i) {
        if (sr->cases[i].status == CR_PASSED) continue;
        if (!name_listed(b.len ? b.s : NULL, sr->cases[i].test))
            sbuf_addf(&b, "%s%s", b.len ? "|" : "", sr->cases[i].test);
    }
    return b.len ? sbuf_take(&b) : (sbuf_free(&b), NULL);
}

/* One run of `suite` (as run_suite_once); in the worked solution's runs,
 * each FL_PARAM_TEST's cases together in a few processes unless --cases
 * apart (cases.c): a test whose
 * results stand for no case there runs again, one process per case, and
 * only that run counts (its records alone may bear its passes out); a run
 * that ended without its report runs again whole, one process per case.
 * Both within the part's `timeout`, counted from the first run's start: a
 * run killed at that limit is not made again, and the tests whose cases ran
 * together in it give no result (they stand for cases that cannot be told
 * apart). With CASES_TOGETHER_CALLER_RETRIES, the tests that would run
 * again are left to the caller instead, each as one failed case
 * (run_suite_gpu runs every test with a case that did not pass again,
 * alone, one process per case). */
static void run_suite_part(grader *g, step_kind kind, const submission_keys *keys,
                           const char *binary, const char *suite, const char *tests,
                           const char *tag, int jobs, double timeout, cases_mode mode,
                           suite_run *sr, char **log_out, char **evidence_out)
{
    int fallback = mode == CASES_TOGETHER;
    /* the student's runs: one process per case, always. A case run after
     * others no longer makes its launcher's first call in a fresh process,
     * and a wrong launcher can be right on every call but the first (a
     * model whose first call forgets the long rows graded 30 / 30 with the
     * cases together and 28.71 apart). The worked solution's runs have no
     * such bug to find. */
    if (mode == CASES_APART || g->cases_apart || kind != STEP_TRUSTED) {
        run_suite_once(g, kind, keys, binary, suite, tests, tag, jobs, timeout, sr, log_out,
                       evidence_out, NULL);
        return;
    }
    char *cases = NULL, *log = NULL, *ev = NULL;
    run_suite_once(g, kind, keys, binary, suite, tests, tag, jobs, timeout, sr, &log, &ev,
                   &cases);
    char *together = cases_together_tests(cases, suite);
    double left = timeout - sr->elapsed;
    int whole = 0;
    char *again_names = NULL;
    if (sr->state == SR_OK) {
        again_names = cases_expand(sr, cases, jobs);
    } else if (together) {
        /* (only the cases of a test that ran one process per case are told
         * apart by the output) */
        keep_tests(sr, together, 0);
        whole = sr->state == SR_NO_REPORT && fallback; /* (else the caller's) */
    }
    free(cases);
    free(together);
    if (!fallback && again_names) {
        sbuf all = {0};
        sbuf_add(&all, again_names);
        for (char *p = all.s, *end; p; p = end ? end + 1 : NULL) {
            end = strchr(p, '|');
            if (end) *end = '\0';
            case_add(sr, p, CR_FAILED, "with its cases together, not every case passed", NULL);
        }
        sbuf_free(&all);
        free(again_names);
        again_names = NULL;
    }
    if ((whole || again_names) && !proc_interrupted() && left >= 5.0) {
        char *glob = again_names ? xasprintf("@(%s)", again_names) : NULL;
        char *tag2 = xasprintf("%s-apart", tag);
        suite_run again;
        char *log2 = NULL, *ev2 = NULL;
        run_suite_once(g, kind, keys, binary, suite, glob ? glob : tests, tag2, jobs, left,
                       &again, &log2, &ev2, NULL);
        char *both = xasprintf("%s\n==== %s/%s again, one process per case (%s; only this run "
                               "counts for %s)\n%s",
                               log ? log : "", suite, glob ? glob : tests ? tests : "*",
                               whole ? "the run with each test's cases together ended without "
                                       "its report"
                                     : "with its cases together, not every case passed",
                               whole ? "the suite" : "these tests", log2 ? log2 : "");
        free(log);
        free(log2);
        log = both;
        if (whole) {
            free(ev);
            ev = ev2;
            double first = sr->elapsed;
            int before = sr->again;
            suite_run_free(sr);
            *sr = again;
            sr->elapsed += first;
            sr->again += before + 1;
        } else {
            keep_tests(&again, again_names, 1);
            keep_tests(sr, again_names, 0); /* (and their speed records) */
            merge_runs(sr, &again);
            sr->again++;
            char *jtag = xasprintf("-%s%s-apart", kind == STEP_TRUSTED ? "trusted" : "test", tag);
            ev = evidence_join(g, suite, jtag, ev, again_names, ev2);
            free(jtag);
        }
        free(glob);
        free(tag2);
    } else if (again_names) {
        /* no time left to run them again: they have no result */
        char *w = xasprintf("the suite's time ran out before %s could run again one process "
                            "per case (with its cases together, not every case passed)",
                            again_names);
        if (sr->why) {
            char *both = xasprintf("%s; %s", sr->why, w);
            free(w);
            w = both;
        }
        free(sr->why);
        sr->why = w;
        sr->state = SR_KILLED;
    }
    free(again_names);
    if (log_out) *log_out = log;
    else free(log);
    if (evidence_out) *evidence_out = ev;
    else free(ev);
}

/* `suite` on a GPU that its tests share, with one another (--test-jobs N:
 * Criterion runs N test processes at once) or with other workers' steps
 * (--gpu-lock): the tests the rubric lists as needing the GPU alone
 * (rubric_alone) run one at a time, holding it alone; the rest run side by
 * side, holding it shared. Where a case of that run did not pass, its test
 * runs again alone, one test at a time, and only that run counts (the whole
 * part runs again when the run ended without its report): a neighbour can
 * cost time, never a case. Every part gets the suite's own limit; the waits
 * are the lesson's gpu_wait_s. Neither (one test at a time, one worker): one
 * run of the whole suite. The cases come out as one run of the suite gives
 * them (tests by name, each test's cases in their order). */
static void run_suite_gpu(grader *g, lesson_result *lr, step_kind kind,
                          const submission_keys *keys, const char *binary, const char *suite,
                          double timeout, suite_run *sr, char **log_out, char **evidence_out)
{
    const rubric_lesson *rl = lr->rl;
    /* (no GPU: nothing to share; FUSIONLAB_GRADE_SPLIT_TEST, the grader's
     * own test of this path on a machine without one: tests/grader/split.sh) */
    const char *split_test = getenv("FUSIONLAB_GRADE_SPLIT_TEST");
    if ((g->gpu_lock == NULL && g->test_jobs <= 1) ||
        (!g->gpu && !(split_test && strcmp(split_test, "1") == 0))) {
        run_suite(g, kind, keys, binary, suite, timeout, sr, log_out, evidence_out);
        return;
    }
    if (rubric_alone(rl, suite, NULL)) {
        lr->gpu_wait_s += gpu_hold(g, GPU_ALONE);
        run_suite(g, kind, keys, binary, suite, timeout, sr, log_out, evidence_out);
        gpu_release(g);
        return;
    }
    /* the tests of this suite that need the GPU alone: "suite/test" entries */
    sbuf alone = {0};
    size_t n = strlen(suite);
    for (int i = 0; i < rl->n_alone; ++i)
        if (strncmp(rl->alone[i], suite, n) == 0 && rl->alone[i][n] == '/')
            sbuf_addf(&alone, "%s%s", alone.len ? "|" : "", rl->alone[i] + n + 1);
    char *names = alone.len ? xstrdup(alone.s) : NULL;
    char *rest = alone.len ? xasprintf("!(%s)", alone.s) : NULL;
    char *only = alone.len ? xasprintf("@(%s)", alone.s) : NULL;
    sbuf_free(&alone);

    char *log = NULL, *ev = NULL;
    lr->gpu_wait_s += gpu_hold(g, GPU_SHARED);
    run_suite_part(g, kind, keys, binary, suite, rest, "-shared", g->test_jobs, timeout,
                   CASES_TOGETHER_CALLER_RETRIES, sr, &log, &ev);
    gpu_release(g);
    if (names) keep_tests(sr, names, 0);
    if (!came_out_clean(sr) && !proc_interrupted()) {
        /* side by side: again, alone, the tests that did not pass (all of
         * them when the run ended without its report) */
        char *again_names = sr->state == SR_OK ? failing_tests(sr) : NULL;
        char *again_glob = again_names ? xasprintf("@(%s)", again_names) : NULL;
        suite_run again;
        char *log2 = NULL, *ev2 = NULL;
        lr->gpu_wait_s += gpu_hold(g, GPU_ALONE);
        /* one process per case: the cases ran together already */
        run_suite_part(g, kind, keys, binary, suite, again_glob ? again_glob : rest, "-again",
                       1, timeout, CASES_APART, &again, &log2, &ev2);
        gpu_release(g);
        lr->reruns++;
        char *both = xasprintf("%s\n==== %s/%s again, alone on the GPU (side by side with other "
                               "tests, a case did not pass%s; only this run counts for %s)\n%s",
                               log ? log : "", suite, again_glob ? again_glob : "*",
                               again_names ? "" : " or the run ended without its report",
                               again_names ? "these tests" : "the suite", log2 ? log2 : "");
        free(log);
        free(log2);
        log = both;
        if (again_names) {
            keep_tests(&again, again_names, 1);
            keep_tests(sr, again_names, 0);
            merge_runs(sr, &again);
            ev = evidence_join(g, suite, kind == STEP_TRUSTED ? "-trusted-again" : "-test-again",
                               ev, again_names, ev2);
        } else {
            int before = sr->again;
            if (names) keep_tests(&again, names, 0);
            free(ev);
            ev = ev2;
            suite_run_free(sr);
            *sr = again;
            sr->again += before;
        }
        sr->again++;
        free(again_names);
        free(again_glob);
    }
    if (only && !proc_interrupted()) {
        suite_run part;
        char *log2 = NULL, *ev2 = NULL;
        lr->gpu_wait_s += gpu_hold(g, GPU_ALONE);
        run_suite_part(g, kind, keys, binary, suite, only, "-alone", 1, timeout, CASES_TOGETHER,
                       &part, &log2, &ev2);
        gpu_release(g);
        keep_tests(&part, names, 1);
        char *both = xasprintf("%s\n==== %s/%s, alone on the GPU\n%s", log ? log : "", suite,
                               only, log2 ? log2 : "");
        free(log);
        free(log2);
        log = both;
        merge_runs(sr, &part);
        ev = evidence_join(g, suite, kind == STEP_TRUSTED ? "-trusted" : "-test", ev, NULL, ev2);
    }
    free(names);
    free(rest);
    free(only);
    if (log_out) *log_out = log;
    else free(log);
    if (evidence_out) *evidence_out = ev;
    else free(ev);
}

void suite_run_free(suite_run *sr)
{
    for (int i = 0; i < sr->n; ++i) {
        free(sr->cases[i].test);
        free(sr->cases[i].message);
        free(sr->cases[i].extra);
    }
    free(sr->cases);
    free(sr->suite);
    free(sr->why);
    speed_log_free(&sr->speed);
}

/* Each suite in the rubric's order, each once, within the lesson's budget. */
suite_run *run_suites(grader *g, submission *s, lesson_result *lr, const char *binary,
                      const strlist *suites, const char *progress, char ***evidence)
{
    double t_start = now_s();
    suite_run *runs = xcalloc((size_t)(suites->n + 1), sizeof *runs);
    *evidence = xcalloc((size_t)(suites->n + 1), sizeof **evidence);
    sbuf alllog = {0};
    double waited0 = lr->gpu_wait_s;
    for (int i = 0; i < suites->n; ++i) {
        /* (the waits for the GPU are not the student's time) */
        double left = g->lesson_timeout - (now_s() - t_start - (lr->gpu_wait_s - waited0));
        if (proc_interrupted() || left < 5.0) {
            runs[i].suite = xstrdup(suites->v[i]);
            runs[i].state = SR_NOT_RUN;
            runs[i].why = xstrdup(proc_interrupted()
                                      ? "grading was interrupted"
                                      : "the lesson's time budget was used up by the suites before");
            continue;
        }
        double limit = g->suite_timeout < left ? g->suite_timeout : left;
        fprintf(stderr, "%s: running %s (limit %.0f s)\n", progress, suites->v[i], limit);
        char *log = NULL;
        run_suite_gpu(g, lr, STEP_TEST, &s->keys, binary, suites->v[i], limit, &runs[i], &log,
                      &(*evidence)[i]);
        sbuf_addf(&alllog, "==== suite %s: %.1f s%s%s\n", suites->v[i], runs[i].elapsed,
                  runs[i].why ? " -- " : "", runs[i].why ? runs[i].why : "");
        if (runs[i].state == SR_KILLED || runs[i].state == SR_NO_REPORT) {
            lr->n_killed++;
            strlist_addf(&lr->notes, "suite %s: %s", suites->v[i], runs[i].why);
        }
        char *t = trim_middle(log, 48 * 1024, 48 * 1024);
        sbuf_add(&alllog, t);
        sbuf_add(&alllog, "\n");
        free(t);
        free(log);
    }
    lr->run_s = now_s() - t_start;
    char *runlog = xasprintf("%s-tests.log", lr->li->number);
    write_log(g, s, runlog, sbuf_str(&alllog));
    free(runlog);
    sbuf_free(&alllog);
    return runs;
}

/* ---- the verify stage's runs of the worked solution, kept for the batch --------- */

static void suite_run_copy(const suite_run *from, suite_run *to)
{
    memset(to, 0, sizeof *to);
    to->suite = xstrdup(from->suite);
    to->state = from->state;
    to->why = from->why ? xstrdup(from->why) : NULL;
    to->again = from->again;
    to->n = from->n;
    to->cases = xcalloc((size_t)from->n + 1, sizeof *to->cases);
    for (int i = 0; i < from->n; ++i) {
        const cr_case *c = &from->cases[i];
        to->cases[i].test = xstrdup(c->test);
        to->cases[i].status = c->status;
        to->cases[i].message = c->message ? xstrdup(c->message) : NULL;
        to->cases[i].extra = c->extra ? xstrdup(c->extra) : NULL;
    }
}

static int same_keys(const struct trusted_suite *t, const submission_keys *k)
{
    return k->seed && k->salt && strcmp(t->seed, k->seed) == 0 && strcmp(t->salt, k->salt) == 0;
}

static long long file_bytes(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
}

/* The kept run of (lesson, suite) on the inputs of `keys`, or NULL; a kept
 * run whose evidence is no longer there whole is dropped (a run is made). */
static const struct trusted_suite *trusted_kept(grader *g, const char *lesson,
                                                const char *suite, const submission_keys *keys)
{
    for (int i = 0; i < g->n_trusted; ++i) {
        struct trusted_suite *t = &g->trusted[i];
        if (t->dropped || strcmp(t->lesson, lesson) != 0 || strcmp(t->suite, suite) != 0 ||
            !same_keys(t, keys))
            continue;
        if (file_bytes(t->evidence) == t->bytes) return t;
        t->dropped = 1;
    }
    return NULL;
}

/* The kept run of (lesson, suite) on the inputs of `keys` is not used again. */
static void trusted_drop(grader *g, const char *lesson, const char *suite,
                         const submission_keys *keys)
{
    for (int i = 0; i < g->n_trusted; ++i) {
        struct trusted_suite *t = &g->trusted[i];
        if (!t->dropped && strcmp(t->lesson, lesson) == 0 && strcmp(t->suite, suite) == 0 &&
            same_keys(t, keys))
            t->dropped = 1;
    }
}

/* Keep `run` (and a copy of its evidence) for the batch's later verify
 * stages when it ended with its report and every case of it passed. A case
 * that skipped may have skipped for the GPU's state of the moment (several
 * tests size their inputs by the free memory), and one that failed,
 * crashed, timed out or was killed may have lost records: then each
 * submission's verify stage makes its own run, as before. */
static void trusted_keep(grader *g, const char *lesson, const char *suite, const submission *s,
                         const suite_run *run, const char *evidence)
{
    if (run->state != SR_OK || run->n == 0 || evidence == NULL || !is_file(evidence) ||
        s->keys.seed == NULL || s->keys.salt == NULL)
        return;
    for (int i = 0; i < run->n; ++i)
        if (run->cases[i].status != CR_PASSED) return;
    /* under --work, which no step binds; the folder is the grader's alone
     * even where the steps run as another user who may read --work */
    char *dir = path_join(g->work, "trusted");
    mkdir_p(dir);
    chmod(dir, 0700);
    char *name = xasprintf("%s/%s-%s-%d.evidence", dir, lesson, suite, g->n_trusted);
    for (char *p = name + strlen(dir) + 1; *p; ++p)
        if (*p == '/') *p = '_';
    free(dir);
    if (copy_file(evidence, name) != 0) {
        unlink(name);
        free(name);
        return;
    }
    g->trusted = xrealloc(g->trusted, (size_t)(g->n_trusted + 1) * sizeof *g->trusted);
    struct trusted_suite *t = &g->trusted[g->n_trusted++];
    memset(t, 0, sizeof *t);
    snprintf(t->lesson, sizeof t->lesson, "%s", lesson);
    t->suite = xstrdup(suite);
    t->seed = xstrdup(s->keys.seed);
    t->salt = xstrdup(s->keys.salt);
    t->made_for = xstrdup(s->id);
    suite_run_copy(run, &t->run);
    t->evidence = name;
    t->bytes = file_bytes(name);
}

void trusted_suites_free(grader *g)
{
    for (int i = 0; i < g->n_trusted; ++i) {
        struct trusted_suite *t = &g->trusted[i];
        free(t->suite);
        free(t->seed);
        free(t->salt);
        free(t->made_for);
        suite_run_free(&t->run);
        if (t->evidence) unlink(t->evidence);
        free(t->evidence);
    }
    free(g->trusted);
    g->trusted = NULL;
    g->n_trusted = 0;
}

/* The worked solution's test program on the same suites and inputs as the
 * student's runs, sandboxed too, one suite after another (alone on the GPU,
 * as the student's ran: a test that sizes its inputs by the free memory
 * must pick the size it picked there); then verify_lesson(). NULL when
 * every pass the student's report claims is borne out, else why not. */
char *verify_runs(grader *g, submission *s, lesson_result *lr, const strlist *suites,
                  suite_run *runs, char *const *evidence, const char *progress,
                  int *grader_fault)
{
    *grader_fault = 0;
    const lesson_info *li = lr->li;
    if (li->solution_test == NULL)
        return xstrdup("this course tree has no worked solution to verify the report against");
    char *binary = xstrdup(li->b.solution_test_bin);
    suite_run *tru = xcalloc((size_t)(suites->n + 1), sizeof *tru);
    char **tev = xcalloc((size_t)(suites->n + 1), sizeof *tev);
    int *used_kept = xcalloc((size_t)(suites->n + 1), sizeof *used_kept);
    double t0 = now_s();
    g->trusted_untimed = 1;
    for (int i = 0; i < suites->n; ++i) {
        int claims = 0;
        for (int c = 0; c < runs[i].n; ++c) claims |= runs[i].cases[c].status == CR_PASSED;
        if (!claims) { /* nothing to bear out */
            tru[i].suite = xstrdup(suites->v[i]);
            tru[i].state = SR_OK;
            continue;
        }
        const trusted_count *once = rubric_verify_once(lr->rl, suites->v[i])
                                        ? trusted_once(g, li->number, suites->v[i])
                                        : NULL;
        if (once) {
            /* its tests compare no output array: the worked solution's run
             * on this GPU (the reference's) says how many cases could run,
             * all that a run here would tell (rubric "verify_once") */
            fprintf(stderr, "%s: verifying %s against the worked solution's run on this GPU\n",
                    progress, suites->v[i]);
            tru[i].suite = xstrdup(suites->v[i]);
            tru[i].state = SR_OK;
            tru[i].n = once->ran.n;
            tru[i].cases = xcalloc((size_t)once->ran.n + 1, sizeof *tru[i].cases);
            for (int c = 0; c < once->ran.n; ++c) {
                tru[i].cases[c].test = xstrdup(once->ran.v[c]);
                tru[i].cases[c].status = CR_PASSED;
            }
            continue;
        }
        const struct trusted_suite *kept = trusted_kept(g, li->number, suites->v[i], &s->keys);
        if (kept) {
            /* the batch's inputs are every submission's: the worked
             * solution's run on them, made for an earlier one, passed whole */
            fprintf(stderr, "%s: verifying %s against the worked solution's run on the batch's "
                    "inputs (made for %s)\n", progress, suites->v[i], kept->made_for);
            suite_run_copy(&kept->run, &tru[i]);
            tev[i] = xstrdup(kept->evidence);
            used_kept[i] = 1;
            continue;
        }
        fprintf(stderr, "%s: verifying %s against the worked solution\n", progress,
                suites->v[i]);
        run_suite_gpu(g, lr, STEP_TRUSTED, &s->keys, binary, suites->v[i], g->suite_timeout,
                      &tru[i], NULL, &tev[i]);
        trusted_keep(g, li->number, suites->v[i], s, &tru[i], tev[i]);
    }
    g->trusted_untimed = 0;
    int *n0 = xcalloc((size_t)suites->n + 1, sizeof *n0);
    for (int i = 0; i < suites->n; ++i) n0[i] = runs[i].n;
    char *why = verify_lesson(suites, runs, evidence, tru, tev, grader_fault);
    int again = 0;
    for (int i = 0; i < suites->n; ++i) again |= used_kept[i];
    if (why && again && !proc_interrupted()) {
        /* not borne out by the kept runs: judged again against runs made for
         * this report (the GPU may have been otherwise when a kept run was
         * made), and only that counts; the cases the first judgement added
         * to a run without its report are taken back first */
        free(why);
        for (int i = 0; i < suites->n; ++i) {
            for (int c = n0[i]; c < runs[i].n; ++c) {
                free(runs[i].cases[c].test);
                free(runs[i].cases[c].message);
                free(runs[i].cases[c].extra);
            }
            runs[i].n = n0[i];
            if (!used_kept[i]) continue;
            suite_run_free(&tru[i]);
            free(tev[i]);
            tev[i] = NULL;
            fprintf(stderr, "%s: verifying %s against the worked solution, in a run of its own "
                    "(the kept runs did not bear the report out)\n", progress, suites->v[i]);
            g->trusted_untimed = 1;
            run_suite_gpu(g, lr, STEP_TRUSTED, &s->keys, binary, suites->v[i], g->suite_timeout,
                          &tru[i], NULL, &tev[i]);
            g->trusted_untimed = 0;
        }
        why = verify_lesson(suites, runs, evidence, tru, tev, grader_fault);
        if (why == NULL)
            /* borne out by runs of its own and not by the kept ones: those
             * are not used again, these are kept in their place */
            for (int i = 0; i < suites->n; ++i) {
                if (!used_kept[i]) continue;
                trusted_drop(g, li->number, suites->v[i], &s->keys);
                trusted_keep(g, li->number, suites->v[i], s, &tru[i], tev[i]);
            }
    }
    lr->verify_s = now_s() - t0;
    for (int i = 0; i < suites->n; ++i) {
        suite_run_free(&tru[i]);
        free(tev[i]);
    }
    free(n0);
    free(used_kept);
    free(tru);
    free(tev);
    free(binary);
    return why;
}

/* ---- 4b. the sanitizer ---------------------------------------------------------- */

static const char *const kSanitizerTools[] = {"memcheck", "racecheck", "initcheck", "synccheck"};

/* The log NN-sanitizer.log: the report, then each tool's own output. */
static void sanitizer_log(grader *g, submission *s, const lesson_info *li, const proc_result *r,
                          const char *outdir)
{
    sbuf log = {0};
    sbuf_addf(&log, "==== tools/sanitize: exit %d, %.1f s%s\n%s\n", r->exit_code, r->elapsed_s,
              r->timed_out ? " (stopped at the limit)" : "", r->output);
    /* where the stage's time went: the slowest tests, each under one tool */
    char *times_name = path_join(outdir, "times.txt");
    char *times = read_step_file(times_name, 1u << 20, NULL, NULL);
    if (times) {
        sbuf_addf(&log, "==== the slowest tests (milliseconds, tool, test)\n");
        const char *p = times;
        for (int n = 0; n < 12 && *p; ++n) {
            const char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            sbuf_addf(&log, "%.*s\n", (int)(len < 200 ? len : 200), p);
            p = e ? e + 1 : p + len;
        }
    }
    free(times);
    free(times_name);
    for (size_t i = 0; i < sizeof kSanitizerTools / sizeof kSanitizerTools[0]; ++i) {
        char *name = xasprintf("%s/%s.log", outdir, kSanitizerTools[i]);
        char *text = read_step_file(name, 16u << 20, NULL, NULL);
        if (text) {
            char *t = trim_middle(text, 48 * 1024, 48 * 1024);
            sbuf_addf(&log, "==== %s\n%s\n", kSanitizerTools[i], t);
            free(t);
        }
        free(text);
        free(name);
    }
    char *logname = xasprintf("%s-sanitizer.log", li->number);
    write_log(g, s, logname, sbuf_str(&log));
    free(logname);
    sbuf_free(&log);
}

/* The check's verdict from tools/sanitize's exit status and its report. */
static void sanitizer_verdict(const grader *g, lesson_result *lr, const proc_result *r,
                              const char *report, sanitizer_run *sr)
{
    const lesson_info *li = lr->li;
    memset(sr, 0, sizeof *sr);
    if (r->interrupted) {
        sr->status = ST_NOT_RUN;
        sr->output = xstrdup("not run: grading was interrupted");
    } else if (r->timed_out) {
        sr->status = ST_FAILED;
        sr->output = xasprintf("the sanitizer stage ran past its %.0f s limit and was stopped: a "
                               "kernel that never ends?\n%s", g->sanitizer_timeout, report);
    } else if (r->exit_code == 0 && r->term_signal == 0) {
        sr->status = ST_PASSED;
        sr->output = xasprintf("compute-sanitizer finds no error (memcheck, racecheck, initcheck, "
                               "synccheck; the small cases)\n%s", report);
    } else if (r->exit_code == 1 && strstr(r->output, "sanitizer: errors under")) {
        /* (tools/sanitize's last line says so: an exit status of 1 without
         * it is something else's, the sandbox's that could not start the
         * step, say, when a file it hides was being rebuilt beside it:
         * "could not run" below, which is checked again alone) */
        sr->status = ST_FAILED;
        sr->output = xasprintf("compute-sanitizer found errors in your kernels (0 points; the "
                               "full output is in %s-sanitizer.log):\n%s", li->number, report);
    } else if (r->exit_code == 77) {
        sr->status = ST_NOT_RUN;
        sr->output = xstrdup("not run: no CUDA device");
    } else if (strstr(r->output, "compute-sanitizer not found")) {
        sr->status = ST_NOT_RUN;
        sr->output = xstrdup("not run: compute-sanitizer not found on the grading machine (it "
                             "comes with the CUDA toolkit): 0 points until it is graded where "
                             "it is installed");
        strlist_add(&lr->notes, "the sanitizer check was not run: compute-sanitizer not found");
    } else {
        sr->status = ST_NOT_RUN;
        sr->output = xasprintf("not run: the sanitizer could not run (exit %d%s):\n%s",
                               r->exit_code, r->term_signal ? ", killed by a signal" : "", report);
        strlist_add(&lr->notes, "the sanitizer check was not run: tools/sanitize could not run "
                                "(see its log)");
    }
}

/* The worked solution's test program's --list, in DIR/tests.list: its path,
 * or NULL (with a note) when there is none to be had. */
static char *trusted_listing(grader *g, lesson_result *lr, const char *dir)
{
    const lesson_info *li = lr->li;
    if (li->solution_test == NULL || !is_file(li->b.solution_test_bin)) {
        strlist_add(&lr->notes, "the sanitizer ran the tests the submission's own test program "
                                "lists (no worked solution's program to list them)");
        return NULL;
    }
    char *argv[] = {li->b.solution_test_bin, "--list", NULL};
    proc_opts o = {.timeout_s = 60, .head = 1 << 16, .tail = 1 << 16};
    proc_result r;
    run_step(g, STEP_TRUSTED, li, NULL, argv, NULL, &o, &r);
    char *path = NULL;
    if (r.exit_code == 0 && !r.timed_out && r.term_signal == 0 && r.output) {
        path = path_join(dir, "tests.list");
        if (write_file_atomic(path, r.output, strlen(r.output)) != 0) {
            free(path);
            path = NULL;
        }
    }
    if (path == NULL)
        strlist_add(&lr->notes, "the sanitizer ran the tests the submission's own test program "
                                "lists (the worked solution's program could not list them)");
    proc_result_free(&r);
    return path;
}

/* tools/sanitize (all four tools, the small cases of every suite but speed,
 * baseline and counters) on the student's test program, within the
 * grader's sanitizer limit; its report becomes the check's output, the
 * sanitizer's own output the log NN-sanitizer.log. */
static void sanitize(grader *g, submission *s, lesson_result *lr, const char *binary,
                     int jobs, int no_again, const char *progress, sanitizer_run *sr)
{
    const lesson_info *li = lr->li;
    char *script = path_join(g->course, "tools/sanitize");
    char *outdir = step_scratch(g, "sanitize");
    if (outdir == NULL) {
        /* (never a folder an earlier step left: the check is not run) */
        memset(sr, 0, sizeof *sr);
        sr->status = ST_NOT_RUN;
        sr->output = xstrdup("not run: the grader could not make the sanitizer's scratch folder "
                             "(the grading machine's fault, not your code's; grade again)");
        strlist_add(&lr->notes, "the sanitizer check was not run: no scratch folder");
        free(script);
        return;
    }
    char per_tool[32];
    double each = g->sanitizer_timeout / 4.0;
    snprintf(per_tool, sizeof per_tool, "%ld", each < 1.0 ? 1L : (long)each);
    /* only errors in the student's files count (not the baseline's, cuBLAS's) */
    sbuf files = {0};
    for (int i = 0; i < li->exercise.n; ++i)
        sbuf_addf(&files, "%s%s", i ? " " : "", li->exercise.v[i]);
    char njobs[16];
    snprintf(njobs, sizeof njobs, "%d", jobs > 1 ? jobs : 1);
    /* the tests to run: the worked solution's test program's list (the same
     * test source), written into the step's folder before the step starts
     * (tools/sanitize reads it before any of the student's code runs). The
     * student's program's own --list is the student's code's word, and a
     * test left out of it would go unchecked. */
    char *list_file = trusted_listing(g, lr, outdir);
    char *argv[] = {"sh", script, "--tool", "all", "--timeout", per_tool, "--jobs", njobs,
                    "--out", outdir, "--files", (char *)sbuf_str(&files), NULL, NULL, NULL,
                    NULL, NULL, NULL, NULL};
    int na = 12; /* (the entries above, up to the files) */
    if (list_file) {
        argv[na++] = "--list-file";
        argv[na++] = list_file;
    }
    /* the parameterized tests (declared with FL_PARAM_TEST in the course's
     * test source, which the step cannot see: a copy in its folder, read
     * before any of the student's code runs) run their cases in one process
     * of each tool, and a suite's FL_TESTs all in one, again one process per
     * case or test when that run is not clean and whole; without it every
     * case is a process of its own */
    char *source = NULL;
    size_t src_len = 0;
    char *src = li->b.test_source ? read_file(li->b.test_source, 16u << 20, &src_len, NULL) : NULL;
    if (src) {
        source = path_join(outdir, "test-source.c");
        if (write_file_atomic(source, src, src_len) == 0) {
            argv[na++] = "--source";
            argv[na++] = source;
        }
        free(src);
    }
    if (no_again) argv[na++] = "--no-again";
    argv[na] = (char *)binary;
    char *seed_env = s->keys.seed ? xasprintf("FUSIONLAB_GRADE_SEED=%s", s->keys.seed) : NULL;
    char *conn_env = cuda_connections_env(g, NULL);
    /* the CPU threads of each test process (common/data.c): the worker's CPUs
     * shared among the four tools' processes side by side */
    int per_proc = g->jobs / (4 * (jobs > 1 ? jobs : 1));
    char *omp_env = xasprintf("OMP_NUM_THREADS=%d", per_proc > 1 ? per_proc : 1);
    const char *env_set[5] = {omp_env, NULL, NULL, NULL, NULL};
    int e = 1;
    if (seed_env) env_set[e++] = seed_env;
    if (conn_env) env_set[e++] = conn_env;
    if (g->no_gpu) env_set[e++] = "CUDA_VISIBLE_DEVICES=";
    /* tools/sanitize bounds each tool itself; this is the backstop */
    proc_opts o = {.timeout_s = g->sanitizer_timeout + 60, .head = 1 << 20, .tail = 1 << 20};
    fprintf(stderr, "%s: compute-sanitizer (limit %.0f s)\n", progress, g->sanitizer_timeout);
    proc_result r;
    run_step(g, STEP_TEST, li, outdir, argv, env_set, &o, &r);
    free(seed_env);
    free(conn_env);
    free(omp_env);

    sanitizer_log(g, s, li, &r, outdir);

    /* the report without its pointer to the raw logs (they are in logs/) */
    sbuf rep = {0};
    char *copy = xstrdup(r.output);
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (!starts_with(line, "(the sanitizer's own output")) sbuf_addf(&rep, "%s\n", line);
    free(copy);
    char *report = trim_middle(sbuf_str(&rep), 1800, 600);
    sbuf_free(&rep);

    sanitizer_verdict(g, lr, &r, report, sr);
    free(report);
    proc_result_free(&r);
    free(script);
    free(outdir);
    free(list_file);
    free(source);
    sbuf_free(&files);
}

/* Whether the lesson earns no correctness points from these runs: the
 * rubric scores some of its suites' cases, and not one case of any suite
 * passed. The sanitizer check is then worth nothing, clean or not: a clean
 * run earns its points in the share of the correctness points earned
 * (score_lesson). */
static int earns_nothing(const rubric_lesson *rl, const suite_run *runs, int n_runs)
{
    int scored = 0;
    for (int i = 0; i < rl->n && !scored; ++i) {
        const rubric_check *k = &rl->checks[i];
        if (k->kind == KIND_SANITIZER || k->kind == KIND_SPEED) continue;
        for (int j = 0; j < n_runs && !scored; ++j)
            scored = runs[j].suite && strcmp(runs[j].suite, k->suite) == 0;
    }
    if (!scored) return 0;
    for (int i = 0; i < n_runs; ++i)
        for (int c = 0; c < runs[i].n; ++c)
            if (runs[i].cases[c].status == CR_PASSED) return 0;
    return 1;
}

void run_sanitizer(grader *g, submission *s, lesson_result *lr, const char *binary,
                   const suite_run *runs, int n_runs, const char *progress, sanitizer_run *san)
{
    const rubric_lesson *rl = lr->rl;
    int timed_out = 0;
    for (int i = 0; i < n_runs; ++i) {
        timed_out |= runs[i].state == SR_KILLED;
        for (int c = 0; c < runs[i].n; ++c) timed_out |= runs[i].cases[c].status == CR_TIMED_OUT;
    }
    for (int i = 0; i < rl->n && san->output == NULL; ++i)
        if (rl->checks[i].kind == KIND_SANITIZER && rl->checks[i].points > 0) {
            if (proc_interrupted()) san->output = xstrdup("not run: grading was interrupted");
            else if (timed_out)
                /* a program that had to be killed would spend the sanitizer's
                 * whole limit too: 0 points, and the time saved */
                san->output = xstrdup("not run: a test of this lesson ran past its time limit "
                                      "(a kernel that never ends?); the sanitizer would hang too");
            else {
                /* beside other workers' steps, the builds of this
                 * submission's next lessons (ahead.c) and with --test-jobs
                 * processes of each tool at once; a verdict a neighbour could
                 * have caused (a tool past its limit, a tool that could not
                 * run, a CUDA call that failed: out of memory) is checked
                 * again with the GPU alone, and that one counts. An error
                 * the tools locate in the student's kernels is theirs. */
                int beside = ahead_for(s);
                /* a lesson that passed no case: what the tools find is shown,
                 * and nothing hangs on it (the check earns 0 either way), so
                 * the tests run together are not run again one by one, nor
                 * is the verdict checked again alone (an untouched skeleton's
                 * every case fails, and every test ran twice) */
                int nothing = earns_nothing(rl, runs, n_runs);
                lr->gpu_wait_s += gpu_hold(g, GPU_SHARED);
                sanitize(g, s, lr, binary, g->test_jobs, nothing, progress, san);
                gpu_release(g);
                if (nothing && san->status != ST_NOT_RUN) {
                    char *o = san->output;
                    san->output = xasprintf("(no case of this lesson passed, so this check "
                                            "earns nothing either way: the tests the tools ran "
                                            "together were not run again one by one)\n%s",
                                            o ? o : "");
                    free(o);
                }
                if (nothing) break;
                const char *o = san->output ? san->output : "";
                int neighbour = san->status == ST_FAILED
                                    ? strstr(o, "ran past its") || strstr(o, "did not finish") ||
                                          strstr(o, "a CUDA call failed") ||
                                          strstr(o, "could not run")
                                    : san->status == ST_NOT_RUN &&
                                          !strstr(o, "no CUDA device") && !strstr(o, "not found");
                if ((g->gpu_lock || g->test_jobs > 1 || beside) && g->gpu && neighbour &&
                    !proc_interrupted()) {
                    /* again alone: no other worker, no build ahead, one
                     * test at a time */
                    ahead_finish();
                    free(san->output);
                    san->output = NULL;
                    san->status = ST_NOT_RUN;
                    lr->reruns++;
                    lr->gpu_wait_s += gpu_hold(g, GPU_ALONE);
                    sanitize(g, s, lr, binary, 1, 0, progress, san);
                    gpu_release(g);
                }
            }
        }
}
