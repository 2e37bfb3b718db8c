/* grader/lesson.c — grade one lesson of one submission.
 *
 *   1. put the submission's allowed files into the scratch student root
 *      (the course's skeleton for a file it lacks)
 *   2. build the lesson's test program in the scratch build (only the
 *      student's library and the links are redone; stale results are
 *      deleted first, so a failed build can never run an old program)
 *   3. refuse student objects that define a symbol of the harness: a
 *      second `main`, a baseline launcher, a CUDA or libc function that the
 *      timing relies on (the static linker would quietly take theirs); then
 *      the object scan (tools/scan-objects): a student object that calls
 *      cuBLAS, cuDNN or the baseline, handles signals, reads the
 *      environment, ... flags the lesson, and every check of it scores 0
 *   4. run each suite the rubric names on its own (a --filter per suite), one
 *      test at a time, with Criterion's JSON report, the speed log and a
 *      hard wall-clock limit; a suite killed at its limit costs only itself;
 *      then, when the rubric gives the sanitizer check points, the test
 *      program under compute-sanitizer (tools/sanitize, its own limit)
 *   5. score every check of the rubric from the reports
 */
#define _XOPEN_SOURCE 700
#include "grade.h"
#include "proc.h"

#include <cJSON.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEST_OUTPUT_KEEP (2u << 20) /* head and tail of a suite's output kept */
#define MAX_FAILS_SHOWN 4

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

/* ---- 1. the student's files ------------------------------------------------- */

static int place_files(grader *g, submission *s, lesson_result *lr)
{
    int n = 0;
    taken_file *files = intake_lesson_files(&s->in, lr->li, &n);
    char *dir = path_join(g->student_root, lr->li->name);
    mkdir_p(dir);
    int rc = 0;
    for (int i = 0; i < n; ++i) {
        char *dst = path_join(dir, files[i].name);
        if (files[i].status == FILE_OK) {
            if (write_file(dst, files[i].data, files[i].len) != 0) rc = -1;
        } else {
            char *src = xasprintf("%s/lessons/%s/%s", g->course, lr->li->name, files[i].name);
            if (copy_file(src, dst) != 0) rc = -1;
            strlist_addf(&lr->notes, "%s was not submitted: the course's skeleton was used",
                         files[i].name);
            free(src);
        }
        free(dst);
    }
    free(dir);
    return rc;
}

/* ---- 2. build ----------------------------------------------------------------- */

static int unlink_objects(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)ftw;
    if (flag == FTW_F && ends_with(path, ".o")) unlink(path);
    return 0;
}

static void clean_student_build(grader *g, const lesson_info *li)
{
    char *objdir = xasprintf("%s/CMakeFiles/lesson%s_student.dir", g->build, li->number);
    if (is_dir(objdir)) nftw(objdir, unlink_objects, 16, FTW_PHYS);
    free(objdir);
    char *lib = xasprintf("%s/liblesson%s_student.a", g->build, li->number);
    unlink(lib);
    free(lib);
    char *bin = path_join(g->build, li->test);
    unlink(bin);
    free(bin);
}

/* The lines of a build log a student needs: the compiler's and the linker's
 * errors with the two lines after each (the source line and the caret). */
static char *build_errors(const char *log)
{
    char *copy = xstrdup(log);
    sbuf b = {0};
    int lines = 0, tail_of_error = 0;
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line && lines < 60;
         line = strtok_r(NULL, "\n", &save)) {
        int progress = line[0] == '[' || starts_with(line, "make") || starts_with(line, "gmake") ||
                       starts_with(line, "Consolidate") || strstr(line, "Building ") ||
                       strstr(line, "Linking ");
        int is_error = !progress && (strstr(line, "error") || strstr(line, "Error ") ||
                                     strstr(line, "undefined reference") ||
                                     strstr(line, "multiple definition") ||
                                     strstr(line, "ld returned"));
        if (is_error) tail_of_error = 2;
        else if (tail_of_error > 0 && !progress) --tail_of_error;
        else continue;
        sbuf_add(&b, line);
        sbuf_add(&b, "\n");
        ++lines;
    }
    free(copy);
    if (b.len == 0) {
        free(b.s);
        return trim_middle(log, 200, 3000);
    }
    return sbuf_take(&b);
}

static int build_targets(grader *g, char **targets, int n, double timeout, proc_result *r)
{
    char jobs[16];
    snprintf(jobs, sizeof jobs, "%d", g->jobs);
    char **argv = xcalloc((size_t)(8 + 2 * n), sizeof *argv);
    int k = 0;
    argv[k++] = "cmake";
    argv[k++] = "--build";
    argv[k++] = g->build;
    argv[k++] = "--parallel";
    argv[k++] = jobs;
    for (int i = 0; i < n; ++i) {
        argv[k++] = "--target";
        argv[k++] = targets[i];
    }
    argv[k] = NULL;
    proc_opts o = {.timeout_s = timeout, .head = 1 << 20, .tail = 1 << 20};
    int rc = proc_run(argv, &o, r);
    free(argv);
    return rc;
}

/* ---- 3. symbols --------------------------------------------------------------- */

/* Split a command line into words (double quotes group, and are removed). */
static void split_words(const char *s, strlist *out)
{
    sbuf w = {0};
    int in_word = 0, quoted = 0;
    for (const char *p = s;; ++p) {
        char c = *p;
        if (c == '\0' || (!quoted && (c == ' ' || c == '\t' || c == '\n' || c == '\r'))) {
            if (in_word) strlist_add(out, sbuf_str(&w));
            w.len = 0;
            if (w.s) w.s[0] = '\0';
            in_word = 0;
            if (c == '\0') break;
            continue;
        }
        if (c == '"') {
            quoted = !quoted;
            in_word = 1;
            continue;
        }
        sbuf_addn(&w, &c, 1);
        in_word = 1;
    }
    sbuf_free(&w);
}

static void nm_names(char *const *files, int n, int dynamic, int strong_only, strset *out)
{
    if (n == 0) return;
    char **argv = xcalloc((size_t)n + 6, sizeof *argv);
    int k = 0;
    argv[k++] = "nm";
    if (dynamic) argv[k++] = "-D";
    argv[k++] = "-g";
    argv[k++] = "--defined-only";
    argv[k++] = "-P";
    for (int i = 0; i < n; ++i) argv[k++] = files[i];
    proc_opts o = {.timeout_s = 120, .head = 64u << 20, .tail = 1};
    proc_result r;
    proc_run(argv, &o, &r);
    free(argv);
    char *save = NULL;
    for (char *line = strtok_r(r.output, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (starts_with(line, "nm:") || ends_with(line, ":")) continue;
        char name[4096], type[8];
        if (sscanf(line, "%4095s %7s", name, type) != 2) continue;
        if (strong_only && strchr("WVuwv", type[0])) continue;
        char *at = strchr(name, '@'); /* memcpy@@GLIBC_2.14 */
        if (at && at != name) *at = '\0';
        strset_add(out, name);
    }
    proc_result_free(&r);
}

static char *linker_file(const char *linker, const char *name)
{
    char *opt = xasprintf("-print-file-name=%s", name);
    char *argv[] = {(char *)linker, opt, NULL};
    proc_opts o = {.timeout_s = 30};
    proc_result r;
    int rc = proc_run(argv, &o, &r);
    free(opt);
    char *path = NULL;
    if (rc == 0) {
        char *nl = strchr(r.output, '\n');
        if (nl) *nl = '\0';
        if (strchr(r.output, '/') && is_file(r.output)) path = xstrdup(r.output);
    }
    proc_result_free(&r);
    return path;
}

typedef struct {
    const lesson_info *li;
    strset names;
    int ok;
} harness_cache;

static harness_cache g_harness[32];
static int g_n_harness;

/* Every symbol the test program gets from anything but the student's
 * library: its own object, the course's static libraries and the shared
 * libraries it links (CUDA runtime, Criterion, libc, libm, libstdc++). */
static strset *harness_symbols(grader *g, const lesson_info *li)
{
    for (int i = 0; i < g_n_harness; ++i)
        if (g_harness[i].li == li) return g_harness[i].ok ? &g_harness[i].names : NULL;
    if (g_n_harness == 32) return NULL;
    harness_cache *h = &g_harness[g_n_harness++];
    memset(h, 0, sizeof *h);
    h->li = li;

    char *link = xasprintf("%s/CMakeFiles/%s.dir/link.txt", g->build, li->test);
    char *text = read_file(link, 1 << 20, NULL, NULL);
    free(link);
    if (text == NULL) return NULL;
    strlist words = {0}, expanded = {0}, statics = {0}, shared = {0}, ldirs = {0};
    split_words(text, &words);
    free(text);
    for (int i = 0; i < words.n; ++i) {
        if (words.v[i][0] == '@') { /* a response file */
            char *rsp = path_join(g->build, words.v[i] + 1);
            char *t = read_file(rsp, 1 << 20, NULL, NULL);
            if (t) split_words(t, &expanded);
            free(t);
            free(rsp);
        } else {
            strlist_add(&expanded, words.v[i]);
        }
    }
    char *student_lib = xasprintf("liblesson%s_student.a", li->number);
    const char *linker = expanded.n > 0 ? expanded.v[0] : "cc";
    for (int i = 1; i < expanded.n; ++i) {
        const char *w = expanded.v[i];
        if (starts_with(w, "-L") && w[2]) strlist_add(&ldirs, w + 2);
        else if (starts_with(w, "-l") && w[2]) {
            int found = 0;
            for (int d = 0; d < ldirs.n && !found; ++d) {
                char *so = xasprintf("%s/lib%s.so", ldirs.v[d], w + 2);
                char *a = xasprintf("%s/lib%s.a", ldirs.v[d], w + 2);
                if (is_file(so)) { strlist_add(&shared, so); found = 1; }
                else if (is_file(a)) { strlist_add(&statics, a); found = 1; }
                free(so);
                free(a);
            }
            if (!found) {
                char *nm = xasprintf("lib%s.so", w + 2);
                char *p = linker_file(linker, nm);
                if (p) strlist_add(&shared, p);
                free(p);
                free(nm);
            }
        } else if (w[0] == '-') {
            continue;
        } else if (ends_with(w, ".o") || ends_with(w, ".a")) {
            if (strcmp(path_base(w), student_lib) == 0) continue;
            char *p = path_join(g->build, w);
            if (is_file(p)) strlist_add(&statics, p);
            free(p);
        } else if (ends_with(w, ".so") || strstr(w, ".so.")) {
            if (is_file(w)) strlist_add(&shared, w);
        }
    }
    static const char *const implicit[] = {"libc.so.6", "libm.so.6", "libstdc++.so.6",
                                           "libgcc_s.so.1"};
    for (size_t i = 0; i < sizeof implicit / sizeof implicit[0]; ++i) {
        char *p = linker_file(linker, implicit[i]);
        if (p) strlist_add(&shared, p);
        free(p);
    }
    nm_names(statics.v, statics.n, 0, 0, &h->names);
    nm_names(shared.v, shared.n, 1, 0, &h->names);
    strset_add(&h->names, "main");
    h->ok = statics.n > 0;
    free(student_lib);
    strlist_free(&words);
    strlist_free(&expanded);
    strlist_free(&statics);
    strlist_free(&shared);
    strlist_free(&ldirs);
    return h->ok ? &h->names : NULL;
}

static strlist *g_objs;

static int collect_object(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)ftw;
    if (flag == FTW_F && ends_with(path, ".o")) strlist_add(g_objs, path);
    return 0;
}

static char *demangle(const char *name)
{
    if (!starts_with(name, "_Z")) return xstrdup(name);
    char *argv[] = {"c++filt", (char *)name, NULL};
    proc_opts o = {.timeout_s = 10};
    proc_result r;
    char *out = NULL;
    if (proc_run(argv, &o, &r) == 0) {
        char *nl = strchr(r.output, '\n');
        if (nl) *nl = '\0';
        if (r.output[0]) out = xstrdup(r.output);
    }
    proc_result_free(&r);
    return out ? out : xstrdup(name);
}

/* NULL when the student's objects define nothing of the harness; otherwise
 * what to tell the student. */
static char *symbol_clashes(grader *g, const lesson_info *li)
{
    strset *harness = harness_symbols(g, li);
    if (harness == NULL) return NULL; /* cannot tell: the linker had its say */
    strlist objs = {0};
    g_objs = &objs;
    char *objdir = xasprintf("%s/CMakeFiles/lesson%s_student.dir", g->build, li->number);
    nftw(objdir, collect_object, 16, FTW_PHYS);
    free(objdir);
    sbuf msg = {0};
    int shown = 0;
    for (int i = 0; i < objs.n; ++i) {
        strset mine = {0};
        nm_names(&objs.v[i], 1, 0, 1, &mine);
        char *src = xstrndup(path_base(objs.v[i]), strlen(path_base(objs.v[i])) - 2);
        for (size_t k = 0; k < mine.n; ++k) {
            if (!strset_has(harness, mine.v[k])) continue;
            if (shown++ >= 12) continue;
            char *pretty = demangle(mine.v[k]);
            if (strcmp(mine.v[k], "main") == 0)
                sbuf_addf(&msg, "%s defines `main`: the test program has its own (Criterion's); "
                          "remove it from your file.\n", src);
            else
                sbuf_addf(&msg, "%s defines `%s`, which the course's harness already has (the "
                          "baseline, common/, the tests or a library they use): rename it or "
                          "make it static. Your file may define the lesson's API and helpers "
                          "of its own, nothing else.\n", src, pretty);
            free(pretty);
        }
        free(src);
        strset_free(&mine);
    }
    strlist_free(&objs);
    if (shown > 12) sbuf_addf(&msg, "(%d more not listed)\n", shown - 12);
    return shown ? sbuf_take(&msg) : (sbuf_free(&msg), NULL);
}

/* The object scan: tools/scan-objects over the student's object files, with
 * the course's libraries of this scratch build as what they must not
 * repeat or call. 1 and *out = its lines when it flags something, 0 when
 * not, -1 and *out = why when it cannot tell (the lesson is then graded as
 * usual, with a note). */
static int object_scan(grader *g, const lesson_info *li, char **out)
{
    *out = NULL;
    strlist objs = {0};
    g_objs = &objs;
    char *objdir = xasprintf("%s/CMakeFiles/lesson%s_student.dir", g->build, li->number);
    nftw(objdir, collect_object, 16, FTW_PHYS);
    free(objdir);
    if (objs.n == 0) {
        *out = xstrdup("no object file of the student's library was found");
        return -1;
    }
    char *script = path_join(g->course, "tools/scan-objects");
    char *libs[3] = {path_join(g->build, "libfusionlab_common.a"),
                     path_join(g->build, "libfusionlab_testlib.a"),
                     xasprintf("%s/liblesson%s_baseline.a", g->build, li->number)};
    /* the lesson's own rules (lesson_add's SCAN_RULES), when it has any */
    char *rules = xasprintf("%s/scan-rules/lesson%s.txt", g->build, li->number);
    char **argv = xcalloc((size_t)objs.n + 12, sizeof *argv);
    int k = 0;
    argv[k++] = "sh";
    argv[k++] = script;
    for (int i = 0; i < 2; ++i)
        if (is_file(libs[i])) {
            argv[k++] = "--harness";
            argv[k++] = libs[i];
        }
    if (is_file(libs[2])) {
        argv[k++] = "--baseline";
        argv[k++] = libs[2];
    }
    if (is_file(rules)) {
        argv[k++] = "--rules";
        argv[k++] = rules;
    }
    for (int i = 0; i < objs.n; ++i) argv[k++] = objs.v[i];
    argv[k] = NULL;
    proc_opts o = {.timeout_s = 120, .head = 256 << 10, .tail = 16 << 10};
    proc_result r;
    proc_run(argv, &o, &r);
    int rc = -1;
    if (r.started && !r.timed_out && !r.interrupted && r.term_signal == 0 &&
        (r.exit_code == 0 || r.exit_code == 1)) {
        rc = r.exit_code;
    }
    if (rc == 1) {
        /* at most 20 of its lines: the rest is more of the same */
        sbuf b = {0};
        int lines = 0, more = 0;
        char *save = NULL;
        for (char *line = strtok_r(r.output, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            if (line[0] == '\0') continue;
            if (lines++ < 20) sbuf_addf(&b, "%s\n", line);
            else ++more;
        }
        if (more) sbuf_addf(&b, "(%d more not listed)\n", more);
        *out = sbuf_take(&b);
    } else if (rc < 0) {
        char *t = trim_middle(r.output, 300, 300);
        *out = r.timed_out ? xstrdup("it ran past 120 s")
                           : xasprintf("exit status %d%s%s", r.exit_code, t[0] ? ": " : "", t);
        free(t);
    }
    proc_result_free(&r);
    free(argv);
    free(script);
    for (int i = 0; i < 3; ++i) free(libs[i]);
    free(rules);
    strlist_free(&objs);
    return rc;
}

/* ---- 4. running the suites --------------------------------------------------- */

typedef enum { CR_PASSED, CR_FAILED, CR_CRASHED, CR_TIMED_OUT, CR_SKIPPED, CR_KILLED } cr_status;

typedef struct {
    char *test;
    cr_status status;
    char *message;  /* Criterion's messages, one per line */
    char *extra;    /* what the test printed (speed lines, CUDA errors) */
} cr_case;

typedef enum { SR_OK, SR_NOT_RUN, SR_KILLED, SR_NO_REPORT } suite_state;

typedef struct {
    char *suite;
    suite_state state;
    char *why;
    double elapsed;
    cr_case *cases;
    int n;
    speed_log speed;
} suite_run;

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
    char *text = read_file(path, 64u << 20, NULL, NULL);
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

static void speed_log_load(const char *path, speed_log *log)
{
    char *text = read_file(path, 4u << 20, NULL, NULL);
    if (text == NULL) return;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cJSON *o = cJSON_Parse(line);
        if (o == NULL) continue;
        const cJSON *su = cJSON_GetObjectItemCaseSensitive(o, "suite");
        const cJSON *te = cJSON_GetObjectItemCaseSensitive(o, "test");
        const cJSON *la = cJSON_GetObjectItemCaseSensitive(o, "label");
        if (cJSON_IsString(su) && cJSON_IsString(te)) {
            log->v = xrealloc(log->v, (size_t)(log->n + 1) * sizeof *log->v);
            speed_rec *r = &log->v[log->n++];
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
#undef NUM
            r->passed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "passed"));
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
static const speed_rec *speed_find(const speed_log *log, const char *lesson, const char *suite,
                                   const char *test)
{
    const speed_rec *found = NULL;
    for (int i = 0; i < log->n; ++i)
        if ((!lesson || strcmp(log->v[i].lesson, lesson) == 0) &&
            strcmp(log->v[i].suite, suite) == 0 && (!test || strcmp(log->v[i].test, test) == 0))
            found = &log->v[i];
    return found;
}

static void run_suite(grader *g, const char *binary, const char *suite, double timeout,
                      suite_run *sr, char **log_out)
{
    memset(sr, 0, sizeof *sr);
    sr->suite = xstrdup(suite);
    char *json = path_join(g->run_dir, "report.json");
    char *speed = path_join(g->run_dir, "speed.jsonl");
    unlink(json);
    unlink(speed);
    char *json_opt = xasprintf("--json=%s", json);
    char *filter = xasprintf("%s/*", suite);
    char *speed_env = xasprintf("FUSIONLAB_SPEED_LOG=%s", speed);
    char tmo[32];
    snprintf(tmo, sizeof tmo, "%g", g->test_timeout);
    char *argv[12];
    int k = 0;
    argv[k++] = (char *)binary;
    argv[k++] = "--jobs";
    argv[k++] = "1";
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
    const char *env_set[3] = {speed_env, NULL, NULL};
    if (g->no_gpu) env_set[1] = "CUDA_VISIBLE_DEVICES=";
    proc_opts o = {.timeout_s = timeout, .cwd = g->run_dir, .env_set = env_set,
                   .head = TEST_OUTPUT_KEEP, .tail = TEST_OUTPUT_KEEP};
    proc_result r;
    proc_run(argv, &o, &r);
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
        /* no report: keep what the output says about the cases that ended */
        for (int i = 0; i < logged.n; ++i)
            case_add(sr, logged.cases[i].test, logged.cases[i].status, logged.cases[i].message,
                     logged.cases[i].extra);
        if (r.interrupted) {
            sr->state = SR_KILLED;
            sr->why = xstrdup("grading was interrupted");
        } else if (r.timed_out) {
            sr->state = SR_KILLED;
            sr->why = xasprintf("the suite was killed after %.0f s, its time limit: a kernel "
                                "or a loop that never ends?", r.elapsed_s);
        } else {
            sr->state = SR_NO_REPORT;
            if (r.term_signal)
                sr->why = xasprintf("the test program died of signal %d before it could report",
                                    r.term_signal);
            else
                sr->why = xasprintf("the test program wrote no report (exit status %d)",
                                    r.exit_code);
            if (logged.n == 0 && r.output[0]) { /* it never got going: say what it printed */
                char *t = trim_middle(r.output, 300, 300);
                char *w = xasprintf("%s; it printed: %s", sr->why, t);
                free(sr->why);
                sr->why = w;
                free(t);
            }
        }
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
    free(json);
    free(speed);
    free(json_opt);
    free(filter);
    free(speed_env);
}

static void suite_run_free(suite_run *sr)
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

/* ---- 4b. the sanitizer ---------------------------------------------------------- */

typedef struct {
    check_status status;
    char *output;
} sanitizer_run;

static const char *const kSanitizerTools[] = {"memcheck", "racecheck", "initcheck", "synccheck"};

static void write_log(grader *g, submission *s, const char *name, const char *text);

/* tools/sanitize (all four tools, the small cases of every suite but speed,
 * baseline and counters) on the student's test program, within the
 * grader's sanitizer limit; its report becomes the check's output, the
 * sanitizer's own output the log NN-sanitizer.log. */
static void run_sanitizer(grader *g, submission *s, lesson_result *lr, const char *binary,
                          const char *progress, sanitizer_run *sr)
{
    const lesson_info *li = lr->li;
    char *script = path_join(g->course, "tools/sanitize");
    char *outdir = path_join(g->run_dir, "sanitize");
    rm_rf(outdir);
    char per_tool[32];
    double each = g->sanitizer_timeout / 4.0;
    snprintf(per_tool, sizeof per_tool, "%ld", each < 1.0 ? 1L : (long)each);
    /* only errors in the student's files count (not the baseline's, cuBLAS's) */
    sbuf files = {0};
    for (int i = 0; i < li->exercise.n; ++i)
        sbuf_addf(&files, "%s%s", i ? " " : "", li->exercise.v[i]);
    char *argv[] = {"sh", script, "--tool", "all", "--timeout", per_tool, "--out", outdir,
                    "--files", (char *)sbuf_str(&files), (char *)binary, NULL};
    const char *env_set[2] = {NULL, NULL};
    if (g->no_gpu) env_set[0] = "CUDA_VISIBLE_DEVICES=";
    /* tools/sanitize bounds each tool itself; this is the backstop */
    proc_opts o = {.timeout_s = g->sanitizer_timeout + 60, .cwd = g->run_dir, .env_set = env_set,
                   .head = 1 << 20, .tail = 1 << 20};
    fprintf(stderr, "%s: compute-sanitizer (limit %.0f s)\n", progress, g->sanitizer_timeout);
    proc_result r;
    proc_run(argv, &o, &r);

    /* the log: the report, then each tool's own output */
    sbuf log = {0};
    sbuf_addf(&log, "==== tools/sanitize: exit %d, %.1f s%s\n%s\n", r.exit_code, r.elapsed_s,
              r.timed_out ? " (stopped at the limit)" : "", r.output);
    for (size_t i = 0; i < sizeof kSanitizerTools / sizeof kSanitizerTools[0]; ++i) {
        char *name = xasprintf("%s/%s.log", outdir, kSanitizerTools[i]);
        char *text = read_file(name, 16u << 20, NULL, NULL);
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
    sbuf_free(&log);

    /* the report without its pointer to the raw logs (they are in logs/) */
    sbuf rep = {0};
    char *copy = xstrdup(r.output);
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (!starts_with(line, "(the sanitizer's own output")) sbuf_addf(&rep, "%s\n", line);
    free(copy);
    char *report = trim_middle(sbuf_str(&rep), 1800, 600);
    sbuf_free(&rep);

    memset(sr, 0, sizeof *sr);
    if (r.interrupted) {
        sr->status = ST_NOT_RUN;
        sr->output = xstrdup("not run: grading was interrupted");
    } else if (r.timed_out) {
        sr->status = ST_FAILED;
        sr->output = xasprintf("the sanitizer stage ran past its %.0f s limit and was stopped: a "
                               "kernel that never ends?\n%s", g->sanitizer_timeout, report);
    } else if (r.exit_code == 0 && r.term_signal == 0) {
        sr->status = ST_PASSED;
        sr->output = xasprintf("compute-sanitizer finds no error (memcheck, racecheck, initcheck, "
                               "synccheck; the small cases)\n%s", report);
    } else if (r.exit_code == 1) {
        sr->status = ST_FAILED;
        sr->output = xasprintf("compute-sanitizer found errors in your kernels (0 points; the "
                               "full output is in %s-sanitizer.log):\n%s", li->number, report);
    } else if (r.exit_code == 77) {
        sr->status = ST_NOT_RUN;
        sr->output = xstrdup("not run: no CUDA device");
    } else if (strstr(r.output, "compute-sanitizer not found")) {
        sr->status = ST_NOT_RUN;
        sr->output = xstrdup("not run: compute-sanitizer not found on the grading machine (it "
                             "comes with the CUDA toolkit): 0 points until it is graded where "
                             "it is installed");
        strlist_add(&lr->notes, "the sanitizer check was not run: compute-sanitizer not found");
    } else {
        sr->status = ST_NOT_RUN;
        sr->output = xasprintf("not run: the sanitizer could not run (exit %d%s):\n%s",
                               r.exit_code, r.term_signal ? ", killed by a signal" : "", report);
        strlist_add(&lr->notes, "the sanitizer check was not run: tools/sanitize could not run "
                                "(see its log)");
    }
    free(report);
    proc_result_free(&r);
    free(script);
    free(outdir);
    sbuf_free(&files);
}

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

/* Lines worth showing of what a case printed: CUDA errors and the like. */
static void add_extra(sbuf *b, const cr_case *c, int speed_lines)
{
    if (c->extra == NULL || c->extra[0] == '\0') return;
    char *copy = xstrdup(c->extra);
    char *save = NULL;
    int shown = 0;
    for (char *line = strtok_r(copy, "\n", &save); line && shown < 6;
         line = strtok_r(NULL, "\n", &save)) {
        int is_speed = starts_with(line, "speed ");
        if (is_speed != (speed_lines != 0)) continue;
        char *t = trim_middle(line, 400, 100);
        sbuf_addf(b, "    %s\n", t);
        free(t);
        ++shown;
    }
    free(copy);
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
    add_extra(b, c, 0);
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
        for (int i = 0; i < sr->n; ++i)
            if (!k->test || strcmp(sr->cases[i].test, k->test) == 0) add_extra(&b, &sr->cases[i], 1);
        free(cr->output);
        cr->output = sbuf_take(&b);
        return;
    }
    const speed_rec *mine = speed_find(&sr->speed, NULL, k->suite, k->test);
    const speed_rec *ref = speed_find(&g->reference, li->number, k->suite, k->test);
    sbuf b = {0};
    if (mine == NULL) {
        sbuf_add(&b, "passes; no speed record was written (is the speed log enabled?): full "
                 "marks without the curve\n");
        cr->score = k->points;
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
    for (int i = 0; i < sr->n; ++i)
        if (!k->test || strcmp(sr->cases[i].test, k->test) == 0) add_extra(&b, &sr->cases[i], 1);
    free(cr->output);
    cr->output = sbuf_take(&b);
    if (cr->score < k->points) cr->status = ST_PARTIAL;
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

static void write_log(grader *g, submission *s, const char *name, const char *text)
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

void grade_lesson(grader *g, submission *s, lesson_result *lr, const char *progress)
{
    const lesson_info *li = lr->li;
    const rubric_lesson *rl = lr->rl;
    lr->n_checks = rl->n;
    lr->checks = xcalloc((size_t)rl->n, sizeof *lr->checks);
    for (int i = 0; i < rl->n; ++i) {
        lr->checks[i].rc = &rl->checks[i];
        lr->checks[i].max = rl->checks[i].points;
    }
    for (int i = 0; i < rl->n; ++i) lr->max += rl->checks[i].points;

    if (!g->ready) {
        lr->state = L_SETUP_FAILED;
        lr->summary = xasprintf("not graded: %s", g->setup_error ? g->setup_error : "setup failed");
        all_checks(lr, ST_NOT_RUN, lr->summary);
        return;
    }
    if (s->in.refused) {
        lr->state = L_REFUSED;
        lr->summary = xasprintf("submission refused: %s", s->in.refusal);
        all_checks(lr, ST_NOT_RUN, lr->summary);
        return;
    }
    if (!intake_lesson_submitted(&s->in, li)) {
        lr->state = L_NOT_SUBMITTED;
        sbuf b = {0};
        sbuf_addf(&b, "not submitted: no ");
        for (int i = 0; i < li->exercise.n; ++i)
            sbuf_addf(&b, "%s%s/%s", i ? " or " : "", li->name, li->exercise.v[i]);
        sbuf_add(&b, " in the submission");
        lr->summary = sbuf_take(&b);
        all_checks(lr, ST_NOT_RUN, lr->summary);
        return;
    }
    int nf = 0;
    taken_file *files = intake_lesson_files(&s->in, li, &nf);
    sbuf refused = {0};
    for (int i = 0; i < nf; ++i)
        if (files[i].status != FILE_OK && files[i].status != FILE_MISSING)
            sbuf_addf(&refused, "%s\n", files[i].note ? files[i].note : files[i].name);
    if (refused.len) {
        lr->state = L_REFUSED;
        lr->summary = xstrdup("refused: a file of this lesson could not be taken");
        lr->detail = sbuf_take(&refused);
        all_checks(lr, ST_NOT_RUN, "not run: a file of this lesson was refused (see the lesson's "
                                   "notes)");
        return;
    }
    sbuf_free(&refused);
    if (proc_interrupted()) {
        lr->state = L_INTERRUPTED;
        lr->summary = xstrdup("not graded: grading was interrupted");
        all_checks(lr, ST_NOT_RUN, lr->summary);
        return;
    }

    /* 1 + 2: files, then the build */
    fprintf(stderr, "%s: building\n", progress);
    if (place_files(g, s, lr) != 0) {
        lr->state = L_SETUP_FAILED;
        lr->summary = xstrdup("not graded: the grader could not write the scratch files");
        all_checks(lr, ST_NOT_RUN, lr->summary);
        return;
    }
    clean_student_build(g, li);
    strlist targets = {0};
    strlist_add(&targets, li->test);
    proc_result br;
    int brc = build_targets(g, targets.v, targets.n, g->build_timeout, &br);
    strlist_free(&targets);
    lr->build_s = br.elapsed_s;
    char *logname = xasprintf("%s-build.log", li->number);
    write_log(g, s, logname, br.output);
    free(logname);
    if (brc != 0 || br.timed_out) {
        lr->state = L_BUILD_FAILED;
        char *errs = build_errors(br.output);
        lr->detail = scrub(g, errs);
        free(errs);
        int link = strstr(br.output, "undefined reference") || strstr(br.output, "multiple definition") ||
                   strstr(br.output, "ld returned");
        if (br.timed_out)
            lr->summary = xasprintf("build failed: it ran past %.0f s", g->build_timeout);
        else
            lr->summary = xstrdup(link ? "link error: the test program could not be linked"
                                       : "compile error");
        char *why = xasprintf("not run: %s (the build output is in the lesson's notes)",
                              lr->summary);
        all_checks(lr, ST_NOT_RUN, why);
        free(why);
        proc_result_free(&br);
        return;
    }
    proc_result_free(&br);

    /* 3: symbols */
    char *clash = symbol_clashes(g, li);
    if (clash) {
        lr->state = L_LINK_REFUSED;
        lr->summary = xstrdup("link error: a graded file defines a symbol the harness owns");
        lr->detail = clash;
        all_checks(lr, ST_NOT_RUN, "not run: link error (see the lesson's notes)");
        return;
    }
    char *flags = NULL;
    int scan = object_scan(g, li, &flags);
    if (scan == 1) {
        lr->state = L_FLAGGED;
        lr->summary = xstrdup("flagged by the object scan: a graded file calls or defines what an "
                              "exercise must not (every check scores 0; the lines say what)");
        lr->detail = scrub(g, flags);
        char *why = xasprintf("flagged by the object scan: %s", lr->detail);
        all_checks(lr, ST_FAILED, why);
        free(why);
        free(flags);
        return;
    }
    if (scan < 0) strlist_addf(&lr->notes, "the object scan could not run (%s): graded as usual",
                               flags);
    free(flags);

    /* 4: the suites, in the rubric's order, each once */
    char *binary = path_join(g->build, li->test);
    double t_start = now_s();
    strlist suites = {0};
    for (int i = 0; i < rl->n; ++i)
        if (rl->checks[i].suite && !strlist_has(&suites, rl->checks[i].suite))
            strlist_add(&suites, rl->checks[i].suite);
    suite_run *runs = xcalloc((size_t)(suites.n + 1), sizeof *runs);
    sbuf alllog = {0};
    for (int i = 0; i < suites.n; ++i) {
        double left = g->lesson_timeout - (now_s() - t_start);
        if (proc_interrupted() || left < 5.0) {
            runs[i].suite = xstrdup(suites.v[i]);
            runs[i].state = SR_NOT_RUN;
            runs[i].why = xstrdup(proc_interrupted()
                                      ? "grading was interrupted"
                                      : "the lesson's time budget was used up by the suites before");
            continue;
        }
        double limit = g->suite_timeout < left ? g->suite_timeout : left;
        fprintf(stderr, "%s: running %s (limit %.0f s)\n", progress, suites.v[i], limit);
        char *log = NULL;
        run_suite(g, binary, suites.v[i], limit, &runs[i], &log);
        sbuf_addf(&alllog, "==== suite %s: %.1f s%s%s\n", suites.v[i], runs[i].elapsed,
                  runs[i].why ? " -- " : "", runs[i].why ? runs[i].why : "");
        if (runs[i].state == SR_KILLED || runs[i].state == SR_NO_REPORT) {
            lr->n_killed++;
            strlist_addf(&lr->notes, "suite %s: %s", suites.v[i], runs[i].why);
        }
        char *t = trim_middle(log, 48 * 1024, 48 * 1024);
        sbuf_add(&alllog, t);
        sbuf_add(&alllog, "\n");
        free(t);
        free(log);
    }
    lr->run_s = now_s() - t_start;
    char *runlog = xasprintf("%s-tests.log", li->number);
    write_log(g, s, runlog, sbuf_str(&alllog));
    free(runlog);
    sbuf_free(&alllog);

    int timed_out = 0;
    for (int i = 0; i < suites.n; ++i) {
        timed_out |= runs[i].state == SR_KILLED;
        for (int c = 0; c < runs[i].n; ++c) timed_out |= runs[i].cases[c].status == CR_TIMED_OUT;
    }

    /* 4b: the sanitizer, once, when a sanitizer check is worth points */
    sanitizer_run san = {ST_NOT_RUN, NULL};
    for (int i = 0; i < rl->n && san.output == NULL; ++i)
        if (rl->checks[i].kind == KIND_SANITIZER && rl->checks[i].points > 0) {
            if (proc_interrupted()) san.output = xstrdup("not run: grading was interrupted");
            else if (timed_out)
                /* a program that had to be killed would spend the sanitizer's
                 * whole limit too: 0 points, and the time saved */
                san.output = xstrdup("not run: a test of this lesson ran past its time limit "
                                     "(a kernel that never ends?); the sanitizer would hang too");
            else run_sanitizer(g, s, lr, binary, progress, &san);
        }
    free(binary);

    /* 5: scores */
    lr->state = L_GRADED;
    for (int i = 0; i < rl->n; ++i) {
        const rubric_check *k = &rl->checks[i];
        check_result *cr = &lr->checks[i];
        if (k->kind == KIND_SANITIZER) {
            if (k->points <= 0) {
                cr->status = ST_NOT_RUN;
                cr->output = xstrdup("not run: worth 0 points in the rubric (give it points to "
                                     "run compute-sanitizer)");
                continue;
            }
            cr->status = san.status;
            cr->score = san.status == ST_PASSED ? k->points : 0.0;
            cr->output = scrub(g, san.output);
            if (cr->status == ST_NOT_RUN && strstr(cr->output, "no CUDA device")) lr->not_run_no_gpu++;
            lr->score += cr->score;
            continue;
        }
        int r = -1;
        for (int j = 0; j < suites.n; ++j)
            if (strcmp(suites.v[j], k->suite) == 0) r = j;
        if (r < 0) {
            cr->status = ST_NOT_RUN;
            cr->output = xstrdup("not run: the rubric names no suite for it");
            continue;
        }
        if (k->kind == KIND_SPEED) score_speed(g, li, k, &runs[r], cr);
        else score_cases(g, k, &runs[r], cr);
        char *clean = scrub(g, cr->output);
        free(cr->output);
        cr->output = clean;
        if (cr->status == ST_NOT_RUN && strstr(cr->output, "no CUDA device")) lr->not_run_no_gpu++;
        lr->score += cr->score;
    }
    for (int i = 0; i < suites.n; ++i) suite_run_free(&runs[i]);
    free(runs);
    free(san.output);
    strlist_free(&suites);
    if (lr->n_killed > 0)
        lr->summary = xasprintf("graded; %d suite%s stopped before it reported (a hang or a "
                                "crash of the test program: see the notes)",
                                lr->n_killed, lr->n_killed == 1 ? "" : "s");
    else if (lr->not_run_no_gpu > 0)
        lr->summary = xasprintf("graded without a GPU: %d check%s not run (no CUDA device)",
                                lr->not_run_no_gpu, lr->not_run_no_gpu == 1 ? "" : "s");
    else
        lr->summary = xstrdup("graded");
}

/* ---- the reference: the worked solution's speed on this GPU ---------------- */

void run_reference(grader *g, const lesson_info *li, const rubric_lesson *rl)
{
    if (li->solution_test == NULL) {
        strlist_addf(&g->reference_notes, "lesson %s: no worked solution in this course tree",
                     li->number);
        return;
    }
    char *binary = path_join(g->build, li->solution_test);
    if (!is_file(binary)) {
        strlist_addf(&g->reference_notes, "lesson %s: the worked solution's tests did not build",
                     li->number);
        free(binary);
        return;
    }
    strlist suites = {0};
    for (int i = 0; i < rl->n; ++i)
        if (rl->checks[i].kind == KIND_SPEED && !strlist_has(&suites, rl->checks[i].suite))
            strlist_add(&suites, rl->checks[i].suite);
    for (int i = 0; i < suites.n; ++i) {
        fprintf(stderr, "== reference: lesson %s, worked solution, suite %s\n", li->number,
                suites.v[i]);
        suite_run sr;
        run_suite(g, binary, suites.v[i], g->suite_timeout, &sr, NULL);
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
}
