/* grader/stage_build.c — the build stage: put the submission's allowed files
 * into the scratch student root (the course's skeleton for a file it
 * lacks), then build the lesson's test program in the scratch build (only
 * the student's library and the links are redone; stale results are
 * deleted first, so a failed build can never run an old program).
 */
#define _XOPEN_SOURCE 700
#include "stages.h"

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
    strlist targets = {0};
    strlist_add(&targets, li->test);
    proc_result br;
    int brc = build_targets(g, targets.v, targets.n, g->build_timeout, &br);
    strlist_free(&targets);
    lr->build_s = br.elapsed_s;
    char *logname = xasprintf("%s-build.log", li->number);
    write_log(g, s, logname, br.output);
    free(logname);
    if (brc == 0 && !br.timed_out) {
        proc_result_free(&br);
        return L_GRADED;
    }
    char *errs = build_errors(br.output);
    *detail = scrub(g, errs);
    free(errs);
    int link = strstr(br.output, "undefined reference") || strstr(br.output, "multiple definition") ||
               strstr(br.output, "ld returned");
    if (br.timed_out)
        *summary = xasprintf("build failed: it ran past %.0f s", g->build_timeout);
    else
        *summary = xstrdup(link ? "link error: the test program could not be linked"
                                : "compile error");
    *why = xasprintf("not run: %s (the build output is in the lesson's notes)", *summary);
    proc_result_free(&br);
    return L_BUILD_FAILED;
}
