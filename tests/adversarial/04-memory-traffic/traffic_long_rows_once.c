// ADVERSARIAL: the fused softmax model reads every row once, also rows longer than 32768 floats (bug)
// REPLACES: traffic_model.c
// RUN: A_count
// EXPECT: bytes_softmax_fused\(2, 262144\): too few bytes read -- a row of more than 32768 floats does not fit on chip
/*
 * What is wrong: the model assumes a fused kernel always reads its input
 * once. The lesson's fused softmax holds a row in registers only while it
 * has at most 32768 floats; longer rows take two passes over memory (the
 * online max and sum, then the output), so they are read twice.
 *
 * Why it is caught: A_count includes a shape with rows of 262144 floats
 * (2 x 262144). There the model predicts half the reads, and the test's hint
 * for that case says why. At the shorter shapes it is right, and every other
 * model is the worked one, so exactly that case fails.
 */
#include "traffic.h"

#define F 4.0 /* bytes per float */

static traffic_bytes tb(double read_floats, double write_floats)
{
    traffic_bytes b = {F * read_floats, F * write_floats};
    return b;
}

/* lesson 01: t1 = a + b (2n -> n), t2 = t1 * s (n -> n), y = t2 + c (2n -> n) */
traffic_bytes bytes_elementwise_unfused(size_t n)
{
    double N = (double)n;
    return tb(2 * N + N + 2 * N, 3 * N);
}

traffic_bytes bytes_elementwise_fused(size_t n)
{
    double N = (double)n;
    return tb(3 * N, N);
}

/* lesson 02, N = rows * cols, R = rows:
 *   row_max = rowmax(x)        reads N,      writes R
 *   shifted = x - row_max      reads N + R,  writes N
 *   e       = exp(shifted)     reads N,      writes N
 *   row_sum = rowsum(e)        reads N,      writes R
 *   y       = e / row_sum      reads N + R,  writes N                        */
traffic_bytes bytes_softmax_unfused(size_t rows, size_t cols)
{
    double N = (double)rows * (double)cols, R = (double)rows;
    return tb(5 * N + 2 * R, 3 * N + 2 * R);
}

/* BUG: "fused means every input is read once". The worked fused softmax
 * keeps a row on chip only up to 32768 floats; a longer row is read twice
 * (an online max/sum pass, then the output pass), so for cols > 32768 the
 * reads are 2N, not N. */
traffic_bytes bytes_softmax_fused(size_t rows, size_t cols)
{
    double N = (double)rows * (double)cols;
    return tb(N, N);
}

/* lesson 03, forward unfused: eight kernels (mean, xc, sq, var, rstd, xhat,
 * yw, y); every intermediate written and read back */
traffic_bytes bytes_layernorm_fwd_unfused(size_t rows, size_t cols)
{
    double N = (double)rows * (double)cols, R = (double)rows, C = (double)cols;
    return tb(7 * N + 3 * R + 2 * C, 5 * N + 3 * R);
}

/* one kernel: reads x, weight, bias; writes y, mean, rstd */
traffic_bytes bytes_layernorm_fwd_fused(size_t rows, size_t cols)
{
    double N = (double)rows * (double)cols, R = (double)rows, C = (double)cols;
    return tb(N + 2 * C, N + 2 * R);
}

/* backward unfused: thirteen operations (see the worked solution's table) */
traffic_bytes bytes_layernorm_bwd_unfused(size_t rows, size_t cols)
{
    double N = (double)rows * (double)cols, R = (double)rows, C = (double)cols;
    return tb(16 * N + 5 * R + C, 9 * N + 2 * R + 2 * C);
}

/* reads dy, x, weight, mean, rstd; writes dx, dweight, dbias */
traffic_bytes bytes_layernorm_bwd_fused(size_t rows, size_t cols)
{
    double N = (double)rows * (double)cols, R = (double)rows, C = (double)cols;
    return tb(2 * N + 2 * R + C, N + 2 * C);
}
