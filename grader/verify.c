/* grader/verify.c — the verify stage: a pass counts only as far as the
 * grader can bear it out.
 *
 * The student's test program writes its report (Criterion's JSON) and its
 * evidence (common/evidence.h: every output it compared, sampled, with the
 * reference) into its sandbox's scratch: all of it is the student's
 * program's word. The worked solution's test program runs the same suites
 * on the same inputs (the same seed and salt) in a sandbox of its own: its
 * evidence holds the trusted references. For every test, the grader then
 * counts the cases it can verify itself: a case of the trusted run (one
 * test process, so one pid) is verified when each output it compared has a
 * record of the student's run with the same key whose sampled values are
 * within the trusted record's tolerance of the trusted reference. A test
 * whose report claims more passing cases than that (plus the cases of the
 * trusted run that ran but compared no output array, which only the report
 * can speak for), or that gives fewer cases of a test than the trusted run
 * ran (its passes would be scored over fewer cases than there are), makes
 * the whole lesson score 0.
 */
#define _XOPEN_SOURCE 700
#include "stages.h"
#include "../common/evidence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    fl_evidence_head h;
    fl_evidence_sample *s;
    int used;
} ev_rec;

typedef struct {
    ev_rec *v;
    int n;
    int damaged; /* a record cut short or not a record at all */
} ev_set;

/* Records of `path` (none when NULL or missing). At most 256 MiB is read. */
static void ev_load(const char *path, ev_set *e)
{
    memset(e, 0, sizeof *e);
    if (path == NULL) return;
    size_t len = 0;
    int truncated = 0;
    char *data = read_step_file(path, 256u << 20, &len, &truncated);
    if (data == NULL) return;
    e->damaged = truncated;
    size_t off = 0;
    while (off + sizeof(fl_evidence_head) <= len) {
        fl_evidence_head h;
        memcpy(&h, data + off, sizeof h);
        if (memcmp(h.magic, FL_EVIDENCE_MAGIC, sizeof FL_EVIDENCE_MAGIC) != 0 ||
            h.count > FL_EVIDENCE_SAMPLES ||
            off + sizeof h + (size_t)h.count * sizeof(fl_evidence_sample) > len) {
            e->damaged = 1;
            break;
        }
        h.suite[sizeof h.suite - 1] = h.test[sizeof h.test - 1] = h.what[sizeof h.what - 1] = '\0';
        e->v = xrealloc(e->v, (size_t)(e->n + 1) * sizeof *e->v);
        ev_rec *r = &e->v[e->n++];
        r->h = h;
        r->used = 0;
        r->s = xmalloc((size_t)h.count * sizeof *r->s + 1);
        memcpy(r->s, data + off + sizeof h, (size_t)h.count * sizeof *r->s);
        off += sizeof h + (size_t)h.count * sizeof *r->s;
    }
    if (off != len) e->damaged = 1;
    free(data);
}

static void ev_free(ev_set *e)
{
    for (int i = 0; i < e->n; ++i) free(e->v[i].s);
    free(e->v);
    memset(e, 0, sizeof *e);
}

/* Whether the student's record s bears out the trusted record t. */
static int bears_out(const ev_rec *s, const ev_rec *t)
{
    if (s->h.n != t->h.n || s->h.key != t->h.key || s->h.count != t->h.count ||
        strcmp(s->h.what, t->h.what) != 0)
        return 0;
    for (uint32_t k = 0; k < t->h.count; ++k) {
        if (s->s[k].index != t->s[k].index) return 0;
        if (!fl_evidence_ok(s->s[k].got, t->s[k].want, t->h.atol, t->h.rtol)) return 0;
    }
    return 1;
}

/* Use up a record of `stu` (same suite and test) that bears out t. */
static int take_match(ev_set *stu, const ev_rec *t)
{
    for (int i = 0; i < stu->n; ++i) {
        ev_rec *s = &stu->v[i];
        if (s->used || s->h.key != t->h.key || strcmp(s->h.suite, t->h.suite) != 0 ||
            strcmp(s->h.test, t->h.test) != 0)
            continue;
        if (bears_out(s, t)) {
            s->used = 1;
            return 1;
        }
    }
    return 0;
}

static int count_passed(const suite_run *sr, const char *test)
{
    int n = 0;
    for (int i = 0; i < sr->n; ++i)
        if (sr->cases[i].status == CR_PASSED && strcmp(sr->cases[i].test, test) == 0) ++n;
    return n;
}

/* The cases of `test` in a report, whatever became of them. */
static int count_listed(const suite_run *sr, const char *test)
{
    int n = 0;
    for (int i = 0; i < sr->n; ++i) n += strcmp(sr->cases[i].test, test) == 0;
    return n;
}

/* The trusted run's cases of `test` that ran to their end, passed or failed
 * (a counters check of the worked solution may miss its mark while the GPU
 * is shared); a case it skipped, for want of a GPU, could not have passed,
 * and one that crashed, timed out or was killed may have lost records it
 * would have written (the evidence ends its process when it cannot write
 * one): none of those vouches for a pass. *cut: those that did not end. */
static int count_ran(const suite_run *sr, const char *test, int *cut)
{
    int n = 0;
    *cut = 0;
    for (int i = 0; i < sr->n; ++i) {
        if (strcmp(sr->cases[i].test, test) != 0) continue;
        cr_status st = sr->cases[i].status;
        if (st == CR_PASSED || st == CR_FAILED) ++n;
        else if (st != CR_SKIPPED) ++*cut;
    }
    return n;
}

/* For one test of one suite: the trusted run's cases that compared outputs
 * (one pid each), how many of them the student's evidence bears out. */
static void verify_test(const ev_set *tru, ev_set *stu, const char *suite, const char *test,
                        int *instances, int *verified)
{
    *instances = *verified = 0;
    for (int i = 0; i < tru->n; ++i) {
        const ev_rec *a = &tru->v[i];
        if (strcmp(a->h.suite, suite) != 0 || strcmp(a->h.test, test) != 0) continue;
        int first = 1; /* the first record of this pid starts the case */
        for (int j = 0; j < i && first; ++j)
            if (tru->v[j].h.pid == a->h.pid && strcmp(tru->v[j].h.suite, suite) == 0 &&
                strcmp(tru->v[j].h.test, test) == 0)
                first = 0;
        if (!first) continue;
        ++*instances;
        int ok = 1;
        for (int j = i; j < tru->n && ok; ++j) {
            const ev_rec *b = &tru->v[j];
            if (b->h.pid != a->h.pid || strcmp(b->h.suite, suite) != 0 ||
                strcmp(b->h.test, test) != 0)
                continue;
            ok = take_match(stu, b);
        }
        *verified += ok;
    }
}

/* `k` more cases of `test` in sr, each KILLED: cases the trusted run ran that
 * a run without its report never got to report. */
static void add_unreported(suite_run *sr, const char *test, int k)
{
    sr->cases = xrealloc(sr->cases, (size_t)(sr->n + k + 1) * sizeof *sr->cases);
    for (int i = 0; i < k; ++i) {
        cr_case *c = &sr->cases[sr->n++];
        c->test = xstrdup(test);
        c->status = CR_KILLED;
        c->message = xstrdup("no result: the suite's run ended before this case reported");
        c->extra = xstrdup("");
    }
}

char *verify_lesson(const strlist *suites, suite_run *student, char *const *student_ev,
                    const suite_run *trusted, char *const *trusted_ev, int *grader_fault)
{
    sbuf why = {0};
    int theirs = 0; /* a shortfall that no failure of the trusted run explains */
    for (int i = 0; i < suites->n; ++i) {
        suite_run *st = &student[i];
        const suite_run *tr = &trusted[i];
        if (tr->state != SR_OK) {
            sbuf_addf(&why, "suite %s: the worked solution's run on the same inputs did not "
                      "finish (%s), so nothing of this suite could be verified\n",
                      suites->v[i], tr->why ? tr->why : "no report");
            continue;
        }
        ev_set tev, sev;
        ev_load(trusted_ev[i], &tev);
        ev_load(student_ev[i], &sev);
        if (tev.damaged)
            sbuf_addf(&why, "suite %s: the worked solution's evidence is damaged (the grader's "
                      "disk?)\n", suites->v[i]);
        strlist tests = {0};
        for (int c = 0; c < st->n; ++c)
            if (!strlist_has(&tests, st->cases[c].test)) strlist_add(&tests, st->cases[c].test);
        for (int t = 0; t < tests.n; ++t) {
            int claimed = count_passed(st, tests.v[t]);
            if (claimed == 0) continue;
            int cut = 0;
            int trusted_ran = count_ran(tr, tests.v[t], &cut);
            int instances, verified;
            verify_test(&tev, &sev, suites->v[i], tests.v[t], &instances, &verified);
            int unverifiable = trusted_ran > instances ? trusted_ran - instances : 0;
            /* a report that stands for fewer cases than the trusted run ran
             * would score its passes over fewer cases than there are */
            int listed = count_listed(st, tests.v[t]);
            if (st->state == SR_OK && listed < trusted_ran) {
                theirs = 1;
                sbuf_addf(&why, "%s::%s: the report gives %d case%s; the worked solution's run on "
                          "the same inputs ran %d\n", suites->v[i], tests.v[t], listed,
                          listed == 1 ? "" : "s", trusted_ran);
                continue;
            }
            /* a run that ended without its report lists the cases its output
             * shows: those the trusted run ran beyond them count as cases that
             * did not pass (not as fewer cases to score over) */
            if (st->state != SR_OK && listed < trusted_ran)
                add_unreported(st, tests.v[t], trusted_ran - listed);
            if (claimed > verified + unverifiable + cut) theirs = 1;
            if (claimed > verified + unverifiable)
                sbuf_addf(&why, "%s::%s: the report claims %d passing case%s; the grader can "
                          "verify %d (%d compared outputs borne out against the worked "
                          "solution's run on the same inputs, %d that compare none)%s\n",
                          suites->v[i], tests.v[t], claimed, claimed == 1 ? "" : "s",
                          verified + unverifiable, verified, unverifiable,
                          cut ? "; the worked solution's own run of this test did not finish "
                                "every case (crashed, timed out or killed: the grading "
                                "machine's fault, not your code's; grade again)"
                              : "");
        }
        strlist_free(&tests);
        ev_free(&tev);
        ev_free(&sev);
    }
    if (grader_fault) *grader_fault = why.len > 0 && !theirs;
    return why.len ? sbuf_take(&why) : (sbuf_free(&why), NULL);
}

/* ---- suites verified from one trusted run per GPU (rubric "verify_once") ---- */

const trusted_count *trusted_once(const grader *g, const char *lesson, const char *suite)
{
    for (int i = 0; i < g->n_once; ++i)
        if (strcmp(g->once[i].lesson, lesson) == 0 && strcmp(g->once[i].suite, suite) == 0)
            return &g->once[i];
    return NULL;
}

trusted_count *trusted_once_add(grader *g, const char *lesson, const char *suite)
{
    g->once = xrealloc(g->once, (size_t)(g->n_once + 1) * sizeof *g->once);
    trusted_count *t = &g->once[g->n_once++];
    memset(t, 0, sizeof *t);
    snprintf(t->lesson, sizeof t->lesson, "%s", lesson);
    t->suite = xstrdup(suite);
    return t;
}

/* `text` when it is `n` whole lines of "name rows cols read write kernels"
 * (a copy), else NULL: nothing is handed on that the run did not write whole,
 * one line per case that ran. */
char *measured_lines(const char *text, int n)
{
    if (text == NULL || n <= 0) return NULL;
    int lines = 0;
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        if (e == NULL || e - p > 200) return NULL;
        char line[256], name[64], tail;
        unsigned long long r, c;
        double rd, wr;
        int nk;
        memcpy(line, p, (size_t)(e - p));
        line[e - p] = '\0';
        if (sscanf(line, "%63s %llu %llu %lf %lf %d %c", name, &r, &c, &rd, &wr, &nk, &tail) != 6 ||
            r == 0 || c == 0 || !(rd > 0) || !(wr > 0) || nk <= 0)
            return NULL;
        ++lines;
        p = e + 1;
    }
    return lines == n ? xstrdup(text) : NULL;
}

void reference_verify_once(grader *g, const lesson_info *li, const rubric_lesson *rl)
{
    if (rl == NULL || li->b.solution_test_bin == NULL || !is_file(li->b.solution_test_bin))
        return;
    for (int i = 0; i < rl->n_verify_once && !proc_interrupted(); ++i) {
        const char *suite = rl->verify_once[i];
        if (trusted_once(g, li->number, suite)) continue;
        fprintf(stderr, "== reference: lesson %s, worked solution, suite %s (its count of cases "
                "for every submission's verify stage)\n", li->number, suite);
        suite_run sr;
        char *ev_path = NULL;
        /* what the run measures, for every submission's run of the suite:
         * a file in the run's own folder (its working directory there) */
        char *outer_env = g->step_env;
        g->step_env = xstrdup("FUSIONLAB_COUNTERS_SAVE=measured.txt");
        gpu_hold(g, GPU_ALONE);
        run_suite(g, STEP_TRUSTED, &g->reference_keys, li->b.solution_test_bin, suite,
                  g->suite_timeout, &sr, NULL, &ev_path);
        gpu_release(g);
        free(g->step_env);
        g->step_env = outer_env;
        char *measured_path = xasprintf("%s/trusted-%s/measured.txt", g->run_dir, suite);
        char *measured = read_step_file(measured_path, 1u << 20, NULL, NULL);
        free(measured_path);
        ev_set ev;
        ev_load(ev_path, &ev);
        int ran = 0, ended = 0, passed = 0;
        for (int c = 0; c < sr.n; ++c) {
            ran += sr.cases[c].status != CR_SKIPPED;
            ended += sr.cases[c].status == CR_PASSED || sr.cases[c].status == CR_FAILED;
            passed += sr.cases[c].status == CR_PASSED;
        }
        if (sr.state != SR_OK || sr.n == 0 || ended != ran) {
            strlist_addf(&g->reference_notes, "lesson %s %s: the worked solution's run did not "
                         "finish (%s): each submission's verify stage runs it", li->number,
                         suite, sr.why                ? sr.why
                                : sr.state != SR_OK ? "no report"
                                                    : "a case crashed, timed out or was killed");
        } else if (ran != 0 && ran != sr.n) {
            /* some cases skipped and some not: not the GPU's word alone (a
             * glitch here would count against every submission of the batch) */
            strlist_addf(&g->reference_notes, "lesson %s %s: the worked solution ran %d of its %d "
                         "cases: each submission's verify stage runs it", li->number, suite, ran,
                         sr.n);
        } else if (ev.n > 0 || ev.damaged) {
            strlist_addf(&g->reference_notes, "lesson %s %s: the worked solution's run compared "
                         "outputs (%d records): each submission's verify stage runs it",
                         li->number, suite, ev.n);
        } else {
            trusted_count *t = trusted_once_add(g, li->number, suite);
            for (int c = 0; c < sr.n; ++c) /* (each ran to its end, or skipped) */
                if (sr.cases[c].status != CR_SKIPPED) strlist_add(&t->ran, sr.cases[c].test);
            /* what it measured is handed on only when the worked solution's
             * models matched every measurement: a counter that misread here
             * would fail every honest model of the batch. Tests that ran
             * again (the first run ended without its report, or its cases
             * together did not stand for every case) wrote to another
             * folder: the first run's file, read above, is then not what
             * the passes stand for, and nothing is handed on */
            t->measured = passed == ran && sr.again == 0 ? measured_lines(measured, ran) : NULL;
            strlist_addf(&g->reference_notes, "lesson %s %s: the worked solution ran %d of its %d "
                         "cases on this GPU, comparing no output array: every submission's "
                         "verify stage counts on that run%s", li->number, suite, ran, sr.n,
                         t->measured       ? "; every submission's run takes what it "
                                             "measured (FUSIONLAB_COUNTERS_FROM)"
                         : passed != ran ? "; what it measured is not handed on (a case of "
                                           "the worked solution's did not pass: each "
                                           "submission's run measures its own)"
                         : sr.again != 0 ? "; what it measured is not handed on (some of its "
                                           "cases ran again: each submission's run measures "
                                           "its own)"
                                         : "");
        }
        free(measured);
        ev_free(&ev);
        free(ev_path);
        suite_run_free(&sr);
    }
}
