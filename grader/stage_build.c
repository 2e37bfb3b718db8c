/* grader/stage_build.c — the build stage: put the submission's allowed files
 * into the scratch student root (the course's skeleton for a file it
 * lacks), then build the lesson's test program in the scratch build (only
 * the student's library and the links are redone; stale results are
 * deleted first, so a failed build can never run an old program).
 */
#define _XOPEN_SOURCE 700
#include "stages.h"

#include <cJSON.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    /* every object under the target's folder, not only those the build
     * lists: nothing a previous submission left may be linked again */
    char *objdir = path_join(g->build, li->b.student_rules);
    if (is_dir(objdir)) nftw(objdir, unlink_objects, 16, FTW_PHYS);
    free(objdir);
    for (int i = 0; i < li->b.student_objects.n; ++i) unlink(li->b.student_objects.v[i]);
    unlink(li->b.student_lib);
    unlink(li->b.test_bin);
}

/* "PATH:LINE:COL: error ..." (gcc) or "PATH(LINE): error ..." (nvcc's
 * front end): the path, when `line` is a located diagnostic. An absolute
 * path may hold blanks (a batch's --out or --work with one in its name). */
static char *diag_path(const char *line)
{
    const char *p = line;
    int absolute = line[0] == '/';
    while (*p && *p != ':' && *p != '(' && (absolute || *p != ' ')) ++p;
    if (p == line) return NULL;
    if (*p == ':' && p[1] >= '0' && p[1] <= '9') return xstrndup(line, (size_t)(p - line));
    if (*p == '(' && p[1] >= '0' && p[1] <= '9' && strstr(p, "): ")) return xstrndup(line, (size_t)(p - line));
    return NULL;
}

/* Whether a diagnostic about `path` may be shown: the student's own files
 * and the course's public headers of this lesson and of common/. */
static int diag_shown(const grader *g, const lesson_info *li, const char *path)
{
    char *mine = path_join(g->student_root, li->name);
    char *lesson = xasprintf("%s/lessons/%s/", g->course, li->name);
    char *common = xasprintf("%s/common/", g->course);
    int ok = (starts_with(path, mine) && path[strlen(mine)] == '/' &&
              !strstr(path + strlen(mine), "..")) ||
             ((starts_with(path, lesson) || starts_with(path, common)) && !strstr(path, "..") &&
              (ends_with(path, ".h") || ends_with(path, ".cuh")));
    free(mine);
    free(lesson);
    free(common);
    return ok;
}

#define BUILD_SILENT "the build failed without a message about your file\n"

/* The lines of a build log a student may see: the compiler's diagnostics
 * about their own files (with the two lines after each: the source line and
 * the caret) and the linker's errors; nothing located in any other file,
 * whatever the student's file made the compiler read. */
static char *student_diagnostics(const grader *g, const lesson_info *li, const char *log)
{
    char *copy = xstrdup(log);
    sbuf b = {0};
    int lines = 0, context = 0, hidden = 0, repeated = 0;
    strset seen = {0}; /* the build compiles a file more than once (the library,
                          the dependency scan): each message once */
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line && lines < 60;
         line = strtok_r(NULL, "\n", &save)) {
        char *path = diag_path(line);
        if (path) {
            int shown = diag_shown(g, li, path);
            free(path);
            context = shown ? 2 : -2;
            if (!shown) {
                ++hidden;
                continue;
            }
            if (strset_has(&seen, line)) {
                ++repeated;
                context = -2; /* its source line and caret too */
                continue;
            }
            strset_add(&seen, line);
        } else if (strstr(line, "undefined reference") || strstr(line, "multiple definition") ||
                   strstr(line, "ld returned") || strstr(line, "compilation terminated")) {
            context = 0;
        } else if (context > 0 && line[0] == ' ') {
            --context;
        } else {
            if (context < 0) ++context;
            continue;
        }
        sbuf_add(&b, line);
        sbuf_add(&b, "\n");
        ++lines;
    }
    free(copy);
    strset_free(&seen);
    if (repeated)
        sbuf_addf(&b, "(%d repeated message%s not shown again)\n", repeated,
                  repeated == 1 ? "" : "s");
    if (hidden)
        sbuf_addf(&b, "(%d message%s about files other than yours not shown)\n", hidden,
                  hidden == 1 ? "" : "s");
    if (lines == 0 && !hidden)
        sbuf_add(&b, BUILD_SILENT);
    return sbuf_take(&b);
}

/* Rebuild the student's library and relink the lesson's test program, in
 * the build's sandbox, with each target's own build.make (its "depend" and
 * "build" rules), as make's Makefile2 would after the targets it depends on:
 * those (the harness, the baseline, lesson 04's probe and the worked
 * solutions it links) were built once for the batch, and the sandbox does
 * not show the worked solutions' sources that their rules would check. */
static int build_targets(grader *g, const lesson_info *li, double timeout, proc_result *r)
{
    /* the targets' rule folders, as the manifest names them (relative to
     * the build folder, where make runs: the rules' own target names) */
    char *script = xasprintf(
        "set -e; for d in '%s' '%s'; do "
        "make --no-print-directory -j%d -f \"$d/build.make\" \"$d/depend\"; "
        "make --no-print-directory -j%d -f \"$d/build.make\" \"$d/build\"; "
        "done", li->b.student_rules, li->b.test_rules, g->jobs, g->jobs);
    char *argv[] = {"sh", "-c", script, NULL};
    proc_opts o = {.timeout_s = timeout, .head = 1 << 20, .tail = 1 << 20};
    int rc = run_step(g, STEP_BUILD, li, NULL, argv, NULL, &o, r);
    free(script);
    return rc;
}

/* ---- what the student's files include ----------------------------------- */

/* `path` with "." and ".." resolved by the letter (no links followed). */
static char *norm_path(const char *path)
{
    strlist parts = {0};
    char *copy = xstrdup(path);
    char *save = NULL;
    for (char *p = strtok_r(copy, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
        if (strcmp(p, ".") == 0) continue;
        if (strcmp(p, "..") == 0) {
            if (parts.n > 0) free(parts.v[--parts.n]);
            continue;
        }
        strlist_add(&parts, p);
    }
    sbuf b = {0};
    for (int i = 0; i < parts.n; ++i) sbuf_addf(&b, "/%s", parts.v[i]);
    if (parts.n == 0) sbuf_add(&b, "/");
    free(copy);
    strlist_free(&parts);
    return sbuf_take(&b);
}

static int under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Whether a file the student's file includes may be read: the student's
 * file itself, the lesson's public headers, common/'s headers, or a header
 * of the system (the compilers' and CUDA's), never anything of the course,
 * the scratch or the output beyond that, nor the test framework's headers
 * (Criterion's hooks would run inside the judge). */
static int include_allowed(const grader *g, const lesson_info *li, const char *path)
{
    if (diag_shown(g, li, path)) return 1;
    if (under(path, g->course) || under(path, g->work) || (g->out && under(path, g->out)))
        return 0;
    /* the test framework's own headers are the judge's, not the system's */
    static const char *const judge[] = {"/criterion/", "/boxfort", "/nanomsg/", "/nng/",
                                        "/cjson/"};
    for (size_t i = 0; i < sizeof judge / sizeof judge[0]; ++i)
        if (strstr(path, judge[i])) return 0;
    for (int i = 0; i < g->sbx.system_ro.n; ++i)
        if (under(path, g->sbx.system_ro.v[i]) && strncmp(g->sbx.system_ro.v[i], "/etc", 4) != 0)
            return 1;
    return 0;
}

/* The compile command CMake wrote for `file` (compile_commands.json). */
static char *compile_command(const grader *g, const char *file, char **dir)
{
    char *path = path_join(g->build, "compile_commands.json");
    char *text = read_file(path, 16u << 20, NULL, NULL);
    free(path);
    if (text == NULL) return NULL;
    cJSON *root = cJSON_Parse(text);
    free(text);
    char *cmd = NULL;
    const cJSON *e;
    cJSON_ArrayForEach(e, root)
    {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "command");
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "directory");
        if (cJSON_IsString(f) && cJSON_IsString(c) && cJSON_IsString(d) &&
            strcmp(f->valuestring, file) == 0) {
            cmd = xstrdup(c->valuestring);
            *dir = xstrdup(d->valuestring);
            break;
        }
    }
    cJSON_Delete(root);
    return cmd;
}

/* The command with "-o OBJECT -c" made "-M": the preprocessor lists every
 * file the compile would read, and compiles nothing. The command is a shell
 * command line (CMake quotes a path with a blank in it): split as a shell
 * would, and every word quoted again. NULL when it cannot be read. */
static char *deps_command(const char *cmd)
{
    strlist w = {0};
    char *why = NULL;
    if (split_words(cmd, &w, &why) != 0) {
        free(why);
        return NULL;
    }
    sbuf b = {0};
    for (int i = 0; i < w.n; ++i) {
        if (strcmp(w.v[i], "-o") == 0) {
            ++i;
            continue;
        }
        if (b.len) sbuf_add(&b, " ");
        sbuf_add_sh_quoted(&b, strcmp(w.v[i], "-c") == 0 ? "-M" : w.v[i]);
    }
    strlist_free(&w);
    return sbuf_take(&b);
}

/* Whether a build step was stopped at one of its limits (the wall clock,
 * CPU seconds, the 8 GiB of address space): killed by a signal (bwrap and
 * the shell report it as 128 + the signal), or the compiler saying it ran
 * out of memory. */
static int limits_hit(const grader *g, const proc_result *r)
{
    (void)g;
    return r->timed_out || r->term_signal != 0 || r->exit_code > 128 ||
           strstr(r->output, "memory exhausted") || strstr(r->output, "out of memory") ||
           strstr(r->output, "bad_alloc") || strstr(r->output, "Cannot allocate memory");
}

static char *limits_summary(const grader *g, const proc_result *r)
{
    if (r->timed_out)
        return xasprintf("compile error: the build ran past its time limit (%.0f s)",
                         g->build_timeout);
    return xasprintf("compile error: the compiler was stopped at one of the build's limits "
                     "(the memory limit of 8 GiB, the time limit of %.0f s of CPU)",
                     g->build_timeout);
}

/* What the preprocessor's list of includes cannot show: a file that asks
 * whether others exist (__has_include, whatever it finds) or includes the
 * next one of a name along the search path (#include_next). Neither has a
 * use in a lesson file; both are looked for after line splices are undone
 * (`__has_inc\` + newline + `lude` is the same token). */
static void probes(const char *path, const char *name, sbuf *bad)
{
    size_t len = 0;
    char *text = read_file(path, 16u << 20, &len, NULL);
    if (text == NULL) return;
    char *joined = str_replace_all(text, "\\\n", "");
    char *j2 = str_replace_all(joined, "\\\r\n", "");
    int pasted = 0; /* __has_ ## include */
    for (const char *p = strstr(j2, "__has_"); p && !pasted; p = strstr(p + 1, "__has_")) {
        const char *q = p + 6;
        while (*q == ' ' || *q == '\t') ++q;
        pasted = q[0] == '#' && q[1] == '#';
    }
    if (strstr(j2, "__has_include") || pasted)
        sbuf_addf(bad, "%s asks whether files exist (__has_include)\n", name);
    if (strstr(j2, "include_next"))
        sbuf_addf(bad, "%s uses #include_next\n", name);
    free(j2);
    free(joined);
    free(text);
}

/* Before the build: every file the student's files include, listed by the
 * preprocessor in the build's sandbox (which shows no solutions/, grader/
 * or other submission anyway), must be one include_allowed() accepts. */
static lesson_state include_check(grader *g, const lesson_info *li, char **summary,
                                  char **detail, char **why)
{
    sbuf bad = {0};
    for (int k = 0; k < li->exercise.n; ++k) {
        char *file = xasprintf("%s/%s/%s", g->student_root, li->name, li->exercise.v[k]);
        probes(file, li->exercise.v[k], &bad);
        char *dir = NULL;
        char *cmd = compile_command(g, file, &dir);
        if (cmd == NULL) {
            free(file);
            continue; /* the build will say what is wrong */
        }
        char *deps = deps_command(cmd);
        if (deps == NULL) { /* nothing is allowed that could not be listed */
            sbuf_addf(&bad, "(the compile command of %s could not be read)\n", li->exercise.v[k]);
            free(cmd);
            free(dir);
            free(file);
            continue;
        }
        sbuf cd = {0};
        sbuf_add(&cd, "cd ");
        sbuf_add_sh_quoted(&cd, dir);
        char *shell = xasprintf("%s && %s", sbuf_str(&cd), deps);
        sbuf_free(&cd);
        char *argv[] = {"sh", "-c", shell, NULL};
        proc_opts o = {.timeout_s = g->build_timeout, .head = 4 << 20, .tail = 1 << 20};
        proc_result r;
        int rc = run_step(g, STEP_BUILD, li, NULL, argv, NULL, &o, &r);
        if (rc != 0) {
            char *errs = student_diagnostics(g, li, r.output);
            *detail = scrub(g, errs);
            free(errs);
            *summary = limits_hit(g, &r) ? limits_summary(g, &r) : xstrdup("compile error");
            *why = xasprintf("not run: %s (the build output is in the lesson's notes)", *summary);
        } else {
            /* the make rule "NAME.o : DEPS" (anything printed before it, a
             * compiler's note, is not a dependency) */
            const char *rule = strstr(r.output, ".o : ");
            const char *colon = rule ? rule + 3 : strstr(r.output, ".o: ");
            if (colon && !rule) colon += 2;
            if (colon == NULL) /* nothing is allowed that could not be listed */
                sbuf_add(&bad, "(the preprocessor's list of included files could not be "
                         "read)\n");
            strlist names = {0};
            make_dep_words(colon ? colon + 1 : "", &names);
            for (int n = 0; n < names.n; ++n) {
                const char *t = names.v[n];
                char *abs = t[0] == '/' ? norm_path(t) : NULL;
                if (abs == NULL) {
                    char *j = path_join(dir, t);
                    abs = norm_path(j);
                    free(j);
                }
                if (!include_allowed(g, li, abs)) sbuf_addf(&bad, "%s\n", abs);
                free(abs);
            }
            strlist_free(&names);
        }
        proc_result_free(&r);
        free(shell);
        free(deps);
        free(cmd);
        free(dir);
        free(file);
        if (*summary) break;
    }
    if (*summary) {
        sbuf_free(&bad);
        return L_BUILD_FAILED;
    }
    if (bad.len == 0) {
        sbuf_free(&bad);
        return L_GRADED;
    }
    *summary = xstrdup("refused: a graded file includes a file other than the lesson's public "
                       "headers");
    char *list = scrub(g, sbuf_str(&bad));
    *detail = xasprintf("Your file may include the lesson's header, common/'s headers and the "
                        "system's (CUDA, C, C++); it includes:\n%s", list);
    free(list);
    *why = xasprintf("not run: %s", *summary);
    sbuf_free(&bad);
    return L_BUILD_FAILED;
}

lesson_state build_lesson(grader *g, submission *s, lesson_result *lr, const char *progress,
                          char **summary, char **detail, char **why)
{
    const lesson_info *li = lr->li;
    fprintf(stderr, "%s: building\n", progress);
    if (place_files(g, s, lr) != 0) {
        *summary = xstrdup("not graded: the grader could not write the scratch files");
        return L_SETUP_FAILED;
    }
    clean_student_build(g, li);
    lesson_state inc = include_check(g, li, summary, detail, why);
    if (inc != L_GRADED) return inc;
    proc_result br;
    int brc = build_targets(g, li, g->build_timeout, &br);
    lr->build_s = br.elapsed_s;
    char *errs = student_diagnostics(g, li, br.output);
    char *logname = xasprintf("%s-build.log", li->number);
    if (brc == 0 && !br.timed_out) {
        /* built: the log says so, with the warnings about the student's
         * files if any (student_diagnostics speaks of a failure otherwise) */
        int quiet = strcmp(errs, BUILD_SILENT) == 0;
        char *ok = xasprintf("built in %.1f s%s\n%s", br.elapsed_s,
                             quiet ? ": the compiler said nothing about your files" : "",
                             quiet ? "" : errs);
        write_log(g, s, logname, ok);
        free(ok);
    } else {
        write_log(g, s, logname, errs);
    }
    free(logname);
    if (brc == 0 && !br.timed_out) {
        free(errs);
        proc_result_free(&br);
        return L_GRADED;
    }
    *detail = scrub(g, errs);
    free(errs);
    int link = strstr(br.output, "undefined reference") || strstr(br.output, "multiple definition") ||
               strstr(br.output, "ld returned");
    if (br.timed_out)
        *summary = xasprintf("build failed: it ran past %.0f s", g->build_timeout);
    else if (limits_hit(g, &br))
        *summary = limits_summary(g, &br);
    else
        *summary = xstrdup(link ? "link error: the test program could not be linked"
                                : "compile error");
    *why = xasprintf("not run: %s (the build output is in the lesson's notes)", *summary);
    proc_result_free(&br);
    return L_BUILD_FAILED;
}
