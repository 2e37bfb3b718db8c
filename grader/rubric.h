/* grader/rubric.h — what each check is worth (grader/rubric.json).
 *
 * A check names a Criterion suite, optionally one test of it, and optionally
 * which cases of a parameterized test it covers (their index in the test's
 * parameter table, in the order the table lists them). Its kind says how it
 * is scored:
 *   correctness, edge   the share of its cases that pass, times its points
 *   speed               0 unless the check passes; then a curve from the
 *                       pass mark (speed.floor of the points) to full marks
 *                       within speed.full_marks_within of the worked
 *                       solution's time, measured on this GPU in this run
 *   sanitizer           all points when tools/sanitize finds no error under
 *                       memcheck, racecheck, initcheck and synccheck (the
 *                       small cases of the lesson's suites), else 0; it
 *                       names no suite. A check worth 0 points is not run.
 */
#ifndef FUSIONLAB_GRADER_RUBRIC_H
#define FUSIONLAB_GRADER_RUBRIC_H

#include "util.h"

typedef enum { KIND_CORRECTNESS, KIND_EDGE, KIND_SPEED, KIND_SANITIZER } check_kind;

typedef struct {
    char *id;          /* short and unique within the lesson, e.g. "A.edge" */
    char *name;        /* what a student reads */
    check_kind kind;
    char *suite;       /* Criterion suite (NULL for sanitizer) */
    char *test;        /* one test of the suite, or NULL for all of them */
    int *cases;        /* parameter indices, or NULL for all */
    int n_cases;
    int expect_cases;  /* how many instances the test has (0: not checked) */
    double points;
    char *visibility;  /* Gradescope: visible, hidden, after_due_date, after_published */
} rubric_check;

typedef struct {
    char *number;      /* "01" */
    char *title;
    rubric_check *checks;
    int n;
    char **alone;      /* "suite" or "suite/test": what needs the GPU to itself
                          when workers share one (it times, profiles or reads
                          the GPU's free memory); speed suites always do */
    int n_alone;
    char **verify_once; /* suites whose tests compare no output array: the
                           verify stage counts their cases from one trusted
                           run per GPU (the reference), not one per
                           submission */
    int n_verify_once;
} rubric_lesson;

/* 1 when suite (and test, or NULL: the whole suite) needs the GPU alone. */
int rubric_alone(const rubric_lesson *l, const char *suite, const char *test);
/* The suites lesson l's checks name, in the rubric's order, each once:
 * speed < 0 all of them, speed 1 the speed suites, speed 0 the others. */
void rubric_suites(const rubric_lesson *l, int speed, strlist *out);
/* 1 when the lesson lists `suite` under "verify_once". */
int rubric_verify_once(const rubric_lesson *l, const char *suite);

typedef struct {
    double speed_full_within; /* full marks within this factor of the solution's time */
    double speed_floor;       /* share of the points at the pass mark */
    double build_timeout_s;
    double suite_timeout_s;
    double lesson_timeout_s;
    double sanitizer_timeout_s; /* the sanitizer stage of one lesson */
    long max_file_bytes;
    rubric_lesson *lessons;
    int n;
} rubric;

/* 0 on success; otherwise *err says what is wrong, naming the entry. */
int rubric_load(const char *path, rubric *r, char **err);
const rubric_lesson *rubric_find(const rubric *r, const char *number);
/* 1 when `suite` is a speed suite of some lesson of r (its tests time the
 * GPU). */
int rubric_speed_suite(const rubric *r, const char *suite);
const char *check_kind_name(check_kind k);
void rubric_free(rubric *r);

#endif /* FUSIONLAB_GRADER_RUBRIC_H */
