/* common/data.h — reproducible inputs for tests and benches.
 *
 * Every random input in the course comes from fl_rng, seeded by the test.
 * fl_seed() mixes in the environment variable FUSIONLAB_GRADE_SEED when it
 * is set, so a grading run draws inputs nobody saw while writing the kernel,
 * and the same seed reproduces them exactly.
 */
#ifndef FUSIONLAB_DATA_H
#define FUSIONLAB_DATA_H

#include "check.h"

#include <stdint.h>

typedef struct {
    uint64_t state;
} fl_rng;

/* The seed a test should use for its inputs: `base` (fixed in the test)
 * mixed with FUSIONLAB_GRADE_SEED when that is set. */
EXTERN_C uint64_t fl_seed(uint64_t base);

EXTERN_C fl_rng fl_rng_make(uint64_t seed);
EXTERN_C uint64_t fl_rng_u64(fl_rng *r);
/* Uniform in [0, 1). */
EXTERN_C double fl_rng_uniform(fl_rng *r);
/* Standard normal (Box-Muller). */
EXTERN_C double fl_rng_normal(fl_rng *r);

/* x[i] uniform in [lo, hi). */
EXTERN_C void fl_fill_uniform(float *x, size_t n, uint64_t seed, float lo,
                              float hi);
/* x[i] normal with the given mean and standard deviation (a non-zero mean
 * exposes kernels that assume centred data). */
EXTERN_C void fl_fill_normal(float *x, size_t n, uint64_t seed, float mean,
                             float stddev);

/* Threads for a CPU loop over n elements that can be shared among them
 * (the fills above; lesson 03's reference): 1 below 2^20 elements, where
 * starting threads costs more than it saves, or without OpenMP; else the
 * CPUs this process may use, at most 8. */
EXTERN_C int fl_cpu_threads(size_t n);

/* Host <-> device helpers for the common case of float arrays. They report
 * errors like CUDA_CHECK and return them. */
EXTERN_C cudaError_t fl_upload_f32(float *dev, const float *host, size_t n);
EXTERN_C cudaError_t fl_download_f32(float *host, const float *dev, size_t n);

#endif /* FUSIONLAB_DATA_H */
