/* common/bench.h — the shared front end of every lesson's bench program.
 *
 *   bench_01_vector_add [--csv FILE] [--summary FILE] [--quick]
 *
 * --csv writes the lesson's sweep (default: stdout); --summary appends one
 * headline row to a course-wide table (lab demo prints it); --quick runs a
 * short sweep (ctest's smoke test). With no GPU a bench prints why and exits
 * with FL_EXIT_SKIP, which ctest reports as skipped.
 */
#ifndef FUSIONLAB_BENCH_H
#define FUSIONLAB_BENCH_H

#include "device.h"
#include "timing.h"

#define FL_EXIT_SKIP 77

typedef struct {
    const char *csv_path;     /* "-" = stdout */
    const char *summary_path; /* NULL = none */
    int quick;
    fl_device_info dev;
    char device_field[300];   /* dev.name quoted for CSV */
    char date[32];            /* YYYY-MM-DD, for the CSV */
    double ceiling_gbs;       /* measured copy bandwidth */
} fl_bench;

/* Parse arguments, find the GPU and measure its copy ceiling. Returns 0 to
 * go on; -1 after --help (exit 0); otherwise the exit code to return from
 * main (2 on a bad argument, FL_EXIT_SKIP with no GPU, 1 on a CUDA error). */
EXTERN_C int fl_bench_init(fl_bench *b, int argc, char **argv,
                           const char *lesson_title);

/* Append the headline row for this lesson to the summary table (creating it
 * with a header if it does not exist). size is a label such as "n=2^26". */
EXTERN_C int fl_bench_summary(const fl_bench *b, const char *lesson,
                              const char *size, const fl_timing *unfused,
                              const fl_timing *fused);

/* Free device memory, in bytes (for capping a sweep). */
EXTERN_C size_t fl_bench_free_bytes(void);

#endif /* FUSIONLAB_BENCH_H */
