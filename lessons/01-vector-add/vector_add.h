/* lessons/01-vector-add/vector_add.h — the C API of lesson 01.
 *
 * All pointers are device pointers to float32 arrays of n elements. Every
 * launcher queues its work on `stream` and returns cudaSuccess or the error
 * it hit; none waits for the GPU.
 */
#ifndef FUSIONLAB_VECTOR_ADD_H
#define FUSIONLAB_VECTOR_ADD_H

#include "check.h"

/* ---- Part A (exercise, vector_add.cu): c = a + b -------------------------- */
EXTERN_C cudaError_t vector_add(const float *a, const float *b, float *c,
                                size_t n, cudaStream_t stream);

/* ---- Part B (exercise, vector_add.cu): y = (a + b) * s + c in one kernel -- */
EXTERN_C cudaError_t fused_elementwise(const float *a, const float *b,
                                       const float *c, float s, float *y,
                                       size_t n, cudaStream_t stream);

/* ---- The baseline (complete, elementwise_unfused.cu) ----------------------
 * What eager PyTorch runs for `y = (a + b) * s + c`: one kernel per
 * operator, each result written to device memory and read back by the next:
 *     t1 = a + b;   t2 = t1 * s;   y = t2 + c
 * t1 and t2 are n-element scratch buffers the caller provides. */
EXTERN_C cudaError_t unfused_elementwise(const float *a, const float *b,
                                         const float *c, float s, float *t1,
                                         float *t2, float *y, size_t n,
                                         cudaStream_t stream);

/* The byte counts both versions must move, for GB/s and the README's story:
 * unfused reads 5 and writes 3 arrays, fused reads 3 and writes 1. */
#define ELEMENTWISE_UNFUSED_BYTES(n) (8.0 * 4.0 * (double)(n))
#define ELEMENTWISE_FUSED_BYTES(n) (4.0 * 4.0 * (double)(n))
#define VECTOR_ADD_BYTES(n) (3.0 * 4.0 * (double)(n))

#endif /* FUSIONLAB_VECTOR_ADD_H */
