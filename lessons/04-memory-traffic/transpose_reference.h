/* lessons/04-memory-traffic/transpose_reference.h — the CPU reference of
 * lesson 04's transpose (Part C), the one tests/test_04_memory_traffic.c
 * checks against. A transpose moves values and computes none: it is
 * compared bitwise (tests/thresholds.h, L04_SAMPLED_ROWS).
 */
#ifndef FUSIONLAB_TRANSPOSE_REFERENCE_H
#define FUSIONLAB_TRANSPOSE_REFERENCE_H

#include "check.h"

/* out = in transposed: in is (rows, cols), row-major; out is (cols, rows),
 * out[c, r] = in[r, c], held in doubles for fl_compare_f32. */
EXTERN_C void transpose_reference(const float *in, double *out, size_t rows, size_t cols);

#endif /* FUSIONLAB_TRANSPOSE_REFERENCE_H */
