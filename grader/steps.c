/* grader/steps.c — what each step that touches a student's code may see,
 * write and use (grader/sandbox.h does the sandboxing itself).
 *
 *   build    the course's CMake files, common/, lessons/, the tests' sources and
 *            tools/ read-only (never solutions/, grader/, tests/grader/,
 *            tests/adversarial/ or .git); this lesson's student folder
 *            read-only; the scratch build read-write, less the worked
 *            solutions' objects and programs (their libraries stay: lesson
 *            04's test links those of lessons 01-03). Compilers may use
 *            8 GiB.
 *   scan     the scratch build read-only (the same hidden parts), tools/ and
 *            lessons/ (the API's headers).
 *   test     the scratch build and tools/ read-only (the same hidden parts,
 *            and every other lesson's student objects, library and test
 *            program: another submission's, or the next lesson's built
 *            ahead), a fresh scratch folder of the step's own read-write,
 *            the GPU.
 *   trusted  the worked solution's own test program: the whole scratch
 *            build read-only, its own scratch, the GPU.
 *
 * Nothing else of the machine is there: not the output folder, not the
 * submissions, not the rubric, not the batch secret (steps get a clean
 * environment).
 */
#define _XOPEN_SOURCE 700
#include "stages.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GIB (1024ull * 1024ull * 1024ull)

/* The course entries a build reads (whatever CMake and the compilers need
 * to rebuild a student's library and relink a test program). */
static const char *const kCourseRead[] = {"CMakeLists.txt", "cmake", "common", "lessons",
                                          "tests", "tools"};
static const char *const kCourseHide[] = {"tests/grader", "tests/adversarial",
                                          "tests/variants"};

/* The worked solutions' traces in the scratch build (and the corpora's
 * patched copies of them, which the grader's configure leaves out anyway:
 * FUSIONLAB_CORPUS=OFF); `libs` 0: not their
 * static libraries (lesson 04's test program links those of lessons 01-03,
 * so a build needs them: compilers and the linker run nothing of them). */
static void solution_artifacts(const grader *g, int libs, strlist *out)
{
    static const char *const pats[] = {"%s/*solution*", "%s/CMakeFiles/*solution*",
                                       "%s/tests-grader", "%s/grader-*",
                                       "%s/adversarial", "%s/variants"};
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; ++i) {
        char *pat = xasprintf(pats[i], g->build);
        glob_t gl;
        if (glob(pat, 0, NULL, &gl) == 0) {
            for (size_t k = 0; k < gl.gl_pathc; ++k)
                if (libs || !ends_with(gl.gl_pathv[k], "_solution.a"))
                    strlist_add(out, gl.gl_pathv[k]);
            globfree(&gl);
        }
        free(pat);
    }
}

/* The student artifacts in the scratch build of every lesson but the one
 * whose test program the step runs (named in argv: run directly, or handed
 * to tools/sanitize or the audit): the objects, the library and the test
 * program they were linked into. A test step runs a student's code, which
 * has no business reading what another submission, or another lesson of the
 * same one, compiled (the previous submission's are there until rebuilt, the
 * next lesson's once ahead.c has built it). */
static void other_lessons(const grader *g, char *const argv[], strlist *out)
{
    for (int i = 0; i < g->man.n; ++i) {
        const lesson_info *o = &g->man.lessons[i];
        int runs_it = 0;
        for (int a = 0; argv[a] && !runs_it; ++a)
            runs_it = o->b.test_bin && strcmp(argv[a], o->b.test_bin) == 0;
        if (runs_it) continue;
        if (o->b.student_lib) strlist_add(out, o->b.student_lib);
        if (o->b.test_bin) strlist_add(out, o->b.test_bin);
        if (o->b.student_rules) strlist_addf(out, "%s/%s", g->build, o->b.student_rules);
    }
}

static const char *const *nul_ended(strlist *l)
{
    strlist_add(l, "");
    free(l->v[--l->n]);
    l->v[l->n] = NULL;
    return (const char *const *)l->v;
}

int run_step(grader *g, step_kind kind, const lesson_info *li, const char *scratch,
             char *const argv[], const char *const *env, proc_opts *o, proc_result *r)
{
    strlist ro = {0}, rw = {0}, hide = {0};
    proc_limits lim = {0};
    sandbox_step st = {0};
    char *tools = path_join(g->course, "tools");
    switch (kind) {
    case STEP_BUILD:
        for (size_t i = 0; i < sizeof kCourseRead / sizeof kCourseRead[0]; ++i)
            strlist_addf(&ro, "%s/%s", g->course, kCourseRead[i]);
        for (size_t i = 0; i < sizeof kCourseHide / sizeof kCourseHide[0]; ++i)
            strlist_addf(&hide, "%s/%s", g->course, kCourseHide[i]);
        if (li) strlist_addf(&ro, "%s/%s", g->student_root, li->name);
        strlist_add(&rw, g->build);
        solution_artifacts(g, 0, &hide);
        lim.as_bytes = 8 * GIB;
        lim.fsize_bytes = 2 * GIB;
        lim.cpu_s = g->build_timeout > 0 ? g->build_timeout : 600;
        /* (RLIMIT_NPROC counts all the sandbox user's processes and
         * threads: the builds ahead (ahead.c, two at most) run beside the
         * sanitizer's, up to 424 at once on an H200 of 16 CPUs. Below a
         * test step's 1024:
         * where the two meet a cap, the build is the one that fails, and
         * it is done again in turn) */
        lim.nproc = 768;
        break;
    case STEP_SCAN:
        strlist_add(&ro, g->build);
        strlist_add(&ro, tools);
        strlist_addf(&ro, "%s/lessons", g->course); /* the API's headers */
        solution_artifacts(g, 1, &hide);
        lim.as_bytes = 4 * GIB;
        lim.fsize_bytes = 1 * GIB;
        lim.cpu_s = 300;
        lim.nproc = 768; /* (as the build's: it may run beside the sanitizer) */
        break;
    case STEP_TEST:
    case STEP_TRUSTED:
        strlist_add(&ro, g->build);
        strlist_add(&ro, tools);
        if (kind == STEP_TEST) {
            solution_artifacts(g, 1, &hide);
            other_lessons(g, argv, &hide);
        }
        if (g->step_ro) strlist_add(&ro, g->step_ro);
        if (scratch) strlist_add(&rw, scratch);
        st.gpu = !g->no_gpu;
        /* CUDA reserves far more address space than it uses: the data
         * segment, not the address space, is what is capped */
        lim.data_bytes = 64 * GIB;
        lim.fsize_bytes = 1 * GIB;
        lim.cpu_s = o->timeout_s > 0 ? 2 * o->timeout_s + 60 : 3600;
        lim.nproc = 1024; /* the CUDA runtime's threads count too */
        break;
    }
    st.ro = nul_ended(&ro);
    st.rw = nul_ended(&rw);
    st.hide = nul_ended(&hide);
    st.env = env;
    st.chdir = scratch ? scratch : g->build;
    strlist full = {0};
    sandbox_argv(&g->sbx, &st, argv, &full);
    proc_opts opts = *o;
    if (g->sbx.enabled) {
        opts.limits = &lim;
        opts.set_ids = g->sbx.drop_ids;
        opts.uid = g->sbx.uid;
        opts.gid = g->sbx.gid;
        opts.env_set = NULL; /* the step's environment is the sandbox's, and */
        opts.clear_env = 1;  /* bwrap's own (its /proc/1/environ) is empty */
    } else {
        /* --no-sandbox: the limits that do not count the grader's own
         * processes, and at least not the batch secret, nor a timing switch
         * the shell that started the grader kept (each step sets its own) */
        static const char *const unset[] = {"FUSIONLAB_GRADE_SEED", "FUSIONLAB_TIMING_UNTIMED",
                                            "FUSIONLAB_TIMING_AUDIT", NULL};
        lim.nproc = 0;
        opts.limits = &lim;
        opts.env_set = env;
        opts.env_unset = unset;
        if (opts.cwd == NULL) opts.cwd = st.chdir; /* where the sandbox would start it */
    }
    opts.cwd = scratch ? scratch : opts.cwd;
    int rc = proc_run(full.v, &opts, r);
    if (getenv("FUSIONLAB_GRADE_DEBUG")) {
        /* one write: a build ahead (ahead.c) writes its steps' lines beside */
        sbuf b = {0};
        sbuf_add(&b, "step:");
        for (int i = 0; i < full.n; ++i) sbuf_addf(&b, " %s", full.v[i]);
        sbuf_addf(&b, "\n-> exit %d in %.2f s\n%s\n", r->exit_code, r->elapsed_s, r->output);
        fputs(sbuf_str(&b), stderr);
        fflush(stderr);
        sbuf_free(&b);
    }
    strlist_free(&full);
    strlist_free(&ro);
    strlist_free(&rw);
    strlist_free(&hide);
    free(tools);
    return rc;
}

char *step_scratch(grader *g, const char *name)
{
    static long aside;
    char *dir = path_join(g->run_dir, name);
    rm_rf(dir);
    /* a step starts in a folder made for it, empty: what an earlier step (the
     * last submission's, of the same name) left there that could not be
     * removed is moved aside, never inherited */
    if (mkdir(dir, 0755) != 0) {
        /* (a name no folder has: the clock, the process and a count, and
         * looked at first, as rename would replace an empty folder) */
        int moved = 0;
        for (int tries = 0; tries < 100 && !moved; ++tries) {
            struct stat st;
            char *away = xasprintf("%s.left-%ld-%ld-%ld", dir, (long)time(NULL), (long)getpid(),
                                   ++aside);
            moved = lstat(away, &st) != 0 && errno == ENOENT && rename(dir, away) == 0;
            free(away);
        }
        if (!moved || mkdir(dir, 0755) != 0) {
            free(dir);
            return NULL;
        }
    }
    if (sandbox_own(&g->sbx, dir) != 0) {
        free(dir);
        return NULL;
    }
    return dir;
}

/* --sandbox-probe SCRIPT [ARG...]: run SCRIPT with sh as a test step would
 * run (the test's sandbox, its limits, a scratch of its own), print what it
 * printed, then list any process of the sandbox's user still alive (there
 * must be none). For the grader's own tests (tests/grader/sandbox_probe.sh):
 * exit status 0 when the script exited 0 and nothing outlived the step. */
int sandbox_probe(grader *g, char *const argv[])
{
    char *scratch = step_scratch(g, "probe");
    if (scratch == NULL) {
        fprintf(stderr, "fusionlab_grade: cannot make the probe's scratch folder\n");
        return 2;
    }
    char *copy = path_join(scratch, "probe.sh");
    if (copy_file(argv[0], copy) != 0 || sandbox_own(&g->sbx, copy) != 0) {
        fprintf(stderr, "fusionlab_grade: cannot copy %s\n", argv[0]);
        return 2;
    }
    strlist a = {0};
    strlist_add(&a, "sh");
    strlist_add(&a, copy);
    for (int i = 1; argv[i]; ++i) strlist_add(&a, argv[i]);
    strlist_add(&a, "");
    free(a.v[--a.n]);
    a.v[a.n] = NULL;
    const char *env[] = {"FUSIONLAB_GRADE_SEED=probe-derived-seed", NULL};
    proc_opts o = {.timeout_s = 120, .head = 4 << 20, .tail = 1 << 20};
    proc_result r;
    run_step(g, STEP_TEST, NULL, scratch, a.v, env, &o, &r);
    fputs(r.output, stdout);
    printf("probe: exit %d%s, %.1f s\n", r.exit_code, r.timed_out ? " (timed out)" : "",
           r.elapsed_s);
    int rc = r.exit_code == 0 && !r.timed_out ? 0 : 1;
    proc_result_free(&r);
    /* nothing of the step may outlive it */
    char uid[32];
    snprintf(uid, sizeof uid, "%ld", (long)(g->sbx.drop_ids ? g->sbx.uid : geteuid()));
    char *ps[] = {"ps", "-o", "pid=,stat=,args=", "-u", uid, NULL};
    proc_opts po = {.timeout_s = 30};
    proc_result pr;
    proc_run(ps, &po, &pr);
    sbuf alive = {0}; /* zombies are dead: only their parent's reaping is left */
    char *save = NULL;
    for (char *line = strtok_r(pr.output, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char stat[16] = "";
        if (sscanf(line, "%*d %15s", stat) == 1 && stat[0] != 'Z') sbuf_addf(&alive, "%s\n", line);
    }
    if (g->sbx.drop_ids && alive.len) {
        printf("FAIL processes of uid %s outlived the step:\n%s", uid, sbuf_str(&alive));
        rc = 1;
    } else {
        printf("ok   nothing of the step outlived it\n");
    }
    sbuf_free(&alive);
    proc_result_free(&pr);
    strlist_free(&a);
    free(copy);
    free(scratch);
    return rc;
}
