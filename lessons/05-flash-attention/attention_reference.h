/* lessons/05-flash-attention/attention_reference.h — the CPU reference of
 * lesson 05, the one tests/test_05_flash_attention.c and bench.c both check
 * against, and the float16 bound of rows checked without an unfused run.
 *
 * Everything in double from float inputs (a float16 problem's inputs are
 * its float16 values as floats, so the reference is the exact attention of
 * what the kernel was given). Its cost is seq x head_dim per row: the tests
 * compute it for every row up to seq 1024, and for sampled rows beyond.
 */
#ifndef FUSIONLAB_ATTENTION_REFERENCE_H
#define FUSIONLAB_ATTENTION_REFERENCE_H

#include "check.h"

/* One output row: out = softmax(qi · K[0..keys)ᵀ · scale) V[0..keys), for
 * the query row qi (d floats) and a head's K and V (rows of d floats); s is
 * `keys` doubles of scratch. Returns the largest |score| of the row. */
EXTERN_C double attention_reference_attend(const float *qi, const float *kh, const float *vh,
                                           int keys, int d, double scale, double *s,
                                           double *out);

/* O[h, i, :] of (batch_heads, seq, d) inputs (causal: keys 0 .. i only);
 * s is seq doubles of scratch. Returns the largest |score| of the row. */
EXTERN_C double attention_reference_row(const float *q, const float *k, const float *v, int seq,
                                        int d, int causal, double scale, int h, int i, double *s,
                                        double *out);

/* The absolute bound of a float16 output row checked with no unfused
 * float16 run to compare errors with: L05_F16_SAMPLED_VTOL x max |V| +
 * L05_F16_ATOL (tests/thresholds.h derives it); max_abs_v bounds |V|. */
EXTERN_C double attention_f16_sampled_atol(double max_abs_v);

#endif /* FUSIONLAB_ATTENTION_REFERENCE_H */
