/* tests/fl_test.h — what every Criterion test of the course shares.
 *
 * Criterion runs each test in its own process; CUDA is touched only inside
 * tests, never in parameter generators (those run in the runner process).
 */
#ifndef FUSIONLAB_FL_TEST_H
#define FUSIONLAB_FL_TEST_H

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include "check.h"
#include "compare.h"
#include "timing.h"

/* Skip the calling test when this machine has no usable GPU. */
#define FL_REQUIRE_GPU()                                                      \
    do {                                                                      \
        if (fl_test_gpu_count() == 0) cr_skip_test("no CUDA device");         \
    } while (0)

/* Assert that a CUDA call (or launcher) succeeded, naming it. */
#define FL_ASSERT_CUDA(call)                                                  \
    do {                                                                      \
        cudaError_t fl_e_ = (call);                                           \
        cr_assert(fl_e_ == cudaSuccess, "%s failed: %s (%s)%s", #call,        \
                  cudaGetErrorName(fl_e_), cudaGetErrorString(fl_e_),         \
                  fl_test_error_hint(fl_e_));                                 \
    } while (0)

/* Wait for the GPU and turn a fault in the kernel into an actionable failure. */
#define FL_ASSERT_SYNC(what)                                                  \
    do {                                                                      \
        cudaError_t fl_e_ = cudaDeviceSynchronize();                          \
        cr_assert(fl_e_ == cudaSuccess, "%s: the GPU reported %s (%s)%s",     \
                  (what), cudaGetErrorName(fl_e_), cudaGetErrorString(fl_e_), \
                  fl_test_error_hint(fl_e_));                                 \
    } while (0)

int fl_test_gpu_count(void);
const char *fl_test_error_hint(cudaError_t e);

/* cudaMalloc that asserts, with the size in the message. */
void *fl_test_dev_alloc(size_t bytes);
/* malloc that asserts. */
void *fl_test_host_alloc(size_t bytes);

/* The speed rule of a lesson: time baseline and candidate with the course's
 * protocol (interleaved), print the measured figures, and assert
 *   candidate speedup >= min_speedup  and  candidate >= min_pct of the copy
 *   ceiling,
 * that both re-checks after timing passed and that no work hid outside the
 * timed stream. `label` names the size, e.g. "n=2^26". */
void fl_test_speed(const char *label, fl_variant *baseline, fl_variant *candidate,
                   double min_speedup, double min_pct_ceiling);

/* The speed log the grader reads. When the environment variable
 * FUSIONLAB_SPEED_LOG names a file, append one JSON line to it for the
 * calling speed check: suite, test, label, the median times, speedup,
 * % of the copy ceiling (0 where not judged), the thresholds and whether
 * the check passes. fl_test_speed() calls it; a test with its own speed rule
 * calls it before its asserts. Nothing is written when the variable is unset
 * (or the tests were built without cJSON). */
void fl_test_speed_record(const char *label, double baseline_us, double candidate_us,
                          double min_speedup, double pct_of_ceiling, double min_pct,
                          int passed);

#endif /* FUSIONLAB_FL_TEST_H */
