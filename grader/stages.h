/* grader/stages.h — internal to the grader: the stages of grading one lesson
 * (lesson.c calls them in turn) and the types more than one of them needs.
 *
 *   stage_build.c  the student's files into the scratch tree, the build
 *   stage_scan.c   the student's objects: symbols of the harness, the object scan
 *   stage_run.c    the suites (Criterion's report, the speed log), the sanitizer
 *   stage_score.c  every check of the rubric scored from the reports
 *
 * A stage that stops the lesson returns its state (L_GRADED: go on) and
 * sets *summary, *detail and *why (each may stay NULL; why NULL: every
 * check says the summary), all for lesson.c's one failure path.
 */
#ifndef FUSIONLAB_GRADER_STAGES_H
#define FUSIONLAB_GRADER_STAGES_H

#include "grade.h"
#include "proc.h"

#include <sys/types.h>

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
    int again; /* runs made again after the first (one process per case, or
                * alone): the first run's folder then holds what that run
                * wrote, not what the results stand for */
} suite_run;

typedef struct {
    check_status status;
    char *output;
} sanitizer_run;

/* cases.c: the results of a run (Criterion's --jobs `jobs`) whose
 * FL_PARAM_TESTs ran their cases together (FUSIONLAB_CASES=together), each
 * test's results turned into the cases they stand for, by the lines of
 * FUSIONLAB_CASES_REPORT (`report`, NULL: none) for sr's suite. The tests
 * whose results stand for no case this way are taken out of sr and returned
 * ("a|b", NULL: none): they run again, one process per case, and only that
 * run counts. sr's state must be SR_OK (else NULL, sr untouched). */
char *cases_expand(suite_run *sr, const char *report, int jobs);
/* The tests of `suite` whose cases the report says ran together ("a|b", or
 * NULL). */
char *cases_together_tests(const char *report, const char *suite);

/* steps.c: every step that compiles, reads or runs a student's code goes
 * through run_step, which sandboxes it (see steps.c for what each kind of
 * step sees). `scratch` (or NULL) is the step's writable folder and working
 * directory; `env` its variables (NAME=value, NULL-ended). Returns what
 * proc_run returns. */
typedef enum { STEP_BUILD, STEP_SCAN, STEP_TEST, STEP_TRUSTED } step_kind;
int run_step(grader *g, step_kind kind, const lesson_info *li, const char *scratch,
             char *const argv[], const char *const *env, proc_opts *o, proc_result *r);
/* --sandbox-probe: argv[0] a script to run as a test step (steps.c). */
int sandbox_probe(grader *g, char *const argv[]);
/* A fresh, empty run_dir/NAME the sandbox's user may write (NULL on error). */
char *step_scratch(grader *g, const char *name);

/* lesson.c */
/* logs/NAME of the submission's output, scrubbed and trimmed */
void write_log(grader *g, submission *s, const char *name, const char *text);

/* stage_build.c: place the files, clean the student's objects, build the
 * test program (its log: NN-build.log). L_GRADED, L_SETUP_FAILED or
 * L_BUILD_FAILED. */
lesson_state build_lesson(grader *g, submission *s, lesson_result *lr, const char *progress,
                          char **summary, char **detail, char **why);

/* stage_scan.c: symbols of the harness, then the object scan (a note when
 * it cannot tell). L_GRADED, L_LINK_REFUSED or L_FLAGGED. */
lesson_state scan_lesson(grader *g, lesson_result *lr, char **summary, char **detail, char **why);
/* lesson.c: admit, build and scan: the state, and summary, detail and why
 * when it is not L_GRADED */
lesson_state prepare_lesson(grader *g, submission *s, lesson_result *lr, const char *progress,
                            char **summary, char **detail, char **why);

/* ahead.c: the next lesson's build and scan in a child process, once the
 * lesson being graded has nothing left that times (ahead_start, with
 * g->next_s and g->next_k), and beside it the one after (g->after_s and
 * g->after_k) when both are the same submission's; ahead_for: whether
 * children build and all build lessons of submission s; ahead_finish: wait
 * for them all (before the sanitizer, unless they build the same
 * submission's lessons; before anything runs again alone); ahead_take: 0
 * with what a child found when it was this lesson's and a verdict taken as
 * it is (else -1: prepare it here); ahead_cancel: stop and reap them */
void ahead_start(grader *g, const lesson_result *now);
int ahead_for(const submission *s);
void ahead_finish(void);
int ahead_take(const submission *s, lesson_result *lr, lesson_state *st, char **summary,
               char **detail, char **why);
void ahead_cancel(void);

/* stage_run.c */
/* One suite of a test program, with its own wall-clock limit; *log_out (when
 * not NULL): what it printed. */
/* The worked solution's stream tests (fl_test_stream_honoured; every test
 * that calls it is named stream*) are the tests whose verdict needs work of
 * two streams to run at once, which fewer CUDA connections could prevent.
 * Run them once with --cuda-connections' number: if one does not pass (or
 * skip), say so and run the whole batch with the driver's own
 * connections (g->cuda_connections 0). */
void connections_check(grader *g);
void run_suite(grader *g, step_kind kind, const submission_keys *keys, const char *binary,
               const char *suite, double timeout, suite_run *sr, char **log_out,
               char **evidence_out);
void suite_run_free(suite_run *sr);
/* verify.c: the lesson's "verify_once" suites run once with the worked
 * solution (trusted, the reference's seed), their cases that ran kept in
 * g->once when the run compared no output array (else each submission's
 * verify stage runs them as before). Called by run_reference. */
void reference_verify_once(grader *g, const lesson_info *li, const rubric_lesson *rl);
/* The kept count of (lesson, suite), or NULL; a new empty one, added. */
const trusted_count *trusted_once(const grader *g, const char *lesson, const char *suite);
trusted_count *trusted_once_add(grader *g, const char *lesson, const char *suite);
/* A verify_once run's measurements (n lines, each whole), copied; or NULL. */
char *measured_lines(const char *text, int n);
/* Each of `suites` in turn within the lesson's time budget (its log:
 * NN-tests.log); an array of suites->n runs, to free with suite_run_free. */
suite_run *run_suites(grader *g, submission *s, lesson_result *lr, const char *binary,
                      const strlist *suites, const char *progress, char ***evidence);
/* The worked solution's runs on the same inputs, then verify_lesson: NULL
 * when the student's report claims nothing the grader cannot bear out.
 * A run of the student's that ended without its report gets the cases the
 * trusted run ran beyond those its output shows, as not passed. Each
 * suite's run is made once for the batch, whose submissions all meet the
 * same inputs (keys.c): the first verify stage that needs it makes it, and
 * when every case of it passed, its results and a copy of its evidence are
 * kept (g->trusted) for every later one of this grader (this GPU's worker).
 * A report the kept runs do not bear out is judged again against runs made
 * for it, and only that counts. */
struct trusted_suite {
    char lesson[3];
    char *suite;
    char *seed, *salt; /* the inputs it ran on */
    char *made_for;    /* the submission whose verify stage made it */
    suite_run run;
    char *evidence;    /* its copy under --work, in a folder no step sees */
    long long bytes;   /* the copy's size: a copy no longer there whole is not used */
    int dropped;       /* not used again (its copy was not there whole) */
};
void trusted_suites_free(grader *g);
char *verify_runs(grader *g, submission *s, lesson_result *lr, const strlist *suites,
                  suite_run *runs, char *const *evidence, const char *progress,
                  int *grader_fault);

/* audit.c: NULL when every passing speed check's claim agrees with the
 * kernel times Nsight Compute measures; else why not (no GPU: NULL). */
char *audit_speed(grader *g, submission *s, lesson_result *lr, const char *binary,
                  const strlist *suites, const suite_run *runs, const char *progress);

/* verify.c */
/* (student: a test with passes, in a run without its report, that lists
 * fewer cases than the trusted run ran gets the rest as CR_KILLED cases.)
 * *grader_fault (when not NULL): 1 when every shortfall may be the trusted
 * run's (a suite of it that did not finish, its evidence damaged, cases of
 * it that did not end), so that the lesson is not graded rather than 0. */
char *verify_lesson(const strlist *suites, suite_run *student, char *const *student_ev,
                    const suite_run *trusted, char *const *trusted_ev, int *grader_fault);
/* The sanitizer stage: compute-sanitizer on the test program, once, when a
 * sanitizer check of the rubric is worth points (not after a suite ran
 * past its limit); otherwise san is left as it is. */
void run_sanitizer(grader *g, submission *s, lesson_result *lr, const char *binary,
                   const suite_run *runs, int n_runs, const char *progress, sanitizer_run *san);
/* A speed record from its JSON object (stage_run.c): 0, or -1 (r untouched). */
struct cJSON;
int speed_rec_from_json(const struct cJSON *o, int need_label, speed_rec *r);
/* The last record of suite::test (of `lesson`, when given: lessons share
 * suite and test names, e.g. speed::fused_vs_unfused). */
const speed_rec *speed_find(const speed_log *log, const char *lesson, const char *suite,
                            const char *test);

/* stage_score.c: every check of the lesson from the runs of `suites` (in
 * that order) and the sanitizer's verdict; the lesson's score, state
 * (L_GRADED) and summary. */
void score_lesson(const grader *g, lesson_result *lr, const strlist *suites,
                  const suite_run *runs, const sanitizer_run *san);

#endif /* FUSIONLAB_GRADER_STAGES_H */
