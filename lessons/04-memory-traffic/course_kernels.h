/* lessons/04-memory-traffic/course_kernels.h — every launcher of lessons
 * 01-03 (worked solutions and baselines), behind one interface, so the probe,
 * the bench and the tests can run any of them by name at any size.
 */
#ifndef FUSIONLAB_COURSE_KERNELS_H
#define FUSIONLAB_COURSE_KERNELS_H

#include "traffic.h"
#include "timing.h"

typedef struct {
    const char *name;     /* "softmax_unfused", ... */
    const char *lesson;   /* "01", "02", "03" */
    const char *version;  /* "unfused" or "fused" */
    int two_d;            /* 1: sized (rows, cols); 0: sized n (in `rows`) */
    double flops_per_element; /* for the roofline: operations per matrix element */
} course_kernel;

/* The table, terminated by an entry with name == NULL. */
EXTERN_C const course_kernel *course_kernels(void);
EXTERN_C const course_kernel *course_kernel_find(const char *name);

/* Device buffers and sizes for one launcher; opaque to callers. */
typedef struct course_run course_run;

/* Allocate and fill inputs (host-side random data, uploaded: no kernel runs
 * before the launcher itself, so a profiler sees only the launcher's kernels).
 * For 1-D launchers `cols` is ignored. */
EXTERN_C cudaError_t course_run_open(const course_kernel *k, size_t rows,
                                     size_t cols, course_run **out);
/* Launch on `stream` (an fl_run_fn: pass the course_run as ctx). */
EXTERN_C cudaError_t course_run_launch(void *run, cudaStream_t stream);
EXTERN_C void course_run_close(course_run *r);
/* Elements of the main matrix/array (rows * cols, or n). */
EXTERN_C double course_run_elements(const course_run *r);

#endif /* FUSIONLAB_COURSE_KERNELS_H */
