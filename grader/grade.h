/* grader/grade.h — the grader's state: one batch, its submissions, their
 * lessons and checks. grade.c drives it; lesson.c grades one lesson of one
 * submission; report.c writes what course tools read.
 */
#ifndef FUSIONLAB_GRADER_GRADE_H
#define FUSIONLAB_GRADER_GRADE_H

#include "intake.h"
#include "manifest.h"
#include "rubric.h"
#include "sandbox.h"
#include "util.h"

/* One line of a speed log (tests/fl_test.c, fl_test_speed_record). */
typedef struct {
    char lesson[3];      /* reference records: the lesson they time ("01") */
    char *suite, *test, *label;
    double baseline_us, candidate_us, speedup, min_speedup, pct_of_ceiling, min_pct;
    int passed;
    double audit_speedup; /* reference records: the worked solution's speedup as
                             the speed audit measures it, or 0 */
    char audit_tool[16];  /* ... and what measured it: "CUPTI" or "Nsight Compute" */
    int audit_baseline_n; /* ... and how many kernels of that run were the baseline's
                             (the same in both of its audited runs), or 0 */
    int audit_harness_n;  /* ... and the test harness's, the same way */
} speed_rec;

typedef struct {
    speed_rec *v;
    int n;
} speed_log;

typedef struct {
    char *seed;          /* the inputs' seed of a submission's runs: the
                            batch's, derived from the batch secret and every
                            submission's id and files (keys.c) */
    char *salt;          /* FUSIONLAB_EVIDENCE_SALT of its runs (hex) */
} submission_keys;

/* One suite's cases that ran in the worked solution's trusted run on this
 * GPU, kept with the reference for every submission's verify stage (the
 * rubric's "verify_once": suites whose tests compare no output array, so
 * that all the verify stage can learn from a trusted run is this count). */
typedef struct {
    char lesson[3];
    char *suite;
    strlist ran; /* one test name per case that ran */
    char *measured; /* what that run measured for every submission's run of the
                       suite (FUSIONLAB_COUNTERS_SAVE: lesson 04's DRAM
                       counters), checked line by line; or NULL */
} trusted_count;

struct submission;
struct trusted_suite; /* stages.h */

/* The batch. */
typedef struct {
    char *course;        /* the pristine course tree */
    char *out;           /* output folder */
    char *work;          /* scratch: student root, build, run folder */
    char *student_root;
    char *build;
    char *run_dir;
    char *rubric_path;
    manifest man;
    rubric rub;
    strlist lessons;     /* numbers to grade, in order */
    int jobs;            /* build parallelism */
    int test_jobs;       /* test processes side by side (--test-jobs; 0 until
                            set: a quarter of jobs, 1 to 4) */
    int cases_apart;     /* --cases apart: in the worked solution's runs too,
                            every case of a parameterized test a process of
                            its own (default: together there, cases.c) */
    int cuda_connections; /* --cuda-connections: CUDA_DEVICE_MAX_CONNECTIONS of
                            the steps that time nothing (0: the driver's own) */
    int gpu;             /* a CUDA device is visible and used */
    int no_gpu;          /* --no-gpu: hide devices from the tests */
    char *gpu_name;
    char *gpu_archs;     /* "90": the GPUs' compute capabilities, for the build */
    char *arch;          /* CMAKE_CUDA_ARCHITECTURES for the scratch build, or NULL */
    double build_timeout, suite_timeout, lesson_timeout, test_timeout;
    double sanitizer_timeout; /* tools/sanitize, all four tools together */
    const char *seed;    /* FUSIONLAB_GRADE_SEED: the batch secret; no step
                            ever sees it (the submissions' runs get a seed
                            derived from it) */
    char *batch_secret;  /* the seed, or random bytes when none was given:
                            what keys_derive() derives every seed from */
    sandbox_cfg sbx;     /* bubblewrap for every step that compiles or runs
                            a student's code (sbx.enabled 0: --no-sandbox) */
    long sandbox_uid;    /* --sandbox-uid, or -1 */
    speed_log reference; /* the worked solutions' speed, this GPU, this run */
    submission_keys reference_keys; /* the seed of the reference run */
    strlist reference_notes;
    trusted_count *once; /* the "verify_once" suites' trusted runs, this GPU */
    int n_once;
    struct trusted_suite *trusted; /* the verify stage's runs of the worked
                            solution on the batch's inputs, this GPU, kept
                            for every submission (stage_run.c) */
    int n_trusted;
    int shard_i, shard_n; /* --shard I/N (shard_n 0: the whole batch) */
    char *gpu_lock;      /* --gpu-lock DIR: workers share this GPU (gpulock.c),
                            or NULL: the worker has it to itself */
    int gpu_fd, gate_fd; /* DIR/gpu and DIR/gate, open (close-on-exec) */
    char *step_env;      /* one more NAME=value for the test steps of the lesson
                            being graded (its suites' and the worked solution's
                            runs), or NULL */
    char *step_ro;       /* a file those steps may read, or NULL */
    int trusted_untimed; /* 1 while the verify stage runs the worked solution:
                            its runs get FUSIONLAB_TIMING_UNTIMED=1 (their
                            speed checks make every run, timing none) */
    double gpu_waited_s; /* all the waits for the GPU so far */
    int ready;           /* the scratch build is configured */
    char *setup_error;   /* why it is not */
    int no_build_ahead;  /* --no-build-ahead: each lesson built in its turn */
    struct submission *next_s; /* the lesson graded after this one: its submission, */
    int next_k;          /* its index in `lessons` (-1: none), */
    char *next_progress; /* and its progress tag (ahead.c) */
    struct submission *after_s; /* the lesson after that one, when both are the */
    int after_k;          /* submission's being graded (else NULL, -1), */
    char *after_progress; /* and its tag: built ahead beside the next (ahead.c) */
    double t0;
} grader;

typedef enum { ST_PASSED, ST_PARTIAL, ST_FAILED, ST_NOT_RUN } check_status;

typedef struct {
    const rubric_check *rc;
    double score, max;
    check_status status;
    char *output;
} check_result;

typedef enum {
    L_GRADED,         /* its checks ran (some may say "not run: no CUDA device") */
    L_NOT_SUBMITTED,
    L_REFUSED,        /* a file of it (or the whole submission) was refused */
    L_BUILD_FAILED,   /* compile or link error */
    L_LINK_REFUSED,   /* a student file defines a symbol of the harness */
    L_FLAGGED,        /* the object scan (tools/scan-objects) flagged a call or symbol */
    L_SETUP_FAILED,   /* the grader could not prepare the course build */
    L_UNVERIFIED,     /* the report claims passes the evidence does not bear out */
    L_INTERRUPTED,
} lesson_state;

typedef struct {
    const lesson_info *li;
    const rubric_lesson *rl;
    lesson_state state;
    char *summary;       /* one line */
    char *detail;        /* compile errors, refusal reasons (may be NULL) */
    strlist notes;
    check_result *checks;
    int n_checks;
    double score, max;
    double build_s, run_s, verify_s;
    double scan_s, audit_s; /* the object scan; the speed audit under Nsight Compute */
    double sanitizer_s;  /* the sanitizer stage */
    double gpu_wait_s;   /* waiting for the GPU (other workers' steps on it) */
    double ahead_wait_s; /* waiting for the next lesson's build ahead (ahead.c) */
    int built_ahead;     /* built and scanned by ahead.c's child */
    int reruns;          /* steps run again alone on the GPU: shared, they did
                            not come out clean (gpulock.c) */
    int not_run_no_gpu;  /* checks not run for want of a GPU */
    int n_killed;        /* suites stopped at their wall-clock limit, or silent */
} lesson_result;


typedef struct submission {
    char *id;            /* folder name under out/ */
    char *path;
    char *outdir;
    intake in;
    lesson_result *lessons;
    int n_lessons;
    double score, max, elapsed_s;
    int done;            /* all lessons graded */
    submission_keys keys;
} submission;

/* gpulock.c: several workers on one GPU. gpu_hold waits (outside every
 * time limit) until the GPU may be used as asked and returns the seconds it
 * waited; without --gpu-lock it returns 0 at once. */
typedef enum { GPU_SHARED, GPU_ALONE } gpu_use;
int gpu_lock_open(grader *g);
double gpu_hold(grader *g, gpu_use use);
void gpu_release(grader *g);

/* keys.c: a seed and salt (0, or -1 when they could not be made): of the
 * runs of `id` alone (the reference's), or of every submission of the batch
 * (ids and paths: the whole list, n of them, whatever the shard) */
int keys_derive(grader *g, const char *id, const intake *in, submission_keys *k);
int keys_derive_batch(grader *g, char *const *ids, char *const *paths, int n,
                      submission_keys *k);
void keys_copy(const submission_keys *from, submission_keys *to);
void keys_free(submission_keys *k);

/* lesson.c */
void grade_lesson(grader *g, submission *s, lesson_result *lr, const char *progress);
/* Run a solution test's speed suites and keep their records (reference). */
void run_reference(grader *g, const lesson_info *li, const rubric_lesson *rl);
/* The worked solution's speed checks under the speed audit: each reference
 * record's audit_speedup (audit.c). */
void audit_reference(grader *g, const lesson_info *li);
/* The reference of every lesson of the batch: measured (run_reference), or,
 * for a worker that shares its GPU (--gpu-lock), read from what the first
 * worker on it measured for this batch (gpu_lock/reference.json). */
void reference_for_batch(grader *g);
char *scrub(const grader *g, const char *text);
/* "build 2.1 s, scan 0.3 s, tests 8.0 s, ...": the lesson's stages that ran */
char *stage_times(const lesson_result *lr);
const char *lesson_state_name(lesson_state s);
const char *check_status_name(check_status s);

/* report.c */
void write_results_json(const grader *g, const submission *s);
void write_report_md(const grader *g, const submission *s);
void write_roster_csv(const grader *g, submission *subs, int n);
void write_junit_xml(const grader *g, submission *subs, int n);
/* "ok", "refused", "01: build failed; 02: not submitted", ... */
char *submission_status(const submission *s);
/* The pieces of roster.csv and junit.xml, one submission at a time: a batch
 * graded in shards (--gpus, --slurm) is put together from the same pieces
 * (collect.c), so that its files are those one run would write. */
typedef struct {
    int tests, failures, skipped;
} junit_counts;
char *roster_header(const grader *g);
char *roster_row(const grader *g, const submission *s);
/* the submission's <testsuite> element; adds its counts to *cnt (may be NULL) */
char *junit_suite(const grader *g, const submission *s, junit_counts *cnt);
/* the whole junit.xml around the concatenated suites */
char *junit_document(const char *suites, junit_counts cnt);

#endif /* FUSIONLAB_GRADER_GRADE_H */
