/* grader/manifest.h — which files of each lesson a student may change.
 *
 * Read from fusionlab_manifest.json, which cmake/Lesson.cmake writes from the
 * lesson_add() calls at configure time (so it always agrees with the build):
 *
 *   {"format": 1, "student_root": "...", "lessons": [
 *     {"name": "01-vector-add", "number": "01", "slug": "vector_add",
 *      "exercise": ["vector_add.cu"], "tools": [], "cpu_suites": [],
 *      "test": "test_01_vector_add", "solution_test": "test_01_vector_add_solution"}]}
 */
#ifndef FUSIONLAB_GRADER_MANIFEST_H
#define FUSIONLAB_GRADER_MANIFEST_H

#include "util.h"

typedef struct {
    char *name;          /* 01-vector-add */
    char *number;        /* 01 */
    char *slug;          /* vector_add */
    char *test;          /* test target against the student's files */
    char *solution_test; /* the same against the worked solution, or NULL */
    strlist exercise;    /* the files a student may change */
    strlist tools;       /* executables the tests run (built with the test) */
} lesson_info;

typedef struct {
    lesson_info *lessons;
    int n;
    char *student_root;
} manifest;

/* 0 on success; otherwise *err says why (caller frees). */
int manifest_load(const char *path, manifest *m, char **err);
const lesson_info *manifest_find(const manifest *m, const char *number);
void manifest_free(manifest *m);

#endif /* FUSIONLAB_GRADER_MANIFEST_H */
