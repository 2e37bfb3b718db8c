/* tests/grader/test_grader.c — what `./lab grade` wrote for the fixtures.
 *
 * Runs after grade_fixtures.sh (the ctest fixture "grader_out"), which
 * graded every fixture submission, lesson 01 only, with the GPU hidden. Reads
 * FUSIONLAB_GRADER_OUT (the --out folder) and FUSIONLAB_GRADE_SEED (which
 * must appear in no output). No GPU, no build: only files.
 *
 *   results::*   every results.json has Gradescope's shape and adds up
 *   intake::*    refusals, ignored files, not submitted
 *   build::*     compile and link errors reach the student; the object scan
 *                flags what an exercise must not call
 *   run::*       a hang is killed and the batch goes on; no GPU is "not run"
 *   batch::*     roster.csv, junit.xml, the seed
 */
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>

#include <cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(results, .timeout = 30);
TestSuite(intake, .timeout = 30);
TestSuite(build, .timeout = 30);
TestSuite(run, .timeout = 30);
TestSuite(batch, .timeout = 60);

static const char *const kSubs[] = {
    "good", "good_tgz", "skeleton", "compile_error", "link_error", "scan_flagged",
    "missing_lesson", "junk", "oversized", "traversal_tgz", "traversal_zip", "hang_startup",
    "crash", "hang", "oom",
};
#define N_SUBS (sizeof kSubs / sizeof kSubs[0])

static const char *out_dir(void)
{
    const char *d = getenv("FUSIONLAB_GRADER_OUT");
    cr_assert(d != NULL && d[0], "FUSIONLAB_GRADER_OUT is not set (run through ctest)");
    return d;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert(s != NULL);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

static char *sub_file(const char *sub, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", out_dir(), sub, name);
    char *s = slurp(path);
    cr_assert(s != NULL, "%s was not written", path);
    return s;
}

static cJSON *results(const char *sub)
{
    char *text = sub_file(sub, "results.json");
    cJSON *j = cJSON_Parse(text);
    cr_assert(j != NULL, "%s/results.json is not valid JSON", sub);
    free(text);
    return j;
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The test entry whose "number" is `number` (e.g. "01.build"). */
static const cJSON *test_entry(const cJSON *r, const char *number)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(r, "tests"))
    {
        const char *n = str_of(t, "number");
        if (n && strcmp(n, number) == 0) return t;
    }
    cr_assert_fail("no test numbered %s", number);
    return NULL;
}

static const char *lesson_state(const cJSON *r)
{
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(r, "extra_data");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(extra, "lessons"), "01");
    const char *s = str_of(l, "state");
    cr_assert(s != NULL, "extra_data.lessons.01.state is missing");
    return s;
}

/* ---- results.json ------------------------------------------------------------ */

Test(results, gradescope_shape_and_sums)
{
    for (size_t i = 0; i < N_SUBS; ++i) {
        cJSON *r = results(kSubs[i]);
        const cJSON *score = cJSON_GetObjectItemCaseSensitive(r, "score");
        const cJSON *tests = cJSON_GetObjectItemCaseSensitive(r, "tests");
        cr_assert(cJSON_IsNumber(score), "%s: no numeric score", kSubs[i]);
        cr_assert(cJSON_IsArray(tests) && cJSON_GetArraySize(tests) >= 6,
                  "%s: tests must list every check (and a build entry)", kSubs[i]);
        cr_assert(str_of(r, "output") != NULL, "%s: no top-level output", kSubs[i]);
        double sum = 0, max = 0;
        const cJSON *t;
        cJSON_ArrayForEach(t, tests)
        {
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(t, "score");
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(t, "max_score");
            cr_assert(str_of(t, "name") && str_of(t, "output") && str_of(t, "visibility"),
                      "%s: a test lacks name, output or visibility", kSubs[i]);
            cr_assert(cJSON_IsNumber(s) && cJSON_IsNumber(m), "%s: a test lacks its scores",
                      kSubs[i]);
            cr_assert(s->valuedouble >= 0 && s->valuedouble <= m->valuedouble + 1e-9,
                      "%s: %s scores %g of %g", kSubs[i], str_of(t, "name"), s->valuedouble,
                      m->valuedouble);
            sum += s->valuedouble;
            max += m->valuedouble;
        }
        cr_assert(sum - score->valuedouble < 0.01 && score->valuedouble - sum < 0.01,
                  "%s: score %g is not the sum of its tests (%g)", kSubs[i], score->valuedouble,
                  sum);
        cr_assert(max > 99.99 && max < 100.01, "%s: lesson 01 is worth %g, the rubric says 100",
                  kSubs[i], max);
        const cJSON *extra = cJSON_GetObjectItemCaseSensitive(r, "extra_data");
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(extra, "complete")),
                  "%s: grading did not finish", kSubs[i]);
        cJSON_Delete(r);
        char *md = sub_file(kSubs[i], "report.md");
        cr_assert(strstr(md, "# fusion-lab grade") != NULL, "%s: report.md has no title", kSubs[i]);
        free(md);
    }
}

Test(results, no_gpu_means_not_run_not_zero_silently)
{
    static const char *const built[] = {"good", "good_tgz", "skeleton", "crash", "hang", "oom"};
    for (size_t i = 0; i < sizeof built / sizeof built[0]; ++i) {
        cJSON *r = results(built[i]);
        cr_assert_str_eq(lesson_state(r), "graded", "%s", built[i]);
        const cJSON *b = test_entry(r, "01.build");
        cr_assert_str_eq(str_of(b, "status"), "passed", "%s: the build should pass", built[i]);
        const char *checks[] = {"01.A.correct", "01.A.edge", "01.B.correct", "01.B.edge",
                                "01.speed", "01.sanitizer"};
        for (size_t k = 0; k < sizeof checks / sizeof checks[0]; ++k) {
            const cJSON *t = test_entry(r, checks[k]);
            cr_assert(strstr(str_of(t, "output"), "not run: no CUDA device") != NULL,
                      "%s %s: %s", built[i], checks[k], str_of(t, "output"));
        }
        cr_assert(strstr(str_of(r, "output"), "WITHOUT a GPU") != NULL, "%s", built[i]);
        cJSON_Delete(r);
    }
}

/* ---- intake ------------------------------------------------------------------- */

Test(intake, archives_with_unsafe_entries_are_refused_whole)
{
    static const char *const subs[] = {"traversal_tgz", "traversal_zip"};
    for (int i = 0; i < 2; ++i) {
        cJSON *r = results(subs[i]);
        const cJSON *extra = cJSON_GetObjectItemCaseSensitive(r, "extra_data");
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(extra, "refused")), "%s",
                  subs[i]);
        const char *out = str_of(r, "output");
        cr_assert(strstr(out, "contains ..") && strstr(out, "absolute path") &&
                      strstr(out, "(link)"),
                  "%s: each unsafe entry must be named with its reason:\n%s", subs[i], out);
        cr_assert(strstr(out, "nothing was extracted") != NULL, "%s", out);
        cr_assert_str_eq(lesson_state(r), "refused");
        cJSON_Delete(r);
    }
    /* and nothing came out of them */
    char path[4096];
    struct stat st;
    static const char *const never[] = {".work/escaped-by-tar.cu", ".work/escaped-by-zip.cu",
                                        "escaped-by-tar.cu", "escaped-by-zip.cu",
                                        ".work/student/01-vector-add/link.cu",
                                        "stage/absolute-by-tar.cu"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; ++i) {
        snprintf(path, sizeof path, "%s/%s", out_dir(), never[i]);
        cr_assert(lstat(path, &st) != 0, "%s exists: an archive was extracted", path);
    }
    cr_assert(lstat("/tmp/fusionlab-grader-absolute-zip.cu", &st) != 0,
              "the zip's absolute entry was written");
}

Test(intake, archives_are_read_under_lessons)
{
    cJSON *r = results("good_tgz");
    const char *out = str_of(r, "output");
    cr_assert(strstr(out, "lesson folders found under lessons/") != NULL, "%s", out);
    cr_assert(strstr(out, "lessons/notes.txt") != NULL, "the extra file must be listed:\n%s", out);
    cJSON_Delete(r);
}

Test(intake, missing_lesson_and_misnamed_files)
{
    cJSON *r = results("missing_lesson");
    cr_assert_str_eq(lesson_state(r), "not submitted");
    const char *out = str_of(r, "output");
    cr_assert(strstr(out, "01-vector-add/vectoradd.cu") && strstr(out, "NOTES.txt"),
              "ignored files must be listed:\n%s", out);
    const cJSON *t = test_entry(r, "01.speed");
    cr_assert(strstr(str_of(t, "output"), "not submitted") != NULL, "%s", str_of(t, "output"));
    cJSON_Delete(r);
}

Test(intake, binary_and_oversized_files_are_refused)
{
    cJSON *r = results("junk");
    cr_assert_str_eq(lesson_state(r), "refused");
    cr_assert(strstr(str_of(test_entry(r, "01.build"), "output"), "binary") != NULL);
    cJSON_Delete(r);
    r = results("oversized");
    cr_assert_str_eq(lesson_state(r), "refused");
    cr_assert(strstr(str_of(test_entry(r, "01.build"), "output"), "more than the 1048576") != NULL,
              "%s", str_of(test_entry(r, "01.build"), "output"));
    cJSON_Delete(r);
}

/* ---- build ---------------------------------------------------------------------- */

Test(build, compile_errors_reach_the_student)
{
    cJSON *r = results("compile_error");
    cr_assert_str_eq(lesson_state(r), "build failed");
    const char *out = str_of(test_entry(r, "01.build"), "output");
    cr_assert(strstr(out, "01-vector-add/vector_add.cu") != NULL,
              "the error must name the student's file by its lesson path:\n%s", out);
    cr_assert(strstr(out, "undeclared_helper") != NULL, "the compiler's message is missing:\n%s",
              out);
    cr_assert(strstr(out, "/.work/") == NULL && strstr(out, out_dir()) == NULL,
              "scratch paths must not leak into the output:\n%s", out);
    const cJSON *t = test_entry(r, "01.A.correct");
    cr_assert(strstr(str_of(t, "output"), "compile error") != NULL, "%s", str_of(t, "output"));
    cr_assert(cJSON_GetObjectItemCaseSensitive(r, "score")->valuedouble == 0.0);
    cJSON_Delete(r);
}

Test(build, harness_symbols_are_a_link_error)
{
    cJSON *r = results("link_error");
    cr_assert_str_eq(lesson_state(r), "link error");
    const char *out = str_of(test_entry(r, "01.build"), "output");
    cr_assert(strstr(out, "`main`") && strstr(out, "`unfused_elementwise`"),
              "both the second main and the baseline's launcher must be named:\n%s", out);
    cJSON_Delete(r);
    /* its main() never ran: the fake "Synthesis" line is in no log */
    char *log = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/link_error/logs/01-tests.log", out_dir());
    log = slurp(path);
    cr_assert(log == NULL, "the tests ran although the link was refused");
}

Test(build, the_object_scan_flags_forbidden_calls)
{
    cJSON *r = results("scan_flagged");
    cr_assert_str_eq(lesson_state(r), "flagged");
    cr_assert(cJSON_GetObjectItemCaseSensitive(r, "score")->valuedouble == 0.0,
              "a flagged lesson scores 0");
    const cJSON *t;
    int checks = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(r, "tests"))
    {
        const char *num = str_of(t, "number");
        if (num == NULL || strcmp(num, "01.build") == 0) continue;
        const char *out = str_of(t, "output");
        cr_assert(strstr(out, "flagged by the object scan") != NULL, "%s: %s", num, out);
        cr_assert(strstr(out, "`getenv`") && strstr(out, "`signal`"),
                  "%s: the scan's lines must name what was called:\n%s", num, out);
        cr_assert(cJSON_GetObjectItemCaseSensitive(t, "score")->valuedouble == 0.0, "%s", num);
        ++checks;
    }
    cr_assert(checks >= 6, "%d checks", checks);
    const char *build = str_of(test_entry(r, "01.build"), "output");
    cr_assert(strstr(build, "flagged by the object scan") && strstr(build, "vector_add.cu"),
              "the lesson's summary and lines must say so:\n%s", build);
    cJSON_Delete(r);
    char *md = sub_file("scan_flagged", "report.md");
    cr_assert(strstr(md, "flagged by the object scan") && strstr(md, "`getenv`"),
              "report.md must show the scan's lines:\n%s", md);
    free(md);
    /* flagged before any test ran */
    char path[4096];
    snprintf(path, sizeof path, "%s/scan_flagged/logs/01-tests.log", out_dir());
    char *log = slurp(path);
    cr_assert(log == NULL, "the tests ran although the scan flagged the lesson");
}

/* ---- run ---------------------------------------------------------------------- */

Test(run, a_hang_is_killed_and_the_batch_goes_on)
{
    cJSON *r = results("hang_startup");
    cr_assert_str_eq(lesson_state(r), "graded");
    const char *out = str_of(test_entry(r, "01.A.correct"), "output");
    cr_assert(strstr(out, "KILLED") && strstr(out, "time limit"), "%s", out);
    cr_assert(cJSON_GetObjectItemCaseSensitive(r, "score")->valuedouble == 0.0);
    cJSON_Delete(r);
    /* the submissions after it were graded */
    r = results("oom");
    cr_assert_str_eq(lesson_state(r), "graded");
    cJSON_Delete(r);
}

/* ---- batch ------------------------------------------------------------------------ */

Test(batch, roster_has_one_row_per_submission)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/roster.csv", out_dir());
    char *csv = slurp(path);
    cr_assert(csv != NULL, "no roster.csv");
    cr_assert(strncmp(csv, "submission,01-vector-add,total,max,percent,status\n", 50) == 0,
              "header: %.80s", csv);
    int rows = 0;
    for (char *p = csv; *p; ++p) rows += *p == '\n';
    cr_assert(rows - 1 >= (int)N_SUBS, "%d rows for %zu submissions", rows - 1, N_SUBS);
    for (size_t i = 0; i < N_SUBS; ++i) {
        char row[256];
        snprintf(row, sizeof row, "\n%s,", kSubs[i]);
        cr_assert(strstr(csv, row) != NULL, "no roster row for %s", kSubs[i]);
    }
    cr_assert(strstr(csv, "\ntraversal_zip,0.00,0.00,100.00,0.0,refused\n") != NULL, "%s", csv);
    cr_assert(strstr(csv, "\ncompile_error,0.00,0.00,100.00,0.0,01: build failed\n") != NULL,
              "%s", csv);
    cr_assert(strstr(csv, "\nscan_flagged,0.00,0.00,100.00,0.0,01: flagged\n") != NULL, "%s", csv);
    free(csv);
}

Test(batch, junit_lists_every_check)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/junit.xml", out_dir());
    char *xml = slurp(path);
    cr_assert(xml != NULL, "no junit.xml");
    cr_assert(strncmp(xml, "<?xml", 5) == 0);
    int suites = 0, open = 0, close = 0;
    for (char *p = xml; (p = strstr(p, "<testsuite ")) != NULL; ++p) ++suites;
    for (char *p = xml; (p = strstr(p, "<testcase ")) != NULL; ++p) ++open;
    for (char *p = xml; (p = strstr(p, "</testcase>")) != NULL; ++p) ++close;
    cr_assert(suites >= (int)N_SUBS, "%d testsuites", suites);
    cr_assert(open == close && open >= 6 * (int)N_SUBS, "%d testcases, %d closed", open, close);
    cr_assert(strstr(xml, "</testsuites>") != NULL);
    free(xml);
}

static int seed_found;
static char seed_where[4096];

static void scan(const char *dir, const char *seed)
{
    DIR *d = opendir(dir);
    if (d == NULL) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || strcmp(e->d_name, "..") == 0)) continue;
        if (strcmp(e->d_name, "build") == 0) continue; /* the scratch build: CMake's files */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) scan(path, seed);
        else if (S_ISREG(st.st_mode) && st.st_size < (64 << 20)) {
            char *text = slurp(path);
            if (text && strstr(text, seed)) {
                seed_found = 1;
                snprintf(seed_where, sizeof seed_where, "%s", path);
            }
            free(text);
        }
    }
    closedir(d);
}

Test(batch, the_grading_seed_is_written_nowhere)
{
    const char *seed = getenv("FUSIONLAB_GRADE_SEED");
    cr_assert(seed != NULL && strlen(seed) >= 8, "FUSIONLAB_GRADE_SEED is not set by ctest");
    scan(out_dir(), seed);
    cr_assert(!seed_found, "the grading seed appears in %s", seed_where);
}
