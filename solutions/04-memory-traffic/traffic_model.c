//@{
/* solutions/04-memory-traffic/traffic_model.c — worked solution of lesson 04,
 * part A: the bytes each launcher of lessons 01-03 moves through device
 * memory, reads and writes apart.
 *
 * Method: list the kernels a launcher runs; for each, every array it reads
 * and every array it writes, at 4 bytes per float. Nothing is assumed to stay
 * in cache between kernels (the data is much larger than L2). Within one
 * kernel, a per-row value read by every element of the row is read from
 * memory once (the other reads hit in cache).
 */
//@ guided
//| /* lessons/04-memory-traffic/traffic_model.c — YOUR FILE for lesson 04, part A.
//|  *
//|  * Predict the bytes each launcher of lessons 01-03 moves through device
//|  * memory, reads and writes apart. Open the launcher's source (its header
//|  * comment lists the kernels), and for each kernel count every array it reads
//|  * and every array it writes. Assume nothing stays in cache between kernels
//|  * (the tests use data far larger than L2), and that a value read by many
//|  * threads of one kernel (one float per row, say) comes from memory once.
//|  *
//|  * `./lab check 04` grades these exactly on the CPU, then against the GPU's
//|  * own counters. As shipped every function returns 0 bytes.
//|  */
//@ open
//| /* lessons/04-memory-traffic/traffic_model.c — YOUR FILE for lesson 04, part A,
//|  * open level.
//|  *
//|  * Predict the bytes each launcher of lessons 01-03 moves through device
//|  * memory, reads and writes apart, for every shape: find the kernels each
//|  * launcher runs in its source and count what each reads and writes by the
//|  * course's rule (COMMON_PATTERNS.md, "Counting bytes"). `./lab check 04`
//|  * grades these exactly on the CPU, then against the GPU's own counters.
//|  * As shipped every function returns 0 bytes.
//|  */
//@}
#include "traffic.h"

//@{
#define F 4.0 /* bytes per float */

static traffic_bytes tb(double read_floats, double write_floats)
{
    traffic_bytes b = {F * read_floats, F * write_floats};
    return b;
}

/* ---- lesson 01 ---------------------------------------------------------------
 *   t1 = a + b     reads 2n, writes n
 *   t2 = t1 * s    reads n,  writes n
 *   y  = t2 + c    reads 2n, writes n                                         */
//@ guided
//| /* lesson 01: lessons/01-vector-add/elementwise_unfused.cu, vector_add.cu */
//@}
traffic_bytes bytes_elementwise_unfused(size_t n)
{
//@{ A1
    double N = (double)n;
    return tb(2 * N + N + 2 * N, 3 * N);
//@ guided
//|     (void)n;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A1): three kernels */
//|     return b;
//@ open
//|     (void)n;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A1) */
//|     return b;
//@}
}

//@{
/* y = (a + b) * s + c in one kernel: reads a, b, c; writes y */
//@ guided
//@}
traffic_bytes bytes_elementwise_fused(size_t n)
{
//@{ A2
    double N = (double)n;
    return tb(3 * N, N);
//@ guided
//|     (void)n;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A2): one kernel */
//|     return b;
//@ open
//|     (void)n;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A2) */
//|     return b;
//@}
}

//@{
/* ---- lesson 02 ---------------------------------------------------------------
 * N = rows * cols, R = rows
 *   row_max = rowmax(x)        reads N,          writes R
 *   shifted = x - row_max      reads N + R,      writes N
 *   e       = exp(shifted)     reads N,          writes N
 *   row_sum = rowsum(e)        reads N,          writes R
 *   y       = e / row_sum      reads N + R,      writes N                    */
//@ guided
//| /* lesson 02: lessons/02-fused-softmax/softmax_unfused.cu, softmax_fused.cu */
//@}
traffic_bytes bytes_softmax_unfused(size_t rows, size_t cols)
{
//@{ A3
    double N = (double)rows * (double)cols, R = (double)rows;
    return tb(5 * N + 2 * R, 3 * N + 2 * R);
//@ guided
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A3): five kernels */
//|     return b;
//@ open
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A3) */
//|     return b;
//@}
}

//@{
/* The worked fused kernel keeps a row of up to 32768 floats in registers and
 * reads it once; longer rows are read twice (an online max/sum pass, then
 * the output pass). */
//@ guided
//| /* The worked fused kernel keeps a row of up to 32768 floats on chip. */
//@}
traffic_bytes bytes_softmax_fused(size_t rows, size_t cols)
{
//@{ A4
    double N = (double)rows * (double)cols;
    return tb(cols <= 32768 ? N : 2 * N, N);
//@ guided
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A4): one kernel; mind long rows */
//|     return b;
//@ open
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A4) */
//|     return b;
//@}
}

//@{
/* ---- lesson 03 ---------------------------------------------------------------
 * N = rows * cols, R = rows, C = cols. Forward, unfused:
 *   mean = rowmean(x)         reads N,      writes R
 *   xc   = x - mean           reads N + R,  writes N
 *   sq   = xc * xc            reads N,      writes N
 *   var  = rowmean(sq)        reads N,      writes R
 *   rstd = rsqrt(var + eps)   reads R,      writes R
 *   xhat = xc * rstd          reads N + R,  writes N
 *   yw   = xhat * w           reads N + C,  writes N
 *   y    = yw + b             reads N + C,  writes N                         */
//@ guided
//| /* lesson 03: lessons/03-layernorm/layernorm_unfused.cu, layernorm_fused.cu */
//@}
traffic_bytes bytes_layernorm_fwd_unfused(size_t rows, size_t cols)
{
//@{ A5
    double N = (double)rows * (double)cols, R = (double)rows, C = (double)cols;
    return tb(7 * N + 3 * R + 2 * C, 5 * N + 3 * R);
//@ guided
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A5): eight kernels */
//|     return b;
//@ open
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A5) */
//|     return b;
//@}
}

//@{
/* one kernel: reads x, weight, bias; writes y, mean, rstd */
//@ guided
//@}
traffic_bytes bytes_layernorm_fwd_fused(size_t rows, size_t cols)
{
//@{ A6
    double N = (double)rows * (double)cols, R = (double)rows, C = (double)cols;
    return tb(N + 2 * C, N + 2 * R);
//@ guided
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A6): one kernel, three outputs */
//|     return b;
//@ open
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A6) */
//|     return b;
//@}
}

//@{
/* Backward, unfused (13 operations):
 *   xc = x - mean        N + R -> N        xhat = xc * rstd   N + R -> N
 *   dbias = colsum(dy)   N -> C            p = dy * xhat      2N -> N
 *   dweight = colsum(p)  N -> C            g = dy * w         N + C -> N
 *   mg = rowmean(g)      N -> R            q = g * xhat       2N -> N
 *   mgx = rowmean(q)     N -> R            t = g - mg         N + R -> N
 *   u = xhat * mgx       N + R -> N        v = t - u          2N -> N
 *   dx = v * rstd        N + R -> N
 * (the column sums' per-block partials are a few MB and left out) */
//@ guided
//@}
traffic_bytes bytes_layernorm_bwd_unfused(size_t rows, size_t cols)
{
//@{ A7
    double N = (double)rows * (double)cols, R = (double)rows, C = (double)cols;
    return tb(16 * N + 5 * R + C, 9 * N + 2 * R + 2 * C);
//@ guided
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A7): thirteen operations */
//|     return b;
//@ open
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A7) */
//|     return b;
//@}
}

//@{
/* reads dy, x, weight, mean, rstd; writes dx, dweight, dbias */
//@ guided
//| /* the deterministic fused backward; leave out its per-block partial sums */
//@}
traffic_bytes bytes_layernorm_bwd_fused(size_t rows, size_t cols)
{
//@{ A8
    double N = (double)rows * (double)cols, R = (double)rows, C = (double)cols;
    return tb(2 * N + 2 * R + C, N + 2 * C);
//@ guided
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A8): one pass over the rows */
//|     return b;
//@ open
//|     (void)rows; (void)cols;
//|     traffic_bytes b = {0.0, 0.0}; /* TODO(A8) */
//|     return b;
//@}
}
