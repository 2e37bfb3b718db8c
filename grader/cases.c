/* grader/cases.c — a parameterized test's cases run in one process: what
 * one Criterion result stands for.
 *
 * The grader runs the worked solution's suites (the verify stage) with
 * FUSIONLAB_CASES=together (--cases, grade.c): every FL_PARAM_TEST of
 * tests/fl_test.h then runs its cases in a few test processes, one after
 * another in each, and Criterion reports one result per process. Every
 * process that starts CUDA costs about 0.2 s and the driver starts them one
 * at a time across the machine: the verify stage of a submission's five
 * lessons starts about 120 processes instead of about 220. The student's
 * runs stay one process per case, where each case makes its launcher's
 * first call in a fresh process (stage_run.c says why).
 *
 * The cases are shared out among P processes (FUSIONLAB_CASES_PROCESSES:
 * the run's --jobs, so that a test of heavy cases still runs side by side),
 * and the test program appends to FUSIONLAB_CASES_REPORT
 *     param SUITE/TEST N P        the runner, as it starts the test
 *     ran SUITE/TEST N C R S      process C (0 .. P-1), past its last case
 * and cases_expand() turns the P results into N: N passed cases when each
 * passed and all N ran, N skipped ones (the reason the first gave) when all
 * N skipped. Anything else (a case that failed, crashed or hung, some run
 * and some skipped, lines missing or at odds with each other) leaves the
 * test to run again one process per case, and only that run counts: a case
 * fails or passes exactly as it does in a process of its own.
 *
 * The lines are checked as if a student's program had written them (it
 * would be its word, as its Criterion report is): a report that stands for
 * fewer cases than the worked solution's run on the same inputs, or claims
 * passes its evidence cannot bear out, is the verify stage's business
 * (verify.c): the lesson scores 0 there.
 */
#define _XOPEN_SOURCE 700
#include "stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHARES 64    /* tests/fl_test.c's FL_CASES_MAX_PROCESSES */
#define MAX_CASES 4096   /* tests/fl_test.h's FL_CASES_MAX */
#define MAX_EXPANDED 65536 /* cases a suite's results may stand for, in all */

typedef struct {
    char *test;       /* the test's name within the suite */
    long n, p;        /* of its "param" lines: N cases in P processes; -1: they disagree */
    int n_ran;        /* "ran" lines */
    int bad;          /* a "ran" line at odds with the "param" line, or a share twice */
    long ran, skipped; /* over the "ran" lines */
    unsigned char seen[MAX_SHARES];
} together_line;

static together_line *line_for(together_line **v, int *n, const char *test)
{
    for (int i = 0; i < *n; ++i)
        if (strcmp((*v)[i].test, test) == 0) return &(*v)[i];
    *v = xrealloc(*v, (size_t)(*n + 1) * sizeof **v);
    together_line *t = &(*v)[(*n)++];
    memset(t, 0, sizeof *t);
    t->test = xstrdup(test);
    return t;
}

/* The lines of `report` for `suite`. Lines of other suites, or that do not
 * parse, are left out (a test without a line of its own ran as it always
 * does, one case per result). A "ran" line is checked against the
 * "param" lines once all are read. */
static together_line *parse_lines(const char *report, const char *suite, int *n_out)
{
    together_line *v = NULL;
    int n = 0;
    size_t sl = strlen(suite);
    char *copy = xstrdup(report ? report : "");
    char *save = NULL;
    typedef struct {
        int t;
        long n, c, r, s;
    } ran_line;
    ran_line *rl = NULL;
    int n_rl = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char kind[8], name[192], tail;
        long a = -1, b = -1, c = -1, d = -1;
        int k = sscanf(line, "%7s %191s %ld %ld %ld %ld %c", kind, name, &a, &b, &c, &d, &tail);
        if (k < 2 || strncmp(name, suite, sl) != 0 || name[sl] != '/' || name[sl + 1] == '\0')
            continue;
        if (strcmp(kind, "param") == 0 && k == 4 && a > 1 && a <= MAX_CASES && b >= 1 &&
            b <= a && b <= MAX_SHARES) {
            together_line *t = line_for(&v, &n, name + sl + 1);
            if (t->n == 0) t->n = a, t->p = b;
            else if (t->n != a || t->p != b) t->n = t->p = -1;
        } else if (strcmp(kind, "ran") == 0 && k == 6 && a > 1 && a <= MAX_CASES && b >= 0 &&
                   b < MAX_SHARES && c >= 0 && c <= a && d >= 0 && d <= a) {
            together_line *t = line_for(&v, &n, name + sl + 1);
            rl = xrealloc(rl, (size_t)(n_rl + 1) * sizeof *rl);
            rl[n_rl++] = (ran_line){(int)(t - v), a, b, c, d};
        }
    }
    for (int i = 0; i < n_rl; ++i) {
        together_line *t = &v[rl[i].t];
        t->n_ran++;
        long share = rl[i].c;
        /* share C of P holds cases [C*N/P, (C+1)*N/P) */
        if (t->n <= 1 || rl[i].n != t->n || share < 0 || share >= t->p || t->seen[share] ||
            rl[i].r + rl[i].s != (share + 1) * t->n / t->p - share * t->n / t->p) {
            t->bad = 1;
            continue;
        }
        t->seen[share] = 1;
        t->ran += rl[i].r;
        t->skipped += rl[i].s;
    }
    free(rl);
    free(copy);
    *n_out = n;
    return v;
}

static void add_case(cr_case **v, int *n, const char *test, cr_status st, const char *msg,
                     const char *extra)
{
    *v = xrealloc(*v, (size_t)(*n + 1) * sizeof **v);
    cr_case *c = &(*v)[(*n)++];
    c->test = xstrdup(test);
    c->status = st;
    c->message = xstrdup(msg ? msg : "");
    c->extra = xstrdup(extra ? extra : "");
}

char *cases_together_tests(const char *report, const char *suite)
{
    int nl = 0;
    together_line *lines = parse_lines(report, suite, &nl);
    sbuf b = {0};
    for (int j = 0; j < nl; ++j) {
        if (lines[j].n != 0) sbuf_addf(&b, "%s%s", b.len ? "|" : "", lines[j].test);
        free(lines[j].test);
    }
    free(lines);
    return b.len ? sbuf_take(&b) : (sbuf_free(&b), NULL);
}

char *cases_expand(suite_run *sr, const char *report, int jobs)
{
    if (sr->state != SR_OK) return NULL; /* (the caller runs the whole part again) */
    int nl = 0;
    together_line *lines = parse_lines(report, sr->suite ? sr->suite : "", &nl);
    if (nl == 0) {
        free(lines);
        return NULL;
    }
    sbuf again = {0};
    cr_case *out = NULL;
    int n_out = 0;
    long expanded = 0;
    for (int i = 0; i < sr->n; ++i) {
        cr_case *c = &sr->cases[i];
        together_line *t = NULL;
        for (int j = 0; j < nl && t == NULL; ++j)
            if (strcmp(lines[j].test, c->test) == 0) t = &lines[j];
        if (t == NULL || t->n == 0) { /* an ordinary test: one result, one case */
            add_case(&out, &n_out, c->test, c->status, c->message, c->extra);
            continue;
        }
        /* the test's results (one per share), all alike */
        int results = 0, alike = 1;
        for (int j = 0; j < sr->n; ++j)
            if (strcmp(sr->cases[j].test, c->test) == 0) {
                ++results;
                alike &= sr->cases[j].status == c->status;
            }
        int first = 1;
        for (int j = 0; j < i && first; ++j) first = strcmp(sr->cases[j].test, c->test) != 0;
        if (!first) continue; /* (decided at the test's first result) */
        long n = t->n;
        /* P is the run's --jobs, or N when fewer */
        long want_p = jobs > 1 ? jobs : 1;
        if (want_p > n) want_p = n;
        int whole = n > 1 && t->p == want_p && results == t->p && alike && !t->bad &&
                    t->n_ran == t->p && expanded + n <= MAX_EXPANDED;
        if (whole) expanded += n;
        if (whole && c->status == CR_PASSED && t->ran == n && t->skipped == 0) {
            for (long k = 0; k < n; ++k)
                add_case(&out, &n_out, c->test, CR_PASSED, c->message, k == 0 ? c->extra : "");
        } else if (whole && c->status == CR_SKIPPED && t->ran == 0 && t->skipped == n) {
            for (long k = 0; k < n; ++k)
                add_case(&out, &n_out, c->test, CR_SKIPPED, c->message, k == 0 ? c->extra : "");
        } else {
            /* one process per case decides: none of this run's results */
            sbuf_addf(&again, "%s%s", again.len ? "|" : "", c->test);
        }
    }
    for (int i = 0; i < sr->n; ++i) {
        free(sr->cases[i].test);
        free(sr->cases[i].message);
        free(sr->cases[i].extra);
    }
    free(sr->cases);
    sr->cases = out;
    sr->n = n_out;
    for (int j = 0; j < nl; ++j) free(lines[j].test);
    free(lines);
    return again.len ? sbuf_take(&again) : (sbuf_free(&again), NULL);
}
