/* tests/grader/test_grader.c — what `./lab grade` wrote for the fixtures.
 *
 * Runs after grade_fixtures.sh (the ctest fixture "grader_out"), which
 * graded every fixture submission, lesson 01 only, with the GPU hidden. Reads
 * FUSIONLAB_GRADER_OUT (the --out folder) and FUSIONLAB_GRADE_SEED (which
 * must appear in no output). No GPU, no build: only files.
 *
 *   results::*   every results.json has Gradescope's shape and adds up
 *   intake::*    refusals, ignored files, not submitted
 *   build::*     compile and link errors reach the student, each warning once;
 *                the object scan flags what an exercise must not call
 *   run::*       a hang is killed and the batch goes on; no GPU is "not run"
 *   batch::*     roster.csv, junit.xml, the seed, OUT's layout
 *   hygiene::*   hostile bytes and names (the submission "roster.csv", whose
 *                compile error prints U+FFFF, ...): every file stays valid
 *
 * The fast_* suites need no fixture batch (ctest grader/batch runs them):
 *   fast_escape  util.c's escaping, byte for byte
 *   fast_ids     batch.c's submission ids
 *   fast_paths   --out and --work that are refused
 *   fast_cli     the grader itself (FUSIONLAB_GRADE_BIN): misplaced --out
 *                refused with nothing deleted; a second batch on the same
 *                --work or --out stops at once; a batch killed with SIGKILL
 *                leaves no roster.csv or junit.xml; hostile submission names.
 *                `cmake` is a stand-in on PATH, so no build runs.
 */
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>

#include "batch.h"
#include "util.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

TestSuite(results, .timeout = 30);
TestSuite(intake, .timeout = 30);
TestSuite(build, .timeout = 30);
TestSuite(run, .timeout = 30);
TestSuite(batch, .timeout = 60);
TestSuite(hygiene, .timeout = 60);
TestSuite(fast_escape, .timeout = 10);
TestSuite(fast_ids, .timeout = 10);
TestSuite(fast_paths, .timeout = 10);
TestSuite(fast_cli, .timeout = 60);

static const char *const kSubs[] = {
    "good", "good_tgz", "skeleton", "open", "compile_error", "link_error", "scan_flagged",
    "missing_lesson", "junk", "oversized", "traversal_tgz", "traversal_zip", "hang_startup",
    "crash", "hang", "oom", "roster.csv",
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
    snprintf(path, sizeof path, "%s/submissions/%s/%s", out_dir(), sub, name);
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

static const char *lesson_state_of(const cJSON *r)
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
    static const char *const built[] = {"good", "good_tgz", "skeleton", "open", "crash", "hang", "oom"};
    for (size_t i = 0; i < sizeof built / sizeof built[0]; ++i) {
        cJSON *r = results(built[i]);
        cr_assert_str_eq(lesson_state_of(r), "graded", "%s", built[i]);
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
        cr_assert_str_eq(lesson_state_of(r), "refused");
        cJSON_Delete(r);
    }
    /* and nothing came out of them */
    char path[4096];
    struct stat st;
    static const char *const never[] = {".work/escaped-by-tar.cu", ".work/escaped-by-zip.cu",
                                        "escaped-by-tar.cu", "escaped-by-zip.cu",
                                        "submissions/escaped-by-tar.cu",
                                        "submissions/escaped-by-zip.cu",
                                        ".work/student/01-vector-add/link.cu",
                                        "-input/stage/absolute-by-tar.cu"};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; ++i) {
        snprintf(path, sizeof path, "%s%s%s", out_dir(), never[i][0] == '-' ? "" : "/", never[i]);
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
    cr_assert_str_eq(lesson_state_of(r), "not submitted");
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
    cr_assert_str_eq(lesson_state_of(r), "refused");
    cr_assert(strstr(str_of(test_entry(r, "01.build"), "output"), "binary") != NULL);
    cJSON_Delete(r);
    r = results("oversized");
    cr_assert_str_eq(lesson_state_of(r), "refused");
    cr_assert(strstr(str_of(test_entry(r, "01.build"), "output"), "more than the 1048576") != NULL,
              "%s", str_of(test_entry(r, "01.build"), "output"));
    cJSON_Delete(r);
}

/* ---- build ---------------------------------------------------------------------- */

Test(build, compile_errors_reach_the_student)
{
    cJSON *r = results("compile_error");
    cr_assert_str_eq(lesson_state_of(r), "build failed");
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

Test(build, each_warning_is_shown_once)
{
    /* good_tgz's lesson 01 file starts with a #warning; the build compiles
     * the file more than once */
    char *out = sub_file("good_tgz", "logs/01-build.log");
    /* the compiler's message line (its source line quotes the text again) */
    const char *w = "warning: #warning \"a note the student left for the compiler\"";
    int n = 0;
    for (const char *p = strstr(out, w); p; p = strstr(p + 1, w)) ++n;
    cr_assert(strncmp(out, "built in ", 9) == 0, "%s", out);
    cr_assert(n == 1, "the warning must be shown once, not %d times:\n%s", n, out);
    cr_assert(strstr(out, "repeated message") != NULL, "say that repeats were left out:\n%s",
              out);
    free(out);
}

Test(build, harness_symbols_are_a_link_error)
{
    cJSON *r = results("link_error");
    cr_assert_str_eq(lesson_state_of(r), "link error");
    const char *out = str_of(test_entry(r, "01.build"), "output");
    cr_assert(strstr(out, "`main`") && strstr(out, "`unfused_elementwise`"),
              "both the second main and the baseline's launcher must be named:\n%s", out);
    cJSON_Delete(r);
    /* its main() never ran: the fake "Synthesis" line is in no log */
    char *log = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/submissions/link_error/logs/01-tests.log", out_dir());
    log = slurp(path);
    cr_assert(log == NULL, "the tests ran although the link was refused");
}

Test(build, the_object_scan_flags_forbidden_calls)
{
    cJSON *r = results("scan_flagged");
    cr_assert_str_eq(lesson_state_of(r), "flagged");
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
    snprintf(path, sizeof path, "%s/submissions/scan_flagged/logs/01-tests.log", out_dir());
    char *log = slurp(path);
    cr_assert(log == NULL, "the tests ran although the scan flagged the lesson");
}

/* ---- run ---------------------------------------------------------------------- */

/* A static initializer that never returns would hang the test program
 * before any test: the object scan refuses code that runs before or after
 * the tests, so it never runs at all (a kernel that never ends, the `hang`
 * fixture, is stopped at the wall clock on a GPU machine). */
Test(run, a_hang_before_the_tests_is_refused_and_the_batch_goes_on)
{
    cJSON *r = results("hang_startup");
    cr_assert_str_eq(lesson_state_of(r), "flagged");
    const char *out = str_of(test_entry(r, "01.A.correct"), "output");
    cr_assert(strstr(out, "constructor or destructor"), "%s", out);
    cr_assert(cJSON_GetObjectItemCaseSensitive(r, "score")->valuedouble == 0.0);
    cJSON_Delete(r);
    /* the submissions after it were graded */
    r = results("oom");
    cr_assert_str_eq(lesson_state_of(r), "graded");
    cJSON_Delete(r);
}

/* ---- batch ------------------------------------------------------------------------ */

Test(batch, roster_has_one_row_per_submission)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/roster.csv", out_dir());
    char *csv = slurp(path);
    cr_assert(csv != NULL, "no roster.csv");
    static const char header[] = "submission,01-vector-add,total,max,percent,status,submission_path\n";
    cr_assert(strncmp(csv, header, strlen(header)) == 0, "header: %.80s", csv);
    int rows = 0;
    for (char *p = csv; *p; ++p) rows += *p == '\n';
    cr_assert(rows - 1 >= (int)N_SUBS, "%d rows for %zu submissions", rows - 1, N_SUBS);
    for (size_t i = 0; i < N_SUBS; ++i) {
        char row[256];
        snprintf(row, sizeof row, "\n%s,", kSubs[i]);
        cr_assert(strstr(csv, row) != NULL, "no roster row for %s", kSubs[i]);
    }
    cr_assert(strstr(csv, "\ntraversal_zip,0.00,0.00,100.00,0.0,refused,") != NULL, "%s", csv);
    cr_assert(strstr(csv, "\ncompile_error,0.00,0.00,100.00,0.0,01: build failed,") != NULL,
              "%s", csv);
    cr_assert(strstr(csv, "\nscan_flagged,0.00,0.00,100.00,0.0,01: flagged,") != NULL, "%s", csv);
    cr_assert(strstr(csv, "-input/submissions/traversal_zip.zip\n") != NULL,
              "the path as given must end the row:\n%s", csv);
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

Test(batch, out_holds_only_the_batch_files_and_submissions)
{
    char path[4096];
    struct stat st;
    static const char *const files[] = {"roster.csv", "junit.xml", ".lock"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i) {
        snprintf(path, sizeof path, "%s/%s", out_dir(), files[i]);
        cr_assert(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "%s is not a file", path);
    }
    /* the batch ended normally: no marker, no partial files */
    static const char *const gone[] = {BATCH_MARKER, "roster.csv.partial", "junit.xml.partial"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; ++i) {
        snprintf(path, sizeof path, "%s/%s", out_dir(), gone[i]);
        cr_assert(lstat(path, &st) != 0, "%s is left after a finished batch", path);
    }
    /* the submission named roster.csv is a folder of its own */
    snprintf(path, sizeof path, "%s/submissions/roster.csv/results.json", out_dir());
    cr_assert(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "%s was not written", path);
}

Test(batch, the_path_as_given_is_recorded)
{
    for (size_t i = 0; i < N_SUBS; ++i) {
        cJSON *r = results(kSubs[i]);
        const char *given =
            str_of(cJSON_GetObjectItemCaseSensitive(r, "extra_data"), "submission_path");
        cr_assert(given != NULL, "%s: no extra_data.submission_path", kSubs[i]);
        cr_assert(strstr(given, "-input/submissions/") != NULL, "%s: %s", kSubs[i], given);
        cr_assert(strncmp(path_base(given), kSubs[i], strlen(kSubs[i])) == 0, "%s: %s", kSubs[i],
                  given);
        cJSON_Delete(r);
        char *md = sub_file(kSubs[i], "report.md");
        cr_assert(strstr(md, "Submitted as ") != NULL, "%s: report.md", kSubs[i]);
        free(md);
    }
}

/* ---- hygiene: what a hostile student prints or names ------------------------------ */

static size_t slurp_n(const char *path, char **text)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL, "cannot open %s", path);
    sbuf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) sbuf_addn(&b, chunk, n);
    fclose(f);
    size_t len = b.len;
    *text = sbuf_take(&b);
    return len;
}

/* Offset of the first byte that is not valid UTF-8 or is a character XML 1.0
 * forbids (tab, LF and CR are fine; NUL is not); -1 when there is none. */
static long xml_char_error(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        unsigned c = p[i], cp;
        size_t n;
        if (c < 0x80) cp = c, n = 1;
        else if (c >= 0xC2 && c <= 0xDF) cp = c & 0x1F, n = 2;
        else if (c >= 0xE0 && c <= 0xEF) cp = c & 0x0F, n = 3;
        else if (c >= 0xF0 && c <= 0xF4) cp = c & 0x07, n = 4;
        else return (long)i;
        if (i + n > len) return (long)i;
        for (size_t k = 1; k < n; ++k) {
            if ((p[i + k] & 0xC0) != 0x80) return (long)i;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return (long)i;
        int ok = cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
                 (cp >= 0xE000 && cp <= 0xFFFD) || cp >= 0x10000;
        if (!ok) return (long)i;
        i += n;
    }
    return -1;
}

static int xml_ref_ok(const char **pp)
{
    const char *p = *pp + 1; /* after '&' */
    static const char *const named[] = {"amp;", "lt;", "gt;", "quot;", "apos;"};
    for (size_t i = 0; i < 5; ++i)
        if (strncmp(p, named[i], strlen(named[i])) == 0) {
            *pp = p + strlen(named[i]);
            return 1;
        }
    if (*p != '#') return 0;
    ++p;
    int hex = *p == 'x';
    char *end = NULL;
    unsigned long cp = strtoul(p + hex, &end, hex ? 16 : 10);
    if (end == p + hex || *end != ';') return 0;
    *pp = end + 1;
    return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
           (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

/* NULL when `x` is a well-formed XML document as the grader writes them
 * (declaration, elements, attributes in double quotes, text, references). */
static const char *xml_check(const char *x, size_t len)
{
    if (xml_char_error(x, len) >= 0) return "a byte or character XML 1.0 does not allow";
    if (strlen(x) != len) return "a NUL byte";
    if (strstr(x, "]]>")) return "]]> outside CDATA";
    const char *p = x;
    if (strncmp(p, "<?xml", 5) == 0) {
        p = strstr(p, "?>");
        if (p == NULL) return "an unterminated declaration";
        p += 2;
    }
    char stack[32][64];
    int depth = 0, roots = 0;
    while (*p) {
        if (*p == '&') {
            if (!xml_ref_ok(&p)) return "a bad reference";
            continue;
        }
        if (*p != '<') {
            if (depth == 0 && !strchr(" \t\r\n", *p)) return "text outside the root";
            ++p;
            continue;
        }
        int closing = p[1] == '/';
        p += closing ? 2 : 1;
        size_t n = strcspn(p, " \t\r\n/>");
        if (n == 0 || n >= 64) return "a bad element name";
        char name[64];
        memcpy(name, p, n);
        name[n] = '\0';
        p += n;
        if (closing) {
            if (depth == 0 || strcmp(stack[depth - 1], name) != 0) return "a mismatched end tag";
            --depth;
            p += strspn(p, " \t\r\n");
            if (*p++ != '>') return "a bad end tag";
            continue;
        }
        for (;;) {
            p += strspn(p, " \t\r\n");
            if (p[0] == '/' && p[1] == '>') {
                p += 2;
                if (depth == 0) ++roots;
                break;
            }
            if (*p == '>') {
                ++p;
                if (depth == 0) ++roots;
                if (depth == 32) return "too deep";
                strcpy(stack[depth++], name);
                break;
            }
            size_t an = strcspn(p, " \t\r\n=/>\"");
            if (an == 0 || p[an] != '=' || p[an + 1] != '"') return "a bad attribute";
            p += an + 2;
            while (*p != '"') {
                if (*p == '\0' || *p == '<') return "a bad attribute value";
                if (*p == '&') {
                    if (!xml_ref_ok(&p)) return "a bad reference in an attribute";
                } else {
                    ++p;
                }
            }
            ++p;
        }
    }
    if (depth != 0) return "unclosed elements";
    if (roots != 1) return "not exactly one root element";
    return NULL;
}

typedef struct {
    char **f;
    int n;
} csv_row;

/* RFC 4180: -1 when malformed, else the number of rows (in *rows). */
static int csv_parse(const char *s, csv_row **rows)
{
    int nrows = 0;
    *rows = NULL;
    while (*s) {
        csv_row row = {0};
        for (;;) {
            sbuf f = {0};
            if (*s == '"') {
                ++s;
                for (;;) {
                    if (*s == '\0') return -1;
                    if (s[0] == '"' && s[1] == '"') {
                        sbuf_add(&f, "\"");
                        s += 2;
                    } else if (*s == '"') {
                        ++s;
                        break;
                    } else {
                        sbuf_addn(&f, s++, 1);
                    }
                }
                if (*s && *s != ',' && *s != '\n' && !(s[0] == '\r' && s[1] == '\n')) return -1;
            } else {
                size_t n = strcspn(s, ",\r\n\"");
                sbuf_addn(&f, s, n);
                s += n;
                if (*s == '"' || (*s == '\r' && s[1] != '\n')) return -1;
            }
            row.f = realloc(row.f, (size_t)(row.n + 1) * sizeof *row.f);
            row.f[row.n++] = sbuf_take(&f);
            if (*s == ',') {
                ++s;
                continue;
            }
            if (*s == '\r') ++s;
            if (*s == '\n') ++s;
            break;
        }
        *rows = realloc(*rows, (size_t)(nrows + 1) * sizeof **rows);
        (*rows)[nrows++] = row;
    }
    return nrows;
}

static void csv_free(csv_row *rows, int n)
{
    for (int i = 0; i < n; ++i) {
        for (int k = 0; k < rows[i].n; ++k) free(rows[i].f[k]);
        free(rows[i].f);
    }
    free(rows);
}

/* A roster that parses, with the same number of fields in every row and no
 * field a spreadsheet would evaluate; its rows in *out. */
static int roster_rows(const char *out, csv_row **rows)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/roster.csv", out);
    char *csv = NULL;
    slurp_n(path, &csv);
    int n = csv_parse(csv, rows);
    cr_assert(n >= 2, "%s is not RFC 4180 CSV:\n%s", path, csv);
    for (int i = 0; i < n; ++i) {
        cr_assert_eq((*rows)[i].n, (*rows)[0].n, "row %d has %d fields, the header %d", i,
                     (*rows)[i].n, (*rows)[0].n);
        for (int k = 0; k < (*rows)[i].n; ++k)
            cr_assert(strchr("=+-@", (*rows)[i].f[k][0]) == NULL || (*rows)[i].f[k][0] == '\0',
                      "row %d field %d starts a formula: %s", i, k, (*rows)[i].f[k]);
    }
    free(csv);
    return n;
}

/* Outside fenced code blocks, no '<' or '`' that is not backslash-escaped;
 * every fence closes. NULL when so. */
static const char *md_check(const char *md)
{
    size_t fence = 0;
    for (const char *line = md; *line;) {
        size_t len = strcspn(line, "\n");
        size_t ticks = strspn(line, "`");
        if (fence == 0 && ticks >= 3) {
            fence = ticks;
        } else if (fence > 0) {
            if (ticks >= fence && strspn(line + ticks, " ") == len - ticks) fence = 0;
        } else {
            for (size_t i = 0; i < len; ++i) {
                if (line[i] != '<' && line[i] != '`') continue;
                size_t bs = 0;
                while (bs < i && line[i - 1 - bs] == '\\') ++bs;
                if (bs % 2 == 0) return line;
            }
        }
        line += len + (line[len] == '\n');
    }
    return fence ? "an unclosed fence" : NULL;
}

/* Every file under `dir` (but the scratch folder): valid UTF-8 without a
 * character XML 1.0 forbids. */
static void scan_clean(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert(d != NULL, "cannot read %s", dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, ".work") == 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            scan_clean(path);
        } else if (S_ISREG(st.st_mode)) {
            char *text = NULL;
            size_t len = slurp_n(path, &text);
            long bad = xml_char_error(text, len);
            cr_assert(bad < 0, "%s: byte %ld (0x%02x) is not valid UTF-8 or not allowed", path,
                      bad, bad >= 0 ? (unsigned char)text[bad] : 0);
            cr_assert(strlen(text) == len, "%s holds a NUL byte", path);
            free(text);
        }
    }
    closedir(d);
}

static void junit_valid(const char *out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/junit.xml", out);
    char *xml = NULL;
    size_t len = slurp_n(path, &xml);
    const char *why = xml_check(xml, len);
    cr_assert(why == NULL, "%s: %s", path, why);
    free(xml);
    if (system("command -v xmllint >/dev/null 2>&1") == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "xmllint --noout '%s'", path);
        cr_assert(system(cmd) == 0, "xmllint rejects %s", path);
    }
}

Test(hygiene, every_file_is_valid_utf8_without_what_xml_forbids) { scan_clean(out_dir()); }

Test(hygiene, junit_xml_is_well_formed) { junit_valid(out_dir()); }

Test(hygiene, roster_csv_is_rfc4180)
{
    csv_row *rows = NULL;
    int n = roster_rows(out_dir(), &rows);
    cr_assert(n - 1 >= (int)N_SUBS);
    cr_assert_str_eq(rows[0].f[rows[0].n - 1], "submission_path");
    int found = 0;
    for (int i = 1; i < n; ++i)
        if (strcmp(rows[i].f[0], "roster.csv") == 0) {
            found = 1;
            cr_assert(ends_with(rows[i].f[rows[i].n - 1], "-input/submissions/roster.csv"), "%s",
                      rows[i].f[rows[i].n - 1]);
        }
    cr_assert(found, "no row for the submission named roster.csv");
    csv_free(rows, n);
}

Test(hygiene, hostile_compiler_output_reaches_the_student_harmlessly)
{
    cJSON *r = results("roster.csv");
    cr_assert_str_eq(lesson_state_of(r), "build failed");
    const char *out = str_of(test_entry(r, "01.build"), "output");
    cr_assert(strstr(out, "hostile") && strstr(out, "]]>") && strstr(out, "</failure>"),
              "the compiler's line must still be shown:\n%s", out);
    cJSON_Delete(r);
    char *md = sub_file("roster.csv", "report.md");
    const char *bad = md_check(md);
    cr_assert(bad == NULL, "report.md has markup outside a code block at:\n%.200s", bad);
    cr_assert(strstr(md, "````\n") != NULL, "the fence must be longer than the ``` inside:\n%s",
              md);
    free(md);
    for (size_t i = 0; i < N_SUBS; ++i) {
        md = sub_file(kSubs[i], "report.md");
        bad = md_check(md);
        cr_assert(bad == NULL, "%s/report.md: markup outside a code block at:\n%.200s", kSubs[i],
                  bad);
        free(md);
    }
}

/* ---- fast_escape: util.c's escaping --------------------------------------------------- */

typedef void (*escaper)(sbuf *, const char *);

static void xml_text_(sbuf *b, const char *s) { xml_escape(b, s, 0); }
static void xml_attr_(sbuf *b, const char *s) { xml_escape(b, s, 1); }

static void sanitize_(sbuf *b, const char *s)
{
    char *t = xstrdup(s);
    utf8_sanitize(t);
    sbuf_add(b, t);
    free(t);
}

static const struct {
    escaper f;
    const char *what, *in, *want;
} kEscapes[] = {
    /* utf8_sanitize: only what XML 1.0 allows */
    {sanitize_, "U+FFFF", "a\xEF\xBF\xBF" "b", "a?b"},
    {sanitize_, "U+FFFE", "\xEF\xBF\xBE", "?"},
    {sanitize_, "a lone surrogate", "\xED\xA0\x80", "???"},
    {sanitize_, "C0 controls, DEL", "\x01\x1b\x7f\x08", "????"},
    {sanitize_, "tab, LF, CR", "tab\tlf\ncr\r", "tab\tlf\ncr\r"},
    {sanitize_, "U+FFFD, an emoji, e-acute", "\xEF\xBF\xBD \xF0\x9F\x98\x80 \xC3\xA9",
     "\xEF\xBF\xBD \xF0\x9F\x98\x80 \xC3\xA9"},
    {sanitize_, "overlong", "\xC0\xAF", "??"},
    {sanitize_, "cut short", "\xE2\x82", "??"},
    {sanitize_, "past U+10FFFF", "\xF4\x90\x80\x80", "????"},
    {sanitize_, "U+FFFF twice", "\xEF\xBF\xBD\xEF\xBF\xBF\xEF\xBF\xBF!", "\xEF\xBF\xBD?" "?!"},
    /* XML */
    {xml_text_, "markup", "a<b>&\"'", "a&lt;b&gt;&amp;&quot;&apos;"},
    {xml_text_, "CDATA end", "x]]>y", "x]]&gt;y"},
    {xml_text_, "text line ends", "l1\nl2\tx\ry", "l1\nl2\tx&#13;y"},
    {xml_attr_, "attribute line ends", "l1\nl2\tx\ry", "l1&#10;l2&#9;x&#13;y"},
    {xml_text_, "forbidden characters", "\xEF\xBF\xBF\x01\xED\xA0\x80 ok", "????? ok"},
    {xml_text_, "nothing", "", ""},
    /* CSV */
    {csv_field, "plain", "plain", "plain"},
    {csv_field, "empty", "", ""},
    {csv_field, "comma", "a,b", "\"a,b\""},
    {csv_field, "quotes", "say \"hi\"", "\"say \"\"hi\"\"\""},
    {csv_field, "LF", "l1\nl2", "\"l1\nl2\""},
    {csv_field, "CR", "l1\rl2", "\"l1\rl2\""},
    {csv_field, "=", "=1+1", "'=1+1"},
    {csv_field, "+", "+cmd", "'+cmd"},
    {csv_field, "-", "-2+3", "'-2+3"},
    {csv_field, "@", "@SUM(A1)", "'@SUM(A1)"},
    {csv_field, "a quoted formula", "=HYPERLINK(\"x\",\"y\")", "\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\""},
    {csv_field, "= inside", "a=b", "a=b"},
    {csv_field, "U+FFFF", "bad\xEF\xBF\xBF", "bad?"},
    /* Markdown */
    {md_escape, "pipe", "a|b", "a\\|b"},
    {md_escape, "HTML", "<script>", "\\<script\\>"},
    {md_escape, "line ends", "x\ny\r\tz", "x y  z"},
    {md_escape, "heading", "# h", "\\# h"},
    {md_escape, "ordered list", "1. x", "1\\. x"},
    {md_escape, "ordered list )", "12) x", "12\\) x"},
    {md_escape, "a version", "v1.2", "v1.2"},
    {md_escape, "inline markup", "`c` *b* _i_ ~s~ [l](u) ![i](u) &amp; $m$ \\",
     "\\`c\\` \\*b\\* \\_i\\_ \\~s\\~ \\[l\\](u) \\!\\[i\\](u) \\&amp; \\$m\\$ \\\\"},
    {md_escape, "list", "- item", "\\- item"},
    {md_escape, "a path", "/tmp/subs/a.tgz", "/tmp/subs/a.tgz"},
    {md_escape, "quote", "> quote", "\\> quote"},
    {md_code_block, "one line", "x", "```\nx\n```\n"},
    {md_code_block, "one line, LF", "x\n", "```\nx\n```\n"},
    {md_code_block, "nothing", "", "```\n```\n"},
    {md_code_block, "a fence inside", "a ``` b\n```\n", "````\na ``` b\n```\n````\n"},
    {md_code_block, "six backticks", "``````", "```````\n``````\n```````\n"},
};

Test(fast_escape, byte_for_byte)
{
    for (size_t i = 0; i < sizeof kEscapes / sizeof kEscapes[0]; ++i) {
        sbuf b = {0};
        kEscapes[i].f(&b, kEscapes[i].in);
        cr_expect_str_eq(sbuf_str(&b), kEscapes[i].want, "%s: \"%s\"", kEscapes[i].what,
                         kEscapes[i].in);
        sbuf_free(&b);
    }
}

/* --slurm 'OPTS' is split as a shell splits a command line, without expansion */
Test(fast_escape, split_words_as_a_shell_would)
{
    static const struct {
        const char *in;
        int n;
        const char *want[4];
    } ok[] = {
        {"", 0, {0}},
        {"  \t\n ", 0, {0}},
        {"--partition=gpu  --gres=gpu:1\t--time=2:00:00", 3, {"--partition=gpu", "--gres=gpu:1", "--time=2:00:00"}},
        {"--comment='class of 2026' -W", 2, {"--comment=class of 2026", "-W"}},
        {"--comment=\"a \\\"b\\\" $HOME `x` \\n\"", 1, {"--comment=a \"b\" $HOME `x` \\n"}},
        {"a\\ b c\\\\d", 2, {"a b", "c\\d"}},
        {"--partition=gpu \\\n --time=1:00", 2, {"--partition=gpu", "--time=1:00"}},
        {"'' x \"\"", 3, {"", "x", ""}},
        {"--constraint=[a|b]*", 1, {"--constraint=[a|b]*"}},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; ++i) {
        strlist l = {0};
        char *why = NULL;
        cr_assert_eq(split_words(ok[i].in, &l, &why), 0, "[%s]: %s", ok[i].in, why ? why : "");
        cr_assert_eq(l.n, ok[i].n, "[%s]: %d words, want %d", ok[i].in, l.n, ok[i].n);
        for (int k = 0; k < l.n; ++k)
            cr_expect_str_eq(l.v[k], ok[i].want[k], "[%s] word %d", ok[i].in, k);
        strlist_free(&l);
    }
    static const char *const bad[] = {"--comment='open", "--comment=\"open", "end\\"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        strlist l = {0};
        strlist_add(&l, "kept");
        char *why = NULL;
        cr_assert_eq(split_words(bad[i], &l, &why), -1, "[%s] was accepted", bad[i]);
        cr_assert(why != NULL && l.n == 1, "[%s]: no reason, or words added", bad[i]);
        free(why);
        strlist_free(&l);
    }
}

/* the include check reads the compiler's -M rule; a path may hold blanks */
Test(fast_escape, make_dependency_lists)
{
    strlist l = {0};
    make_dep_words(" /a/x.cu /a/x.h \\\n  /class\\ of\\ 100%/h.h \\\r\n /p$$q/\\#r.h /s\\\\t.h\n", &l);
    static const char *const want[] = {"/a/x.cu", "/a/x.h", "/class of 100%/h.h", "/p$q/#r.h",
                                       "/s\\\\t.h"};
    cr_assert_eq(l.n, 5, "%d names", l.n);
    for (int i = 0; i < 5; ++i) cr_expect_str_eq(l.v[i], want[i], "name %d", i);
    strlist_free(&l);
    /* what split_words reads back whole */
    sbuf b = {0};
    sbuf_add_sh_quoted(&b, "it's a \"b\" $x");
    strlist w = {0};
    char *why = NULL;
    cr_assert_eq(split_words(sbuf_str(&b), &w, &why), 0);
    cr_assert(w.n == 1 && strcmp(w.v[0], "it's a \"b\" $x") == 0, "%s", sbuf_str(&b));
    strlist_free(&w);
    sbuf_free(&b);
}

/* --gpus: a worker's sandbox binds only its own GPU's /dev/nvidiaN, found
 * from nvidia-smi's bus id and the driver's /proc entry */
Test(fast_paths, gpu_minor_from_the_driver)
{
    char root[] = "/tmp/fusionlab-gpuminor.XXXXXX";
    cr_assert(mkdtemp(root) != NULL);
    static const char *const dirs[] = {"0000:19:00.0", "0000:3b:00.0"};
    static const char *const info[] = {
        "Model: \t NVIDIA H200\nIRQ: 35\nGPU UUID: GPU-aaaa\nDevice Minor: \t 0\n",
        "Model: \t NVIDIA H200\nDevice Minor: 7\nBus Type: PCIe\n"};
    for (int i = 0; i < 2; ++i) {
        char *d = xasprintf("%s/driver/nvidia/gpus/%s", root, dirs[i]);
        cr_assert_eq(mkdir_p(d), 0);
        char *f = path_join(d, "information");
        cr_assert_eq(write_file(f, info[i], strlen(info[i])), 0);
        free(f);
        free(d);
    }
    const char *smi = "GPU-aaaa, 00000000:19:00.0\nGPU-bbbb, 00000000:3B:00.0\r\nGPU-cccc, 00000000:5d:00.0\n";
    cr_expect_eq(gpu_minor_of(smi, "GPU-aaaa", root), 0);
    cr_expect_eq(gpu_minor_of(smi, "GPU-bbbb", root), 7, "upper-case bus id, CRLF");
    cr_expect_eq(gpu_minor_of(smi, "GPU-cccc", root), -1, "no /proc entry: unknown");
    cr_expect_eq(gpu_minor_of(smi, "GPU-dddd", root), -1, "not listed: unknown");
    cr_expect_eq(gpu_minor_of("GPU-eeee, ../../etc\n", "GPU-eeee", root), -1, "a path, not a bus id");
    cr_expect_eq(gpu_minor_of("", "GPU-aaaa", root), -1);
    rm_rf(root);
}

Test(fast_escape, xml_is_well_formed_whatever_goes_in)
{
    char all[256 * 3 + 1];
    size_t k = 0;
    for (int c = 1; c < 256; ++c) all[k++] = (char)c;
    memcpy(all + k, "\xEF\xBF\xBF\xEF\xBF\xBE]]>", 9);
    k += 9;
    all[k] = '\0';
    for (int attr = 0; attr < 2; ++attr) {
        sbuf b = {0};
        sbuf_add(&b, "<r a=\"");
        xml_escape(&b, all, 1);
        sbuf_add(&b, "\">");
        xml_escape(&b, all, attr);
        sbuf_add(&b, "</r>");
        const char *why = xml_check(b.s, b.len);
        cr_assert(why == NULL, "%s", why);
        sbuf_free(&b);
    }
}

/* ---- fast_ids: submission ids ------------------------------------------------------------ */

Test(fast_ids, ids_cannot_reach_the_batch_files_or_each_other)
{
    char long_a[101], long_b[101];
    memset(long_a, 'a', 100);
    long_a[100] = '\0';
    memcpy(long_b, long_a, sizeof long_b);
    long_b[99] = 'b';
    const char *const paths[] = {
        "x/roster.csv", "y/ROSTER.CSV", "junit.xml", ".work", ".lock", "logs/",
        "z/a\nb,\"c'", long_a, long_b, "q/Alice.tar.gz", "r/alice/", "-rf", "/", "",
        BATCH_MARKER, "submissions", "..", "\xEF\xBF\xBFu.zip",
    };
    const char *const want[] = {
        "roster.csv", "ROSTER.CSV-2", "junit.xml", "_work", "_lock", "logs",
        "a_b__c_", NULL, NULL, "Alice", "alice-2", "_rf", "submission", "submission-2",
        BATCH_MARKER, "submissions", "_.", "___u",
    };
    enum { N = sizeof paths / sizeof paths[0] };
    submission subs[N];
    memset(subs, 0, sizeof subs);
    for (int i = 0; i < N; ++i) {
        subs[i].id = batch_make_id(paths[i], subs, i);
        const char *id = subs[i].id;
        if (want[i]) cr_assert_str_eq(id, want[i], "for \"%s\"", paths[i]);
        cr_assert(strlen(id) >= 1 && strlen(id) <= BATCH_ID_MAX, "%s", id);
        cr_assert(id[0] != '.' && id[0] != '-', "%s", id);
        cr_assert(strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
                      strlen(id),
                  "%s", id);
        for (int k = 0; k < i; ++k) cr_assert(strcasecmp(subs[k].id, id) != 0, "%s twice", id);
    }
    cr_assert_eq(strlen(subs[7].id), 64);
    cr_assert(strncmp(subs[8].id, long_a, 62) == 0 && strcmp(subs[8].id + 62, "-2") == 0, "%s",
              subs[8].id);
    char *dir = batch_submission_dir("/o", "roster.csv");
    cr_assert_str_eq(dir, "/o/submissions/roster.csv");
    free(dir);
    for (int i = 0; i < N; ++i) free(subs[i].id);
}

/* ---- fast_paths: --out and --work --------------------------------------------------------- */

static char *tmp_tree(const char *tag)
{
    char templ[256];
    snprintf(templ, sizeof templ, "/tmp/fl-%s-XXXXXX", tag);
    cr_assert(mkdtemp(templ) != NULL);
    cr_assert(chmod(templ, 0755) == 0); /* the grader's sandbox user reads the scratch folder */
    return abs_path(templ);
}

static void put_file(const char *root, const char *rel, const char *text)
{
    char *path = path_join(root, rel);
    char *dir = xstrdup(path);
    *strrchr(dir, '/') = '\0';
    cr_assert(mkdir_p(dir) == 0, "mkdir %s", dir);
    cr_assert(write_file(path, text, strlen(text)) == 0, "write %s", path);
    free(dir);
    free(path);
}

static int exists(const char *root, const char *rel)
{
    char *path = path_join(root, rel);
    struct stat st;
    int rc = lstat(path, &st) == 0;
    free(path);
    return rc;
}

Test(fast_paths, misplaced_out_and_work_are_refused)
{
    char *t = tmp_tree("paths");
    put_file(t, "subs/alice/01-vector-add/vector_add.cu", "// alice\n");
    put_file(t, "subs/bob.tgz", "not really\n");
    put_file(t, "course/README.md", "course\n");
    char *subs = path_join(t, "subs"), *course = path_join(t, "course");
    char *link = path_join(t, "link");
    cr_assert(symlink(subs, link) == 0);
    strlist paths = {0};
    strlist_addf(&paths, "%s/subs/alice", t);
    strlist_addf(&paths, "%s/subs/bob.tgz", t);
    struct {
        const char *out, *work;
        int ok;
    } cases[] = {
        {"out", NULL, 1},
        {"course/grade-out", NULL, 1},
        {"out", "out", 1},
        {"out", "w", 1},
        {"subs", NULL, 0},
        {".", NULL, 0},
        {"subs/alice", NULL, 0},
        {"subs/alice/new/deeper", NULL, 0},
        {"subs/../subs/alice/x", NULL, 0},
        {"nothing/../subs", NULL, 0},
        {"link", NULL, 0},
        {"link/alice/y", NULL, 0},
        {"course", NULL, 0},
        {"out", "subs/alice/w", 0},
        {"out", "subs", 0},
        {"out", "course", 0},
        {"out", "out/submissions", 0},
        {"out", "out/submissions/x", 0},
        {"w/out", "w", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        char *out = path_join(t, cases[i].out);
        char *work = cases[i].work ? path_join(t, cases[i].work) : NULL;
        int rc = batch_check_paths(course, out, work, &paths);
        cr_assert_eq(rc, cases[i].ok ? 0 : -1, "--out %s --work %s", cases[i].out,
                     cases[i].work ? cases[i].work : "(default)");
        free(out);
        free(work);
    }
    /* relative to the current folder, as ./lab passes them */
    cr_assert(chdir(t) == 0);
    cr_assert_eq(batch_check_paths(course, "subs", NULL, &paths), -1);
    cr_assert_eq(batch_check_paths(course, "./out", NULL, &paths), 0);
    /* and checking created nothing */
    cr_assert(!exists(t, "subs/alice/new") && !exists(t, "out") && !exists(t, "w"));
    char *p = abs_path_any("nothing/../out/./x/");
    char *want = path_join(t, "out/x");
    cr_assert_str_eq(p, want);
    free(p);
    free(want);
    p = abs_path_any("/");
    cr_assert_str_eq(p, "/");
    free(p);
    cr_assert(path_within("/a", "/a") && path_within("/a", "/a/b") && !path_within("/a", "/ab") &&
              path_within("/", "/x") && !path_within("/a/b", "/a"));
    strlist_free(&paths);
    rm_rf(t);
    free(subs);
    free(course);
    free(link);
    free(t);
}

/* ---- fast_cli: the grader itself ------------------------------------------------------------ */

typedef struct {
    const char *cwd;
    const char *err_file;   /* stderr (and stdout) go here */
    const char *cmake_sleep; /* the stand-in cmake sleeps this long, else fails at once */
} run_opts;

static const char *env_or_fail(const char *name)
{
    const char *v = getenv(name);
    cr_assert(v != NULL && v[0], "%s is not set (run through ctest)", name);
    return v;
}

/* A folder with the stand-in cmake, put first on PATH. */
static void fake_cmake(const char *t)
{
    put_file(t, "bin/cmake",
             "#!/bin/sh\n"
             "# a stand-in for cmake: no build runs in these tests\n"
             "if [ -n \"${FL_TEST_CMAKE_SLEEP:-}\" ]; then\n"
             "    echo $$ >\"$FL_TEST_CMAKE_PID\"\n"
             "    exec sleep \"$FL_TEST_CMAKE_SLEEP\"\n"
             "fi\n"
             "echo 'stand-in cmake: no build' >&2\n"
             "exit 1\n");
    char *p = path_join(t, "bin/cmake");
    cr_assert(chmod(p, 0755) == 0);
    free(p);
}

/* Start the grader: --course, --manifest, --no-gpu --lessons 01 --arch 75,
 * then args (NULL-ended). Returns its pid. */
static pid_t start_grader(const char *t, const run_opts *o, const char *const *args)
{
    const char *bin = env_or_fail("FUSIONLAB_GRADE_BIN");
    const char *course = env_or_fail("FUSIONLAB_COURSE");
    const char *manifest = env_or_fail("FUSIONLAB_MANIFEST");
    const char *argv[64] = {bin, "--course", course, "--manifest", manifest, "--no-gpu",
                            "--lessons", "01", "--arch", "75"};
    int n = 10;
    for (int i = 0; args[i] && n < 63; ++i) argv[n++] = args[i];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        char *path = xasprintf("%s/bin:%s", t, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
        setenv("PATH", path, 1);
        char *pidfile = path_join(t, "cmake.pid");
        if (o->cmake_sleep) {
            setenv("FL_TEST_CMAKE_SLEEP", o->cmake_sleep, 1);
            setenv("FL_TEST_CMAKE_PID", pidfile, 1);
        } else {
            unsetenv("FL_TEST_CMAKE_SLEEP");
        }
        int fd = open(o->err_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || (o->cwd && chdir(o->cwd) != 0)) _exit(127);
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int wait_rc(pid_t pid)
{
    int st = 0;
    cr_assert(waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run_grader(const char *t, const run_opts *o, const char *const *args, char **err)
{
    int rc = wait_rc(start_grader(t, o, args));
    slurp_n(o->err_file, err);
    return rc;
}

Test(fast_cli, a_misplaced_out_is_refused_and_nothing_is_deleted)
{
    char *t = tmp_tree("cli-out");
    put_file(t, "subs/alice/01-vector-add/vector_add.cu", "// alice's work\n");
    fake_cmake(t);
    char *err_file = path_join(t, "stderr.txt");
    char *alice = path_join(t, "subs/alice");
    char *subs = path_join(t, "subs");
    char *inside = path_join(t, "subs/alice/results");
    char *out_ok = path_join(t, "out");
    run_opts o = {.err_file = err_file};
    struct {
        const char *out, *work;
    } cases[] = {
        {subs, NULL},       /* the submissions' parent: it would rm -rf OUT/<id> */
        {t, NULL},          /* further up */
        {alice, NULL},      /* the submission itself */
        {inside, NULL},     /* inside it, not there yet */
        {out_ok, subs},     /* --work */
        {out_ok, alice},
        {env_or_fail("FUSIONLAB_COURSE"), NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const char *args[6] = {"--out", cases[i].out};
        int k = 2;
        if (cases[i].work) {
            args[k++] = "--work";
            args[k++] = cases[i].work;
        }
        args[k] = alice;
        char *err = NULL;
        int rc = run_grader(t, &o, args, &err);
        cr_assert_eq(rc, 2, "--out %s --work %s: exit %d\n%s", cases[i].out,
                     cases[i].work ? cases[i].work : "-", rc, err);
        cr_assert(strstr(err, "refusing --") != NULL, "%s", err);
        free(err);
        cr_assert(exists(t, "subs/alice/01-vector-add/vector_add.cu"), "the submission was deleted");
        cr_assert(!exists(t, "subs/submissions") && !exists(t, "subs/.lock") &&
                      !exists(t, "subs/alice/results") && !exists(t, "subs/alice/.work") &&
                      !exists(t, ".lock") && !exists(t, "out"),
                  "case %zu wrote something", i);
    }
    rm_rf(t);
    free(err_file);
    free(alice);
    free(subs);
    free(inside);
    free(out_ok);
    free(t);
}

static int wait_for(const char *root, const char *rel, double seconds)
{
    for (double waited = 0; waited < seconds; waited += 0.05) {
        if (exists(root, rel)) return 1;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static cJSON *json_at(const char *root, const char *rel)
{
    char *path = path_join(root, rel);
    char *text = NULL;
    slurp_n(path, &text);
    cJSON *j = cJSON_Parse(text);
    cr_assert(j != NULL, "%s is not JSON", path);
    free(text);
    free(path);
    return j;
}

static int complete_in(const cJSON *r)
{
    return cJSON_IsTrue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "extra_data"),
                                         "complete"));
}

Test(fast_cli, one_batch_per_out_and_work_and_a_killed_one_leaves_nothing_complete)
{
    char *t = tmp_tree("cli-lock");
    put_file(t, "subs/alice/01-vector-add/vector_add.cu", "// alice's work\n");
    put_file(t, "outA/roster.csv", "submission,total\nstale,100\n"); /* a previous batch's */
    put_file(t, "outA/junit.xml", "<testsuites/>\n");
    put_file(t, "outA/roster.csv.partial", "stale\n");
    fake_cmake(t);
    char *alice = path_join(t, "subs/alice"), *outA = path_join(t, "outA"),
         *outB = path_join(t, "outB"), *work = path_join(t, "work"), *work2 = path_join(t, "work2");
    char *errA = path_join(t, "a.txt"), *errB = path_join(t, "b.txt");

    /* A: holds both locks while its (stand-in) cmake sleeps */
    run_opts oa = {.err_file = errA, .cmake_sleep = "20"};
    const char *argsA[] = {"--out", outA, "--work", work, alice, NULL};
    pid_t a = start_grader(t, &oa, argsA);
    cr_assert(wait_for(t, "cmake.pid", 20), "batch A never reached its build");
    cr_assert(exists(t, "outA/" BATCH_MARKER));
    cr_assert(!exists(t, "outA/roster.csv") && !exists(t, "outA/junit.xml") &&
                  !exists(t, "outA/roster.csv.partial"),
              "the previous batch's roster and junit must go when a batch starts");
    char lock[64];
    snprintf(lock, sizeof lock, "another grading batch (pid %ld) is using", (long)a);

    run_opts ob = {.err_file = errB};
    const char *same_work[] = {"--out", outB, "--work", work, alice, NULL};
    char *err = NULL;
    double t0 = now_s();
    int rc = run_grader(t, &ob, same_work, &err);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, err);
    cr_assert(strstr(err, lock) && strstr(err, work), "%s", err);
    cr_assert(!exists(t, "outB/submissions/alice"), "the refused batch wrote results");
    free(err);
    const char *same_out[] = {"--out", outA, "--work", work2, alice, NULL};
    rc = run_grader(t, &ob, same_out, &err);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, err);
    cr_assert(strstr(err, lock) && strstr(err, outA), "%s", err);
    free(err);
    cr_assert(now_s() - t0 < 10, "a refused batch must stop at once");

    /* A dies without a word */
    kill(a, SIGKILL);
    wait_rc(a);
    cr_assert(!exists(t, "outA/roster.csv") && !exists(t, "outA/junit.xml"),
              "a killed batch left a roster.csv or junit.xml");
    cr_assert(exists(t, "outA/" BATCH_MARKER));
    cJSON *r = json_at(t, "outA/submissions/alice/results.json");
    cr_assert(!complete_in(r));
    cr_assert(strstr(cJSON_GetObjectItemCaseSensitive(r, "output")->valuestring,
                     "grading did not finish") != NULL);
    cJSON_Delete(r);

    /* the locks died with it (its cmake, still asleep, holds none): the next
     * batch runs, and ends complete (the stand-in cmake fails: "setup failed") */
    run_opts od = {.err_file = errB};
    rc = run_grader(t, &od, argsA, &err);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, err);
    cr_assert(strstr(err, "another grading batch") == NULL, "%s", err);
    free(err);
    cr_assert(exists(t, "outA/roster.csv") && exists(t, "outA/junit.xml"));
    cr_assert(!exists(t, "outA/" BATCH_MARKER) && !exists(t, "outA/roster.csv.partial") &&
              !exists(t, "outA/junit.xml.partial"));
    r = json_at(t, "outA/submissions/alice/results.json");
    cr_assert(complete_in(r));
    cJSON_Delete(r);

    char *pidfile = path_join(t, "cmake.pid"), *text = NULL;
    slurp_n(pidfile, &text);
    long sleeper = strtol(text, NULL, 10);
    if (sleeper > 1) kill((pid_t)sleeper, SIGKILL);
    free(text);
    free(pidfile);
    rm_rf(t);
    free(alice); free(outA); free(outB); free(work); free(work2); free(errA); free(errB);
    free(t);
}

Test(fast_cli, hostile_names_cannot_reach_the_batch_files)
{
    char *t = tmp_tree("cli-names");
    char longname[101];
    memset(longname, 'n', 100);
    longname[100] = '\0';
    const char *const names[] = {"roster.csv", "ROSTER.CSV", "junit.xml", ".work",
                                 BATCH_MARKER, "a,\"b\nc", longname, "=cmd", "submissions"};
    enum { N = sizeof names / sizeof names[0] };
    for (int i = 0; i < N; ++i) {
        char rel[256];
        snprintf(rel, sizeof rel, "subs/%s/01-vector-add/vector_add.cu", names[i]);
        put_file(t, rel, "// x\n");
    }
    fake_cmake(t);
    char *subs = path_join(t, "subs"), *out = path_join(t, "out"), *err_file = path_join(t, "e");
    run_opts o = {.cwd = subs, .err_file = err_file};
    const char *args[4 + N] = {"--out", out};
    for (int i = 0; i < N; ++i) args[2 + i] = names[i]; /* relative, as given */
    char *err = NULL;
    int rc = run_grader(t, &o, args, &err);
    cr_assert_eq(rc, 1, "exit %d (setup fails with the stand-in cmake):\n%s", rc, err);
    free(err);

    struct stat st;
    static const char *const files[] = {"out/roster.csv", "out/junit.xml"};
    for (int i = 0; i < 2; ++i) {
        char *p = path_join(t, files[i]);
        cr_assert(lstat(p, &st) == 0 && S_ISREG(st.st_mode), "%s is not a file", p);
        free(p);
    }
    cr_assert(!exists(t, "out/" BATCH_MARKER));
    char n64[128];
    snprintf(n64, sizeof n64, "out/submissions/%.64s", longname);
    const char *const dirs[] = {"out/submissions/roster.csv", "out/submissions/ROSTER.CSV-2",
                                "out/submissions/junit.xml", "out/submissions/_work",
                                "out/submissions/" BATCH_MARKER, "out/submissions/a__b_c",
                                n64, "out/submissions/_cmd", "out/submissions/submissions"};
    for (int i = 0; i < N; ++i) {
        char rel[256];
        snprintf(rel, sizeof rel, "%s/results.json", dirs[i]);
        cr_assert(exists(t, rel), "%s was not written", rel);
        cJSON *r = json_at(t, rel);
        const char *given =
            str_of(cJSON_GetObjectItemCaseSensitive(r, "extra_data"), "submission_path");
        cr_assert(given && strcmp(given, names[i]) == 0, "%s: submission_path %s", rel,
                  given ? given : "(none)");
        cJSON_Delete(r);
    }

    csv_row *rows = NULL;
    int n = roster_rows(out, &rows);
    cr_assert_eq(n, 1 + N);
    for (int i = 0; i < N; ++i) {
        const char *path = rows[1 + i].f[rows[1 + i].n - 1];
        if (names[i][0] == '=') cr_assert(path[0] == '\'' && strcmp(path + 1, names[i]) == 0, "%s", path);
        else cr_assert_str_eq(path, names[i]);
    }
    csv_free(rows, n);
    junit_valid(out);
    char *md = NULL;
    char *mdp = path_join(t, "out/submissions/a__b_c/report.md");
    slurp_n(mdp, &md);
    cr_assert(strstr(md, "Submitted as a,\"b c") != NULL, "%s", md);
    cr_assert(md_check(md) == NULL, "%s", md);
    free(md);
    free(mdp);
    scan_clean(out);
    rm_rf(t);
    free(subs);
    free(out);
    free(err_file);
    free(t);
}
