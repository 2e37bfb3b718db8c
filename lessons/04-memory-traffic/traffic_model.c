/* lessons/04-memory-traffic/traffic_model.c — YOUR FILE for lesson 04, part A.
 *
 * Predict the bytes each launcher of lessons 01-03 moves through device
 * memory, reads and writes apart. Open the launcher's source (its header
 * comment lists the kernels), and for each kernel count every array it reads
 * and every array it writes. Assume nothing stays in cache between kernels
 * (the tests use data far larger than L2), and that a value read by many
 * threads of one kernel (one float per row, say) comes from memory once.
 *
 * `./lab check 04` grades these exactly on the CPU, then against the GPU's
 * own counters. As shipped every function returns 0 bytes.
 */
#include "traffic.h"

/* lesson 01: lessons/01-vector-add/elementwise_unfused.cu, vector_add.cu */
traffic_bytes bytes_elementwise_unfused(size_t n)
{
    (void)n;
    traffic_bytes b = {0.0, 0.0}; /* TODO(A1): three kernels */
    return b;
}

traffic_bytes bytes_elementwise_fused(size_t n)
{
    (void)n;
    traffic_bytes b = {0.0, 0.0}; /* TODO(A2): one kernel */
    return b;
}

/* lesson 02: lessons/02-fused-softmax/softmax_unfused.cu, softmax_fused.cu */
traffic_bytes bytes_softmax_unfused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    traffic_bytes b = {0.0, 0.0}; /* TODO(A3): five kernels */
    return b;
}

/* The worked fused kernel keeps a row of up to 32768 floats on chip. */
traffic_bytes bytes_softmax_fused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    traffic_bytes b = {0.0, 0.0}; /* TODO(A4): one kernel; mind long rows */
    return b;
}

/* lesson 03: lessons/03-layernorm/layernorm_unfused.cu, layernorm_fused.cu */
traffic_bytes bytes_layernorm_fwd_unfused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    traffic_bytes b = {0.0, 0.0}; /* TODO(A5): eight kernels */
    return b;
}

traffic_bytes bytes_layernorm_fwd_fused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    traffic_bytes b = {0.0, 0.0}; /* TODO(A6): one kernel, three outputs */
    return b;
}

traffic_bytes bytes_layernorm_bwd_unfused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    traffic_bytes b = {0.0, 0.0}; /* TODO(A7): thirteen operations */
    return b;
}

/* the deterministic fused backward; leave out its per-block partial sums */
traffic_bytes bytes_layernorm_bwd_fused(size_t rows, size_t cols)
{
    (void)rows; (void)cols;
    traffic_bytes b = {0.0, 0.0}; /* TODO(A8): one pass over the rows */
    return b;
}
