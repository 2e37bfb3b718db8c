/* lessons/05-flash-attention/attention.h — the C API of lesson 05.
 *
 * Attention forward for every (batch, head) pair at once:
 *
 *     S = Q Kᵀ · scale          (seq, seq) per head
 *     P = softmax(S) row-wise   (causal: keys after the query are masked out)
 *     O = P V                   (seq, head_dim) per head
 *
 * q, k, v and o are device pointers to (batch_heads, seq, head_dim) tensors,
 * row-major and contiguous: element (h, i, j) is at [(h * seq + i) * head_dim + j].
 * float32 tensors are `float *`; float16 tensors are `uint16_t *` holding the
 * IEEE half-precision bit patterns (C has no half type; the .cu files read
 * them as __half). Pointers must be 16-byte aligned (cudaMalloc's are).
 *
 * causal = 1 masks key j > query i (each position sees only itself and the
 * past, as in a decoder); causal = 0 lets every query see every key.
 *
 * Every launcher queues its work on `stream` and returns cudaSuccess or the
 * error it hit (printed with its reason); none waits for the GPU.
 */
#ifndef FUSIONLAB_ATTENTION_H
#define FUSIONLAB_ATTENTION_H

#include "check.h"

#include <stdint.h>

/* ---- Part A (exercise, attention_fused.cu): fused, float32 -----------------
 * One kernel: Q tile on chip, K and V streamed through in tiles, online
 * softmax, O written once. Allocates nothing: the (seq, seq) matrix never
 * exists. head_dim 64 or 128; any seq >= 1. */
EXTERN_C cudaError_t attention_fused_f32(const float *q, const float *k, const float *v,
                                         float *o, int batch_heads, int seq, int head_dim,
                                         float scale, int causal, cudaStream_t stream);

/* ---- Part B (exercise, attention_fused.cu): fused, float16 on tensor cores -
 * Same algorithm with float16 inputs and output; S, the softmax statistics and
 * the O accumulator stay in float32. head_dim 64 or 128; any seq >= 1. */
EXTERN_C cudaError_t attention_fused_f16(const uint16_t *q, const uint16_t *k,
                                         const uint16_t *v, uint16_t *o, int batch_heads,
                                         int seq, int head_dim, float scale, int causal,
                                         cudaStream_t stream);

/* ---- Going further (optional, not graded): float32 on tensor cores ---------
 * Part A's job with TF32 tensor cores, each float32 product as three TF32
 * products (the worked solution's attention_f32_tc_kernel; the lesson's
 * README, "Going further"). Same arguments as attention_fused_f32;
 * cudaErrorNotSupported where the GPU has no TF32 tensor cores (before
 * sm_80) or too little shared memory a block. Nothing calls it but
 * ./lab compare, which times it beside Part A when the file defines it. */
EXTERN_C cudaError_t attention_fused_f32_tc(const float *q, const float *k, const float *v,
                                            float *o, int batch_heads, int seq, int head_dim,
                                            float scale, int causal, cudaStream_t stream);

/* ---- Going further (optional, not graded): float16 on Hopper's wgmma -------
 * Part B's job with the warpgroup MMA of sm_90a (the worked solution's
 * attention_f16_wgmma_kernel; the lesson's README, "Going further"). Same
 * arguments and checks as attention_fused_f16; then cudaErrorNotSupported off
 * compute capability 9.0 and wherever the library holds no sm_90a code (the
 * course's own builds: only ./lab compare's library of the worked solution and
 * the test program test_05_flash_attention_wgmma have it).
 * Nothing calls it but ./lab compare, which times it beside Part B when the
 * file defines it. */
EXTERN_C cudaError_t attention_fused_f16_wgmma(const uint16_t *q, const uint16_t *k,
                                               const uint16_t *v, uint16_t *o, int batch_heads,
                                               int seq, int head_dim, float scale, int causal,
                                               cudaStream_t stream);

/* ---- The baseline (complete, attention_unfused.cu) --------------------------
 * What eager PyTorch runs for  softmax(q @ k.transpose(-2, -1) * scale) @ v:
 *     S = Q Kᵀ · scale     cuBLAS strided-batched GEMM, S written to memory
 *     P = softmax(S)       one row-softmax kernel (with the causal mask)
 *     O = P V              cuBLAS strided-batched GEMM, reading P back
 * S and P are two (batch_heads, seq, seq) buffers in a workspace the caller
 * provides: O(seq²) memory. float32 runs in plain FP32 (cuBLAS math mode
 * CUBLAS_DEFAULT_MATH, no TF32); float16 keeps S and P in float16 as PyTorch
 * does, with float32 accumulation in the GEMMs and the softmax. Any
 * head_dim >= 1. */

typedef enum { ATTN_F32 = 0, ATTN_F16 = 1 } attn_dtype;

/* Bytes of the S and P buffers: 2 * batch_heads * seq² * element size.
 * SIZE_MAX when that does not fit in a size_t. */
EXTERN_C size_t attention_unfused_workspace_bytes(attn_dtype dtype, int batch_heads, int seq);

/* cudaMalloc the workspace, or refuse cleanly: when it does not fit, prints
 * how much was asked for and how much is free, sets *workspace = NULL, clears
 * CUDA's last-error state and returns cudaErrorMemoryAllocation. */
EXTERN_C cudaError_t attention_unfused_workspace_alloc(attn_dtype dtype, int batch_heads,
                                                       int seq, void **workspace);

/* Both return cudaErrorMemoryAllocation, with a message, when workspace is
 * NULL or smaller than attention_unfused_workspace_bytes(). */
EXTERN_C cudaError_t attention_unfused_f32(const float *q, const float *k, const float *v,
                                           float *o, int batch_heads, int seq, int head_dim,
                                           float scale, int causal, void *workspace,
                                           size_t workspace_bytes, cudaStream_t stream);
EXTERN_C cudaError_t attention_unfused_f16(const uint16_t *q, const uint16_t *k,
                                           const uint16_t *v, uint16_t *o, int batch_heads,
                                           int seq, int head_dim, float scale, int causal,
                                           void *workspace, size_t workspace_bytes,
                                           cudaStream_t stream);

/* ---- float16 on the CPU (for tests and benches; C has no half type) --------
 * Round to nearest even, with subnormals, infinities and NaN. The all-ones
 * pattern 0xFFFF (what fl_poison leaves in a float16 buffer) converts to the
 * float32 poison, so fl_compare_f32 reports such elements as never written. */
EXTERN_C void attention_f32_to_f16(const float *x, uint16_t *h, size_t n);
EXTERN_C void attention_f16_to_f32(const uint16_t *h, float *x, size_t n);

/* ---- Cost model, for TFLOP/s and the README's story ------------------------
 * FLOPs: two GEMMs of 2 * seq * seq * head_dim each per head; with the
 * causal mask only the seq (seq + 1) / 2 unmasked pairs count. The softmax's
 * exponentials are not counted (the usual convention).
 * Bytes: what each version must move at least. Fused: read Q, K, V once,
 * write O once. Unfused: that plus S written and read, P written and read. */
#define ATTENTION_FLOPS(bh, seq, d, causal)                                       \
    ((causal) ? 2.0 * (double)(bh) * (double)(seq) * ((double)(seq) + 1.0) * (double)(d) \
              : 4.0 * (double)(bh) * (double)(seq) * (double)(seq) * (double)(d))
#define ATTENTION_FUSED_BYTES(bh, seq, d, elem)                                   \
    (4.0 * (double)(bh) * (double)(seq) * (double)(d) * (double)(elem))
#define ATTENTION_UNFUSED_BYTES(bh, seq, d, elem)                                 \
    (ATTENTION_FUSED_BYTES(bh, seq, d, elem) +                                    \
     4.0 * (double)(bh) * (double)(seq) * (double)(seq) * (double)(elem))

#endif /* FUSIONLAB_ATTENTION_H */
