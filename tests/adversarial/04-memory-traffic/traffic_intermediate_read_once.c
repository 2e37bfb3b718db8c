// ADVERSARIAL: the softmax model counts the exp intermediate as read once, not twice (bug)
// REPLACES: traffic_model.c
// RUN: A_count
// EXPECT: bytes_softmax_unfused\([0-9, ]+\): too few bytes read -- count the five kernels
/*
 * What is wrong: in the unfused softmax, e = exp(x - max) is written by one
 * kernel and then read back by TWO kernels: the row sum and the divide. This
 * model charges it one read-back (the row sum) and forgets that the divide
 * reads the whole matrix again, so it predicts N floats too few reads.
 *
 * Why it is caught: A_count checks every model exactly against the kernel
 * list of each launcher; bytes_softmax_unfused comes out 4N bytes short at
 * every size, and the test names the missing read-back in its hint ("the
 * intermediate after exp is written and read again (by the row sum and by
 * the divide)"). Every other model is the worked one, so only this function
 * fails.
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
 *   y       = e / row_sum      reads R,      writes N
 * BUG: the divide is charged only the row sums it reads. It reads e too (N
 * floats), so the model's reads should be 5N + 2R, not 4N + 2R. */
traffic_bytes bytes_softmax_unfused(size_t rows, size_t cols)
{
    double N = (double)rows * (double)cols, R = (double)rows;
    return tb(4 * N + 2 * R, 3 * N + 2 * R);
}

/* rows of up to 32768 floats stay in registers; longer ones are read twice */
traffic_bytes bytes_softmax_fused(size_t rows, size_t cols)
{
    double N = (double)rows * (double)cols;
    return tb(cols <= 32768 ? N : 2 * N, N);
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
