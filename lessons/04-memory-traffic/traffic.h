/* lessons/04-memory-traffic/traffic.h — the C API of lesson 04.
 *
 * Part A (exercise, traffic_model.c): byte-count models of lessons 01-03.
 * Part C (exercise, transpose.cu): a transpose that is coalesced both ways.
 * The rest (experiments.cu, probe.c, counters.c) is the lesson's apparatus,
 * complete as shipped.
 */
#ifndef FUSIONLAB_TRAFFIC_H
#define FUSIONLAB_TRAFFIC_H

#include "check.h"

/* ---- Part A: predict ----------------------------------------------------------
 * Bytes a launcher moves through device memory, reads and writes apart,
 * assuming nothing survives in cache between kernels (true when the data is
 * much larger than L2). All data is float32 (4 bytes). */
typedef struct {
    double read;
    double write;
} traffic_bytes;

/* lesson 01: y = (a + b) * s + c over n elements */
EXTERN_C traffic_bytes bytes_elementwise_unfused(size_t n);
EXTERN_C traffic_bytes bytes_elementwise_fused(size_t n);
/* lesson 02: row softmax of a (rows, cols) matrix */
EXTERN_C traffic_bytes bytes_softmax_unfused(size_t rows, size_t cols);
EXTERN_C traffic_bytes bytes_softmax_fused(size_t rows, size_t cols);
/* lesson 03: LayerNorm forward (y, mean, rstd from x, weight, bias) and
 * backward (dx, dweight, dbias from dy, x, weight, mean, rstd; the fused
 * backward is the deterministic one, and its per-block partial sums are not
 * counted: they are well under 5% of the traffic at the sizes tested) */
EXTERN_C traffic_bytes bytes_layernorm_fwd_unfused(size_t rows, size_t cols);
EXTERN_C traffic_bytes bytes_layernorm_fwd_fused(size_t rows, size_t cols);
EXTERN_C traffic_bytes bytes_layernorm_bwd_unfused(size_t rows, size_t cols);
EXTERN_C traffic_bytes bytes_layernorm_bwd_fused(size_t rows, size_t cols);

/* ---- Part C: access patterns -----------------------------------------------
 * out is (cols, rows), in is (rows, cols), both row-major. */
EXTERN_C cudaError_t transpose_naive(const float *in, float *out, size_t rows,
                                     size_t cols, cudaStream_t stream);
EXTERN_C cudaError_t transpose_tiled(const float *in, float *out, size_t rows,
                                     size_t cols, cudaStream_t stream);

/* Experiments (experiments.cu), each reading n floats' worth of useful data:
 *   strided_read: out[i] = in[i * stride], i < n    (in holds n * stride)
 *   offset_copy:  out[i] = in[i + offset], i < n    (in holds n + offset)
 *   scale_threads: out[i] = 2 * in[i], one element per thread, `threads`
 *                  threads per block (the block-size sweep) */
EXTERN_C cudaError_t strided_read(const float *in, float *out, size_t n,
                                  int stride, cudaStream_t stream);
EXTERN_C cudaError_t offset_copy(const float *in, float *out, size_t n,
                                 int offset, cudaStream_t stream);
EXTERN_C cudaError_t scale_threads(const float *in, float *out, size_t n,
                                   int threads, cudaStream_t stream);

/* ---- Part D: the compute ceiling ------------------------------------------
 * FP32 fused multiply-adds with no memory traffic to speak of: every thread
 * runs `iters` rounds of FMA_PEAK_CHAINS independent FMA chains. out gets
 * one float per thread (so nothing is optimised away). */
#define FMA_PEAK_CHAINS 8
EXTERN_C cudaError_t fma_peak(float *out, int blocks, int threads, int iters,
                              cudaStream_t stream);
/* flops of one fma_peak call: 2 per FMA */
#define FMA_PEAK_FLOPS(blocks, threads, iters)                                 \
    (2.0 * FMA_PEAK_CHAINS * (double)(blocks) * (double)(threads) * (double)(iters))

#endif /* FUSIONLAB_TRAFFIC_H */
