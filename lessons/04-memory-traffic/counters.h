/* lessons/04-memory-traffic/counters.h — DRAM bytes from the GPU's own
 * counters, through Nsight Compute (ncu).
 *
 * counters_measure() runs the probe program (probe.c) under
 *   ncu --csv --print-units base --metrics dram__bytes_read.sum,dram__bytes_write.sum
 * for one launcher and sums what every kernel of that launch read and wrote.
 * Where ncu is missing or may not read the counters (ERR_NVGPUCTRPERM), it
 * fails with the reason and what to do about it in `why`.
 */
#ifndef FUSIONLAB_COUNTERS_H
#define FUSIONLAB_COUNTERS_H

#include "check.h"

#define COUNTERS_MAX_KERNELS 16

typedef struct {
    char kernel[128];  /* demangled name, shortened */
    double read, write;
} counters_kernel;

typedef struct {
    double read, write;          /* sums over the kernels */
    int nkernels;
    counters_kernel k[COUNTERS_MAX_KERNELS];
} counters_result;

/* Path to ncu: $NCU, then PATH, then the CUDA toolkit and Nsight Compute
 * folders. 0 and the path in buf, or -1 when there is none. */
EXTERN_C int counters_find_ncu(char *buf, size_t len);

/* Measure `launcher` at (rows, cols) (cols ignored for 1-D launchers).
 * 0 on success; -1 with a reason in why (counters unavailable); -2 with a
 * reason in why (the probe or ncu failed otherwise). */
EXTERN_C int counters_measure(const char *launcher, size_t rows, size_t cols,
                              counters_result *out, char *why, size_t len);

/* Parse ncu's CSV text (exposed for the CPU tests). 0, or -1 with why. */
EXTERN_C int counters_parse_csv(const char *text, counters_result *out,
                                char *why, size_t len);

#endif /* FUSIONLAB_COUNTERS_H */
