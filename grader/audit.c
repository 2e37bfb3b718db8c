/* grader/audit.c — the speed audit: the student's speed claim against what
 * the GPU itself measured.
 *
 * A passing speed check's figures (the speed log) are the student's
 * program's word. For each one, the grader runs the same speed check again
 * (in the test's sandbox, a short run: FUSIONLAB_TIMING_AUDIT) and times
 * every kernel on the GPU with a tool of NVIDIA's: the kernel trace
 * (grader/ktrace.c, CUPTI's activity records: each kernel's start and end on
 * the GPU, as the kernels ran), or, where the build has no CUPTI or the
 * trace is not whole, Nsight Compute (ncu: gpu__time_duration, each kernel
 * alone, clocks and caches left alone). The baseline and the
 * student's version run the same number of times, interleaved, so
 *
 *   measured speedup = sum of the baseline's kernel times
 *                      / sum of the student's kernel times
 *
 * needs no count of calls. Kernels are told apart by name: the student's
 * are those their objects define (nvcc gives every __global__ function a
 * host stub, `__device_stub__` + its name), the harness's those of
 * common/ and the test library (flushes, holds, checksums), and every other
 * kernel is the baseline's (its own and cuBLAS's). A claim above
 * AUDIT_SLACK x the measured speedup x the worked solution's own factor
 * on this GPU (its protocol speedup over its audited one, at least 1:
 * audit_reference), or a passing speed check during which no kernel of the
 * student's ran, makes the lesson score 0.
 */
#define _XOPEN_SOURCE 700
#include "stages.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AUDIT_SLACK 1.3 /* kernel times against the protocol's: noise and flushes */
/* The most the worked solution's own factor may widen it: one odd reference
 * audit must not open the door to every claim of a batch. */
#define HONEST_MAX 1.5

/* The kernels an object or library defines: T symbols K for which nvcc's
 * stub _Z<n>__device_stub__<K without its leading _> exists. */
static void kernels_of(grader *g, char *const *files, int n, int sandboxed, strset *out)
{
    if (n == 0) return;
    char **argv = xcalloc((size_t)n + 4, sizeof *argv);
    int k = 0;
    argv[k++] = "nm";
    argv[k++] = "-P";
    argv[k++] = "--defined-only";
    for (int i = 0; i < n; ++i) argv[k++] = files[i];
    proc_opts o = {.timeout_s = 120, .head = 64u << 20, .tail = 1};
    proc_result r;
    if (sandboxed) run_step(g, STEP_SCAN, NULL, NULL, argv, NULL, &o, &r);
    else proc_run(argv, &o, &r);
    free(argv);
    strset stubs = {0};
    strlist defs = {0};
    char *save = NULL;
    for (char *line = strtok_r(r.output, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        /* "NAME TYPE ...": the name whole, however long (a template's) */
        char *name = line, *sp = strchr(line, ' ');
        if (sp == NULL || sp[1] == '\0') continue;
        *sp = '\0';
        const char type[2] = {sp[1], '\0'};
        const char *st = strstr(name, "__device_stub__");
        if (starts_with(name, "_Z") && st) strset_add(&stubs, st + strlen("__device_stub__"));
        else if (type[0] == 'T' || type[0] == 't') strlist_add(&defs, name);
    }
    /* a stub's tail is the kernel's name on the GPU (less a leading "_")
     * and then the parameter types again: match by prefix. The name on the
     * GPU is the host symbol with every internal-linkage mark dropped (a
     * static kernel's _ZL5scale..., or _ZN3labL5scale... in a namespace, is
     * _Z5scale..., _ZN3lab5scale... there); a kernel with C linkage
     * (extern "C", any name, "_uk" too) has the plain name, its stub's tail
     * Z<n>name. A host symbol may match more than one way: every way is
     * tried. */
    for (int i = 0; i < defs.n; ++i) {
        const char *kname = defs.v[i];
        char *cand[3] = {NULL, NULL, NULL}; /* name on the GPU, its stub's tail prefix */
        char *pre[3] = {NULL, NULL, NULL};
        int nc = 0;
        if (starts_with(kname, "_Z")) {
            cand[nc] = xstrdup(kname);
            pre[nc] = xstrdup(kname + 1);
            ++nc;
            sbuf d = {0};
            for (const char *c = kname; *c; ++c)
                if (!(c - kname >= 2 && *c == 'L' && c[1] >= '0' && c[1] <= '9'))
                    sbuf_addn(&d, c, 1);
            if (strcmp(sbuf_str(&d), kname) != 0) {
                cand[nc] = sbuf_take(&d);
                pre[nc] = xstrdup(cand[nc] + 1);
                ++nc;
            } else {
                sbuf_free(&d);
            }
        }
        cand[nc] = xstrdup(kname);
        pre[nc] = xasprintf("Z%zu%s", strlen(kname), kname);
        ++nc;
        for (int c = 0; c < nc; ++c) {
            for (size_t j = 0; j < stubs.n; ++j)
                if (starts_with(stubs.v[j], pre[c])) {
                    strset_add(out, cand[c]);
                    break;
                }
            free(cand[c]);
            free(pre[c]);
        }
    }
    strset_free(&stubs);
    strlist_free(&defs);
    proc_result_free(&r);
}


/* "a","b",...: the fields of one CSV line (ncu quotes every field). */
static void csv_fields(const char *line, strlist *out)
{
    sbuf f = {0};
    int q = 0;
    for (const char *p = line;; ++p) {
        if (*p == '"') {
            if (q && p[1] == '"') {
                sbuf_addn(&f, "\"", 1);
                ++p;
            } else {
                q = !q;
            }
            continue;
        }
        if ((*p == ',' && !q) || *p == '\0' || *p == '\r') {
            strlist_add(out, sbuf_str(&f));
            f.len = 0;
            if (f.s) f.s[0] = '\0';
            if (*p != ',') break;
            continue;
        }
        sbuf_addn(&f, p, 1);
    }
    sbuf_free(&f);
}

typedef struct {
    double student_ns, baseline_ns;
    int student_n, baseline_n, harness_n, rows;
    int clean_exit; /* the profiled program exited 0, in time */
    char *exit_note; /* when not: how it ended, and its output's last lines */
    char *clash;   /* a student kernel named like a baseline one */
    strlist seen;  /* the first kernels' names, for a message */
    char *wrong;   /* the audited run's own check found a wrong output */
    const char *tool; /* what measured: "CUPTI" (the kernel trace) or "Nsight Compute" */
    int ran;          /* the audited program started */
    int decided;      /* the trace run's own end decides (wrong, or not ended cleanly) */
    char *trace_note; /* why the kernel trace was not used, when it was tried */
} audit_sum;

static void audit_sum_free(audit_sum *a)
{
    free(a->clash);
    free(a->wrong);
    free(a->exit_note);
    free(a->trace_note);
    strlist_free(&a->seen);
}

static void sets_free(strset *mine, strset *harness, strset *base)
{
    strset_free(mine);
    strset_free(harness);
    strset_free(base);
}

/* Sum ncu's CSV (--page raw) by whose kernel each row is. */
static void sum_csv(const char *csv, strset *mine, strset *harness, strset *base, audit_sum *a)
{
    char *copy = xstrdup(csv);
    char *save = NULL;
    int col_name = -1, col_time = -1;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] != '"') continue;
        strlist f = {0};
        csv_fields(line, &f);
        if (col_name < 0) {
            for (int i = 0; i < f.n; ++i) {
                if (strcmp(f.v[i], "Kernel Name") == 0) col_name = i;
                if (strcmp(f.v[i], "gpu__time_duration.sum") == 0) col_time = i;
            }
        } else if (col_time >= 0 && col_name < f.n && col_time < f.n) {
            char *end = NULL;
            double t = strtod(f.v[col_time], &end);
            const char *name = f.v[col_name];
            if (end != f.v[col_time] && t >= 0) {
                a->rows++;
                if (a->seen.n < 6 && !strlist_has(&a->seen, name)) strlist_add(&a->seen, name);
                if (strset_has(mine, name)) {
                    if ((strset_has(base, name) || strset_has(harness, name)) && !a->clash)
                        a->clash = xstrdup(name);
                    a->student_ns += t;
                    a->student_n++;
                } else if (!strset_has(harness, name)) {
                    a->baseline_ns += t;
                    a->baseline_n++;
                } else {
                    a->harness_n++;
                }
            }
        }
        strlist_free(&f);
    }
    free(copy);
}

/* ncu's --kernel-name for "every kernel but the harness's, less its input
 * fill": regex:^(?!(A|B|...)$), or NULL when there is nothing to leave out
 * (a name with other characters than a mangled name has is not left out). */
static char *harness_filter(const strset *harness, strset *mine)
{
    sbuf b = {0};
    for (size_t i = 0; i < harness->n; ++i) {
        const char *n = harness->v[i];
        /* (a kernel of the student's with a harness kernel's name, static
         * so that the link allows it, stays in: the audit then says so) */
        if (strstr(n, "fill") || strset_has(mine, n)) continue;
        int plain = n[0] != '\0';
        for (const char *p = n; *p && plain; ++p)
            plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9') || *p == '_';
        if (plain) sbuf_addf(&b, "%s%s", b.len ? "|" : "", n);
    }
    if (b.len == 0) {
        sbuf_free(&b);
        return NULL;
    }
    char *re = xasprintf("regex:^(?!(%s)$)", b.s);
    sbuf_free(&b);
    return re;
}

/* What the audited run's own output and its end say (either tool). */
static void audit_finish(audit_sum *a, const proc_result *r, double limit_s)
{
    /* The audited run draws its inputs and the positions it checks from the
     * clock (it has no evidence file: tests/fl_test.c, fl_test_fresh_key),
     * so no earlier run predicts them: its own checks of every output must
     * pass here too. Its speed thresholds are not judged (the audit's short
     * run, and under ncu its slowness). */
    static const char *const wrong[] = {"wrong during the timed runs", "wrong after the timed runs"};
    for (size_t w = 0; w < sizeof wrong / sizeof wrong[0] && a->wrong == NULL; ++w) {
        const char *hit = strstr(r->output, wrong[w]);
        if (hit == NULL) continue;
        const char *start = hit;
        while (start > r->output && start[-1] != '\n') --start;
        const char *end = strchr(hit, '\n');
        size_t len = end ? (size_t)(end - start) : strlen(start);
        a->wrong = xstrndup(start, len > 400 ? 400 : len);
    }
    a->ran = r->started;
    a->clean_exit = r->started && r->exit_code == 0 && r->term_signal == 0 && !r->timed_out &&
                    !r->interrupted;
    if (!a->clean_exit) {
        char *t = trim_middle(r->output, 0, 400);
        a->exit_note = r->timed_out ? xasprintf("stopped at its %.0f s limit: %s", limit_s, t)
                       : r->term_signal ? xasprintf("killed by signal %d: %s", r->term_signal, t)
                                        : xasprintf("exit %d: %s", r->exit_code, t);
        for (char *c = a->exit_note; *c; ++c)
            if (*c == '\n' || *c == '\r') *c = ' '; /* one line in the notes */
        free(t);
    }
}

/* The kernel trace (grader/ktrace.c) is whole: no record dropped or left
 * without its times, and every process that wrote kernel lines ended with
 * an "#end" line that counts them. NULL, or why not. */
static char *trace_whole(const char *text)
{
    typedef struct {
        long pid;
        long rows, end;
    } proc_count;
    proc_count *pc = NULL;
    int n = 0;
    char *why = NULL;
    char *copy = xstrdup(text);
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line && !why; line = strtok_r(NULL, "\n", &save)) {
        strlist f = {0};
        csv_fields(line, &f);
        if (f.n == 4 && strcmp(f.v[0], "ID") != 0) {
            long pid = strtol(f.v[1], NULL, 10);
            int i = 0;
            while (i < n && pc[i].pid != pid) ++i;
            if (i == n) {
                pc = xrealloc(pc, (size_t)(n + 1) * sizeof *pc);
                pc[n++] = (proc_count){pid, 0, -1};
            }
            if (strcmp(f.v[0], "#end") == 0) pc[i].end = strtol(f.v[2], NULL, 10);
            else if (strcmp(f.v[0], "#dropped") == 0)
                why = xasprintf("CUPTI dropped %s records of process %ld", f.v[2], pid);
            else if (strcmp(f.v[0], "#incomplete") == 0)
                why = xasprintf("a kernel of process %ld has no times (%s)", pid, f.v[2]);
            else pc[i].rows++;
        } else if (f.n != 4) {
            why = xstrdup("a line of the trace is malformed");
        }
        strlist_free(&f);
    }
    for (int i = 0; i < n && !why; ++i)
        if (pc[i].end != pc[i].rows)
            why = pc[i].end < 0 ? xasprintf("process %ld did not reach its end", pc[i].pid)
                                : xasprintf("process %ld counted %ld kernels, the trace holds %ld",
                                            pc[i].pid, pc[i].end, pc[i].rows);
    if (!why && n == 0) why = xstrdup("no kernel was traced");
    free(copy);
    free(pc);
    return why;
}

/* The kernel trace over one speed test: 0 with `a` filled, or -1 with
 * *why (the audit then profiles with ncu). */
static int trace_test(grader *g, step_kind kind, const char *scratch, const char *seed_env,
                      double *gpu_wait, const char *binary, const char *filter, strset *mine,
                      strset *harness, strset *base, audit_sum *a, char **why)
{
    char *trace = path_join(scratch, "ktrace.csv");
    char *inject = xasprintf("CUDA_INJECTION64_PATH=%s", g->man.kernel_trace);
    char *trace_env = xasprintf("FUSIONLAB_KTRACE=%s", trace);
    const char *env[] = {"FUSIONLAB_TIMING_AUDIT=1", seed_env, inject, trace_env, NULL};
    char *argv[] = {(char *)binary, "--jobs", "1", "--filter", (char *)filter, NULL};
    proc_opts o = {.timeout_s = g->suite_timeout, .head = 1 << 20, .tail = 1 << 20};
    proc_result r;
    /* it times kernels: nothing else on the GPU (gpulock.c) */
    *gpu_wait += gpu_hold(g, GPU_ALONE);
    run_step(g, kind, NULL, scratch, argv, env, &o, &r);
    gpu_release(g);
    char *body = read_step_file(trace, 64u << 20, NULL, NULL);
    /* (the header is the grader's: the sandbox's user creates the file) */
    char *text = xasprintf("\"ID\",\"Process ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n%s",
                           body ? body : "");
    *why = body ? trace_whole(text) : xstrdup("the run wrote no trace");
    audit_finish(a, &r, o.timeout_s);
    a->tool = "CUPTI";
    int rc = -1;
    if (*why == NULL) {
        sum_csv(text, mine, harness, base, a);
        rc = 0;
    } else if (a->wrong || (r.started && !a->clean_exit)) {
        /* a wrong output, or a run that did not end: that is the verdict,
         * whatever the trace holds (no second try under ncu) */
        free(*why);
        *why = NULL;
        a->decided = 1;
        rc = 0;
    } else {
        free(a->wrong);
        free(a->exit_note);
        a->wrong = a->exit_note = NULL;
        a->tool = NULL;
    }
    free(body);
    free(text);
    proc_result_free(&r);
    free(inject);
    free(trace_env);
    free(trace);
    return rc;
}

/* The audit's measure of one speed test: the kernel trace (CUPTI, where the
 * build has it and FUSIONLAB_AUDIT_TOOL is not "ncu"), else Nsight Compute;
 * *why when neither could measure. */
static int audit_test(grader *g, step_kind kind, const char *seed, double *gpu_wait,
                      const char *binary, const char *suite, const char *test, strset *mine,
                      strset *harness, strset *base, audit_sum *a, char **why)
{
    memset(a, 0, sizeof *a);
    *why = NULL;
    char *scratch = step_scratch(g, "audit");
    if (scratch == NULL) {
        *why = xstrdup("the grader could not make the audit's scratch folder");
        return -1;
    }
    char *csv = path_join(scratch, "ncu.csv");
    char *filter = xasprintf("%s/%s", suite, test);
    char *seed_env = xasprintf("FUSIONLAB_GRADE_SEED=%s", seed ? seed : "");
    const char *tool = getenv("FUSIONLAB_AUDIT_TOOL");
    if (g->man.kernel_trace && is_file(g->man.kernel_trace) && !(tool && strcmp(tool, "ncu") == 0)) {
        char *twhy = NULL;
        int rc = trace_test(g, kind, scratch, seed_env, gpu_wait, binary, filter, mine, harness,
                            base, a, &twhy);
        if (rc == 0 || proc_interrupted()) {
            free(seed_env);
            free(filter);
            free(csv);
            free(scratch);
            if (rc != 0) *why = twhy;
            return rc;
        }
        a->trace_note = twhy; /* then Nsight Compute, as before the trace */
    }
    const char *env[] = {"FUSIONLAB_TIMING_AUDIT=1", seed_env, NULL};
    /* ncu spends about 0.1 s on every kernel it profiles, and most kernels
     * of a speed check are the harness's (checksums, cache flushes, holds),
     * which no sum counts: they are left out of the profile, all but the
     * input fill, which every check launches and which shows the profile
     * worked (a profile with no row at all is run again without the
     * filter). A kernel of the student's is never left out, even one that
     * takes a harness kernel's name (static, the link allows it): it is
     * counted as theirs, and the name clash makes the audit fail. */
    char *skip = harness_filter(harness, mine);
    char *argv[32];
    int k = 0;
    const char *fixed[] = {"ncu", "--target-processes", "all", "--clock-control", "none",
                           "--cache-control", "none", "--print-kernel-base", "mangled",
                           "--metrics", "gpu__time_duration.sum", "--csv", "--page", "raw",
                           "--print-units", "base", "--log-file", csv, NULL};
    for (int i = 0; fixed[i]; ++i) argv[k++] = (char *)fixed[i];
    int at_filter = k;
    if (skip) {
        argv[k++] = "--kernel-name-base";
        argv[k++] = "mangled";
        argv[k++] = "--kernel-name";
        argv[k++] = skip;
    }
    int at_program = k;
    argv[k++] = (char *)binary;
    argv[k++] = "--jobs";
    argv[k++] = "1";
    argv[k++] = "--filter";
    argv[k++] = filter;
    argv[k] = NULL;
    proc_opts o = {.timeout_s = g->suite_timeout, .head = 1 << 20, .tail = 1 << 20};
    proc_result r;
    /* it times kernels: nothing else on the GPU (gpulock.c) */
    *gpu_wait += gpu_hold(g, GPU_ALONE);
    run_step(g, kind, NULL, scratch, argv, env, &o, &r);
    char *text = read_step_file(csv, 64u << 20, NULL, NULL);
    if (text) sum_csv(text, mine, harness, base, a);
    int again = skip && a->rows == 0 && !r.timed_out && !proc_interrupted();
    if (again) {
        /* again, every kernel profiled, as before the filter */
        memmove(&argv[at_filter], &argv[at_program],
                (size_t)(k - at_program + 1) * sizeof *argv);
        free(text);
        proc_result_free(&r);
        unlink(csv);
        run_step(g, kind, NULL, scratch, argv, env, &o, &r);
        text = read_step_file(csv, 64u << 20, NULL, NULL);
    }
    gpu_release(g);
    if (again) {
        char *note = a->trace_note;
        a->trace_note = NULL;
        free(a->clash);
        strlist_free(&a->seen);
        memset(a, 0, sizeof *a);
        a->trace_note = note;
        if (text) sum_csv(text, mine, harness, base, a);
    }
    free(skip);
    a->tool = "Nsight Compute";
    audit_finish(a, &r, o.timeout_s);
    if (a->rows == 0) {
        char *t = trim_middle(r.output, 300, 300);
        *why = !r.started ? xstrdup("ncu (Nsight Compute) is not installed")
                          : xasprintf("ncu measured no kernel (exit %d): %s", r.exit_code, t);
        free(t);
    }
    free(text);
    proc_result_free(&r);
    free(seed_env);
    free(filter);
    free(csv);
    free(scratch);
    return a->rows ? 0 : -1;
}

/* The worked solution's record of lesson's suite::test on this GPU (the
 * reference), or NULL. */
static const speed_rec *reference_of(const grader *g, const char *lesson, const char *suite,
                                     const char *test)
{
    for (int i = 0; i < g->reference.n; ++i) {
        const speed_rec *r = &g->reference.v[i];
        if (strcmp(r->lesson, lesson) == 0 && strcmp(r->suite, suite) == 0 &&
            strcmp(r->test, test) == 0)
            return r;
    }
    return NULL;
}

/* How far the worked solution's claim (its protocol speedup) stands above
 * what its audit `ref` measured on this GPU, at least 1: the two time
 * differently (Nsight Compute runs each kernel alone, the GPU idle between
 * them and its clocks left alone, and on an H100 an honest claim stood up
 * to 1.3 times above it; the kernel trace times the kernels as they ran, in
 * a short run). 1 without an audit by the student's tool (ref NULL); at
 * most HONEST_MAX. */
static double honest_factor(const speed_rec *ref)
{
    if (ref && ref->speedup > ref->audit_speedup) {
        double f = ref->speedup / ref->audit_speedup;
        return f < HONEST_MAX ? f : HONEST_MAX;
    }
    return 1.0;
}

void audit_reference(grader *g, const lesson_info *li)
{
    if (!g->gpu || li->b.solution_lib == NULL || !is_file(li->b.solution_lib) ||
        li->b.solution_test_bin == NULL || !is_file(li->b.solution_test_bin))
        return;
    strset mine = {0}, harness = {0}, base = {0};
    char *lib = li->b.solution_lib;
    kernels_of(g, &lib, 1, 0, &mine);
    kernels_of(g, g->man.harness_libs.v, g->man.harness_libs.n, 0, &harness);
    char *baseline = li->b.baseline_lib;
    kernels_of(g, &baseline, 1, 0, &base);
    for (int i = 0; i < g->reference.n && !proc_interrupted(); ++i) {
        speed_rec *r = &g->reference.v[i];
        if (strcmp(r->lesson, li->number) != 0 || r->speedup <= 0) continue;
        /* twice, the higher speedup kept (the smaller factor): one run
         * the profiler slowed is not the measure */
        double best = 0;
        char *fault = NULL;
        const char *tool = NULL;
        int base_n = 0; /* the baseline's kernels in the runs; -1 when the two differ */
        int harn_n = 0; /* ... and the harness's */
        for (int run = 0; run < 2 && !proc_interrupted(); ++run) {
            fprintf(stderr, "== reference: lesson %s, worked solution, %s::%s, speed audit (%d of "
                    "2)\n", li->number, r->suite, r->test, run + 1);
            audit_sum a;
            char *err = NULL;
            double wait = 0;
            int rc = audit_test(g, STEP_TRUSTED, g->reference_keys.seed, &wait,
                                li->b.solution_test_bin, r->suite, r->test, &mine, &harness,
                                &base, &a, &err);
            if (a.trace_note)
                strlist_addf(&g->reference_notes, "lesson %s %s::%s: the kernel trace was not "
                             "used (%s): Nsight Compute measured instead", li->number, r->suite,
                             r->test, a.trace_note);
            if (rc == 0 && a.clean_exit && a.wrong == NULL && a.clash == NULL &&
                a.student_n > 0 && a.student_ns > 0 && a.baseline_ns > 0 &&
                (tool == NULL || strcmp(tool, a.tool) == 0)) {
                double m = a.baseline_ns / a.student_ns;
                if (m > best) best = m;
                tool = a.tool;
                base_n = base_n == 0 ? a.baseline_n : base_n == a.baseline_n ? base_n : -1;
                harn_n = harn_n == 0 ? a.harness_n : harn_n == a.harness_n ? harn_n : -1;
            } else if (fault == NULL && rc == 0 && tool && a.tool && strcmp(tool, a.tool) != 0) {
                fault = xasprintf("its two runs were measured by two tools, %s and %s", tool,
                                  a.tool);
            } else if (fault == NULL) {
                fault = err ? xstrdup(err)
                        : a.wrong ? xstrdup(a.wrong)
                        : !a.clean_exit ? xasprintf("the profiled run did not end cleanly, %s",
                                                    a.exit_note ? a.exit_note : "")
                                        : xstrdup("no kernel of its own counted");
            }
            free(err);
            audit_sum_free(&a);
        }
        if (best > 0 && fault == NULL) {
            r->audit_speedup = best;
            snprintf(r->audit_tool, sizeof r->audit_tool, "%s", tool);
            r->audit_baseline_n = base_n > 0 ? base_n : 0;
            r->audit_harness_n = harn_n > 0 ? harn_n : 0;
            if (base_n < 0 || harn_n < 0)
                strlist_addf(&g->reference_notes, "lesson %s %s::%s: the %s launched a "
                             "different number of kernels in the two audited runs: a "
                             "student's count of them is not checked", li->number, r->suite,
                             r->test, base_n < 0 ? "baseline" : "test harness");
            strlist_addf(&g->reference_notes, "lesson %s %s::%s: the speed audit (%s) measures "
                         "the worked solution at %.2fx, its claim %.2fx", li->number, r->suite,
                         r->test, tool, r->audit_speedup, r->speedup);
        } else {
            strlist_addf(&g->reference_notes, "lesson %s %s::%s: the worked solution's speed "
                         "audit measured nothing usable (%s): students' claims are held to "
                         "the slack alone", li->number, r->suite, r->test,
                         fault ? fault : "interrupted");
        }
        free(fault);
    }
    sets_free(&mine, &harness, &base);
}

typedef enum { AUDIT_NOT_RUN, AUDIT_CONSISTENT, AUDIT_FAILS } audit_verdict;

/* The verdict on one claim from its audited run `a` (audit_test's rc and
 * err), the worked solution's audit of the same check with the same tool on
 * this GPU (`ref`, or NULL) and its factor `honest`: the reason (AUDIT_FAILS)
 * or the note (otherwise) in *text. */
static audit_verdict audit_judge(const speed_rec *claim, const audit_sum *a, int rc,
                                 const char *err, const speed_rec *ref, double honest,
                                 const strset *mine, sbuf *text)
{
    const char *tool = a->tool ? a->tool : "Nsight Compute";
    const char *su = claim->suite, *te = claim->test;
    /* a run that started and did not end cleanly is the student's (a claim
     * stands only on an audit that ran to its end) where the worked
     * solution's audit with the same tool ended cleanly on this GPU:
     * otherwise the tool itself may be what failed here (no counters for
     * ncu, CUPTI broken), which is the grader's, and the audit is only not
     * run */
    int unclean = a->ran && !a->clean_exit && ref != NULL &&
                  (a->decided || strcmp(tool, "CUPTI") == 0 || a->rows > 0);
    if (rc != 0 && a->wrong == NULL && !unclean) {
        sbuf_addf(text, "speed audit of %s::%s not run: %s", su, te,
                  err ? err : a->exit_note ? a->exit_note : "no figures");
        return AUDIT_NOT_RUN;
    }
    double measured = a->student_ns > 0 ? a->baseline_ns / a->student_ns : 0.0;
    /* every kernel neither the file's nor the harness's is counted as the
     * baseline's, and the harness launches the same kernels whatever the
     * file does: both counts as in the worked solution's audited runs on
     * this GPU, or a kernel of the student's went uncounted as theirs
     * (loaded at run time, or named like a baseline or harness kernel) */
    int want_n = ref ? ref->audit_baseline_n : 0;
    int want_h = ref ? ref->audit_harness_n : 0;
    if (a->wrong) {
        sbuf_addf(text, "%s::%s: run again for the speed audit, with inputs and checked "
                  "positions that no earlier run could predict, the speed check found a "
                  "wrong output (an answer must not depend on knowing what comes next): "
                  "%s\n", su, te, a->wrong);
    } else if (unclean) {
        sbuf_addf(text, "%s::%s: run again for the speed audit, the speed check did not end "
                  "cleanly (%s): a speed claim counts only when its audit runs to the end\n",
                  su, te, a->exit_note ? a->exit_note : "no exit status");
    } else if (want_h > 0 && a->student_n > 0 && a->harness_n != want_h) {
        sbuf_addf(text, "%s::%s: %d kernels of the audited run bore the test harness's names, "
                  "and the harness launches %d (the worked solution's audited run on this "
                  "GPU): every kernel your code runs must be one your file defines (a kernel "
                  "loaded at run time under a harness kernel's name is not yours to %s)\n",
                  su, te, a->harness_n, want_h, tool);
    } else if (want_n > 0 && a->student_n > 0 && a->baseline_n != want_n) {
        sbuf_addf(text, "%s::%s: %d kernels of the audited run were neither your file's nor "
                  "the test harness's, and the baseline launches %d (the worked solution's "
                  "audited run on this GPU): every kernel your code runs must be one your "
                  "file defines (%s counts a kernel loaded at run time, or one named like a "
                  "baseline kernel, as the baseline's)\n", su, te, a->baseline_n, want_n,
                  tool);
    } else if (a->clash) {
        sbuf_addf(text, "%s::%s: a kernel of your file has the name of a baseline or "
                  "test-harness kernel (%s): rename it, so that the grader can tell your "
                  "kernels from theirs\n", su, te, a->clash);
    } else if (a->student_n == 0) {
        sbuf_addf(text, "%s::%s: the speed check passed, but no kernel of your file ran on "
                  "the GPU during it (%s saw %d kernels:", su, te, tool, a->rows);
        for (int n = 0; n < a->seen.n; ++n) sbuf_addf(text, " %s", a->seen.v[n]);
        sbuf_addf(text, "%s; your file's: ", a->rows > a->seen.n ? " ..." : "");
        for (size_t n = 0; n < mine->n && n < 6; ++n) sbuf_addf(text, "%s ", mine->v[n]);
        sbuf_add(text, ")\n");
    } else if (claim->speedup > AUDIT_SLACK * honest * measured) {
        sbuf_addf(text, "%s::%s: the test program claims %.2fx the baseline; the GPU measured "
                  "%.2fx (%s: baseline kernels %.1f us, yours %.1f us, summed over the same "
                  "runs), and an honest claim stands at most %.2f x %.2f times above that "
                  "here (the worked solution's claim over its own audit on this GPU, times "
                  "the slack)\n", su, te, claim->speedup, measured, tool, a->baseline_ns / 1e3,
                  a->student_ns / 1e3, honest, AUDIT_SLACK);
    } else {
        sbuf_addf(text, "speed audit %s::%s: claimed %.2fx, the GPU measured %.2fx (%s; the "
                  "worked solution's claim stands %.2f times above its audit here): "
                  "consistent", su, te, claim->speedup, measured, tool, honest);
        return AUDIT_CONSISTENT;
    }
    return AUDIT_FAILS;
}

char *audit_speed(grader *g, submission *s, lesson_result *lr, const char *binary,
                  const strlist *suites, const suite_run *runs, const char *progress)
{
    const lesson_info *li = lr->li;
    const rubric_lesson *rl = lr->rl;
    if (!g->gpu) return NULL; /* no speed check ran */
    strset mine = {0}, harness = {0}, base = {0};
    strlist objs = {0};
    for (int i = 0; i < li->b.student_objects.n; ++i)
        if (is_file(li->b.student_objects.v[i])) strlist_add(&objs, li->b.student_objects.v[i]);
    kernels_of(g, objs.v, objs.n, 1, &mine);
    strlist_free(&objs);
    kernels_of(g, g->man.harness_libs.v, g->man.harness_libs.n, 0, &harness);
    char *baseline = li->b.baseline_lib;
    kernels_of(g, &baseline, 1, 0, &base);
    sbuf why = {0};
    for (int c = 0; c < rl->n; ++c) {
        const rubric_check *k = &rl->checks[c];
        if (k->kind != KIND_SPEED) continue;
        int i = 0;
        while (i < suites->n && strcmp(suites->v[i], k->suite) != 0) ++i;
        if (i == suites->n) continue;
        for (int j = 0; j < runs[i].speed.n; ++j) {
            const speed_rec *claim = &runs[i].speed.v[j];
            if (!claim->passed || (k->test && strcmp(claim->test, k->test) != 0)) continue;
            fprintf(stderr, "%s: auditing %s::%s\n", progress, claim->suite, claim->test);
            audit_sum a;
            char *err = NULL;
            int rc = audit_test(g, STEP_TEST, s->keys.seed, &lr->gpu_wait_s, binary,
                                claim->suite, claim->test, &mine, &harness, &base, &a, &err);
            if (proc_interrupted()) { /* no verdict from a run the grader stopped */
                free(err);
                audit_sum_free(&a);
                break;
            }
            const char *tool = a.tool ? a.tool : "Nsight Compute";
            /* the worked solution's audit on this GPU with the same tool, and
             * its own claim over that audit: an honest kernel's distance from
             * the audit's figure */
            const speed_rec *rec = reference_of(g, li->number, claim->suite, claim->test);
            int audited = rec && rec->audit_speedup > 0;
            const speed_rec *ref = audited && strcmp(rec->audit_tool, tool) == 0 ? rec : NULL;
            int other = audited && ref == NULL;
            double honest = honest_factor(ref);
            if (other)
                strlist_addf(&lr->notes, "speed audit %s::%s: the worked solution was audited "
                             "with another tool than %s here: the claim is held to the slack "
                             "alone", claim->suite, claim->test, tool);
            if (a.trace_note)
                strlist_addf(&lr->notes, "speed audit %s::%s: the kernel trace was not used "
                             "(%s): Nsight Compute measured instead", claim->suite, claim->test,
                             a.trace_note);
            sbuf text = {0};
            audit_verdict v = audit_judge(claim, &a, rc, err, ref, honest, &mine, &text);
            if (v == AUDIT_FAILS) sbuf_add(&why, sbuf_str(&text));
            else strlist_add(&lr->notes, sbuf_str(&text));
            sbuf_free(&text);
            free(err);
            audit_sum_free(&a);
        }
    }
    sets_free(&mine, &harness, &base);
    return why.len ? sbuf_take(&why) : (sbuf_free(&why), NULL);
}
