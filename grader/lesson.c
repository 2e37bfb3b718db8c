/* grader/lesson.c — grade one lesson of one submission: the stages, in turn
 * (stages.h):
 *
 *   1 + 2. stage_build.c: the student's files, then the build
 *   3.     stage_scan.c: the harness's symbols, then the object scan
 *   4.     stage_run.c: each suite the rubric names; audit.c: the speed
 *          claims under Nsight Compute; stage_run.c and verify.c: the worked
 *          solution's runs the report is verified against; stage_run.c:
 *          the sanitizer
 *   5.     stage_score.c: every check of the rubric from the reports
 *
 * A lesson that cannot be graded (setup, refusal, build, scan) stops at its
 * stage through lesson_fail: its state, its summary, every check alike.
 */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include "stages.h"

#include <cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

const char *lesson_state_name(lesson_state s)
{
    switch (s) {
    case L_GRADED: return "graded";
    case L_NOT_SUBMITTED: return "not submitted";
    case L_REFUSED: return "refused";
    case L_BUILD_FAILED: return "build failed";
    case L_LINK_REFUSED: return "link error";
    case L_FLAGGED: return "flagged";
    case L_SETUP_FAILED: return "grader setup failed";
    case L_UNVERIFIED: return "unverified";
    case L_INTERRUPTED: return "interrupted";
    }
    return "?";
}

const char *check_status_name(check_status s)
{
    switch (s) {
    case ST_PASSED: return "passed";
    case ST_PARTIAL: return "partial";
    case ST_FAILED: return "failed";
    case ST_NOT_RUN: return "not run";
    }
    return "?";
}

char *scrub(const grader *g, const char *text)
{
    char *s = xstrdup(text ? text : "");
    struct {
        const char *path;
        const char *with;
    } subs[] = {
        {g->student_root, ""}, {g->run_dir, ""}, {g->build, ""}, {g->work, "<work>/"},
        {g->course, ""},
    };
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; ++i) {
        if (subs[i].path == NULL || subs[i].path[0] == '\0') continue;
        char *needle = xasprintf("%s/", subs[i].path);
        char *t = str_replace_all(s, needle, subs[i].with);
        free(needle);
        free(s);
        s = t;
    }
    if (g->seed && strlen(g->seed) >= 3) {
        char *t = str_replace_all(s, g->seed, "<grade-seed>");
        free(s);
        s = t;
    }
    utf8_sanitize(s);
    return s;
}

char *stage_times(const lesson_result *lr)
{
    sbuf b = {0};
    const struct {
        const char *name;
        double s;
    } st[] = {{"build", lr->build_s}, {"scan", lr->scan_s}, {"tests", lr->run_s},
              {"speed audit", lr->audit_s}};
    for (size_t i = 0; i < sizeof st / sizeof st[0]; ++i)
        if (st[i].s > 0) {
            sbuf_addf(&b, "%s%s %.1f s", b.len ? ", " : "", st[i].name, st[i].s);
            /* (built and scanned while the lesson before was verified:
             * outside this lesson's time but for the wait, if any, for
             * that to finish) */
            if (lr->built_ahead && (i == 1 || (i == 0 && lr->scan_s <= 0)))
                sbuf_add(&b, " (ahead)");
        }
    if (lr->verify_s > 0)
        sbuf_addf(&b, "%sverifying %.1f s", b.len ? ", " : "", lr->verify_s);
    if (lr->sanitizer_s > 0)
        sbuf_addf(&b, "%ssanitizer %.1f s", b.len ? ", " : "", lr->sanitizer_s);
    if (b.len == 0) sbuf_add(&b, "no stage ran");
    /* several workers on one GPU: the stages' times above include these */
    if (lr->gpu_wait_s >= 0.05) sbuf_addf(&b, "; waited for the GPU %.1f s", lr->gpu_wait_s);
    /* (outside every stage above: the builds ahead, of the next lesson and
     * the one after it, outlasted them) */
    if (lr->ahead_wait_s >= 0.05)
        sbuf_addf(&b, "; waited for the next lesson's build %.1f s", lr->ahead_wait_s);
    if (lr->reruns)
        sbuf_addf(&b, "; %d run%s again alone on the GPU", lr->reruns, lr->reruns == 1 ? "" : "s");
    return sbuf_take(&b);
}

/* ---- the lesson ------------------------------------------------------------ */

static void all_checks(lesson_result *lr, check_status st, const char *why)
{
    for (int i = 0; i < lr->n_checks; ++i) {
        check_result *c = &lr->checks[i];
        c->status = st;
        c->score = 0.0;
        free(c->output);
        c->output = xstrdup(why);
    }
}

void write_log(grader *g, submission *s, const char *name, const char *text)
{
    char *dir = path_join(s->outdir, "logs");
    mkdir_p(dir);
    char *path = path_join(dir, name);
    char *clean = scrub(g, text);
    char *trimmed = trim_middle(clean, 96 * 1024, 96 * 1024);
    write_file(path, trimmed, strlen(trimmed));
    free(trimmed);
    free(clean);
    free(path);
    free(dir);
}

/* The one way a lesson stops short: its state and summary (and detail, when
 * given), every check `cs`, scoring 0, with `why` (NULL: the summary). */
static void lesson_fail(lesson_result *lr, lesson_state st, check_status cs, char *summary,
                        char *detail, const char *why)
{
    lr->state = st;
    lr->summary = summary;
    if (detail) lr->detail = detail;
    all_checks(lr, cs, why ? why : summary);
}

static void init_checks(lesson_result *lr)
{
    const rubric_lesson *rl = lr->rl;
    lr->n_checks = rl->n;
    lr->checks = xcalloc((size_t)rl->n, sizeof *lr->checks);
    for (int i = 0; i < rl->n; ++i) {
        lr->checks[i].rc = &rl->checks[i];
        lr->checks[i].max = rl->checks[i].points;
    }
    for (int i = 0; i < rl->n; ++i) lr->max += rl->checks[i].points;
}

/* Whether the lesson is there to grade: L_GRADED, or why not (as a stage). */
static lesson_state admit_lesson(grader *g, submission *s, const lesson_info *li, char **summary,
                                 char **detail, char **why)
{
    if (!g->ready) {
        *summary = xasprintf("not graded: %s", g->setup_error ? g->setup_error : "setup failed");
        return L_SETUP_FAILED;
    }
    if (s->in.refused) {
        *summary = xasprintf("submission refused: %s", s->in.refusal);
        return L_REFUSED;
    }
    if (!intake_lesson_submitted(&s->in, li)) {
        sbuf b = {0};
        sbuf_addf(&b, "not submitted: no ");
        for (int i = 0; i < li->exercise.n; ++i)
            sbuf_addf(&b, "%s%s/%s", i ? " or " : "", li->name, li->exercise.v[i]);
        sbuf_add(&b, " in the submission");
        *summary = sbuf_take(&b);
        return L_NOT_SUBMITTED;
    }
    int nf = 0;
    taken_file *files = intake_lesson_files(&s->in, li, &nf);
    sbuf refused = {0};
    for (int i = 0; i < nf; ++i)
        if (files[i].status != FILE_OK && files[i].status != FILE_MISSING)
            sbuf_addf(&refused, "%s\n", files[i].note ? files[i].note : files[i].name);
    if (refused.len) {
        *summary = xstrdup("refused: a file of this lesson could not be taken");
        *detail = sbuf_take(&refused);
        *why = xstrdup("not run: a file of this lesson was refused (see the lesson's notes)");
        return L_REFUSED;
    }
    sbuf_free(&refused);
    if (proc_interrupted()) {
        *summary = xstrdup("not graded: grading was interrupted");
        return L_INTERRUPTED;
    }
    return L_GRADED;
}

/* What the worked solution's verify_once runs measured on this GPU for
 * lesson `num`'s suites (lesson 04's DRAM counters), handed to its test
 * steps: WORK/measured-NN.txt, which they may read (no sandbox binds --work
 * otherwise), named by FUSIONLAB_COUNTERS_FROM. NULL: none from now on. */
static void lesson_measured(grader *g, const char *num)
{
    free(g->step_env);
    free(g->step_ro);
    g->step_env = g->step_ro = NULL;
    if (num == NULL) return;
    sbuf b = {0};
    for (int i = 0; i < g->n_once; ++i)
        if (strcmp(g->once[i].lesson, num) == 0 && g->once[i].measured)
            sbuf_add(&b, g->once[i].measured);
    if (b.len == 0) return;
    char *name = xasprintf("measured-%s.txt", num);
    char *path = path_join(g->work, name);
    free(name);
    /* (readable by the sandbox's user whatever the umask) */
    if (write_file(path, b.s, b.len) == 0 && chmod(path, 0644) == 0) {
        g->step_ro = path;
        g->step_env = xasprintf("FUSIONLAB_COUNTERS_FROM=%s", path);
    } else {
        free(path);
    }
    sbuf_free(&b);
}

lesson_state prepare_lesson(grader *g, submission *s, lesson_result *lr, const char *progress,
                            char **summary, char **detail, char **why)
{
    /* 1 + 2: files, then the build; 3: symbols, then the object scan */
    lesson_state st = admit_lesson(g, s, lr->li, summary, detail, why);
    if (st == L_GRADED) st = build_lesson(g, s, lr, progress, summary, detail, why);
    double t = now_s();
    if (st == L_GRADED) {
        st = scan_lesson(g, lr, summary, detail, why);
        lr->scan_s = now_s() - t;
    }
    if (st != L_GRADED && st != L_INTERRUPTED && proc_interrupted()) {
        /* a build or a scan cut short says nothing of the files: not
         * "build failed" or "flagged", but not graded */
        free(*summary);
        free(*detail);
        free(*why);
        *summary = xstrdup("not graded: grading was interrupted");
        *detail = *why = NULL;
        st = L_INTERRUPTED;
    }
    return st;
}

void grade_lesson(grader *g, submission *s, lesson_result *lr, const char *progress)
{
    const lesson_info *li = lr->li;
    const rubric_lesson *rl = lr->rl;
    init_checks(lr);

    /* 1-3, or what the child of ahead.c found for them while the lesson
     * before this one was verified */
    char *summary = NULL, *detail = NULL, *why = NULL;
    lesson_state st;
    if (ahead_take(s, lr, &st, &summary, &detail, &why) != 0)
        st = prepare_lesson(g, s, lr, progress, &summary, &detail, &why);
    double t;
    if (st != L_GRADED) {
        lesson_fail(lr, st, st == L_FLAGGED ? ST_FAILED : ST_NOT_RUN, summary, detail, why);
        free(why);
        return;
    }

    /* 4: the suites, in the rubric's order, each once */
    strlist suites = {0};
    rubric_suites(rl, -1, &suites);
    char *binary = xstrdup(li->b.test_bin);
    char **evidence = NULL;
    lesson_measured(g, li->number);
    suite_run *runs = run_suites(g, s, lr, binary, &suites, progress, &evidence);
    /* 5: the speed claims against the GPU's own clock (alone on the GPU);
     * then the worked solution's runs on the same inputs, against which the
     * report is verified; then the sanitizer, once, when a sanitizer check
     * is worth points. One after another: no code of
     * the student's runs while the worked solution's do (the student's
     * code under the sanitizer could otherwise take the GPU's memory or
     * time from them, so that cases of theirs fail or time out, and a case
     * of the worked solution that ran but compared nothing is taken on the
     * report's word: verify.c) */
    t = now_s();
    char *unaudited = audit_speed(g, s, lr, binary, &suites, runs, progress);
    lr->audit_s = now_s() - t;
    /* nothing of this lesson times anything from here on: the next lesson's
     * build and scan (and the one after's, when both are this
     * submission's) may run beside the worked solution's runs (ahead.c) */
    ahead_start(g, lr);
    int grader_fault = 0;
    char *unverified = verify_runs(g, s, lr, &suites, runs, evidence, progress, &grader_fault);
    /* the sanitizer runs the student's code again, and times nothing: beside
     * the builds of this submission's own next lessons, not beside another
     * submission's (whose objects are not for this one's code to see being
     * made). Both count against the sandbox user's limits and share the
     * CPUs: a build that fails beside it is done again in turn (ahead.c),
     * and a sanitizer verdict a neighbour could have caused is checked again
     * once the builds have ended (run_sanitizer). Every build ends before
     * the next lesson's tests: they time */
    t = now_s();
    if (!ahead_for(s)) ahead_finish();
    lr->ahead_wait_s = now_s() - t;
    t = now_s();
    sanitizer_run san = {ST_NOT_RUN, NULL};
    run_sanitizer(g, s, lr, binary, runs, suites.n, progress, &san);
    lr->sanitizer_s = now_s() - t;
    t = now_s();
    ahead_finish();
    lr->ahead_wait_s += now_s() - t;
    free(binary);
    lesson_measured(g, NULL);

    /* 6: scores */
    score_lesson(g, lr, &suites, runs, &san);
    if (unverified || unaudited) {
        lr->score = 0.0;
        free(lr->summary);
        if (unverified && grader_fault)
            /* the worked solution's own run fell short: no verdict on the
             * student (0 with "claims more than can be verified" would read
             * as cheating); grade again */
            lesson_fail(lr, L_SETUP_FAILED, ST_NOT_RUN,
                        xstrdup("not graded: the worked solution's run on the same inputs did "
                                "not finish (the grading machine's fault, not your code's); "
                                "grade again"),
                        xasprintf("The grader re-judges every output your tests compared "
                                  "against the worked solution's run on the same inputs, and "
                                  "that run fell short:\n%s", unverified),
                        "not run: the worked solution's run on the same inputs did not finish "
                        "(grade again)");
        else if (unverified)
            lesson_fail(lr, L_UNVERIFIED, ST_FAILED,
                        xstrdup("0: the test report claims more than the grader can verify"),
                        xasprintf("The grader re-judges every output your tests compared "
                                  "against the worked solution's run on the same inputs. Not "
                                  "borne out:\n%s", unverified),
                        "0: the test report claims more than the grader can verify (see the "
                        "lesson's notes)");
        else
            lesson_fail(lr, L_UNVERIFIED, ST_FAILED,
                        xstrdup("0: the speed claim disagrees with the GPU's own measurement"),
                        xasprintf("The grader times your kernels and the baseline's with Nsight "
                                  "Compute:\n%s", unaudited),
                        "0: the speed claim disagrees with the GPU's own measurement (see the "
                        "lesson's notes)");
        free(unverified);
        free(unaudited);
    }
    if (proc_interrupted()) {
        /* a stage cut short is no verdict (a sanitizer stopped halfway
         * would cost its points): the lesson was not graded */
        lr->score = 0.0;
        free(lr->summary);
        lesson_fail(lr, L_INTERRUPTED, ST_NOT_RUN, xstrdup("not graded: grading was interrupted"),
                    NULL, "not run: grading was interrupted");
    }
    for (int i = 0; i < suites.n; ++i) {
        suite_run_free(&runs[i]);
        free(evidence[i]);
    }
    free(evidence);
    free(runs);
    free(san.output);
    strlist_free(&suites);
}

/* ---- the reference: the worked solution's speed on this GPU ---------------- */

void run_reference(grader *g, const lesson_info *li, const rubric_lesson *rl)
{
    if (li->solution_test == NULL) {
        strlist_addf(&g->reference_notes, "lesson %s: no worked solution in this course tree",
                     li->number);
        return;
    }
    char *binary = xstrdup(li->b.solution_test_bin);
    if (!is_file(binary)) {
        strlist_addf(&g->reference_notes, "lesson %s: the worked solution's tests did not build",
                     li->number);
        free(binary);
        return;
    }
    strlist suites = {0};
    rubric_suites(rl, 1, &suites);
    for (int i = 0; i < suites.n; ++i) {
        fprintf(stderr, "== reference: lesson %s, worked solution, suite %s\n", li->number,
                suites.v[i]);
        suite_run sr;
        gpu_hold(g, GPU_ALONE);
        run_suite(g, STEP_TRUSTED, &g->reference_keys, binary, suites.v[i], g->suite_timeout,
                  &sr, NULL, NULL);
        gpu_release(g);
        for (int j = 0; j < sr.speed.n; ++j) {
            const speed_rec *r = &sr.speed.v[j];
            g->reference.v = xrealloc(g->reference.v,
                                      (size_t)(g->reference.n + 1) * sizeof *g->reference.v);
            speed_rec *d = &g->reference.v[g->reference.n++];
            *d = *r;
            snprintf(d->lesson, sizeof d->lesson, "%s", li->number);
            d->suite = xstrdup(r->suite);
            d->test = xstrdup(r->test);
            d->label = xstrdup(r->label);
            strlist_addf(&g->reference_notes, "lesson %s %s::%s (%s): worked solution %.1f us, "
                         "%.2fx the baseline%s", li->number, r->suite, r->test, r->label,
                         r->candidate_us, r->speedup, r->passed ? "" : " (it misses the "
                         "students' pass mark on this GPU)");
        }
        if (sr.speed.n == 0)
            strlist_addf(&g->reference_notes, "lesson %s %s: no time recorded (%s)", li->number,
                         suites.v[i], sr.why ? sr.why : "the speed checks did not run");
        suite_run_free(&sr);
    }
    strlist_free(&suites);
    free(binary);
    /* the same speed checks under the speed audit: how far an honest
     * kernel's claim stands above what Nsight Compute measures on this GPU */
    audit_reference(g, li);
    /* the suites the verify stage can only count: once, here */
    reference_verify_once(g, li, rl);
}

/* ---- one reference per GPU, shared by the workers on it --------------------- */

#define REFERENCE_FORMAT "fusion-lab reference 3" /* 2: audit_tool, audit_baseline_n; 3: audit_harness_n */

/* Add lesson `num`'s records and notes in `les` (the shared file's entry) to
 * g's reference. 0, or -1 when the entry is not one this grader wrote. */
static int reference_take(grader *g, const char *num, const cJSON *les)
{
    const cJSON *recs = cJSON_GetObjectItemCaseSensitive(les, "records");
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(les, "notes");
    if (!cJSON_IsArray(recs) || !cJSON_IsArray(notes) || cJSON_GetArraySize(recs) == 0) return -1;
    const cJSON *o;
    cJSON_ArrayForEach(o, recs) { /* all of them whole, or none taken */
        speed_rec r;
        if (speed_rec_from_json(o, 1, &r) != 0) return -1;
        free(r.suite);
        free(r.test);
        free(r.label);
    }
    cJSON_ArrayForEach(o, recs) {
        speed_rec r;
        if (speed_rec_from_json(o, 1, &r) != 0) return -1;
        snprintf(r.lesson, sizeof r.lesson, "%s", num);
        g->reference.v = xrealloc(g->reference.v,
                                  (size_t)(g->reference.n + 1) * sizeof *g->reference.v);
        g->reference.v[g->reference.n++] = r;
    }
    cJSON_ArrayForEach(o, notes)
        if (cJSON_IsString(o)) strlist_addf(&g->reference_notes, "%s (measured once on this "
                                            "GPU for all its workers)", o->valuestring);
    /* the "verify_once" suites' counts (a malformed one is left out: each
     * submission's verify stage then runs that suite itself) */
    const cJSON *once = cJSON_GetObjectItemCaseSensitive(les, "verify_once");
    cJSON_ArrayForEach(o, once) {
        const cJSON *suite = cJSON_GetObjectItemCaseSensitive(o, "suite");
        const cJSON *ran = cJSON_GetObjectItemCaseSensitive(o, "ran");
        if (!cJSON_IsString(suite) || !cJSON_IsArray(ran) || trusted_once(g, num, suite->valuestring))
            continue;
        int ok = 1;
        const cJSON *t;
        cJSON_ArrayForEach(t, ran) ok &= cJSON_IsString(t);
        if (!ok) continue;
        trusted_count *c = trusted_once_add(g, num, suite->valuestring);
        cJSON_ArrayForEach(t, ran) strlist_add(&c->ran, t->valuestring);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "measured");
        c->measured = cJSON_IsString(m) ? measured_lines(m->valuestring, c->ran.n) : NULL;
    }
    return 0;
}

/* Lesson `num`'s part of g's reference (records and notes from `note0` on)
 * as an entry of the shared file. */
static cJSON *reference_entry(const grader *g, const char *num, int note0)
{
    cJSON *les = cJSON_CreateObject();
    cJSON *recs = cJSON_AddArrayToObject(les, "records");
    for (int i = 0; i < g->reference.n; ++i) {
        const speed_rec *r = &g->reference.v[i];
        if (strcmp(r->lesson, num) != 0) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "suite", r->suite);
        cJSON_AddStringToObject(o, "test", r->test);
        cJSON_AddStringToObject(o, "label", r->label);
        cJSON_AddNumberToObject(o, "baseline_us", r->baseline_us);
        cJSON_AddNumberToObject(o, "candidate_us", r->candidate_us);
        cJSON_AddNumberToObject(o, "speedup", r->speedup);
        cJSON_AddNumberToObject(o, "min_speedup", r->min_speedup);
        cJSON_AddNumberToObject(o, "pct_of_ceiling", r->pct_of_ceiling);
        cJSON_AddNumberToObject(o, "min_pct", r->min_pct);
        cJSON_AddBoolToObject(o, "passed", r->passed);
        cJSON_AddNumberToObject(o, "audit_speedup", r->audit_speedup);
        cJSON_AddStringToObject(o, "audit_tool", r->audit_tool);
        cJSON_AddNumberToObject(o, "audit_baseline_n", r->audit_baseline_n);
        cJSON_AddNumberToObject(o, "audit_harness_n", r->audit_harness_n);
        cJSON_AddItemToArray(recs, o);
    }
    cJSON *notes = cJSON_AddArrayToObject(les, "notes");
    for (int i = note0; i < g->reference_notes.n; ++i)
        cJSON_AddItemToArray(notes, cJSON_CreateString(g->reference_notes.v[i]));
    cJSON *once = cJSON_AddArrayToObject(les, "verify_once");
    for (int i = 0; i < g->n_once; ++i) {
        if (strcmp(g->once[i].lesson, num) != 0) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "suite", g->once[i].suite);
        cJSON *ran = cJSON_AddArrayToObject(o, "ran");
        for (int j = 0; j < g->once[i].ran.n; ++j)
            cJSON_AddItemToArray(ran, cJSON_CreateString(g->once[i].ran.v[j]));
        if (g->once[i].measured) cJSON_AddStringToObject(o, "measured", g->once[i].measured);
        cJSON_AddItemToArray(once, o);
    }
    return les;
}

void reference_for_batch(grader *g)
{
    if (g->gpu_lock == NULL) { /* the GPU is this worker's alone: measure */
        for (int i = 0; i < g->lessons.n; ++i)
            run_reference(g, manifest_find(&g->man, g->lessons.v[i]),
                          rubric_find(&g->rub, g->lessons.v[i]));
        return;
    }
    /* Workers that share a GPU (--gpu-lock DIR) share its reference: the
     * first to take DIR/reference.lock measures each lesson and writes
     * DIR/reference.json; the others read it. DIR is under --work, which no
     * sandbox binds, and the parent empties it when the batch starts. */
    char *lock = path_join(g->gpu_lock, "reference.lock");
    char *path = path_join(g->gpu_lock, "reference.json");
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0)
        fprintf(stderr, "fusionlab_grade: cannot take %s: each worker measures its own "
                "reference\n", lock);
    double t0 = now_s();
    char *text = read_file(path, 16u << 20, NULL, NULL);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(root, "gpu");
    if (root == NULL || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, REFERENCE_FORMAT) != 0 ||
        !cJSON_IsString(gpu) || strcmp(gpu->valuestring, g->gpu_name ? g->gpu_name : "") != 0) {
        cJSON_Delete(root);
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "format", REFERENCE_FORMAT);
        cJSON_AddStringToObject(root, "gpu", g->gpu_name ? g->gpu_name : "");
        cJSON_AddObjectToObject(root, "lessons");
    }
    cJSON *lessons = cJSON_GetObjectItemCaseSensitive(root, "lessons");
    int measured = 0;
    for (int i = 0; i < g->lessons.n; ++i) {
        const char *num = g->lessons.v[i];
        const cJSON *les = cJSON_GetObjectItemCaseSensitive(lessons, num);
        if (les && reference_take(g, num, les) == 0) continue;
        int note0 = g->reference_notes.n, rec0 = g->reference.n;
        run_reference(g, manifest_find(&g->man, num), rubric_find(&g->rub, num));
        cJSON_DeleteItemFromObjectCaseSensitive(lessons, num);
        /* a measurement that left no time (killed, interrupted) is not
         * shared: each other worker then measures its own */
        if (g->reference.n > rec0) {
            cJSON_AddItemToObject(lessons, num, reference_entry(g, num, note0));
            measured = 1;
        }
    }
    if (measured) {
        char *out = cJSON_Print(root);
        if (out == NULL || write_file_atomic(path, out, strlen(out)) != 0)
            fprintf(stderr, "fusionlab_grade: cannot write %s: the other workers on this GPU "
                    "measure their own reference\n", path);
        free(out);
    } else {
        fprintf(stderr, "== reference: the worked solutions' speed on this GPU, as another "
                "worker measured it (waited %.0f s)\n", now_s() - t0);
    }
    cJSON_Delete(root);
    if (fd >= 0) close(fd); /* (and the lock with it) */
    free(lock);
    free(path);
}
