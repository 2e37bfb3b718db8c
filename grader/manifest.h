/* grader/manifest.h — which files of each lesson a student may change, and
 * where the build keeps what the grader runs and scans.
 *
 * Read from fusionlab_manifest.json, which cmake/Lesson.cmake writes from the
 * lesson_add() calls when CMake generates the build (so it always agrees
 * with the build; the paths are CMake's own $<TARGET_FILE:...> and
 * $<TARGET_OBJECTS:...>):
 *
 *   {"format": 1, "student_root": "...", "generator": "Unix Makefiles",
 *    "harness_libs": [".../libfusionlab_common.a", ...],
 *    "kernel_trace": {"target": "fusionlab_ktrace", "file": ".../libfusionlab_ktrace.so"}
 *      (only where CUPTI was found: grader/ktrace.c),
 *    "lessons": [
 *     {"name": "01-vector-add", "number": "01", "slug": "vector_add",
 *      "exercise": ["vector_add.cu"], "tools": [], "cpu_suites": [],
 *      "test": "test_01_vector_add", "solution_test": "test_01_vector_add_solution",
 *      "build": {"student_lib": ..., "student_objects": [...], "student_rules": ...,
 *                "baseline_lib": ..., "scan_rules": ..., "test_bin": ...,
 *                "test_rules": ..., "solution_test_bin": ..., "test_source": ...}}]}
 *
 * (`*_rules`: the target's folder of Makefile rules, CMakeFiles/<target>.dir,
 * relative to the build folder, as the Makefiles name it.)
 */
#ifndef FUSIONLAB_GRADER_MANIFEST_H
#define FUSIONLAB_GRADER_MANIFEST_H

#include "util.h"

/* Where one lesson's targets are, in the build the manifest came from. */
typedef struct {
    char *student_lib;       /* the student's exercise files, compiled */
    strlist student_objects; /* ... its object files */
    char *student_rules;     /* its Makefile rules folder */
    char *baseline_lib;      /* the lesson's baseline and apparatus */
    char *scan_rules;        /* the object scan's extra rules for the lesson */
    char *test_bin;          /* the test program against the student's files */
    char *test_rules;        /* its Makefile rules folder (link.txt) */
    char *solution_test_bin; /* against the worked solution, or NULL */
    char *test_source;       /* the tests' C source (the course's), or NULL */
    char *solution_lib;      /* the worked solution's kernels (a library), or NULL */
} lesson_build;

typedef struct {
    char *name;          /* 01-vector-add */
    char *number;        /* 01 */
    char *slug;          /* vector_add */
    char *test;          /* test target against the student's files */
    char *solution_test; /* the same against the worked solution, or NULL */
    strlist exercise;    /* the files a student may change */
    strlist tools;       /* executables the tests run (built with the test) */
    lesson_build b;      /* where its targets are */
} lesson_info;

typedef struct {
    lesson_info *lessons;
    int n;
    char *student_root;
    char *generator;     /* CMake's generator of the build */
    strlist harness_libs; /* the course's own libraries every test links */
    char *kernel_trace;  /* the speed audit's kernel trace library, or NULL */
    char *kernel_trace_target; /* ... and its target */
} manifest;

/* 0 on success; otherwise *err says why (caller frees). */
int manifest_load(const char *path, manifest *m, char **err);
const lesson_info *manifest_find(const manifest *m, const char *number);
/* Take the build paths (`b`, harness_libs, generator, kernel_trace) of `from`, a manifest
 * of another build of the same lessons, into `m`; 0, or -1 when a lesson of
 * `m` is missing from `from`. `from` keeps only its lesson list. */
int manifest_adopt_build(manifest *m, manifest *from);
void manifest_free(manifest *m);

#endif /* FUSIONLAB_GRADER_MANIFEST_H */
