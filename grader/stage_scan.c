/* grader/stage_scan.c — the scan stage, on the student's objects once they
 * built: refuse student objects that define a symbol of the harness: a
 * second `main`, a baseline launcher, a CUDA or libc function that the
 * timing relies on (the static linker would quietly take theirs); then the
 * object scan (tools/scan-objects): a student object that calls cuBLAS,
 * cuDNN or the baseline, handles signals, reads the environment, ... flags
 * the lesson, and every check of it scores 0.
 */
#define _XOPEN_SOURCE 700
#include "stages.h"

#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* nm over `files`; `g` given: in the scan's sandbox (a student's objects
 * are untrusted input even to nm). */
static void nm_names(grader *g, char *const *files, int n, int dynamic, int strong_only,
                     strset *out)
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
    if (g) run_step(g, STEP_SCAN, NULL, NULL, argv, NULL, &o, &r);
    else proc_run(argv, &o, &r);
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

    char *rules = path_join(g->build, li->b.test_rules);
    char *link = path_join(rules, "link.txt");
    free(rules);
    char *text = read_file(link, 1 << 20, NULL, NULL);
    free(link);
    if (text == NULL) return NULL;
    /* link.txt is a shell command line (util.c's split_words) */
    strlist words = {0}, expanded = {0}, statics = {0}, shared = {0}, ldirs = {0};
    char *why = NULL;
    int bad = split_words(text, &words, &why);
    free(text);
    for (int i = 0; i < words.n && !bad; ++i) {
        if (words.v[i][0] == '@') { /* a response file */
            char *rsp = path_join(g->build, words.v[i] + 1);
            char *t = read_file(rsp, 1 << 20, NULL, NULL);
            if (t && split_words(t, &expanded, &why) != 0) bad = 1;
            free(t);
            free(rsp);
        } else {
            strlist_add(&expanded, words.v[i]);
        }
    }
    char *student_lib = xstrdup(path_base(li->b.student_lib));
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
    nm_names(NULL, statics.v, statics.n, 0, 0, &h->names);
    nm_names(NULL, shared.v, shared.n, 1, 0, &h->names);
    strset_add(&h->names, "main");
    h->ok = statics.n > 0 && !bad; /* a link line it cannot read leaves the harness unknown */
    free(why);
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

/* The object files of the student's library in the scratch build: those
 * its CMake lists, and any other left in the target's folder (none should
 * be: the build stage removes them first). */
static void student_objects(grader *g, const lesson_info *li, strlist *objs)
{
    for (int i = 0; i < li->b.student_objects.n; ++i)
        if (is_file(li->b.student_objects.v[i])) strlist_add(objs, li->b.student_objects.v[i]);
    strlist extra = {0};
    g_objs = &extra;
    char *objdir = path_join(g->build, li->b.student_rules);
    nftw(objdir, collect_object, 16, FTW_PHYS);
    free(objdir);
    for (int i = 0; i < extra.n; ++i) {
        int listed = 0;
        for (int j = 0; j < objs->n && !listed; ++j) listed = strcmp(objs->v[j], extra.v[i]) == 0;
        if (!listed) strlist_add(objs, extra.v[i]);
    }
    strlist_free(&extra);
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
    student_objects(g, li, &objs);
    sbuf msg = {0};
    int shown = 0;
    for (int i = 0; i < objs.n; ++i) {
        strset mine = {0};
        nm_names(g, &objs.v[i], 1, 0, 1, &mine);
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

/* The lesson's public headers: every .h of lessons/NN-name/. */
static void lesson_headers(const grader *g, const lesson_info *li, strlist *out)
{
    char *pat = xasprintf("%s/lessons/%s/*.h", g->course, li->name);
    glob_t gl;
    if (glob(pat, 0, NULL, &gl) == 0) {
        for (size_t i = 0; i < gl.gl_pathc; ++i) strlist_add(out, gl.gl_pathv[i]);
        globfree(&gl);
    }
    free(pat);
}

/* The object scan: tools/scan-objects over the student's object files, with
 * the course's libraries of this scratch build as what they must not
 * repeat or call. 1 and *out = its lines when it flags something, 0 when
 * not, -1 and *out = why when it cannot tell (the lesson then scores 0:
 * what cannot be scanned is not graded). */
static int object_scan(grader *g, const lesson_info *li, char **out)
{
    *out = NULL;
    strlist objs = {0};
    student_objects(g, li, &objs);
    if (objs.n == 0) {
        *out = xstrdup("no object file of the student's library was found");
        return -1;
    }
    char *script = path_join(g->course, "tools/scan-objects");
    const strlist *harness = &g->man.harness_libs;
    /* the lesson's own rules (lesson_add's SCAN_RULES), when it has any */
    char *rules = li->b.scan_rules;
    char **argv = xcalloc((size_t)objs.n + 2 * (size_t)harness->n + 10, sizeof *argv);
    int k = 0;
    argv[k++] = "sh";
    argv[k++] = script;
    for (int i = 0; i < harness->n; ++i)
        if (is_file(harness->v[i])) {
            argv[k++] = "--harness";
            argv[k++] = harness->v[i];
        }
    if (is_file(li->b.baseline_lib)) {
        argv[k++] = "--baseline";
        argv[k++] = li->b.baseline_lib;
    }
    if (is_file(rules)) {
        argv[k++] = "--rules";
        argv[k++] = rules;
    }
    /* the lesson's API: what its headers declare is all a student file may
     * define (besides its own kernels) */
    strlist api = {0};
    lesson_headers(g, li, &api);
    argv = xrealloc(argv, ((size_t)objs.n + 2 * (size_t)harness->n + 10 + 2 * (size_t)api.n) *
                              sizeof *argv);
    for (int i = 0; i < api.n; ++i) {
        argv[k++] = "--api";
        argv[k++] = api.v[i];
    }
    for (int i = 0; i < objs.n; ++i) argv[k++] = objs.v[i];
    argv[k] = NULL;
    proc_opts o = {.timeout_s = 120, .head = 256 << 10, .tail = 16 << 10};
    proc_result r;
    run_step(g, STEP_SCAN, li, NULL, argv, NULL, &o, &r);
    strlist_free(&api);
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
    strlist_free(&objs);
    return rc;
}

/* ---- the stage ----------------------------------------------------------------- */

lesson_state scan_lesson(grader *g, lesson_result *lr, char **summary, char **detail, char **why)
{
    const lesson_info *li = lr->li;
    char *clash = symbol_clashes(g, li);
    if (clash) {
        *summary = xstrdup("link error: a graded file defines a symbol the harness owns");
        *detail = clash;
        *why = xstrdup("not run: link error (see the lesson's notes)");
        return L_LINK_REFUSED;
    }
    char *flags = NULL;
    int scan = object_scan(g, li, &flags);
    if (scan == 1) {
        *summary = xstrdup("flagged by the object scan: a graded file calls or defines what an "
                           "exercise must not (every check scores 0; the lines say what)");
        *detail = scrub(g, flags);
        *why = xasprintf("flagged by the object scan: %s", *detail);
        free(flags);
        return L_FLAGGED;
    }
    if (scan < 0) {
        /* nothing is graded that the scan could not read: an object made to
         * break the scan would otherwise pass it */
        *summary = xstrdup("flagged: the object scan could not read the graded files' objects "
                           "(every check scores 0)");
        char *f = scrub(g, flags);
        *detail = xasprintf("the object scan could not run: %s", f);
        free(f);
        *why = xasprintf("not run: %s", *detail);
        free(flags);
        return L_FLAGGED;
    }
    free(flags);
    return L_GRADED;
}
