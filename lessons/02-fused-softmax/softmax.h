/* lessons/02-fused-softmax/softmax.h — the C API of lesson 02.
 *
 * Row-wise softmax of a float32 matrix:
 *
 *     y[r, j] = exp(x[r, j] - m_r) / sum_k exp(x[r, k] - m_r),   m_r = max_k x[r, k]
 *
 * x and y are device pointers to (rows, cols) matrices, row-major, with no
 * padding between rows. Every launcher queues its work on `stream` and
 * returns cudaSuccess or the error it hit; none waits for the GPU.
 */
#ifndef FUSIONLAB_SOFTMAX_H
#define FUSIONLAB_SOFTMAX_H

#include "check.h"

/* Largest shape the launchers accept (the kernels index columns with int and
 * give each row its own block). */
#define SOFTMAX_MAX_ROWS ((size_t)2147483647) /* 2^31 - 1: one block per row */
#define SOFTMAX_MAX_COLS ((size_t)1 << 30)

/* ---- The exercise (softmax_fused.cu): the whole softmax in one pass ------- *
 * Reads x once and writes y once (rows too long to keep on chip read x a
 * second time). Any rows >= 1 and 1 <= cols <= SOFTMAX_MAX_COLS. */
EXTERN_C cudaError_t softmax_fused(const float *x, float *y, size_t rows,
                                   size_t cols, cudaStream_t stream);

/* ---- The baseline (complete, softmax_unfused.cu) --------------------------
 * What eager PyTorch runs for
 *     m = x.amax(dim=1, keepdim=True); e = (x - m).exp(); y = e / e.sum(dim=1, keepdim=True)
 * one kernel per operator, each result written to device memory and read
 * back by the next:
 *     row_max = rowmax(x)          reads x,                    writes rows floats
 *     shifted = x - row_max        reads x,       writes a matrix
 *     e       = exp(shifted)       reads shifted, writes a matrix
 *     row_sum = rowsum(e)          reads e,                    writes rows floats
 *     y       = e / row_sum        reads e,       writes y
 * row_max and row_sum are scratch vectors of `rows` floats; shifted and e are
 * scratch matrices of rows * cols floats. The caller provides all four. */
EXTERN_C cudaError_t softmax_unfused(const float *x, float *row_max,
                                     float *shifted, float *e, float *row_sum,
                                     float *y, size_t rows, size_t cols,
                                     cudaStream_t stream);

/* The bytes each version moves, for GB/s and the README's story, by the
 * course's one rule (COMMON_PATTERNS.md, "Counting bytes"; lesson 04 grades
 * models by it): unfused reads the matrix 5 times and writes it 3 times, and
 * reads and writes the two row vectors twice each (16 bytes a row); fused
 * reads x once and writes y once. */
#define SOFTMAX_UNFUSED_BYTES(rows, cols) \
    (4.0 * (8.0 * (double)(rows) * (double)(cols) + 4.0 * (double)(rows)))
#define SOFTMAX_FUSED_BYTES(rows, cols) (2.0 * 4.0 * (double)(rows) * (double)(cols))

#endif /* FUSIONLAB_SOFTMAX_H */
