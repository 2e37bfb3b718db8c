/* lessons/01-vector-add/vector_add_reference.c — see vector_add_reference.h. */
#include "vector_add_reference.h"
#include "thresholds.h"

#include <math.h>

double vector_add_ref(float a, float b)
{
    /* rounded to float, as the kernel's addition rounds it: Part A is
     * compared bitwise */
    return (double)(a + b);
}

double fused_elementwise_ref(float a, float b, float s, float c)
{
    /* a + b first, as the formula says: where a and b nearly cancel, the
     * distributed a*s + b*s loses what this keeps */
    return ((double)a + (double)b) * (double)s + (double)c;
}

void vector_add_reference(const float *a, const float *b, double *want, size_t n)
{
    for (size_t i = 0; i < n; ++i) want[i] = vector_add_ref(a[i], b[i]);
}

void fused_elementwise_reference(const float *a, const float *b, const float *c, float s,
                                 double *want, size_t n)
{
    for (size_t i = 0; i < n; ++i) want[i] = fused_elementwise_ref(a[i], b[i], s, c[i]);
}

double fused_elementwise_atol(float s)
{
    return L01_FUSED_ATOL_PER_Y * (2.0 * fabs((double)s) + 1.0);
}
