/* lessons/04-memory-traffic/transpose_reference.c — see transpose_reference.h. */
#include "transpose_reference.h"

void transpose_reference(const float *in, double *out, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
}
