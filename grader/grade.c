/* grader/grade.c — fusionlab_grade: grade a batch of submissions.
 *
 *   ./lab grade SUBMISSION... [--out DIR] [--lessons 01,02] [--jobs N]
 *
 * (lab builds this program and runs it with --course and --manifest.) One
 * scratch build of the course serves the whole batch: it is configured once
 * with FUSIONLAB_STUDENT_ROOT pointing at a scratch folder, the harness and
 * baselines are built once, and each lesson of each submission rebuilds only
 * the student's library and the test program. Tests run one at a time, so
 * speed tests have the GPU to themselves; --jobs is the build's parallelism.
 * Before any submission, the worked solutions' speed suites run once: their
 * times are the reference of the speed curve, on this GPU, in this run.
 */
#define _XOPEN_SOURCE 700
#include "batch.h"
#include "grade.h"
#include "stages.h"
#include "proc.h"
#include "shard.h"

#include <cJSON.h>
#include <ctype.h>
#include <pwd.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef FUSIONLAB_SOURCE_DIR
#define FUSIONLAB_SOURCE_DIR "."
#endif
#ifndef FUSIONLAB_MANIFEST
#define FUSIONLAB_MANIFEST "build/fusionlab_manifest.json"
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ./lab grade SUBMISSION... [options]\n"
            "\n"
            "  SUBMISSION        a folder, or a .tar.gz/.tgz/.tar/.zip archive, holding copies\n"
            "                    of lesson files at their paths under lessons/\n"
            "                    (01-vector-add/vector_add.cu), optionally under lessons/\n"
            "  --out DIR         where results go (default: grade-out)\n"
            "  --lessons LIST    lessons to grade, e.g. 01,02 (default: all in the rubric)\n"
            "  --jobs N          parallel compile jobs (default: the CPUs, shared among the\n"
            "                    workers of --gpus)\n"
            "  --test-jobs N     test processes side by side (default: a quarter of --jobs,\n"
            "                    1 to 4): Criterion's --jobs for the tests that may share\n"
            "                    the GPU (a test with a case that does not pass there runs\n"
            "                    again alone before it counts; what times or reads the free\n"
            "                    memory always runs alone, one test at a time), and\n"
            "                    compute-sanitizer processes for each of its four tools\n"
            "  --cases together|apart\n"
            "                    the worked solution's verifying runs: together (the\n"
            "                    default), a parameterized test's cases shared among a few\n"
            "                    processes, taken when every case passed or every one\n"
            "                    skipped, else run again one process per case; apart: one\n"
            "                    process per case. The student's runs are always one\n"
            "                    process per case\n"
            "  --cuda-connections N\n"
            "                    CUDA_DEVICE_MAX_CONNECTIONS for every step that times\n"
            "                    nothing: the tests but the speed suites, the worked\n"
            "                    solution's verifying runs and the sanitizer (default 1:\n"
            "                    each CUDA process starts and ends sooner; 0: the driver's\n"
            "                    own, 8). The speed suites and the speed audit always run\n"
            "                    with the driver's own\n"
            "  --no-build-ahead  build each lesson in its turn (default: the next lesson's\n"
            "                    build and object scan run while this one's verifying runs\n"
            "                    do, and its sanitizer when the next lesson is the same\n"
            "                    submission's, with the one after it beside it when both\n"
            "                    are; never beside a step that times)\n"
            "  --rubric FILE     points per check (default: grader/rubric.json)\n"
            "  --arch LIST       CMAKE_CUDA_ARCHITECTURES of the scratch build\n"
            "                    (default: the GPUs' own, from nvidia-smi; without a GPU the\n"
            "                    course default)\n"
            "  --no-gpu          hide the GPU from the tests (GPU checks: not run)\n"
            "  --suite-timeout S, --lesson-timeout S, --build-timeout S,\n"
            "  --sanitizer-timeout S\n"
            "                    wall-clock limits (default: from the rubric)\n"
            "  --test-timeout S  Criterion's per-test limit for every test (default: each\n"
            "                    suite's own)\n"
            "  --work DIR        scratch folder (default: OUT/.work; kept between runs)\n"
            "  --no-sandbox      run the steps that compile or run student code WITHOUT\n"
            "                    bubblewrap (where user namespaces are not allowed); every\n"
            "                    report of the batch says so\n"
            "  --sandbox-uid N   the user the sandboxed steps run as when the grader is\n"
            "                    root (default 65534, nobody; with several workers, worker i\n"
            "                    runs as N + i, default N 64000)\n"
            "  --sandbox-uid-unused  refuse a --sandbox-uid that is an account here (what\n"
            "                    each Slurm task checks on its own node)\n"
            "\n"
            "A class at once:\n"
            "  --gpus LIST|all   one worker per GPU (indices or UUIDs, or every visible\n"
            "                    GPU), each grading a shard of the submissions with its\n"
            "                    own scratch build, reference run and sandbox user; the\n"
            "                    shards are collected into OUT as one run would write it\n"
            "  --per-gpu K       with --gpus: K workers on each GPU (default 1, at most 16;\n"
            "                    root unless --no-sandbox: each worker's sandboxed steps run\n"
            "                    as a user of its own; the first worker on a GPU measures the\n"
            "                    worked solutions' reference, the others read it). What\n"
            "                    times, profiles or reads the GPU's\n"
            "                    free memory still runs alone on it (the rubric's 'alone'\n"
            "                    list, the speed suites); the rest runs side by side, and a\n"
            "                    test that does not pass there runs again alone before it\n"
            "                    counts\n"
            "  --slurm 'OPTS'    submit the batch as a Slurm job array (sbatch OPTS, split\n"
            "                    as a shell splits words, quotes kept, nothing expanded:\n"
            "                    --partition=gpu --gres=gpu:1 --time=2:00:00 --comment='a b')\n"
            "                    one task per shard, each on its own GPU; with --wait among\n"
            "                    OPTS it waits and collects\n"
            "  --shards N        the Slurm array's size (default: one task per 8 submissions)\n"
            "  --collect OUT     put the shards of OUT together: OUT/submissions/, roster.csv,\n"
            "                    junit.xml (says which shard to run again if one is missing)\n"
            "  --shard I/N       grade shard I of N into OUT/shards/I (what workers and\n"
            "                    Slurm tasks run)\n"
            "\n"
            "Writes OUT/submissions/<id>/results.json (Gradescope), report.md and logs/, where\n"
            "<id> is the submission's name cut to [A-Za-z0-9._-] (its path as given is in\n"
            "results.json, report.md and roster.csv), and OUT/roster.csv and OUT/junit.xml once\n"
            "every submission is graded (NAME.partial until then; OUT/BATCH_IN_PROGRESS while it\n"
            "runs). One batch at a time per OUT and per WORK (OUT/.lock, WORK/.lock); an OUT or\n"
            "WORK that is, holds or lies in a submission, or holds the course, is refused.\n"
            "FUSIONLAB_GRADE_SEED, when set, is the batch secret: the tests' inputs, the same\n"
            "for every submission of a batch, are derived from it and from the batch's files;\n"
            "no test sees it, and it is never written out (unset: random bytes).\n");
}

static int parse_lessons(grader *g, const char *list)
{
    char *copy = xstrdup(list);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char num[3] = {0};
        if (isdigit((unsigned char)tok[0]) && !isdigit((unsigned char)tok[1])) {
            num[0] = '0';
            num[1] = tok[0];
        } else if (isdigit((unsigned char)tok[0]) && isdigit((unsigned char)tok[1])) {
            num[0] = tok[0];
            num[1] = tok[1];
        } else {
            fprintf(stderr, "fusionlab_grade: '%s' is not a lesson number\n", tok);
            free(copy);
            return -1;
        }
        if (!strlist_has(&g->lessons, num)) strlist_add(&g->lessons, num);
    }
    free(copy);
    return 0;
}

/* The GPU's name, and its architectures ("90", or "80;90" on a mixed
 * machine) for the scratch build: CMake's "native" would ask the GPU from
 * inside the build's sandbox, which has none. */
static void detect_gpu(grader *g)
{
    if (g->no_gpu) return;
    /* a worker of --gpus, or a Slurm task, sees one GPU: ask about that one */
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    char *only = vis && vis[0] && strchr(vis, ',') == NULL ? xasprintf("--id=%s", vis) : NULL;
    char *argv[] = {"nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader", only,
                    NULL};
    proc_opts o = {.timeout_s = 30};
    proc_result r;
    if (proc_run(argv, &o, &r) == 0 && r.output[0]) {
        strlist archs = {0};
        char *save = NULL;
        for (char *line = strtok_r(r.output, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save)) {
            char *comma = strrchr(line, ',');
            if (comma == NULL) continue;
            *comma = '\0';
            if (!g->gpu_name) g->gpu_name = xstrdup(line);
            int major = 0, minor = 0;
            if (sscanf(comma + 1, " %d.%d", &major, &minor) == 2) {
                char a[16];
                snprintf(a, sizeof a, "%d%d", major, minor);
                if (!strlist_has(&archs, a)) strlist_add(&archs, a);
            }
        }
        g->gpu = g->gpu_name != NULL;
        if (archs.n && g->gpu_archs == NULL) {
            sbuf b = {0};
            for (int i = 0; i < archs.n; ++i) sbuf_addf(&b, "%s%s", i ? ";" : "", archs.v[i]);
            g->gpu_archs = sbuf_take(&b);
        }
        strlist_free(&archs);
    }
    proc_result_free(&r);
    free(only);
}

/* The scratch student root holds every lesson's skeleton until a
 * submission's files replace them (the build needs a file at every path). */
static int seed_student_root(grader *g)
{
    rm_rf(g->student_root);
    for (int i = 0; i < g->man.n; ++i) {
        const lesson_info *li = &g->man.lessons[i];
        char *dir = path_join(g->student_root, li->name);
        if (mkdir_p(dir) != 0) {
            free(dir);
            return -1;
        }
        for (int k = 0; k < li->exercise.n; ++k) {
            char *src = xasprintf("%s/lessons/%s/%s", g->course, li->name, li->exercise.v[k]);
            char *dst = path_join(dir, li->exercise.v[k]);
            int rc = copy_file(src, dst);
            free(src);
            free(dst);
            if (rc != 0) {
                free(dir);
                return -1;
            }
        }
        free(dir);
    }
    return 0;
}

static void setup_failed(grader *g, const char *what, const char *output)
{
    char *tail = output ? trim_middle(output, 200, 2500) : xstrdup("");
    char *clean = scrub(g, tail);
    g->setup_error = xasprintf("%s", what);
    fprintf(stderr, "fusionlab_grade: %s\n%s\n", what, clean);
    free(tail);
    free(clean);
}

static int setup(grader *g)
{
    if (seed_student_root(g) != 0) {
        setup_failed(g, "could not copy the lesson skeletons into the scratch folder", NULL);
        return -1;
    }
    mkdir_p(g->build);
    mkdir_p(g->run_dir);
    char *root_def = xasprintf("-DFUSIONLAB_STUDENT_ROOT=%s", g->student_root);
    char *arch_def = NULL;
    if (g->arch) arch_def = xasprintf("-DCMAKE_CUDA_ARCHITECTURES=%s", g->arch);
    else if (g->gpu && g->gpu_archs)
        arch_def = xasprintf("-DCMAKE_CUDA_ARCHITECTURES=%s", g->gpu_archs);
    /* Makefiles, so that a student's build can run make on its targets
     * without CMake's check of every file it read (steps.c); the compile
     * commands, so that the include check can list a file's includes; no
     * corpora (tests/adversarial, tests/variants: patched copies of the worked
     * files would sit in the scratch build) */
    char *argv[] = {"cmake", "-S", g->course, "-B", g->build, "-G", "Unix Makefiles",
                    "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", "-DCMAKE_BUILD_TYPE=Release",
                    "-DFUSIONLAB_CORPUS=OFF", root_def, arch_def, NULL};
    fprintf(stderr, "== configuring the scratch build (%s)\n",
            arch_def ? arch_def + 2 : "default CUDA architectures");
    proc_opts o = {.timeout_s = 900};
    proc_result r;
    int rc = proc_run(argv, &o, &r);
    free(root_def);
    free(arch_def);
    if (rc != 0) {
        setup_failed(g, "CMake could not configure the course for grading", r.output);
        proc_result_free(&r);
        return -1;
    }
    proc_result_free(&r);

    /* the scratch build's own manifest is the one that matches its build */
    char *mpath = path_join(g->build, "fusionlab_manifest.json");
    manifest m2;
    char *err = NULL;
    if (manifest_load(mpath, &m2, &err) != 0) {
        setup_failed(g, err, NULL);
        free(err);
        free(mpath);
        return -1;
    }
    free(mpath);
    if (m2.student_root == NULL || strcmp(m2.student_root, g->student_root) != 0 ||
        m2.n != g->man.n) {
        setup_failed(g, "the scratch build does not use the scratch student folder (a stale "
                        "--work folder? remove it)", NULL);
        manifest_free(&m2);
        return -1;
    }
    /* from here on, every path the grader builds, runs or scans is the one
     * the scratch build's CMake wrote */
    if (manifest_adopt_build(&g->man, &m2) != 0 || strcmp(g->man.generator, "Unix Makefiles") != 0) {
        setup_failed(g, "the scratch build's manifest does not list the course's lessons, or the "
                        "build is not made of Makefiles (the grader builds a student's targets "
                        "with their Makefile rules)", NULL);
        manifest_free(&m2);
        return -1;
    }
    manifest_free(&m2);

    /* what every submission shares, built once */
    strlist targets = {0};
    strlist_add(&targets, "fusionlab_common");
    strlist_add(&targets, "fusionlab_testlib");
    if (g->man.kernel_trace_target) strlist_add(&targets, g->man.kernel_trace_target);
    for (int i = 0; i < g->lessons.n; ++i) {
        const lesson_info *li = manifest_find(&g->man, g->lessons.v[i]);
        strlist_addf(&targets, "lesson%s_baseline", li->number);
        for (int k = 0; k < li->tools.n; ++k) strlist_add(&targets, li->tools.v[k]);
        /* the worked solutions' tests: the speed reference, and the trusted
         * runs every student's report is verified against */
        if (li->solution_test) strlist_add(&targets, li->solution_test);
    }
    char jobs[16];
    snprintf(jobs, sizeof jobs, "%d", g->jobs);
    char **bargv = xcalloc((size_t)(6 + 2 * targets.n), sizeof *bargv);
    int k = 0;
    bargv[k++] = "cmake";
    bargv[k++] = "--build";
    bargv[k++] = g->build;
    bargv[k++] = "--parallel";
    bargv[k++] = jobs;
    for (int i = 0; i < targets.n; ++i) {
        bargv[k++] = "--target";
        bargv[k++] = targets.v[i];
    }
    fprintf(stderr, "== building the harness, baselines and worked solutions (%d jobs)\n",
            g->jobs);
    proc_opts bo = {.timeout_s = g->build_timeout * 2, .head = 1 << 20, .tail = 1 << 20};
    double t0 = now_s();
    rc = proc_run(bargv, &bo, &r);
    free(bargv);
    strlist_free(&targets);
    if (rc != 0) {
        setup_failed(g, "the course's own code (harness, baselines or solutions) did not build",
                     r.output);
        proc_result_free(&r);
        return -1;
    }
    fprintf(stderr, "   built in %.1f s\n", now_s() - t0);
    proc_result_free(&r);
    /* the sandboxed builds write into the scratch build as the sandbox's
     * user; the scratch student folder is only read */
    /* the run folder starts empty (a kept --work holds the last batch's step
     * folders); what cannot be removed is moved aside whole, never walked
     * again: each step's folder is made, and given to the sandbox's user,
     * when the step comes (step_scratch) */
    char *why = NULL;
    if (rm_rf(g->run_dir) != 0) {
        char *away = xasprintf("%s.left-%ld-%ld", g->run_dir, (long)time(NULL), (long)getpid());
        if (rename(g->run_dir, away) != 0) {
            char *what = xasprintf("cannot empty %s, nor move it aside", g->run_dir);
            setup_failed(g, what, NULL);
            free(what);
            free(away);
            return -1;
        }
        free(away);
    }
    mkdir_p(g->run_dir);
    if (sandbox_own(&g->sbx, g->build) != 0 || sandbox_own(&g->sbx, g->run_dir) != 0 ||
        sandbox_check_readable(&g->sbx, g->student_root, &why) != 0) {
        setup_failed(g, why ? why : "cannot give the scratch build to the sandbox's user", NULL);
        free(why);
        return -1;
    }
    return 0;
}

/* The batch cannot start (a bad rubric, no manifest, ...): say so, and still
 * leave a results.json for every submission, so no course tool finds none. */
static int config_fail(const char *out, const strlist *paths, char *why)
{
    fprintf(stderr, "fusionlab_grade: %s\n", why);
    batch_not_graded(out, paths, why);
    free(why);
    return 2;
}

/* "[tag i/n] id lesson": what every progress line of a submission-lesson
 * starts with (that of the lesson built ahead too) */
static char *progress_tag(const char *tag, int i, int nsub, const submission *s,
                          const lesson_info *li)
{
    return xasprintf("[%s%d/%d] %s %s", tag, i + 1, nsub, s->id, li ? li->name : "?");
}

static void total(submission *s)
{
    s->score = s->max = 0.0;
    for (int i = 0; i < s->n_lessons; ++i) {
        s->score += s->lessons[i].score;
        s->max += s->lessons[i].max;
    }
}

static void lesson_result_free(lesson_result *lr)
{
    for (int i = 0; i < lr->n_checks; ++i) free(lr->checks[i].output);
    free(lr->checks);
    free(lr->summary);
    free(lr->detail);
    strlist_free(&lr->notes);
}

static void grader_free(grader *g)
{
    keys_free(&g->reference_keys);
    trusted_suites_free(g);
    sandbox_free(&g->sbx);
    free(g->batch_secret);
    free(g->course); free(g->out); free(g->work); free(g->student_root); free(g->build);
    free(g->run_dir); free(g->rubric_path); free(g->gpu_name); free(g->arch); free(g->gpu_archs);
    free(g->setup_error);
    manifest_free(&g->man);
    rubric_free(&g->rub);
    strlist_free(&g->lessons);
    strlist_free(&g->reference_notes);
    for (int i = 0; i < g->reference.n; ++i) {
        free(g->reference.v[i].suite);
        free(g->reference.v[i].test);
        free(g->reference.v[i].label);
    }
    free(g->reference.v);
    for (int i = 0; i < g->n_once; ++i) {
        free(g->once[i].suite);
        free(g->once[i].measured);
        strlist_free(&g->once[i].ran);
    }
    free(g->once);
}

/* --sandbox-probe (the grader's own tests): a script run as a test step. */
/* 1 when v is a whole number from lo to hi (into *out). */
static int whole_number(const char *v, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end != '\0' || errno || x < lo || x > hi) return 0;
    *out = x;
    return 1;
}

static int probe_main(grader *g, const char *course, const char *work, int no_sandbox,
                      char **probe)
{
    if (probe[0] == NULL || work == NULL) {
        fprintf(stderr, "fusionlab_grade: --sandbox-probe SCRIPT [ARG...] needs --work DIR "
                "before it\n");
        return 2;
    }
    g->course = abs_path(course);
    mkdir_p(work);
    g->work = abs_path(work);
    if (g->course == NULL || g->work == NULL) {
        fprintf(stderr, "fusionlab_grade: no course tree at %s, or no %s\n", course, work);
        return 2;
    }
    g->build = path_join(g->work, "build");
    g->run_dir = path_join(g->work, "run");
    mkdir_p(g->build);
    mkdir_p(g->run_dir);
    char *why = NULL;
    if (!no_sandbox && sandbox_init(&g->sbx, g->sandbox_uid, &why) != 0) {
        fprintf(stderr, "fusionlab_grade: %s\n", why);
        free(why);
        return 2;
    }
    sandbox_own(&g->sbx, g->run_dir);
    return sandbox_probe(g, probe);
}

int main(int argc, char **argv)
{
    proc_install_signal_handlers();
    grader g;
    memset(&g, 0, sizeof g);
    g.t0 = now_s();
    const char *course = FUSIONLAB_SOURCE_DIR, *manifest_path = FUSIONLAB_MANIFEST;
    const char *out = "grade-out", *work = NULL, *rubric_path = NULL, *lessons = NULL;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    g.jobs = cpus > 0 ? (int)cpus : 2;
    double suite_t = 0, lesson_t = 0, build_t = 0, sanitizer_t = 0;
    strlist paths = {0};
    int opts_done = 0, no_sandbox = 0, jobs_given = 0;
    char **probe = NULL;
    const char *gpus_spec = NULL, *slurm_opts = NULL, *collect_out = NULL;
    int per_gpu = 1;
    int shard_i = 0, shard_n = 0, shards = 0;
    strlist passthru = {0}; /* what workers and Slurm tasks are given as it is */
    g.sandbox_uid = -1;
    g.cuda_connections = 1;
    /* --cuda-connections alone decides what the steps get (with --no-sandbox
     * they inherit this environment): the speed suites and the audit the
     * driver's own, whatever the instructor's shell exports */
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    g.gpu_fd = g.gate_fd = -1;
    int uid_unused = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int first = i, keep = 1;
#define TAKE(var)                                                                  \
    do {                                                                           \
        if (val == NULL) {                                                         \
            fprintf(stderr, "fusionlab_grade: %s needs a value\n", a);             \
            return 2;                                                              \
        }                                                                          \
        var = val;                                                                 \
        ++i;                                                                       \
    } while (0)
/* TAKE a whole number from lo to hi into the int `var`; `what` says what it
 * counts, for the message that refuses anything else. */
#define TAKE_NUMBER(var, lo, hi, what)                                             \
    do {                                                                           \
        const char *v_;                                                            \
        long x_ = 0;                                                               \
        TAKE(v_);                                                                  \
        if (!whole_number(v_, lo, hi, &x_)) {                                      \
            fprintf(stderr, "fusionlab_grade: %s needs %s from %ld to %ld, not '%s'\n", \
                    a, what, (long)(lo), (long)(hi), v_);                          \
            return 2;                                                              \
        }                                                                          \
        var = (int)x_;                                                             \
    } while (0)
        if (opts_done || a[0] != '-' || strcmp(a, "-") == 0) {
            strlist_add(&paths, a);
        } else if (strcmp(a, "--") == 0) {
            opts_done = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--out") == 0) {
            TAKE(out);
            keep = 0;
        } else if (strcmp(a, "--work") == 0) {
            TAKE(work);
            keep = 0;
        } else if (strcmp(a, "--gpus") == 0) {
            TAKE(gpus_spec);
            keep = 0;
        } else if (strcmp(a, "--per-gpu") == 0) {
            TAKE_NUMBER(per_gpu, 1, 16, "a number of workers");
            keep = 0;
        } else if (strcmp(a, "--gpu-lock") == 0) {
            /* (given by --gpus to workers that share a GPU: gpulock.c) */
            const char *v;
            TAKE(v);
            g.gpu_lock = xstrdup(v);
        } else if (strcmp(a, "--slurm") == 0) {
            TAKE(slurm_opts);
            keep = 0;
        } else if (strcmp(a, "--collect") == 0) {
            TAKE(collect_out);
            keep = 0;
        } else if (strcmp(a, "--shard") == 0 || strcmp(a, "--shards") == 0) {
            const char *v;
            TAKE(v);
            keep = 0;
            char *end = NULL;
            long x = strtol(v, &end, 10);
            if (strcmp(a, "--shards") == 0 && (end == v || *end || x < 1 || x > SHARD_MAX)) {
                fprintf(stderr, "fusionlab_grade: --shards needs a number from 1 to %d, not "
                        "'%s'\n", SHARD_MAX, v);
                return 2;
            }
            if (strcmp(a, "--shards") == 0) shards = (int)x;
            else if (shard_parse(v, &shard_i, &shard_n) != 0) {
                fprintf(stderr, "fusionlab_grade: --shard needs I/N with 0 <= I < N <= %d, not "
                        "'%s'\n", SHARD_MAX, v);
                return 2;
            }
        } else if (strcmp(a, "--course") == 0) {
            TAKE(course);
        } else if (strcmp(a, "--manifest") == 0) {
            TAKE(manifest_path);
        } else if (strcmp(a, "--rubric") == 0) {
            TAKE(rubric_path);
        } else if (strcmp(a, "--lessons") == 0) {
            TAKE(lessons);
        } else if (strcmp(a, "--arch") == 0) {
            const char *v;
            TAKE(v);
            g.arch = xstrdup(v);
        } else if (strcmp(a, "--no-gpu") == 0) {
            g.no_gpu = 1;
        } else if (strcmp(a, "--sandbox-probe") == 0) {
            probe = argv + i + 1; /* the rest: SCRIPT ARG... */
            break;
        } else if (strcmp(a, "--no-sandbox") == 0) {
            no_sandbox = 1;
            keep = 0;
        } else if (strcmp(a, "--sandbox-uid") == 0) {
            const char *v;
            TAKE(v);
            keep = 0;
            long uid = 0;
            if (!whole_number(v, 1, 0x7fffffffL, &uid)) {
                fprintf(stderr, "fusionlab_grade: --sandbox-uid needs a user id above 0, not "
                        "'%s'\n", v);
                return 2;
            }
            g.sandbox_uid = uid;
        } else if (strcmp(a, "--sandbox-uid-unused") == 0) {
            /* (a Slurm task's computed user, on a node the submitting host
             * could not look at: refuse to run student code as an account) */
            uid_unused = 1;
            keep = 0;
        } else if (strcmp(a, "--no-build-ahead") == 0) {
            g.no_build_ahead = 1;
        } else if (strcmp(a, "--cases") == 0) {
            const char *v;
            TAKE(v);
            if (strcmp(v, "together") != 0 && strcmp(v, "apart") != 0) {
                fprintf(stderr, "fusionlab_grade: --cases takes together or apart, not '%s'\n", v);
                return 2;
            }
            g.cases_apart = strcmp(v, "apart") == 0;
        } else if (strcmp(a, "--cuda-connections") == 0) {
            /* (0: the driver's own) */
            TAKE_NUMBER(g.cuda_connections, 0, 32, "a number of connections");
        } else if (strcmp(a, "--test-jobs") == 0) {
            TAKE_NUMBER(g.test_jobs, 1, 64, "a number of processes");
        } else if (strcmp(a, "--jobs") == 0 || strcmp(a, "--suite-timeout") == 0 ||
                   strcmp(a, "--lesson-timeout") == 0 || strcmp(a, "--build-timeout") == 0 ||
                   strcmp(a, "--test-timeout") == 0 || strcmp(a, "--sanitizer-timeout") == 0) {
            const char *v;
            TAKE(v);
            char *end = NULL;
            double x = strtod(v, &end);
            if (end == v || *end != '\0' || x <= 0) {
                fprintf(stderr, "fusionlab_grade: %s needs a positive number, not '%s'\n", a, v);
                return 2;
            }
            if (strcmp(a, "--jobs") == 0) g.jobs = (int)x, jobs_given = 1;
            else if (strcmp(a, "--suite-timeout") == 0) suite_t = x;
            else if (strcmp(a, "--lesson-timeout") == 0) lesson_t = x;
            else if (strcmp(a, "--build-timeout") == 0) build_t = x;
            else if (strcmp(a, "--sanitizer-timeout") == 0) sanitizer_t = x;
            else g.test_timeout = x;
        } else {
            fprintf(stderr, "fusionlab_grade: unknown option %s\n\n", a);
            usage(stderr);
            return 2;
        }
#undef TAKE
        if (keep)
            for (int j = first; j <= i && j < argc; ++j) strlist_add(&passthru, argv[j]);
    }
    if (g.test_jobs == 0) g.test_jobs = g.jobs / 4 < 1 ? 1 : g.jobs / 4 > 4 ? 4 : g.jobs / 4;
    if (probe) return probe_main(&g, course, work, no_sandbox, probe);
    if (collect_out) {
        if (paths.n || gpus_spec || slurm_opts || shard_n) {
            fprintf(stderr, "fusionlab_grade: --collect OUT takes nothing else (it puts together "
                    "the shards already graded into OUT)\n");
            return 2;
        }
        return collect_main(collect_out, 0);
    }
    if (paths.n == 0) {
        usage(stderr);
        return 2;
    }
    if (uid_unused && g.sandbox_uid > 0 && geteuid() == 0 && !no_sandbox) {
        struct passwd *pw = getpwuid((uid_t)g.sandbox_uid);
        if (pw) {
            fprintf(stderr, "fusionlab_grade: this task would run student code as uid %ld, which "
                            "is the account '%s' on this node (%s): grade again with "
                            "--sandbox-uid N, N + i unused on every node\n",
                    g.sandbox_uid, pw->pw_name, getenv("SLURMD_NODENAME") ? getenv("SLURMD_NODENAME") : "here");
            return 2;
        }
    }
    if ((gpus_spec != NULL) + (slurm_opts != NULL) + (shard_n > 0) > 1 ||
        (gpus_spec && g.no_gpu) || (shards && !slurm_opts) || (per_gpu > 1 && !gpus_spec) ||
        (g.gpu_lock && !shard_n)) {
        fprintf(stderr, "fusionlab_grade: --gpus, --slurm and --shard exclude each other, as do "
                "--gpus and --no-gpu; --shards goes with --slurm, --per-gpu with --gpus\n");
        return 2;
    }
    if (per_gpu > 1 && !no_sandbox && geteuid() != 0) {
        /* as one user, every worker's builds, tests and tools would count
         * against one process limit, and a worker sharing the GPU could
         * not be kept from another's files */
        fprintf(stderr, "fusionlab_grade: --per-gpu %d needs root (each worker's steps then run "
                "as a user of its own); without root, grade with one worker a GPU\n", per_gpu);
        return 2;
    }
    if (batch_check_paths(course, out, work, &paths) != 0) return 2;
    if (gpus_spec || slurm_opts) {
        char self[4096];
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        char *o = abs_path_any(out);
        if (len <= 0 || o == NULL) {
            fprintf(stderr, "fusionlab_grade: cannot find this program (/proc/self/exe) or "
                    "resolve --out %s\n", out);
            return 2;
        }
        self[len] = '\0';
        shard_launch L = {.self = self, .out = o, .work = work, .sandbox_uid = g.sandbox_uid,
                          .no_sandbox = no_sandbox, .jobs_given = jobs_given,
                          .passthru = passthru, .paths = &paths, .n_subs = paths.n,
                          .per_gpu = per_gpu};
        int rc = gpus_spec ? gpus_main(&L, gpus_spec) : slurm_main(&L, slurm_opts, shards);
        free(o);
        strlist_free(&passthru);
        strlist_free(&paths);
        return rc;
    }
    strlist_free(&passthru);
    char *shard_out = shard_n ? shard_dir(out, shard_i) : NULL;
    if (shard_out) {
        /* a shard's own batch folder (its lock, its marker, its results);
         * what an earlier run of this shard left must not pass for this
         * one's until it has written them again (--collect reads them) */
        out = shard_out;
        if (mkdir_p(out) != 0) {
            fprintf(stderr, "fusionlab_grade: cannot create %s\n", out);
            return 2;
        }
        char *old_plan = path_join(out, "plan.json"), *old_pieces = path_join(out, "pieces");
        unlink(old_plan);
        rm_rf(old_pieces);
        free(old_plan);
        free(old_pieces);
    }

    g.course = abs_path(course);
    if (g.course == NULL || !is_dir(g.course)) {
        return config_fail(out, &paths, xasprintf("no course tree at %s", course));
    }
    g.rubric_path = rubric_path ? xstrdup(rubric_path) : path_join(g.course, "grader/rubric.json");
    char *err = NULL;
    if (rubric_load(g.rubric_path, &g.rub, &err) != 0) {
        return config_fail(out, &paths, err);
    }
    if (manifest_load(manifest_path, &g.man, &err) != 0) {
        return config_fail(out, &paths, err);
    }
    g.build_timeout = build_t > 0 ? build_t : g.rub.build_timeout_s;
    g.suite_timeout = suite_t > 0 ? suite_t : g.rub.suite_timeout_s;
    g.lesson_timeout = lesson_t > 0 ? lesson_t : g.rub.lesson_timeout_s;
    g.sanitizer_timeout = sanitizer_t > 0 ? sanitizer_t : g.rub.sanitizer_timeout_s;
    if (lessons) {
        if (parse_lessons(&g, lessons) != 0)
            return config_fail(out, &paths, xasprintf("--lessons %s: not a list of lesson numbers",
                                                      lessons));
    } else {
        for (int i = 0; i < g.man.n; ++i)
            if (rubric_find(&g.rub, g.man.lessons[i].number))
                strlist_add(&g.lessons, g.man.lessons[i].number);
    }
    for (int i = 0; i < g.lessons.n; ++i) {
        const lesson_info *li = manifest_find(&g.man, g.lessons.v[i]);
        if (li == NULL || li->test == NULL) {
            return config_fail(out, &paths,
                               xasprintf("lesson %s is not in this course's build%s",
                                         g.lessons.v[i],
                                         li ? " (no tests: is Criterion installed?)" : ""));
        }
        if (rubric_find(&g.rub, g.lessons.v[i]) == NULL) {
            return config_fail(out, &paths, xasprintf("lesson %s has no entry in %s",
                                                      g.lessons.v[i], g.rubric_path));
        }
    }
    g.seed = getenv("FUSIONLAB_GRADE_SEED");

    if (mkdir_p(out) != 0) {
        fprintf(stderr, "fusionlab_grade: cannot create %s\n", out);
        return 2;
    }
    g.out = abs_path(out);
    char *w = work ? xstrdup(work) : path_join(g.out, ".work");
    mkdir_p(w);
    g.work = abs_path(w);
    free(w);
    if (g.work == NULL) {
        return config_fail(out, &paths, xstrdup("cannot create the scratch folder"));
    }
    if (batch_begin(g.out, g.work) != 0) return 2;
    if (!shard_n) {
        /* a whole batch here: the shards (and Slurm job) of an earlier
         * sharded one must not be collected over it */
        char *old = shard_root(g.out), *job = path_join(g.out, "slurm");
        rm_rf(old);
        rm_rf(job);
        free(old);
        free(job);
    }
    g.student_root = path_join(g.work, "student");
    g.build = path_join(g.work, "build");
    g.run_dir = path_join(g.work, "run");

    /* every id comes from the whole list, so that a shard's ids are those
     * of one run over the batch; a shard grades the k-th submission when
     * k % N == I */
    submission *all = xcalloc((size_t)paths.n, sizeof *all);
    for (int i = 0; i < paths.n; ++i) all[i].id = batch_make_id(paths.v[i], all, i);
    int nsub = 0;
    submission *subs = xcalloc((size_t)paths.n, sizeof *subs);
    for (int i = 0; i < paths.n; ++i)
        if (shard_n == 0 || i % shard_n == shard_i) {
            subs[nsub].id = xstrdup(all[i].id);
            subs[nsub].path = xstrdup(paths.v[i]);
            ++nsub;
        }
    if (shard_n) {
        char **ids = xcalloc((size_t)paths.n, sizeof *ids);
        for (int i = 0; i < paths.n; ++i) ids[i] = all[i].id;
        g.shard_n = shard_n;
        g.shard_i = shard_i;
        if (shard_write_plan(&g, shard_i, shard_n, ids, paths.v, paths.n) != 0) {
            batch_end(g.out, 0);
            return 2;
        }
        free(ids);
    }
    /* one seed and salt for the whole batch (keys.c), from every submission
     * of the list, whichever this shard grades */
    submission_keys batch_keys = {0};
    int keys_ok = 0;
    {
        char **ids = xcalloc((size_t)paths.n + 1, sizeof *ids);
        for (int i = 0; i < paths.n; ++i) ids[i] = all[i].id;
        keys_ok = keys_derive_batch(&g, ids, paths.v, paths.n, &batch_keys) == 0;
        free(ids);
    }
    for (int i = 0; i < paths.n; ++i) free(all[i].id);
    free(all);
    if (!keys_ok) {
        fprintf(stderr, "fusionlab_grade: cannot derive the batch's seed "
                "(sha256sum, /dev/urandom)\n");
        batch_end(g.out, 0);
        return 2;
    }

    /* every submission gets its results.json before anything can go wrong */
    for (int i = 0; i < nsub; ++i) {
        submission *s = &subs[i];
        s->outdir = batch_submission_dir(g.out, s->id);
        rm_rf(s->outdir);
        mkdir_p(s->outdir);
        intake_load(s->path, &g.man, g.rub.max_file_bytes, &s->in);
        keys_copy(&batch_keys, &s->keys);
        s->n_lessons = g.lessons.n;
        s->lessons = xcalloc((size_t)g.lessons.n, sizeof *s->lessons);
        for (int k = 0; k < g.lessons.n; ++k) {
            lesson_result *lr = &s->lessons[k];
            lr->li = manifest_find(&g.man, g.lessons.v[k]);
            lr->rl = rubric_find(&g.rub, g.lessons.v[k]);
            lr->state = L_INTERRUPTED;
            lr->summary = xstrdup("not graded yet");
            for (int c = 0; c < lr->rl->n; ++c) lr->max += lr->rl->checks[c].points;
        }
        total(s);
        write_results_json(&g, s);
    }

    detect_gpu(&g);
    if (!no_sandbox) {
        char *why = NULL;
        if (sandbox_init(&g.sbx, g.sandbox_uid, &why) != 0 ||
            sandbox_check_readable(&g.sbx, g.course, &why) != 0 ||
            sandbox_check_readable(&g.sbx, g.work, &why) != 0) {
            fprintf(stderr, "fusionlab_grade: cannot sandbox the steps that compile and run "
                    "student code: %s\nRefusing to grade: a submission would run with the "
                    "grader's own rights. Fix the above, or pass --no-sandbox to grade "
                    "without a sandbox (every report then says so).\n", why);
            free(why);
            batch_end(g.out, 0);
            return 2;
        }
    } else {
        sandbox_system(&g.sbx); /* (the includes a student's file may read) */
        fprintf(stderr, "== WARNING: --no-sandbox: student code runs with this grader's rights "
                "(uid %ld), every report says so\n", (long)geteuid());
    }
    char *tag = shard_n ? xasprintf("shard %d/%d: ", shard_i, shard_n) : xstrdup("");
    fprintf(stderr, "== fusion-lab grade: %s%d submission%s, lesson%s", tag, nsub,
            nsub == 1 ? "" : "s", g.lessons.n == 1 ? "" : "s");
    for (int i = 0; i < g.lessons.n; ++i) fprintf(stderr, " %s", g.lessons.v[i]);
    fprintf(stderr, "; GPU: %s\n", g.gpu ? g.gpu_name
                                         : g.no_gpu ? "hidden (--no-gpu)" : "none (GPU checks will not run)");
    g.ready = setup(&g) == 0;
    if (g.ready && gpu_lock_open(&g) != 0) {
        g.ready = 0;
        g.setup_error = xstrdup("the grader could not open the lock of the GPU it shares with "
                                "other workers");
    }

    if (g.ready && keys_derive(&g, "reference", NULL, &g.reference_keys) != 0) g.ready = 0;
    /* (FUSIONLAB_GRADE_SPLIT_TEST=1: the grader's own test of a shared
     * GPU's paths on a machine without one, tests/grader/split.sh) */
    const char *split_test = getenv("FUSIONLAB_GRADE_SPLIT_TEST");
    if (g.ready && (g.gpu || (g.gpu_lock && split_test && strcmp(split_test, "1") == 0))) {
        connections_check(&g);
        reference_for_batch(&g);
        for (int i = 0; i < g.reference_notes.n; ++i)
            fprintf(stderr, "   %s\n", g.reference_notes.v[i]);
    }

    /* the estimate of the time left: the mean of the submission-lessons
     * graded so far, times those still to grade */
    double t_grading = now_s();
    int lessons_done = 0, lessons_all = nsub * g.lessons.n;
    for (int i = 0; i < nsub; ++i) {
        submission *s = &subs[i];
        double t0 = now_s();
        if (s->in.refused) fprintf(stderr, "[%s%d/%d] %s: refused: %s\n", tag, i + 1, nsub, s->id,
                                   s->in.refusal);
        for (int k = 0; k < s->n_lessons; ++k) {
            lesson_result *lr = &s->lessons[k];
            lesson_result_free(lr);
            memset(lr, 0, sizeof *lr);
            lr->li = manifest_find(&g.man, g.lessons.v[k]);
            lr->rl = rubric_find(&g.rub, g.lessons.v[k]);
            char *progress = progress_tag(tag, i, nsub, s, lr->li);
            /* the lesson after this one, which ahead.c may build beside it */
            int ni = k + 1 < s->n_lessons ? i : i + 1, nk = k + 1 < s->n_lessons ? k + 1 : 0;
            g.next_s = ni < nsub ? &subs[ni] : NULL;
            g.next_k = ni < nsub ? nk : -1;
            free(g.next_progress);
            g.next_progress = ni < nsub ? progress_tag(tag, ni, nsub, &subs[ni],
                                                       manifest_find(&g.man, g.lessons.v[nk]))
                                        : NULL;
            /* and the one after it, when it is this submission's too */
            int after = k + 2 < s->n_lessons;
            g.after_s = after ? s : NULL;
            g.after_k = after ? k + 2 : -1;
            free(g.after_progress);
            g.after_progress = after ? progress_tag(tag, i, nsub, s,
                                                    manifest_find(&g.man, g.lessons.v[k + 2]))
                                     : NULL;
            double tl = now_s();
            grade_lesson(&g, s, lr, progress);
            ++lessons_done;
            double left = (now_s() - t_grading) / lessons_done * (lessons_all - lessons_done);
            char eta[48];
            if (lessons_done == lessons_all) snprintf(eta, sizeof eta, "none left");
            else if (left < 120) snprintf(eta, sizeof eta, "about %.0f s left", left);
            else snprintf(eta, sizeof eta, "about %.0f min left", left / 60);
            char *st = stage_times(lr);
            fprintf(stderr, "%s: %.2f / %.2f  %s  (%.0f s: %s; %.0f s since start; %s)\n",
                    progress, lr->score, lr->max, lr->summary ? lr->summary : "", now_s() - tl,
                    st, now_s() - g.t0, eta);
            free(st);
            free(progress);
            total(s);
            s->elapsed_s = now_s() - t0;
            write_results_json(&g, s);
        }
        s->done = !proc_interrupted();
        s->elapsed_s = now_s() - t0;
        total(s);
        write_results_json(&g, s);
        write_report_md(&g, s);
        write_roster_csv(&g, subs, nsub);
        write_junit_xml(&g, subs, nsub);
        if (shard_n) shard_write_pieces(&g, s);
    }
    ahead_cancel(); /* (one left when the batch was interrupted) */
    free(g.next_progress);
    g.next_progress = NULL;
    free(g.after_progress);
    g.after_progress = NULL;
    write_roster_csv(&g, subs, nsub);
    write_junit_xml(&g, subs, nsub);
    /* a shard that could not set up (no GPU where one was meant, a build
     * that failed) is not finished: --collect must not call it complete */
    batch_end(g.out, !proc_interrupted() && (g.ready || !shard_n));

    fprintf(stderr, "\n%-24s %10s %10s  %s\n", "submission", "score", "max", "status");
    for (int i = 0; i < nsub; ++i) {
        submission *s = &subs[i];
        char *st = submission_status(s);
        fprintf(stderr, "%-24s %10.2f %10.2f  %s\n", s->id, s->score, s->max, st);
        free(st);
    }
    fprintf(stderr, "\nresults: %s/" BATCH_SUBMISSIONS "/<id>/results.json, report.md; %s/roster.csv, "
            "junit.xml (%.0f s)\n", g.out, g.out, now_s() - g.t0);
    if (!g.gpu)
        fprintf(stderr, "no GPU was used: the GPU checks say \"not run: no CUDA device\"\n");

    for (int i = 0; i < nsub; ++i) {
        for (int k = 0; k < subs[i].n_lessons; ++k) lesson_result_free(&subs[i].lessons[k]);
        free(subs[i].lessons);
        intake_free(&subs[i].in);
        keys_free(&subs[i].keys);
        free(subs[i].id);
        free(subs[i].path);
        free(subs[i].outdir);
    }
    keys_free(&batch_keys);
    free(subs);
    free(tag);
    free(shard_out);
    strlist_free(&paths);
    int rc = proc_interrupted() ? 130 : g.ready ? 0 : 1;
    grader_free(&g);
    return rc;
}
