/* lessons/01-vector-add/vector_add_reference.h — the CPU reference of
 * lesson 01, the one tests/test_01_vector_add.c and bench.c both check
 * against, and Part B's tolerance for a given s.
 *
 * The pass marks themselves are in tests/thresholds.h; this file turns them
 * into the bound of one case.
 */
#ifndef FUSIONLAB_VECTOR_ADD_REFERENCE_H
#define FUSIONLAB_VECTOR_ADD_REFERENCE_H

#include "check.h"

/* Part A: the float sum a + b, exactly what IEEE float addition gives (one
 * right answer, whatever the kernel), held in a double. */
EXTERN_C double vector_add_ref(float a, float b);

/* Part B: y = (a + b) * s + c, every step in double. */
EXTERN_C double fused_elementwise_ref(float a, float b, float s, float c);

/* The same over arrays of n elements: want[i] from a[i], b[i] (and c[i]). */
EXTERN_C void vector_add_reference(const float *a, const float *b, double *want, size_t n);
EXTERN_C void fused_elementwise_reference(const float *a, const float *b, const float *c,
                                          float s, double *want, size_t n);

/* Part B's absolute tolerance for this s: L01_FUSED_ATOL_PER_Y x (2|s| + 1),
 * a few float32 roundings of the largest |y| inputs in [-1, 1] allow. */
EXTERN_C double fused_elementwise_atol(float s);

#endif /* FUSIONLAB_VECTOR_ADD_REFERENCE_H */
