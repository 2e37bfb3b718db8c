// lessons/05-flash-attention/attention_unfused.cu — the PyTorch-style baseline.
//
// O = softmax(Q Kᵀ · scale) V the way eager PyTorch runs
//     torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v
// three kernels, each result in device memory for the next to read back:
//
//     S = Q Kᵀ · scale   cuBLAS strided-batched GEMM     writes bh·N² elements
//     P = softmax(S)     row-softmax kernel (+ causal)   reads S, writes P
//     O = P V            cuBLAS strided-batched GEMM     reads P
//
// (bh = batch·heads, N = seq.) The GEMMs are cuBLAS's, as fast as this GPU
// does them; the softmax reads each row twice (the second time mostly from
// L2) and writes it once. What loses is the memory: S and P are N×N per head,
// 2·bh·N²·4 bytes in float32, 4 GiB at N = 4096 and bh = 32, and every one
// of those bytes crosses the memory bus twice.
//
// Honest float32: the cuBLAS handle runs in CUBLAS_DEFAULT_MATH, which for
// float32 GEMMs means plain FP32 FMAs (TF32 tensor cores only when asked for
// with CUBLAS_TF32_TENSOR_OP_MATH, which we do not). float16 keeps S and P in
// float16 (as PyTorch does) with float32 accumulation inside the GEMMs
// (CUBLAS_COMPUTE_32F, on tensor cores) and float32 math in the softmax.
//
// The causal mask is folded into the softmax kernel (PyTorch eager would
// run a separate masked_fill over S first, one more N² pass): the baseline
// gets that for free. Complete as shipped: not an exercise.
#include "attention.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

// ============================================================================
// kernels
// ============================================================================

static const int kSoftmaxThreads = 256;

// Float32 values from 16 bytes of memory, and back: 4 floats or 8 halves.
__device__ __forceinline__ void load16(const float *p, float *x)
{
    float4 v = *(const float4 *)p;
    x[0] = v.x; x[1] = v.y; x[2] = v.z; x[3] = v.w;
}

__device__ __forceinline__ void load16(const __half *p, float *x)
{
    uint4 u = *(const uint4 *)p;
    uint32_t w[4] = {u.x, u.y, u.z, u.w};
    for (int i = 0; i < 4; ++i) {
        __half2 h;
        memcpy(&h, &w[i], sizeof h);
        float2 f = __half22float2(h);
        x[2 * i] = f.x;
        x[2 * i + 1] = f.y;
    }
}

__device__ __forceinline__ void store16(float *p, const float *x)
{
    *(float4 *)p = make_float4(x[0], x[1], x[2], x[3]);
}

__device__ __forceinline__ void store16(__half *p, const float *x)
{
    uint32_t w[4];
    for (int i = 0; i < 4; ++i) {
        __half2 h = __floats2half2_rn(x[2 * i], x[2 * i + 1]);
        memcpy(&w[i], &h, sizeof h);
    }
    *(uint4 *)p = make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ void store1(float *p, float x) { *p = x; }
__device__ __forceinline__ void store1(__half *p, float x) { *p = __float2half_rn(x); }

// (m, l) summarises a set of scores: m their max, l = sum exp(s - m). Two
// summaries merge into one (lesson 02's online softmax):
//     m = max(m1, m2),   l = l1 exp(m1 - m) + l2 exp(m2 - m)
// An empty set is (-FLT_MAX, 0); -FLT_MAX rather than -inf so that merging
// two empty sets computes exp(0) * 0 = 0 instead of exp(-inf + inf) = NaN.
__device__ __forceinline__ void merge_ml(float *m, float *l, float m2, float l2)
{
    float mn = fmaxf(*m, m2);
    *l = *l * __expf(*m - mn) + l2 * __expf(m2 - mn);
    *m = mn;
}

// Every thread passes its (m, l); every thread gets the block's.
__device__ void block_merge_ml(float *m, float *l, float *pm, float *pl /* [32], shared */)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int off = 16; off > 0; off /= 2)
        merge_ml(m, l, __shfl_xor_sync(0xffffffffu, *m, off),
                 __shfl_xor_sync(0xffffffffu, *l, off));
    if (lane == 0) {
        pm[warp] = *m;
        pl[warp] = *l;
    }
    __syncthreads();
    *m = lane < warps ? pm[lane] : -FLT_MAX;
    *l = lane < warps ? pl[lane] : 0.0f;
    for (int off = 16; off > 0; off /= 2)
        merge_ml(m, l, __shfl_xor_sync(0xffffffffu, *m, off),
                 __shfl_xor_sync(0xffffffffu, *l, off));
}

// s and p are (batch_heads * seq, seq), row-major; block b does row b, whose
// query index is b % seq. S already carries the scale (the GEMM's alpha).
// With the causal mask only keys 0..query take part; the rest of P is 0.
// vec: rows start on 16-byte boundaries, so 16-byte loads and stores.
template <typename T>
__global__ void __launch_bounds__(kSoftmaxThreads)
    attn_softmax_rows_kernel(const T *__restrict__ s, T *__restrict__ p, int seq, int causal,
                             int vec)
{
    __shared__ float part_m[32], part_l[32];
    const int V = 16 / sizeof(T); // elements per 16-byte access
    size_t row = blockIdx.x;
    int query = (int)(row % (size_t)seq);
    const T *sr = s + row * (size_t)seq;
    T *pr = p + row * (size_t)seq;
    int valid = causal ? query + 1 : seq; // keys 0 .. valid-1 take part

    // pass 1: (m, l) over this thread's share, one rescale per 16 bytes
    float m = -FLT_MAX, l = 0.0f;
    if (vec) {
        for (int c0 = threadIdx.x * V; c0 < valid; c0 += blockDim.x * V) {
            float x[16 / sizeof(T)];
            load16(sr + c0, x);
            float mn = m;
#pragma unroll
            for (int e = 0; e < V; ++e)
                if (c0 + e < valid) mn = fmaxf(mn, x[e]);
            float sum = 0.0f;
#pragma unroll
            for (int e = 0; e < V; ++e)
                if (c0 + e < valid) sum += __expf(x[e] - mn);
            l = l * __expf(m - mn) + sum; // l_new = l_old exp(m_old - m_new) + sum exp(s - m_new)
            m = mn;
        }
    } else {
        for (int c = threadIdx.x; c < valid; c += blockDim.x) {
            float x = to_float(sr[c]);
            float mn = fmaxf(m, x);
            l = l * __expf(m - mn) + __expf(x - mn);
            m = mn;
        }
    }
    block_merge_ml(&m, &l, part_m, part_l);

    // pass 2: P = exp(S - m) / l, masked keys 0 (S is read again, mostly from L2)
    float inv = 1.0f / l;
    if (vec) {
        for (int c0 = threadIdx.x * V; c0 < seq; c0 += blockDim.x * V) {
            float x[16 / sizeof(T)];
            load16(sr + c0, x);
#pragma unroll
            for (int e = 0; e < V; ++e) x[e] = c0 + e < valid ? __expf(x[e] - m) * inv : 0.0f;
            store16(pr + c0, x);
        }
    } else {
        for (int c = threadIdx.x; c < seq; c += blockDim.x)
            store1(pr + c, c < valid ? __expf(to_float(sr[c]) - m) * inv : 0.0f);
    }
}

// ============================================================================
// cuBLAS: one handle per device, made on first use (outside any timed run:
// the course's timing does warm-up runs first) and kept for the process
// ============================================================================

static const int kMaxDevices = 64;
static cublasHandle_t g_cublas[kMaxDevices];

static cudaError_t cublas_report(cublasStatus_t st, const char *call, const char *file,
                                 int line)
{
    if (st == CUBLAS_STATUS_SUCCESS) return cudaSuccess;
    fprintf(stderr, "cuBLAS error %s (%s) at %s:%d in `%s`\n", cublasGetStatusName(st),
            cublasGetStatusString(st), file, line, call);
    return st == CUBLAS_STATUS_ALLOC_FAILED ? cudaErrorMemoryAllocation : cudaErrorUnknown;
}

// CUDA_CHECK for cuBLAS calls: report, and return a cudaError_t.
#define CUBLAS_CHECK(call)                                                           \
    do {                                                                             \
        cudaError_t e_ = cublas_report((call), #call, __FILE__, __LINE__);           \
        if (e_ != cudaSuccess) return e_;                                            \
    } while (0)

static cudaError_t cublas_handle(cudaStream_t stream, cublasHandle_t *h)
{
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev < 0 || dev >= kMaxDevices) return cudaErrorInvalidDevice;
    if (!g_cublas[dev]) {
        CUBLAS_CHECK(cublasCreate(&g_cublas[dev]));
        // plain FP32 for float32 GEMMs (no TF32); tensor cores for float16
        CUBLAS_CHECK(cublasSetMathMode(g_cublas[dev], CUBLAS_DEFAULT_MATH));
    }
    CUBLAS_CHECK(cublasSetStream(g_cublas[dev], stream));
    *h = g_cublas[dev];
    return cudaSuccess;
}

// ============================================================================
// launchers
// ============================================================================

EXTERN_C size_t attention_unfused_workspace_bytes(attn_dtype dtype, int batch_heads, int seq)
{
    if (batch_heads <= 0 || seq <= 0) return 0;
    size_t elem = dtype == ATTN_F16 ? 2 : 4, n = (size_t)seq, bh = (size_t)batch_heads;
    if (n > SIZE_MAX / n) return SIZE_MAX;
    size_t per_buffer = n * n; // elements of S (and of P)
    if (per_buffer > SIZE_MAX / bh) return SIZE_MAX;
    per_buffer *= bh;
    if (per_buffer > SIZE_MAX / (2 * elem)) return SIZE_MAX;
    return 2 * elem * per_buffer;
}

static double gib(size_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

EXTERN_C cudaError_t attention_unfused_workspace_alloc(attn_dtype dtype, int batch_heads,
                                                       int seq, void **workspace)
{
    *workspace = NULL;
    size_t need = attention_unfused_workspace_bytes(dtype, batch_heads, seq);
    if (need == 0) return cudaSuccess;
    cudaError_t e = need == SIZE_MAX ? cudaErrorMemoryAllocation : cudaMalloc(workspace, need);
    if (e == cudaSuccess) return cudaSuccess;
    // A failed cudaMalloc is not sticky, but it stays in the last-error slot,
    // where the next CUDA_CHECK_LAST() would blame it on a kernel launch.
    (void)cudaGetLastError();
    *workspace = NULL;
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    (void)cudaGetLastError();
    if (e != cudaErrorMemoryAllocation) return CUDA_REPORT(e);
    fprintf(stderr,
            "attention_unfused: seq %d needs %.2f GiB for S and P (2 x %d heads x %d x %d x "
            "%d bytes) but only %.2f of the GPU's %.2f GiB are free: the unfused path "
            "cannot run at this size (the fused one needs no such buffer)\n",
            seq, need == SIZE_MAX ? (double)INFINITY : gib(need), batch_heads, seq, seq,
            dtype == ATTN_F16 ? 2 : 4, gib(free_b), gib(total_b));
    return cudaErrorMemoryAllocation;
}

// Shapes and workspace shared by both precisions. Returns cudaSuccess with
// *empty = 1 when there is nothing to do.
static cudaError_t check_args(const char *who, attn_dtype dtype, int batch_heads, int seq,
                              int head_dim, const void *workspace, size_t workspace_bytes,
                              int *empty)
{
    *empty = 0;
    if (batch_heads < 0 || seq < 0 || head_dim < 0) {
        fprintf(stderr, "%s: negative shape (batch_heads %d, seq %d, head_dim %d)\n", who,
                batch_heads, seq, head_dim);
        return cudaErrorInvalidValue;
    }
    if (batch_heads == 0 || seq == 0 || head_dim == 0) {
        *empty = 1;
        return cudaSuccess;
    }
    if (batch_heads > INT32_MAX / seq) { // one softmax block per row
        fprintf(stderr, "%s: batch_heads * seq = %lld rows is too many\n", who,
                (long long)batch_heads * seq);
        return cudaErrorInvalidValue;
    }
    size_t need = attention_unfused_workspace_bytes(dtype, batch_heads, seq);
    if (!workspace || workspace_bytes < need) {
        fprintf(stderr,
                "%s: S and P need a workspace of %.3f GiB (attention_unfused_workspace_bytes), "
                "got %.3f GiB%s\n",
                who, need == SIZE_MAX ? (double)INFINITY : gib(need), gib(workspace_bytes),
                workspace ? "" : " (NULL)");
        return cudaErrorMemoryAllocation;
    }
    return cudaSuccess;
}

template <typename T>
static cudaError_t launch_softmax(const T *s, T *p, int batch_heads, int seq, int causal,
                                  cudaStream_t stream)
{
    int vec = seq % (int)(16 / sizeof(T)) == 0 && ((uintptr_t)s & 15u) == 0 &&
              ((uintptr_t)p & 15u) == 0;
    unsigned int rows = (unsigned int)batch_heads * (unsigned int)seq;
    attn_softmax_rows_kernel<T><<<rows, kSoftmaxThreads, 0, stream>>>(s, p, seq, causal, vec);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

// cuBLAS is column-major; our tensors are row-major. A row-major (r, c)
// matrix is the column-major (c, r) matrix, its transpose, at the same
// address. So:
//   S = Q Kᵀ  (row-major, seq x seq)  is column-major  Sᵀ = K Qᵀ:
//       A = K stored as column-major (d, seq), op T;  B = Q as (d, seq), op N
//   O = P V   (row-major, seq x d)    is column-major  Oᵀ = Vᵀ Pᵀ:
//       A = V stored as column-major (d, seq), op N;  B = P as (seq, seq), op N
EXTERN_C cudaError_t attention_unfused_f32(const float *q, const float *k, const float *v,
                                           float *o, int batch_heads, int seq, int head_dim,
                                           float scale, int causal, void *workspace,
                                           size_t workspace_bytes, cudaStream_t stream)
{
    int empty;
    CUDA_CHECK(check_args("attention_unfused_f32", ATTN_F32, batch_heads, seq, head_dim,
                          workspace, workspace_bytes, &empty));
    if (empty) return cudaSuccess;
    cublasHandle_t h;
    CUDA_CHECK(cublas_handle(stream, &h));
    float *S = (float *)workspace;                     // (bh, seq, seq)
    float *P = S + (size_t)batch_heads * seq * seq;    // (bh, seq, seq)
    long long stride_x = (long long)seq * head_dim, stride_s = (long long)seq * seq;
    const float alpha = scale, one = 1.0f, zero = 0.0f;

    // S = scale · Q Kᵀ
    CUBLAS_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, seq, seq, head_dim,
                                           &alpha, k, head_dim, stride_x, q, head_dim,
                                           stride_x, &zero, S, seq, stride_s, batch_heads));
    // P = softmax(S), row by row
    CUDA_CHECK(launch_softmax<float>(S, P, batch_heads, seq, causal, stream));
    // O = P V
    CUBLAS_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, head_dim, seq, seq,
                                           &one, v, head_dim, stride_x, P, seq, stride_s,
                                           &zero, o, head_dim, stride_x, batch_heads));
    return cudaSuccess;
}

EXTERN_C cudaError_t attention_unfused_f16(const uint16_t *q, const uint16_t *k,
                                           const uint16_t *v, uint16_t *o, int batch_heads,
                                           int seq, int head_dim, float scale, int causal,
                                           void *workspace, size_t workspace_bytes,
                                           cudaStream_t stream)
{
    int empty;
    CUDA_CHECK(check_args("attention_unfused_f16", ATTN_F16, batch_heads, seq, head_dim,
                          workspace, workspace_bytes, &empty));
    if (empty) return cudaSuccess;
    cublasHandle_t h;
    CUDA_CHECK(cublas_handle(stream, &h));
    __half *S = (__half *)workspace;                   // (bh, seq, seq), float16
    __half *P = S + (size_t)batch_heads * seq * seq;   // (bh, seq, seq), float16
    long long stride_x = (long long)seq * head_dim, stride_s = (long long)seq * seq;
    const float alpha = scale, one = 1.0f, zero = 0.0f; // float: the compute type is 32F

    // S = scale · Q Kᵀ, float32 accumulation, stored as float16
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, CUBLAS_OP_T, CUBLAS_OP_N, seq, seq, head_dim, &alpha, k, CUDA_R_16F, head_dim,
        stride_x, q, CUDA_R_16F, head_dim, stride_x, &zero, S, CUDA_R_16F, seq, stride_s,
        batch_heads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    // P = softmax(S), in float32 math, stored as float16
    CUDA_CHECK(launch_softmax<__half>(S, P, batch_heads, seq, causal, stream));
    // O = P V
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h, CUBLAS_OP_N, CUBLAS_OP_N, head_dim, seq, seq, &one, v, CUDA_R_16F, head_dim,
        stride_x, P, CUDA_R_16F, seq, stride_s, &zero, o, CUDA_R_16F, head_dim, stride_x,
        batch_heads, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return cudaSuccess;
}

// ============================================================================
// float16 <-> float32 on the host
// ============================================================================

// IEEE binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
static uint16_t f32_to_f16_one(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); // >= 65520 rounds to inf
    uint32_t h, rem, halfway;
    if (a < 0x38800000u) { // below 2^-14: a subnormal half, in units of 2^-24
        if (a < 0x33000000u) return (uint16_t)sign; // below 2^-25: rounds to 0
        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; // 14 .. 24
        h = m >> shift;
        rem = m & ((1u << shift) - 1);
        halfway = 1u << (shift - 1);
    } else { // normal: rebias the exponent (127 -> 15), keep 10 of 23 mantissa bits
        uint32_t r = a - 0x38000000u;
        h = r >> 13;
        rem = r & 0x1fffu;
        halfway = 0x1000u;
    }
    if (rem > halfway || (rem == halfway && (h & 1u))) h++; // to nearest, ties to even
    return (uint16_t)(sign | h);
}

static float f16_to_f32_one(uint16_t h)
{
    uint32_t bits;
    if (h == 0xffffu) {
        bits = 0xffffffffu; // the poison stays the poison
    } else {
        uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
        if (e == 0) { // zero or subnormal: m * 2^-24, exact in float
            float f = (float)m * 5.9604644775390625e-8f;
            memcpy(&bits, &f, sizeof bits);
            bits |= sign;
        } else if (e == 31) {
            bits = sign | 0x7f800000u | (m << 13);
        } else {
            bits = sign | ((e + 112u) << 23) | (m << 13);
        }
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

EXTERN_C void attention_f32_to_f16(const float *x, uint16_t *h, size_t n)
{
    for (size_t i = 0; i < n; ++i) h[i] = f32_to_f16_one(x[i]);
}

EXTERN_C void attention_f16_to_f32(const uint16_t *h, float *x, size_t n)
{
    for (size_t i = 0; i < n; ++i) x[i] = f16_to_f32_one(h[i]);
}
