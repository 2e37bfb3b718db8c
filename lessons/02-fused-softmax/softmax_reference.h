/* lessons/02-fused-softmax/softmax_reference.h — the CPU reference of
 * lesson 02, the one tests/test_02_fused_softmax.c and bench.c both check
 * against (with the tolerances of tests/thresholds.h, L02_ATOL and
 * L02_RTOL).
 */
#ifndef FUSIONLAB_SOFTMAX_REFERENCE_H
#define FUSIONLAB_SOFTMAX_REFERENCE_H

#include "check.h"

/* y = softmax of each row of x, in double: x is (rows, cols), row-major,
 * y the same shape. m_r = max_j x[r, j]; y[r, j] = exp(x[r, j] - m_r) / d_r,
 * d_r = sum_j exp(x[r, j] - m_r), summed in column order. A -inf element
 * gives 0 (exp(-inf - m) = 0). */
EXTERN_C void softmax_reference(const float *x, double *y, size_t rows, size_t cols);

#endif /* FUSIONLAB_SOFTMAX_REFERENCE_H */
