/* lessons/02-fused-softmax/softmax_reference.c — see softmax_reference.h. */
#include "softmax_reference.h"

#include <math.h>

void softmax_reference(const float *x, double *y, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; ++r) {
        const float *xr = x + r * cols;
        double *yr = y + r * cols;
        /* the max first: every exponent is then <= 0, so nothing overflows
         * even in rows of +-20000 */
        double m = -INFINITY, d = 0.0;
        for (size_t j = 0; j < cols; ++j) m = fmax(m, (double)xr[j]);
        for (size_t j = 0; j < cols; ++j) {
            yr[j] = exp((double)xr[j] - m);
            d += yr[j];
        }
        for (size_t j = 0; j < cols; ++j) yr[j] /= d;
    }
}
