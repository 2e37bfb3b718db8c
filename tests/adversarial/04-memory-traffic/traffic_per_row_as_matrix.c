// ADVERSARIAL: the LayerNorm forward model charges mean and rstd once per element, not once per row (bug)
// REPLACES: traffic_model.c
// RUN: A_count
// EXPECT: bytes_layernorm_fwd_unfused\([0-9, ]+\): too many bytes read -- more than the kernels read: .*per-row value counted once per element
/*
 * What is wrong: the kernels `xc = x - mean` and `xhat = xc * rstd` read one
 * float of mean (of rstd) per ROW: all the threads of a row read the same
 * value, which comes from memory once. This model charges one read per
 * ELEMENT, as if mean and rstd were whole matrices, so it predicts 2(N - R)
 * floats of reads that never happen.
 *
 * Why it is caught: A_count compares every model exactly with the passes the
 * kernels make; bytes_layernorm_fwd_unfused reads too many bytes at every
 * size with more than one column, and the test's hint for too many reads asks
 * exactly this ("is a per-row value counted once per element?"). The other
 * models are the worked ones.
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

/* rows of up to 32768 floats stay in registers; longer ones are read twice */
traffic_bytes bytes_softmax_fused(size_t rows, size_t cols)
{
    double N = (double)rows * (double)cols;
    return tb(cols <= 32768 ? N : 2 * N, N);
}

/* lesson 03, forward unfused, N = rows * cols, R = rows, C = cols:
 *   mean = rowmean(x)         reads N,      writes R
 *   xc   = x - mean           reads N + N,  writes N    <- BUG
 *   sq   = xc * xc            reads N,      writes N
 *   var  = rowmean(sq)        reads N,      writes R
 *   rstd = rsqrt(var + eps)   reads R,      writes R
 *   xhat = xc * rstd          reads N + N,  writes N    <- BUG
 *   yw   = xhat * w           reads N + C,  writes N
 *   y    = yw + b             reads N + C,  writes N
 * BUG: "every element reads mean (and rstd), so that is N reads". The
 * threads of a row all read the same float: it comes from memory once per
 * row (R floats), the rest hit in cache. Charging N instead of R for mean
 * and for rstd over-counts the reads by 2(N - R) floats. */
traffic_bytes bytes_layernorm_fwd_unfused(size_t rows, size_t cols)
{
    double N = (double)rows * (double)cols, R = (double)rows, C = (double)cols;
    return tb(9 * N + R + 2 * C, 5 * N + 3 * R);
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
