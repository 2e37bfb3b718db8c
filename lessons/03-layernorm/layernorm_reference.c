/* lessons/03-layernorm/layernorm_reference.c — see layernorm_reference.h. */
#include "layernorm_reference.h"
#include "data.h"
#include "thresholds.h"

#include <math.h>

void layernorm_ref_row_stats(const float *x, size_t cols, double eps, double *mean,
                             double *rstd)
{
    double s = 0.0, q = 0.0;
    for (size_t c = 0; c < cols; ++c) s += x[c];
    double mu = s / (double)cols;
    /* squares of deviations, not E[x^2] - mean^2: that cancels on rows of a
     * large mean and can come out negative */
    for (size_t c = 0; c < cols; ++c) q += (x[c] - mu) * (x[c] - mu);
    *mean = mu;
    *rstd = 1.0 / sqrt(q / (double)cols + eps);
}

void layernorm_ref_row_y(const float *x, const float *w, const float *b, size_t cols,
                         double mean, double rstd, double *y)
{
    for (size_t c = 0; c < cols; ++c) y[c] = (x[c] - mean) * rstd * w[c] + b[c];
}

void layernorm_ref_row_dx(const float *x, const float *dy, const float *w, size_t cols,
                          float mean, float rstd, double *dx)
{
    double m = mean, rr = rstd, sg = 0.0, sgx = 0.0;
    for (size_t c = 0; c < cols; ++c) {
        double xh = (x[c] - m) * rr, g = (double)dy[c] * w[c];
        sg += g;
        sgx += g * xh;
    }
    double mg = sg / (double)cols, mgx = sgx / (double)cols;
    for (size_t c = 0; c < cols; ++c) {
        double xh = (x[c] - m) * rr, g = (double)dy[c] * w[c];
        dx[c] = rr * (g - mg - xh * mgx);
    }
}

void layernorm_reference(const float *x, const float *w, const float *b, const float *dy,
                         size_t rows, size_t cols, float eps, double *y, double *mean,
                         double *rstd, float *mean_in, float *rstd_in, double *dx,
                         double *dweight, double *dbias)
{
    /* the rows share nothing: on several CPU threads for a large problem
     * (fl_cpu_threads, common/data.h; the same results as on one) */
#pragma omp parallel for num_threads(fl_cpu_threads(rows * cols)) schedule(static)
    for (size_t r = 0; r < rows; ++r) {
        const float *xr = x + r * cols, *dr = dy + r * cols;
        double mu, rs;
        layernorm_ref_row_stats(xr, cols, (double)eps, &mu, &rs);
        layernorm_ref_row_y(xr, w, b, cols, mu, rs, y + r * cols);
        mean[r] = mu;
        rstd[r] = rs;
        /* the backward is judged from the float mean and rstd it is given,
         * so that Part B is tested on its own, whatever Part A does */
        mean_in[r] = (float)mu;
        rstd_in[r] = (float)rs;
        layernorm_ref_row_dx(xr, dr, w, cols, mean_in[r], rstd_in[r], dx + r * cols);
    }
    /* dweight and dbias sum over the rows, in row order */
    for (size_t c = 0; c < cols; ++c) dweight[c] = dbias[c] = 0.0;
    for (size_t r = 0; r < rows; ++r) {
        const float *xr = x + r * cols, *dr = dy + r * cols;
        double m = mean_in[r], rr = rstd_in[r];
        for (size_t c = 0; c < cols; ++c) {
            dweight[c] += (double)dr[c] * ((xr[c] - m) * rr);
            dbias[c] += dr[c];
        }
    }
}

double layernorm_y_allowance(double mean, double rstd)
{
    return L03_Y_MEAN_ULPS * 0x1p-24 * fabs(mean) * rstd;
}

void layernorm_accept_mean_error(float *got, const double *want, size_t n, size_t cols,
                                 double atol, double rtol, layernorm_allow kind,
                                 const double *allow, const float *w)
{
    for (size_t i = 0; i < n; ++i) {
        double g = got[i];
        /* NaN and inf are never within a bound: leave them to be reported */
        if (!isfinite(g)) continue;
        /* y: allow[r] |w[c]|; rstd (one per row): its relative share */
        double extra = kind == LAYERNORM_ALLOW_Y
                           ? allow[i / cols] * fabs(w[i % cols])
                           : allow[i] * (L03_RSTD_MEAN_ULPS / L03_Y_MEAN_ULPS) * fabs(want[i]);
        double bound = atol + rtol * fabs(want[i]) + extra;
        if (fabs(g - want[i]) <= bound) got[i] = (float)want[i];
    }
}
