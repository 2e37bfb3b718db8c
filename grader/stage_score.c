/* grader/stage_score.c — the score stage: every check of the rubric scored
 * from the reports of the run stage: a suite's check over its cases (or
 * the ones the rubric names), a speed check on the curve from the worked
 * solution's time in this run, the sanitizer check from its verdict.
 */
#define _XOPEN_SOURCE 700
#include "stages.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FAILS_SHOWN 4

/* ---- 5. scoring --------------------------------------------------------------- */

static const char *case_word(cr_status s)
{
    switch (s) {
    case CR_PASSED: return "PASS";
    case CR_FAILED: return "FAIL";
    case CR_CRASHED: return "CRASH";
    case CR_TIMED_OUT: return "TIMED OUT";
    case CR_SKIPPED: return "NOT RUN";
    case CR_KILLED: return "KILLED";
    }
    return "?";
}

/* The measured figures of a speed check, from its record (structured: never
 * what the test program printed). */
static void speed_line(sbuf *b, const speed_rec *r)
{
    if (r == NULL) return;
    sbuf_addf(b, "    measured %s: baseline %.1f us, yours %.1f us: %.2fx (need >= %.2fx)",
              r->label, r->baseline_us, r->candidate_us, r->speedup, r->min_speedup);
    if (r->min_pct > 0)
        sbuf_addf(b, "; %.0f%% of the copy ceiling (need >= %.0f%%)", r->pct_of_ceiling,
                  r->min_pct);
    sbuf_add(b, "\n");
}

static void describe_case(sbuf *b, const cr_case *c, int index, int show_index)
{
    char where[32] = "";
    if (show_index) snprintf(where, sizeof where, " (case %d)", index);
    const char *m = c->message;
    switch (c->status) {
    case CR_CRASHED:
        sbuf_addf(b, "  CRASH%s: the test process died (a segfault, an abort or a fatal CUDA "
                  "error such as an illegal address); compute-sanitizer names the line\n", where);
        break;
    case CR_TIMED_OUT:
        sbuf_addf(b, "  TIMED OUT%s: the test ran past its time limit (a kernel or a loop that "
                  "never ends?)\n", where);
        break;
    case CR_KILLED:
        sbuf_addf(b, "  KILLED%s: the whole run was stopped at its wall-clock limit while this "
                  "case ran\n", where);
        break;
    default: {
        char *t = trim_middle(m[0] ? m : "failed without a message (did the test process exit?)",
                              700, 200);
        sbuf_addf(b, "  %s%s: %s\n", case_word(c->status), where, t);
        free(t);
    }
    }
}

static void score_cases(const grader *g, const rubric_check *k, const suite_run *sr,
                        check_result *cr)
{
    (void)g;
    /* the instances of the check's test, in run order */
    int n_all = 0;
    const cr_case **all = xcalloc((size_t)(sr->n + 1), sizeof *all);
    for (int i = 0; i < sr->n; ++i)
        if (!k->test || strcmp(sr->cases[i].test, k->test) == 0) all[n_all++] = &sr->cases[i];
    sbuf out = {0};

    int use_index = k->cases != NULL;
    int complete = sr->state == SR_OK;
    if (use_index && complete && k->expect_cases > 0 && n_all != k->expect_cases) {
        sbuf_addf(&out, "(the rubric expects %d cases of %s but the test has %d: scored over "
                  "all of them)\n", k->expect_cases, k->test, n_all);
        use_index = 0;
    }
    int n_sel = use_index ? k->n_cases : n_all;
    int pass = 0, skip = 0, missing = 0, shown = 0;
    const char *skip_reason = NULL;
    sbuf fails = {0};
    for (int j = 0; j < n_sel; ++j) {
        int idx = use_index ? k->cases[j] : j;
        const cr_case *c = idx < n_all ? all[idx] : NULL;
        if (c == NULL) {
            ++missing;
            continue;
        }
        if (c->status == CR_PASSED) ++pass;
        else if (c->status == CR_SKIPPED) {
            ++skip;
            if (!skip_reason) skip_reason = c->message;
        } else if (shown++ < MAX_FAILS_SHOWN) {
            describe_case(&fails, c, idx, use_index || n_sel > 1);
        }
    }
    cr->max = k->points;
    if (sr->state == SR_NOT_RUN) {
        cr->status = ST_NOT_RUN;
        sbuf_addf(&out, "not run: %s\n", sr->why);
    } else if (!complete && missing == n_sel) {
        cr->status = ST_FAILED;
        sbuf_addf(&out, "%s: %s\n", sr->state == SR_KILLED ? "KILLED" : "NO REPORT", sr->why);
        missing = 0; /* said */
    } else if (n_sel == 0 || (missing == n_sel && complete)) {
        cr->status = ST_FAILED;
        sbuf_addf(&out, "no result: the test program reported no case of %s%s%s\n", k->suite,
                  k->test ? "::" : "", k->test ? k->test : "");
    } else if (skip == n_sel) {
        cr->status = ST_NOT_RUN;
        sbuf_addf(&out, "not run: %s\n", skip_reason && skip_reason[0] ? skip_reason : "skipped");
    } else {
        cr->score = k->points * (double)pass / (double)n_sel;
        cr->status = pass == n_sel ? ST_PASSED : pass == 0 ? ST_FAILED : ST_PARTIAL;
        if (pass == n_sel) sbuf_addf(&out, "%d of %d cases pass\n", pass, n_sel);
        else sbuf_addf(&out, "%d of %d cases pass:\n", pass, n_sel);
        sbuf_add(&out, sbuf_str(&fails));
        if (shown > MAX_FAILS_SHOWN)
            sbuf_addf(&out, "  (%d more failing cases not shown: fix the ones above first)\n",
                      shown - MAX_FAILS_SHOWN);
        if (skip) sbuf_addf(&out, "  %d cases not run: %s\n", skip, skip_reason ? skip_reason : "");
    }
    if (missing && sr->state != SR_OK)
        sbuf_addf(&out, "  %d cases never ran: %s\n", missing, sr->why ? sr->why : "");
    cr->output = sbuf_take(&out);
    sbuf_free(&fails);
    free(all);
}

static void score_speed(const grader *g, const lesson_info *li, const rubric_check *k,
                        const suite_run *sr, check_result *cr)
{
    score_cases(g, k, sr, cr); /* status and messages as for any check */
    if (cr->status != ST_PASSED) {
        cr->score = 0.0;
        if (cr->status == ST_PARTIAL) cr->status = ST_FAILED;
        sbuf b = {0};
        sbuf_add(&b, cr->output);
        speed_line(&b, speed_find(&sr->speed, NULL, k->suite, k->test));
        free(cr->output);
        cr->output = sbuf_take(&b);
        return;
    }
    const speed_rec *mine = speed_find(&sr->speed, NULL, k->suite, k->test);
    const speed_rec *ref = speed_find(&g->reference, li->number, k->suite, k->test);
    sbuf b = {0};
    if (mine == NULL) {
        /* the harness writes one for every speed check it runs */
        sbuf_add(&b, "0: the test program says the check passes but wrote no speed record "
                 "(the harness always writes one): nothing to score\n");
        cr->score = 0.0;
        cr->status = ST_FAILED;
    } else if (!mine->passed) {
        /* the harness writes its record from the same figures it then
         * asserts on: a pass whose record says otherwise skipped the asserts */
        sbuf_addf(&b, "0: the test program says the check passes, but its speed record says "
                  "it does not (%s: %.2fx the baseline, need >= %.2fx", mine->label,
                  mine->speedup, mine->min_speedup);
        if (mine->min_pct > 0)
            sbuf_addf(&b, "; %.0f%% of the copy ceiling, need >= %.0f%%", mine->pct_of_ceiling,
                      mine->min_pct);
        sbuf_add(&b, "; or a run was wrong, or work hid from the timed stream): nothing to "
                 "score\n");
        cr->score = 0.0;
        cr->status = ST_FAILED;
    } else {
        double t = mine->candidate_us;
        /* the slowest time that still passes: both rules of the check */
        double t_pass = mine->min_speedup > 0 ? mine->baseline_us / mine->min_speedup : t;
        if (mine->min_pct > 0 && mine->pct_of_ceiling > 0) {
            double t_pct = t * mine->pct_of_ceiling / mine->min_pct;
            if (t_pct < t_pass) t_pass = t_pct;
        }
        sbuf_addf(&b, "passes: %s: yours %.1f us, %.2fx the baseline (need >= %.2fx)\n",
                  mine->label, t, mine->speedup, mine->min_speedup);
        if (ref == NULL || ref->candidate_us <= 0) {
            cr->score = k->points;
            sbuf_add(&b, "no reference time of the worked solution in this run: full marks "
                     "for passing\n");
        } else {
            double t_full = g->rub.speed_full_within * ref->candidate_us;
            double frac;
            if (t <= t_full || t_pass <= t_full) frac = 1.0;
            else {
                frac = g->rub.speed_floor + (1.0 - g->rub.speed_floor) * log(t_pass / t) /
                                                log(t_pass / t_full);
                if (frac < g->rub.speed_floor) frac = g->rub.speed_floor;
                if (frac > 1.0) frac = 1.0;
            }
            cr->score = k->points * frac;
            sbuf_addf(&b, "worked solution on this GPU in this run: %.1f us; full marks at "
                      "<= %.1f us (%.2fx its time), %.0f%% of the points at the pass mark "
                      "(%.1f us); yours earns %.0f%%\n", ref->candidate_us, t_full,
                      g->rub.speed_full_within, 100.0 * g->rub.speed_floor, t_pass, 100.0 * frac);
        }
    }
    free(cr->output);
    cr->output = sbuf_take(&b);
    if (cr->score < k->points && cr->status == ST_PASSED) cr->status = ST_PARTIAL;
}

/* The state the lesson's scores leave it in, in one line. */
static char *graded_summary(const lesson_result *lr)
{
    if (lr->n_killed > 0)
        return xasprintf("graded; %d suite%s stopped before it reported (a hang or a "
                         "crash of the test program: see the notes)",
                         lr->n_killed, lr->n_killed == 1 ? "" : "s");
    if (lr->not_run_no_gpu > 0)
        return xasprintf("graded without a GPU: %d check%s not run (no CUDA device)",
                         lr->not_run_no_gpu, lr->not_run_no_gpu == 1 ? "" : "s");
    return xstrdup("graded");
}

void score_lesson(const grader *g, lesson_result *lr, const strlist *suites,
                  const suite_run *runs, const sanitizer_run *san)
{
    const rubric_lesson *rl = lr->rl;
    lr->state = L_GRADED;
    /* the correctness checks first: the sanitizer's points are their share */
    double earned = 0.0, possible = 0.0;
    int correctness = 0; /* checks of cases in the rubric */
    for (int i = 0; i < rl->n; ++i) {
        const rubric_check *k = &rl->checks[i];
        check_result *cr = &lr->checks[i];
        if (k->kind == KIND_SANITIZER) continue;
        int r = -1;
        for (int j = 0; j < suites->n; ++j)
            if (strcmp(suites->v[j], k->suite) == 0) r = j;
        if (r < 0) {
            cr->status = ST_NOT_RUN;
            cr->output = xstrdup("not run: the rubric names no suite for it");
            continue;
        }
        if (k->kind == KIND_SPEED) {
            score_speed(g, lr->li, k, &runs[r], cr);
        } else {
            score_cases(g, k, &runs[r], cr);
            ++correctness;
            /* a check that could not run here (a case too large for this
             * GPU) weighs nothing either way */
            if (cr->status != ST_NOT_RUN) {
                earned += cr->score;
                possible += k->points;
            }
        }
        char *clean = scrub(g, cr->output);
        free(cr->output);
        cr->output = clean;
        if (cr->status == ST_NOT_RUN && strstr(cr->output, "no CUDA device")) lr->not_run_no_gpu++;
        lr->score += cr->score;
    }
    /* A kernel that computes nothing is clean under every tool: a clean run
     * earns the sanitizer's points in the share of the correctness points
     * the lesson earned (all of them for a correct kernel, none for the
     * untouched skeleton). */
    double share = possible > 0.0 ? earned / possible : correctness ? 0.0 : 1.0;
    for (int i = 0; i < rl->n; ++i) {
        const rubric_check *k = &rl->checks[i];
        check_result *cr = &lr->checks[i];
        if (k->kind != KIND_SANITIZER) continue;
        if (k->points <= 0) {
            cr->status = ST_NOT_RUN;
            cr->output = xstrdup("not run: worth 0 points in the rubric (give it points to "
                                 "run compute-sanitizer)");
            continue;
        }
        cr->status = san->status;
        char *clean = scrub(g, san->output);
        if (san->status == ST_PASSED && share < 1.0) {
            cr->score = k->points * share;
            cr->status = cr->score > 0.0 ? ST_PARTIAL : ST_FAILED;
            cr->output = xasprintf("clean, but a clean run earns these points only in the share "
                                   "of the correctness points this lesson earned (%.2f of %.2f): "
                                   "a kernel that does not do the work is clean too\n%s",
                                   earned, possible, clean);
            free(clean);
        } else {
            cr->score = san->status == ST_PASSED ? k->points : 0.0;
            cr->output = clean;
        }
        if (cr->status == ST_NOT_RUN && strstr(cr->output, "no CUDA device")) lr->not_run_no_gpu++;
        lr->score += cr->score;
    }
    lr->summary = graded_summary(lr);
}
