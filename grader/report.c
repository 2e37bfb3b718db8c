/* grader/report.c — what the grader writes.
 *
 *   OUT/submissions/<id>/results.json  Gradescope's format: score, tests[]
 *                                      (name, number, score, max_score, status,
 *                                      output, visibility); extra_data holds
 *                                      the rest (submission_path: as given)
 *   OUT/submissions/<id>/report.md     the same, short, for a person
 *   OUT/roster.csv                     one row per submission: per lesson, total
 *   OUT/junit.xml                      one testcase per check, for CI dashboards
 *
 * (batch.h: roster.csv and junit.xml are NAME.partial until every submission
 * is graded.) Every text that came from a build or a test goes through
 * scrub(): no scratch paths, no grading seed, valid UTF-8 without the
 * characters XML 1.0 forbids. Then each file escapes it its own way (util.h):
 * XML references, RFC 4180 quoting without formulas, Markdown escapes and
 * fences longer than any backtick run.
 */
#define _XOPEN_SOURCE 700
#include "batch.h"
#include "grade.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double round2(double x) { return floor(x * 100.0 + 0.5) / 100.0; }

static char *check_title(const lesson_result *lr, const check_result *c)
{
    return xasprintf("%s %s: %s", lr->li->name, c->rc->id, c->rc->name);
}

/* Submission-level lines: what was received, what was ignored or refused. */
static char *intake_text(const grader *g, const submission *s)
{
    sbuf b = {0};
    sbuf_addf(&b, "submission %s (%s)\n", s->id, s->in.kind ? s->in.kind : "?");
    if (s->in.refused) sbuf_addf(&b, "REFUSED: %s\n", s->in.refusal);
    for (int i = 0; i < s->in.unsafe.n; ++i) sbuf_addf(&b, "  unsafe entry: %s\n", s->in.unsafe.v[i]);
    if (s->in.prefix && s->in.prefix[0])
        sbuf_addf(&b, "lesson folders found under %s\n", s->in.prefix);
    for (int i = 0; i < s->in.notes.n; ++i) sbuf_addf(&b, "note: %s\n", s->in.notes.v[i]);
    if (s->in.ignored.n) {
        sbuf_addf(&b, "ignored (only the lesson files you edit are graded):\n");
        for (int i = 0; i < s->in.ignored.n; ++i) sbuf_addf(&b, "  %s\n", s->in.ignored.v[i]);
    }
    char *out = scrub(g, sbuf_str(&b));
    sbuf_free(&b);
    return out;
}

static char *lesson_text(const grader *g, const lesson_result *lr)
{
    sbuf b = {0};
    sbuf_addf(&b, "%s: %s\n", lr->li->name, lr->summary ? lr->summary : lesson_state_name(lr->state));
    if (lr->build_s > 0 || lr->run_s > 0) {
        char *st = stage_times(lr);
        sbuf_addf(&b, "%s\n", st);
        free(st);
    }
    for (int i = 0; i < lr->notes.n; ++i) sbuf_addf(&b, "note: %s\n", lr->notes.v[i]);
    if (lr->detail) sbuf_addf(&b, "\n%s", lr->detail);
    char *out = scrub(g, sbuf_str(&b));
    sbuf_free(&b);
    return out;
}

void write_results_json(const grader *g, const submission *s)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *tests = cJSON_CreateArray();
    sbuf summary = {0};
    char *head = intake_text(g, s);
    sbuf_add(&summary, head);
    free(head);
    if (!s->done) sbuf_add(&summary, "grading did not finish: the scores below are incomplete\n");
    if (!g->gpu)
        sbuf_add(&summary, "graded WITHOUT a GPU: checks that need one say \"not run: no CUDA "
                           "device\" and score 0; grade again on a GPU machine\n");
    if (!g->sbx.enabled)
        sbuf_add(&summary, "graded WITHOUT the sandbox (--no-sandbox): student code ran with the "
                           "grader's rights, so these results are only as safe as every "
                           "submission of the batch\n");
    cJSON *lessons = cJSON_CreateObject();
    for (int i = 0; i < s->n_lessons; ++i) {
        const lesson_result *lr = &s->lessons[i];
        if (lr->li == NULL) continue;
        sbuf_addf(&summary, "%s: %.2f / %.2f (%s)\n", lr->li->name, round2(lr->score),
                  round2(lr->max), lr->summary ? lr->summary : lesson_state_name(lr->state));
        cJSON *lo = cJSON_CreateObject();
        cJSON_AddStringToObject(lo, "name", lr->li->name);
        cJSON_AddStringToObject(lo, "state", lesson_state_name(lr->state));
        cJSON_AddNumberToObject(lo, "score", round2(lr->score));
        cJSON_AddNumberToObject(lo, "max_score", round2(lr->max));
        cJSON_AddItemToObject(lessons, lr->li->number, lo);

        /* one 0-point entry says what was built and why nothing ran, if so */
        cJSON *info = cJSON_CreateObject();
        char *iname = xasprintf("%s: submission and build", lr->li->name);
        char *inum = xasprintf("%s.build", lr->li->number);
        char *itext = lesson_text(g, lr);
        cJSON_AddStringToObject(info, "name", iname);
        cJSON_AddStringToObject(info, "number", inum);
        cJSON_AddNumberToObject(info, "score", 0);
        cJSON_AddNumberToObject(info, "max_score", 0);
        cJSON_AddStringToObject(info, "status", lr->state == L_GRADED ? "passed" : "failed");
        cJSON_AddStringToObject(info, "output", itext);
        cJSON_AddStringToObject(info, "visibility", "visible");
        cJSON_AddItemToArray(tests, info);
        free(iname);
        free(inum);
        free(itext);

        for (int j = 0; j < lr->n_checks; ++j) {
            const check_result *c = &lr->checks[j];
            cJSON *t = cJSON_CreateObject();
            char *name = check_title(lr, c);
            char *number = xasprintf("%s.%s", lr->li->number, c->rc->id);
            char *out = scrub(g, c->output ? c->output : "");
            cJSON_AddStringToObject(t, "name", name);
            cJSON_AddStringToObject(t, "number", number);
            cJSON_AddNumberToObject(t, "score", round2(c->score));
            cJSON_AddNumberToObject(t, "max_score", round2(c->max));
            cJSON_AddStringToObject(t, "status",
                                    c->status == ST_PASSED || (c->max == 0 && c->status != ST_FAILED)
                                        ? "passed" : "failed");
            cJSON_AddStringToObject(t, "output", out);
            cJSON_AddStringToObject(t, "visibility", c->rc->visibility);
            cJSON *tags = cJSON_CreateArray();
            cJSON_AddItemToArray(tags, cJSON_CreateString(lr->li->name));
            cJSON_AddItemToArray(tags, cJSON_CreateString(check_kind_name(c->rc->kind)));
            cJSON_AddItemToArray(tags, cJSON_CreateString(check_status_name(c->status)));
            cJSON_AddItemToObject(t, "tags", tags);
            cJSON_AddItemToArray(tests, t);
            free(name);
            free(number);
            free(out);
        }
    }
    sbuf_addf(&summary, "total: %.2f / %.2f\n", round2(s->score), round2(s->max));
    char *sum = scrub(g, sbuf_str(&summary));
    sbuf_free(&summary);

    cJSON_AddNumberToObject(root, "score", round2(s->score));
    cJSON_AddStringToObject(root, "output", sum);
    cJSON_AddStringToObject(root, "visibility", "visible");
    cJSON_AddStringToObject(root, "stdout_visibility", "hidden");
    cJSON_AddNumberToObject(root, "execution_time", floor(s->elapsed_s + 0.5));
    cJSON_AddItemToObject(root, "tests", tests);
    cJSON *extra = cJSON_CreateObject();
    cJSON_AddStringToObject(extra, "submission", s->id);
    char *given = xstrdup(s->path ? s->path : "");
    utf8_sanitize(given);
    cJSON_AddStringToObject(extra, "submission_path", given);
    free(given);
    cJSON_AddNumberToObject(extra, "max_score", round2(s->max));
    cJSON_AddBoolToObject(extra, "complete", s->done);
    cJSON_AddBoolToObject(extra, "gpu_checks_run", g->gpu);
    if (g->gpu_name) cJSON_AddStringToObject(extra, "gpu", g->gpu_name);
    else cJSON_AddNullToObject(extra, "gpu");
    cJSON_AddBoolToObject(extra, "refused", s->in.refused);
    cJSON_AddItemToObject(extra, "lessons", lessons);
    cJSON_AddItemToObject(root, "extra_data", extra);
    free(sum);

    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (text) utf8_sanitize(text); /* a name that came in unchecked: JSON stays valid */
    char *path = path_join(s->outdir, "results.json");
    if (text == NULL || write_file_atomic(path, text, strlen(text)) != 0)
        fprintf(stderr, "fusionlab_grade: cannot write %s\n", path);
    free(path);
    cJSON_free(text);
}

/* Markdown: text from tests, builds and submissions, scrubbed, then escaped
 * inline (one line) or fenced as it is. */
static void md_text(sbuf *b, const grader *g, const char *text)
{
    char *clean = scrub(g, text);
    md_escape(b, clean);
    free(clean);
}

static void md_code(sbuf *b, const grader *g, const char *text, size_t head, size_t tail)
{
    char *clean = scrub(g, text);
    char *t = trim_middle(clean, head, tail);
    md_code_block(b, t);
    free(t);
    free(clean);
}

void write_report_md(const grader *g, const submission *s)
{
    sbuf b = {0};
    char *when = utc_timestamp();
    sbuf_add(&b, "# fusion-lab grade: ");
    md_escape(&b, s->id);
    sbuf_addf(&b, "\n\n**%.2f / %.2f**%s  \n", round2(s->score), round2(s->max),
              s->done ? "" : " (grading did not finish)");
    sbuf_add(&b, "Submitted as ");
    md_escape(&b, s->path ? s->path : "");
    sbuf_addf(&b, "  \nGraded %s on ", when);
    if (g->gpu) md_escape(&b, g->gpu_name);
    else sbuf_add(&b, "a machine without a GPU (GPU checks not run)");
    sbuf_add(&b, ".");
    if (g->gpu) sbuf_add(&b, " Speed is scored against the worked solution timed on the same GPU "
                             "in the same run.");
    if (!g->sbx.enabled)
        sbuf_add(&b, " **Graded without the sandbox (--no-sandbox)**: student code ran with the "
                     "grader's rights.");
    sbuf_add(&b, "\n\n");
    free(when);
    if (s->in.refused) {
        sbuf_add(&b, "**Submission refused:** ");
        md_text(&b, g, s->in.refusal);
        sbuf_add(&b, "\n\n");
    }
    for (int i = 0; i < s->in.unsafe.n && i < 20; ++i) {
        sbuf_add(&b, "- unsafe entry: ");
        md_text(&b, g, s->in.unsafe.v[i]);
        sbuf_add(&b, "\n");
    }
    if (s->in.unsafe.n) sbuf_add(&b, "\n");

    sbuf_add(&b, "| lesson | score | result |\n|---|---:|---|\n");
    for (int i = 0; i < s->n_lessons; ++i) {
        const lesson_result *lr = &s->lessons[i];
        sbuf_add(&b, "| ");
        md_escape(&b, lr->li->name);
        sbuf_addf(&b, " | %.2f / %.2f | ", round2(lr->score), round2(lr->max));
        md_text(&b, g, lr->summary ? lr->summary : lesson_state_name(lr->state));
        sbuf_add(&b, " |\n");
    }
    sbuf_add(&b, "\n");
    for (int i = 0; i < s->n_lessons; ++i) {
        const lesson_result *lr = &s->lessons[i];
        sbuf_add(&b, "## ");
        md_escape(&b, lr->li->name);
        sbuf_addf(&b, ": %.2f / %.2f\n\n", round2(lr->score), round2(lr->max));
        for (int k = 0; k < lr->notes.n; ++k) {
            sbuf_add(&b, "- ");
            md_text(&b, g, lr->notes.v[k]);
            sbuf_add(&b, "\n");
        }
        if (lr->notes.n) sbuf_add(&b, "\n");
        if (lr->detail) {
            md_code(&b, g, lr->detail, 3000, 1000);
            sbuf_add(&b, "\n");
        }
        if (lr->state != L_GRADED) {
            sbuf_add(&b, "Result: ");
            md_text(&b, g, lr->summary ? lr->summary : lesson_state_name(lr->state));
            sbuf_add(&b, "\n\n");
            continue;
        }
        sbuf_add(&b, "| check | kind | score | result |\n|---|---|---:|---|\n");
        for (int j = 0; j < lr->n_checks; ++j) {
            const check_result *c = &lr->checks[j];
            char *first = xstrdup(c->output ? c->output : "");
            char *nl = strchr(first, '\n');
            if (nl) *nl = '\0';
            size_t fl = strlen(first);
            if (fl > 0 && first[fl - 1] == ':') first[fl - 1] = '\0'; /* details follow below */
            sbuf_add(&b, "| ");
            md_escape(&b, c->rc->id);
            sbuf_add(&b, " ");
            md_escape(&b, c->rc->name);
            sbuf_addf(&b, " | %s | %.2f / %.2f | ", check_kind_name(c->rc->kind), round2(c->score),
                      round2(c->max));
            md_text(&b, g, first);
            sbuf_add(&b, " |\n");
            free(first);
        }
        sbuf_add(&b, "\n");
        for (int j = 0; j < lr->n_checks; ++j) {
            const check_result *c = &lr->checks[j];
            if (c->status == ST_PASSED || c->status == ST_NOT_RUN || !c->output) continue;
            sbuf_add(&b, "**");
            md_escape(&b, c->rc->id);
            sbuf_add(&b, "** (");
            md_escape(&b, c->rc->name);
            sbuf_add(&b, ")\n");
            md_code(&b, g, c->output, 1500, 300);
            sbuf_add(&b, "\n");
        }
    }
    if (s->in.ignored.n || s->in.notes.n) {
        char *sub = intake_text(g, s);
        sbuf_add(&b, "## Submission\n\n");
        md_code_block(&b, sub);
        free(sub);
    }
    char *text = sbuf_take(&b);
    utf8_sanitize(text);
    char *path = path_join(s->outdir, "report.md");
    if (write_file_atomic(path, text, strlen(text)) != 0)
        fprintf(stderr, "fusionlab_grade: cannot write %s\n", path);
    free(path);
    free(text);
}

char *submission_status(const submission *s)
{
    if (s->in.refused) return xstrdup("refused");
    sbuf st = {0};
    for (int i = 0; i < s->n_lessons; ++i) {
        const lesson_result *lr = &s->lessons[i];
        const char *what = NULL;
        if (lr->state != L_GRADED) what = lesson_state_name(lr->state);
        else if (lr->n_killed) what = "a suite was stopped (hang or crash)";
        else if (lr->not_run_no_gpu) what = "GPU checks not run";
        if (what) sbuf_addf(&st, "%s%s: %s", st.len ? "; " : "", lr->li->number, what);
    }
    if (!s->done) sbuf_addf(&st, "%sincomplete", st.len ? "; " : "");
    if (st.len == 0) sbuf_add(&st, "ok");
    return sbuf_take(&st);
}

/* 1 when every submission of the batch was graded to its end */
static int batch_done(const submission *subs, int n)
{
    for (int i = 0; i < n; ++i)
        if (!subs[i].done) return 0;
    return 1;
}

char *roster_header(const grader *g)
{
    sbuf b = {0};
    sbuf_add(&b, "submission");
    for (int i = 0; i < g->lessons.n; ++i) {
        const lesson_info *li = manifest_find(&g->man, g->lessons.v[i]);
        sbuf_add(&b, ",");
        csv_field(&b, li ? li->name : g->lessons.v[i]);
    }
    sbuf_add(&b, ",total,max,percent,status,submission_path\n");
    return sbuf_take(&b);
}

char *roster_row(const grader *g, const submission *s)
{
    sbuf b = {0};
    csv_field(&b, s->id);
    for (int i = 0; i < s->n_lessons; ++i) sbuf_addf(&b, ",%.2f", round2(s->lessons[i].score));
    char *status = submission_status(s);
    sbuf_addf(&b, ",%.2f,%.2f,%.1f,", round2(s->score), round2(s->max),
              s->max > 0 ? 100.0 * s->score / s->max : 0.0);
    char *clean = scrub(g, status);
    csv_field(&b, clean);
    sbuf_add(&b, ",");
    csv_field(&b, s->path ? s->path : ""); /* as given: not scrubbed */
    sbuf_add(&b, "\n");
    free(clean);
    free(status);
    return sbuf_take(&b);
}

void write_roster_csv(const grader *g, submission *subs, int n)
{
    sbuf b = {0};
    char *head = roster_header(g);
    sbuf_add(&b, head);
    free(head);
    for (int k = 0; k < n; ++k) {
        char *row = roster_row(g, &subs[k]);
        sbuf_add(&b, row);
        free(row);
    }
    batch_write_file(g->out, "roster.csv", sbuf_str(&b), b.len, batch_done(subs, n));
    sbuf_free(&b);
}

char *junit_suite(const grader *g, const submission *s, junit_counts *cnt)
{
    int st = 0, sf = 0, ss = 0;
    sbuf cases = {0};
    for (int i = 0; i < s->n_lessons; ++i) {
        const lesson_result *lr = &s->lessons[i];
        for (int j = 0; j < lr->n_checks; ++j) {
            const check_result *c = &lr->checks[j];
            ++st;
            sbuf_add(&cases, "    <testcase classname=\"");
            xml_escape(&cases, s->id, 1);
            sbuf_add(&cases, ".");
            xml_escape(&cases, lr->li->name, 1);
            sbuf_add(&cases, "\" name=\"");
            char *title = xasprintf("%s: %s", c->rc->id, c->rc->name);
            xml_escape(&cases, title, 1);
            free(title);
            sbuf_addf(&cases, "\" time=\"0\">\n      <properties><property name=\"score\" "
                      "value=\"%.2f\"/><property name=\"max_score\" value=\"%.2f\"/>"
                      "</properties>\n", round2(c->score), round2(c->max));
            char *out = scrub(g, c->output ? c->output : "");
            char *first = xstrdup(out);
            char *nl = strchr(first, '\n');
            if (nl) *nl = '\0';
            if (c->status == ST_NOT_RUN) {
                ++ss;
                sbuf_add(&cases, "      <skipped message=\"");
                xml_escape(&cases, first, 1);
                sbuf_add(&cases, "\"/>\n");
            } else if (c->status != ST_PASSED) {
                ++sf;
                sbuf_add(&cases, "      <failure message=\"");
                xml_escape(&cases, first, 1);
                sbuf_add(&cases, "\">");
                xml_escape(&cases, out, 0);
                sbuf_add(&cases, "</failure>\n");
            } else {
                sbuf_add(&cases, "      <system-out>");
                xml_escape(&cases, out, 0);
                sbuf_add(&cases, "</system-out>\n");
            }
            sbuf_add(&cases, "    </testcase>\n");
            free(out);
            free(first);
        }
    }
    sbuf b = {0};
    sbuf_add(&b, "  <testsuite name=\"");
    xml_escape(&b, s->id, 1);
    sbuf_addf(&b, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" "
              "time=\"%.1f\">\n", st, sf, ss, s->elapsed_s);
    sbuf_add(&b, "    <properties><property name=\"submission_path\" value=\"");
    xml_escape(&b, s->path ? s->path : "", 1);
    sbuf_add(&b, "\"/></properties>\n");
    sbuf_add(&b, sbuf_str(&cases));
    sbuf_add(&b, "  </testsuite>\n");
    sbuf_free(&cases);
    if (cnt) {
        cnt->tests += st;
        cnt->failures += sf;
        cnt->skipped += ss;
    }
    return sbuf_take(&b);
}

char *junit_document(const char *suites, junit_counts cnt)
{
    return xasprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<testsuites name=\"fusion-lab grade\" tests=\"%d\" failures=\"%d\" "
                     "errors=\"0\" skipped=\"%d\">\n%s</testsuites>\n",
                     cnt.tests, cnt.failures, cnt.skipped, suites);
}

void write_junit_xml(const grader *g, submission *subs, int n)
{
    junit_counts cnt = {0, 0, 0};
    sbuf body = {0};
    for (int k = 0; k < n; ++k) {
        char *suite = junit_suite(g, &subs[k], &cnt);
        sbuf_add(&body, suite);
        free(suite);
    }
    char *doc = junit_document(sbuf_str(&body), cnt);
    batch_write_file(g->out, "junit.xml", doc, strlen(doc), batch_done(subs, n));
    free(doc);
    sbuf_free(&body);
}
