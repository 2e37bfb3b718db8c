/* lessons/03-layernorm/layernorm_reference.h — the CPU reference of
 * lesson 03, the lesson's eps, and the allowance y and rstd get for the
 * error of a float mean: what tests/test_03_layernorm.c and bench.c both
 * check against (the other bounds are in tests/thresholds.h).
 *
 * Every reference value is computed in double from the float inputs; the
 * backward's reference starts from the float mean and rstd the backward
 * kernels are given (the forward's reference, rounded to float).
 */
#ifndef FUSIONLAB_LAYERNORM_REFERENCE_H
#define FUSIONLAB_LAYERNORM_REFERENCE_H

#include "check.h"

/* LayerNorm's eps, as in PyTorch: the tests (but the eps cases, which also
 * pass 1e-3, 0.37 and 4), the bench and lesson 04's runs of lesson 03. */
#define LAYERNORM_EPS 1e-5f

/* One row of x (cols floats): mean = sum x / cols, rstd = 1 / sqrt(var + eps)
 * with var = sum (x - mean)^2 / cols (two passes: never negative). */
EXTERN_C void layernorm_ref_row_stats(const float *x, size_t cols, double eps, double *mean,
                                      double *rstd);

/* y of one row: (x - mean) * rstd * w + b. */
EXTERN_C void layernorm_ref_row_y(const float *x, const float *w, const float *b, size_t cols,
                                  double mean, double rstd, double *y);

/* dx of one row, from the float mean and rstd the backward is given:
 * xhat = (x - mean) rstd, g = dy w, dx = rstd (g - mean(g) - xhat mean(g xhat)). */
EXTERN_C void layernorm_ref_row_dx(const float *x, const float *dy, const float *w, size_t cols,
                                   float mean, float rstd, double *dx);

/* The whole problem: x and dy are (rows, cols), w and b cols long. Writes
 * y (rows, cols), mean and rstd (rows); mean_in and rstd_in (rows): the
 * same rounded to float, the backward's inputs; and from those dx (rows,
 * cols), dweight = sum over rows of dy xhat and dbias = sum over rows of dy
 * (cols each, rows added in order). */
EXTERN_C void layernorm_reference(const float *x, const float *w, const float *b,
                                  const float *dy, size_t rows, size_t cols, float eps,
                                  double *y, double *mean, double *rstd, float *mean_in,
                                  float *rstd_in, double *dx, double *dweight, double *dbias);

/* ---- the allowance for the error of a float mean (tests/thresholds.h) ------ */

/* Per row: L03_Y_MEAN_ULPS units in the last place of |mean| (2^-24 |mean|),
 * times rstd. y[r, c] may be off by this times |w[c]| on top of atol + rtol
 * |want|; rstd by this times L03_RSTD_MEAN_ULPS / L03_Y_MEAN_ULPS |rstd|. */
EXTERN_C double layernorm_y_allowance(double mean, double rstd);

typedef enum {
    LAYERNORM_ALLOW_Y = 1,    /* got is y: (rows, cols), allow[r] per row */
    LAYERNORM_ALLOW_RSTD = 2  /* got is rstd: one per row, allow[r] */
} layernorm_allow;

/* Sets to want[i] (rounded to float) every finite got[i] within its bound,
 * atol + rtol |want[i]| plus its row's allowance (allow: per row, from
 * layernorm_y_allowance; w: the weights, for y), so that a comparison with
 * atol and rtol afterwards reports only the elements beyond it. */
EXTERN_C void layernorm_accept_mean_error(float *got, const double *want, size_t n, size_t cols,
                                          double atol, double rtol, layernorm_allow kind,
                                          const double *allow, const float *w);

#endif /* FUSIONLAB_LAYERNORM_REFERENCE_H */
