// lessons/05-flash-attention/attention_fused.cu — YOUR FILE for lesson 05.
//
// O = softmax(Q Kᵀ · scale) V in ONE kernel: a block owns a tile of query
// rows, K and V stream through shared memory one tile at a time, and each row
// keeps a running max m, a running sum l and an unnormalised output O that
// are rescaled whenever m grows (the online softmax of lesson 02). The
// (seq, seq) matrix never exists.
//
// Part A: attention_f32_kernel, float32 on the CUDA cores  (TODO A1 .. A7)
// Part B: attention_f16_kernel, float16 on tensor cores    (TODO B1 .. B5, bonus)
//
// It compiles and runs as shipped, but the kernels write nothing yet, so
// `./lab check 05` fails. The tile loading, the synchronisation and the
// launchers are written for you; the math is yours. The lesson's README.md
// explains the why and has hints, mildest first: read it first.
#include "attention.h"

#include <cuda_fp16.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

// exp(x) = 2^(x log2 e). The launchers pass scale_log2 = scale * log2(e), so
// exp(s · scale - m) is exp2f(s · scale_log2 - m) with m kept in log2 units:
// one multiply-add and one hardware exp2 per score. (expf works too.)
static const float kLog2e = 1.4426950408889634f;

// ============================================================================
// helpers (complete: use these)
// ============================================================================

__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared; zero-filled when valid is false (src not read).
// On sm_80+ a cp.async: async_wait<N>() waits until at most N committed
// groups are still in flight. Older GPUs copy at once.
__device__ __forceinline__ void copy16_async(void *dst, const void *src, bool valid)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)),
                 "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
#else
    *(uint4 *)dst = valid ? *(const uint4 *)src : make_uint4(0u, 0u, 0u, 0u);
#endif
}

__device__ __forceinline__ void async_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int N>
__device__ __forceinline__ void async_wait()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// Both loaders' fast path: ROWS / RS rows of one column of 16-byte chunks,
// rows r, r + RS, ...: chunk j to d + j RS DS (DS: the tile's row stride) from
// src + s + j RS D, zeros for rows at or past seq. U copies unrolled at a time.
template <int ROWS, int RS, int DS, int D, int U, typename T>
__device__ __forceinline__ void copy_column_async(T *d, const T *src, size_t s, int r, int seq)
{
#pragma unroll U
    for (int j = 0; j < ROWS / RS; ++j) {
        const bool ok = r + j * RS < seq;
        copy16_async(d + j * RS * DS, ok ? src + s + (size_t)j * RS * D : src, ok);
    }
}

// ROWS rows of D floats, source rows row0 .. row0 + ROWS - 1, into shared
// memory with a row stride of STRIDE floats. Rows past seq are zeros. The NT
// threads of the block share the work; call async_commit/async_wait after.
template <int D, int ROWS, int STRIDE, int NT>
__device__ __forceinline__ void load_rows_f32(float *dst, const float *src, int row0, int seq)
{
    // The block's NT threads (blockDim.x must be NT) copy RS = NT / CH whole
    // rows a pass when NT is a multiple of CH and ROWS of RS: then each
    // thread copies the same column c of rows r0, r0 + RS, ... Its shared
    // addresses are one base and constant offsets, its global ones one 64-bit
    // add each: no division, remainder or multiply per float4, as the loop
    // after else (any other tile) has. 8 copies unrolled at a time: with all
    // 16 of a tile at head_dim 128 at once, ptxas spilled and the kernel was
    // 0.5% slower.
    constexpr int CH = D / 4, RS = NT / CH; // float4s a row; rows a pass
    if constexpr (NT % CH == 0 && ROWS % RS == 0) {
        const int r0 = threadIdx.x / CH, c = threadIdx.x % CH;
        copy_column_async<ROWS, RS, STRIDE, D, 8>(dst + r0 * STRIDE + 4 * c, src,
                                                  (size_t)(row0 + r0) * D + 4 * c, row0 + r0,
                                                  seq);
    } else {
        for (int i = threadIdx.x; i < ROWS * CH; i += NT) {
            int r = i / CH, c = i % CH;
            bool ok = row0 + r < seq;
            copy16_async(dst + r * STRIDE + 4 * c,
                         ok ? src + (size_t)(row0 + r) * D + 4 * c : src, ok);
        }
    }
}

// ============================================================================
// Part A — float32 kernel
// ============================================================================

// q, k, v, o are (batch_heads, seq, D), row-major; block (x, y) computes the
// query tile x (BR rows) of head y. The threads form a TY x TX grid
// (TX = D / 8); thread (ty, tx) owns
//   rows     ty*RM .. ty*RM + RM-1 of the tile               (RM = 8)
//   S cols   tx, tx + TX, tx + 2TX, ... of the K tile        (CN = BC / TX keys)
//   O cols   4(tx + TX u) .. 4(tx + TX u) + 3, u = 0, 1      (8 of the D columns)
// i.e. an RM x CN block of S and an RM x 8 block of O, both in registers.
// The TX threads that share a row are adjacent lanes of one warp, so a row's
// max and sum are __shfl_xor_sync over offsets 1, 2, .. TX/2 (README, hint 3).
// Shared memory (floats), filled for you:
//   Qs [BR][D]       Q tile (rows past seq are 0)
//   Ks [BC][D + 4]   K tile (row stride KS = D + 4; keys past seq are 0)
//   Vs [BC][D]       V tile
//   Ps [BR][BC]      yours: P goes here between the two products
template <int D, int BC, int TY>
__global__ void __launch_bounds__((D / 8) * TY)
    attention_f32_kernel(const float *__restrict__ q, const float *__restrict__ k,
                         const float *__restrict__ v, float *__restrict__ o, int seq,
                         float scale_log2, int causal)
{
    constexpr int TX = D / 8, NT = TX * TY, RM = 8, BR = TY * RM, CN = BC / TX, KS = D + 4;
    extern __shared__ float4 smem_f32[];
    float *Qs = (float *)smem_f32;
    float *Ks = Qs + BR * D;
    float *Vs = Ks + BC * KS;
    float *Ps = Vs + BC * D;

    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    // Causal: the last query tiles have the most keys to see; start them first.
    const int qtile = causal ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x;
    const int q0 = qtile * BR;                 // first query row of this block
    const size_t head = (size_t)blockIdx.y * seq * D;
    q += head;
    k += head;
    v += head;
    o += head;
    // With the causal mask, rows q0 .. q0 + BR - 1 see keys 0 .. q0 + BR - 1 only.
    const int kv_end = causal ? min(seq, q0 + BR) : seq;
    const int ntiles = CEIL_DIV(kv_end, BC);

    load_rows_f32<D, BR, D, NT>(Qs, q, q0, seq);
    async_commit();

    // TODO(A1): this thread's state for its RM rows, in registers (plain
    //           local arrays indexed by unrolled loop counters):
    //             float m[RM];       running max, in log2 units (start -INFINITY)
    //             float l[RM];       running sum of exp2(s - m)    (start 0)
    //             float acc[RM][8];  the unnormalised O block       (start 0)

    for (int t = 0; t < ntiles; ++t) {
        const int kv0 = t * BC; // first key of this tile
        load_rows_f32<D, BC, KS, NT>(Ks, k, kv0, seq);
        load_rows_f32<D, BC, D, NT>(Vs, v, kv0, seq);
        async_commit();
        async_wait<0>();
        __syncthreads(); // K_t, V_t (and Qs) are in shared memory for every thread

        // TODO(A2): S = Q K_tᵀ for your RM x CN block, in registers:
        //             s[i][j] = sum_d Qs[(ty*RM + i)*D + d] * Ks[(tx + TX*j)*KS + d]
        //           Read float4s (4 dims at a time) and reuse each value: a Q
        //           float4 serves CN keys, a K float4 serves RM rows.
        // TODO(A3): the masks: key = kv0 + tx + TX*j is not a real key when
        //           key >= seq (zero-filled rows), and with causal != 0 a
        //           query (q0 + ty*RM + i) must not see key > query. Set s to
        //           -INFINITY there, so that exp turns it into 0.
        // TODO(A4): the online softmax, for each of your rows i:
        //             mx    = max over the row's BC scores (yours, then the
        //                     other TX - 1 threads' with __shfl_xor_sync)
        //             m_new = max(m[i], mx * scale_log2)
        //             alpha = exp2f(m[i] - m_new)       rescales the old l and O
        //             p     = exp2f(s * scale_log2 - m_new)   (overwrite s)
        //             l[i]  = alpha * l[i] + (sum of your p)
        //             acc[i][:] *= alpha;   m[i] = m_new
        //           (README: why your own share of l is enough until the end,
        //           and what to do when m_new is still -INFINITY.)
        // TODO(A5): write your p into Ps[(ty*RM + i)*BC + tx + TX*j].

        __syncthreads(); // P is in shared memory for every thread

        // TODO(A6): acc += P V_t: acc[i][4u + e] += sum_c Ps[(ty*RM + i)*BC + c]
        //           * Vs[c*D + 4*(tx + TX*u) + e]  for c < BC, u = 0, 1, e = 0..3.

        __syncthreads(); // everyone is done with Ks, Vs, Ps before the next tile
    }

    // TODO(A7): O = acc / l, written once: sum each row's l over its TX
    //           threads (shuffles), then store your 8 columns of every row
    //           i with q0 + ty*RM + i < seq (two float4 stores per row).
    (void)tx;
    (void)ty;
    (void)CN;
    (void)Ps;
    (void)o;
    (void)scale_log2;
}

// ============================================================================
// Part B — helpers for tensor cores (complete: use these)
// ============================================================================

// Four 8x8 matrices of 16-bit values from shared memory, one row address per
// lane (lanes 8i .. 8i+7 give the 8 row addresses of matrix i). Lane L
// receives, of each matrix i, row L/4, columns 2(L%4) and 2(L%4)+1, packed in
// r[i]. The .trans version delivers the transposed matrix instead: rows
// 2(L%4) and 2(L%4)+1 of column L/4.
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const __half *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const __half *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

// C (16x8, float32) += A (16x16, float16) * B (16x8, float16), one warp.
// Per lane, with g = lane/4 and t = lane%4 (two halves per register, the
// lower column or k index in the low 16 bits):
//   a[0] = A[g][2t, 2t+1]      a[1] = A[g+8][2t, 2t+1]
//   a[2] = A[g][2t+8, 2t+9]    a[3] = A[g+8][2t+8, 2t+9]
//   b0   = B[2t, 2t+1][g]      b1   = B[2t+8, 2t+9][g]
//   c[0], c[1] = C[g][2t, 2t+1]     c[2], c[3] = C[g+8][2t, 2t+1]
__device__ __forceinline__ void mma_16816(float c[4], const uint32_t a[4], uint32_t b0,
                                          uint32_t b1)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else // sm_75: the same product as two k = 8 steps
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b0));
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[2]), "r"(a[3]), "r"(b1));
#endif
}

// Two floats -> one register of two halves (lo in the low 16 bits).
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    uint32_t u;
    memcpy(&u, &h, sizeof u);
    return u;
}

// Element (row, col) of a [rows][D] half tile in shared memory, swizzled:
// the 16-byte chunk index is XOR-ed with row % 8, so the 8 rows one ldmatrix
// reads at the same column sit in 8 different bank groups.
template <int D>
__device__ __forceinline__ int swz(int row, int col)
{
    return row * D + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

// ROWS x D halves from src rows row0 .. (zeros past seq) into a swizzled tile.
template <int D, int ROWS, int NT>
__device__ __forceinline__ void load_tile_f16(__half *dst, const __half *src, int row0, int seq)
{
    // As load_rows_f32 (blockDim.x must be NT): each thread copies the same
    // column c of rows r0, r0 + RS, ... When RS is also a multiple of 8,
    // r & 7, and with it the swizzled column, is the same for all of those
    // rows, so the shared addresses are again one base and constant offsets.
    // Every tile the launchers use is such a tile; any other (2 warps at
    // head_dim 128: RS = 4) takes the loop after else.
    constexpr int CH = D / 8, RS = NT / CH; // 16-byte chunks a row; rows a pass
    if constexpr (NT % CH == 0 && RS % 8 == 0 && ROWS % RS == 0) {
        const int r0 = threadIdx.x / CH, c = threadIdx.x % CH;
        copy_column_async<ROWS, RS, D, D, ROWS / RS>(dst + r0 * D + ((c ^ (r0 & 7)) << 3), src,
                                                     (size_t)(row0 + r0) * D + c * 8, row0 + r0,
                                                     seq);
    } else {
        for (int i = threadIdx.x; i < ROWS * CH; i += NT) {
            int r = i / CH, c = i % CH;
            bool ok = row0 + r < seq;
            copy16_async(dst + r * D + ((c ^ (r & 7)) << 3),
                         ok ? src + (size_t)(row0 + r) * D + c * 8 : src, ok);
        }
    }
}

// ============================================================================
// Part B — float16 kernel (bonus)
// ============================================================================

// q, k, v, o are (batch_heads, seq, D) float16; block (x, y) computes query
// tile x of head y with NW warps; warp w owns rows wr .. wr + 16 MT - 1 of the
// tile (MT groups of 16 rows, BR = 16 MT NW). Shared memory (halves, swizzled,
// filled for you): Qs [BR][D], Ks [2][BC][D], Vs [2][BC][D] (K and V double
// buffered: tile t+1 loads while tile t computes).
// Per lane (g = lane/4, t4 = lane%4), in the mma C layout:
//   S block n (keys 8n .. 8n+7) of row group mt:  s[mt][n][0..1] = row g, keys 8n + 2t4, +1
//                                                 s[mt][n][2..3] = row g + 8, same keys
//   O block n (dims 8n .. 8n+7): the same with dims for keys
template <int D, int MT, int BC, int NW>
__global__ void __launch_bounds__(32 * NW, 8 / NW)
    attention_f16_kernel(const __half *__restrict__ q, const __half *__restrict__ k,
                         const __half *__restrict__ v, __half *__restrict__ o, int seq,
                         float scale_log2, int causal)
{
    constexpr int NT = 32 * NW, BR = 16 * MT * NW, KD = D / 16;
    extern __shared__ uint4 smem_f16[];
    __half *Qs = (__half *)smem_f16;
    __half *Ks = Qs + BR * D;
    __half *Vs = Ks + 2 * BC * D;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    const int qtile = causal ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x;
    const int q0 = qtile * BR;
    const int wr = warp * 16 * MT; // this warp's first row in the tile
    const size_t head = (size_t)blockIdx.y * seq * D;
    q += head;
    k += head;
    v += head;
    o += head;
    const int kv_end = causal ? min(seq, q0 + BR) : seq;
    const int ntiles = CEIL_DIV(kv_end, BC);

    // Q and tile 0 of K and V on their way, in two commit groups
    load_tile_f16<D, BR, NT>(Qs, q, q0, seq);
    async_commit();
    load_tile_f16<D, BC, NT>(Ks, k, 0, seq);
    load_tile_f16<D, BC, NT>(Vs, v, 0, seq);
    async_commit();
    async_wait<1>(); // Q has landed (tile 0 may still be in flight)
    __syncthreads();

    // Q, as mma A operands, for the whole loop: qf[mt][kk] covers rows
    // wr + 16mt .. +15 and dims 16kk .. 16kk + 15. Lanes 0-7 address rows 0-7
    // at dim 0 (-> a[0]), lanes 8-15 rows 8-15 (-> a[1]), 16-23 rows 0-7 at
    // dim 8 (-> a[2]), 24-31 rows 8-15 at dim 8 (-> a[3]).
    uint32_t qf[MT][KD][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kk = 0; kk < KD; ++kk)
            ldmatrix_x4(qf[mt][kk], Qs + swz<D>(wr + 16 * mt + (lane & 7) + 8 * ((lane >> 3) & 1),
                                                16 * kk + 8 * (lane >> 4)));

    // TODO(B1): state in registers: float oacc[MT][D / 8][4] (0), and per
    //           row group and half (rows g, g + 8) float m[MT][2] (-INFINITY)
    //           and l[MT][2] (0).

    for (int t = 0; t < ntiles; ++t) {
        const int kv0 = t * BC, buf = t & 1;
        async_wait<0>(); // this thread's copies of tile t have landed
        // One barrier per tile does two jobs: tile t is visible to every warp,
        // and every warp has finished tile t-1, so its buffer (buf ^ 1) may
        // be refilled with tile t+1, which then loads while tile t computes.
        __syncthreads();
        if (t + 1 < ntiles) {
            load_tile_f16<D, BC, NT>(Ks + (buf ^ 1) * BC * D, k, kv0 + BC, seq);
            load_tile_f16<D, BC, NT>(Vs + (buf ^ 1) * BC * D, v, kv0 + BC, seq);
            async_commit();
        }
        const __half *Kb = Ks + buf * BC * D, *Vb = Vs + buf * BC * D;

        // TODO(B2): S = Q K_tᵀ: float s[MT][BC / 8][4] = 0, then for every kk
        //           and every pair of key blocks np (keys 16np .. 16np + 15):
        //             uint32_t kf[4];
        //             ldmatrix_x4(kf, Kb + swz<D>(16*np + (lane & 7) + 8*(lane >> 4),
        //                                         16*kk + 8*((lane >> 3) & 1)));
        //             mma_16816(s[mt][2np],     qf[mt][kk], kf[0], kf[1]);
        //             mma_16816(s[mt][2np + 1], qf[mt][kk], kf[2], kf[3]);
        //           (README, hint 6: why K needs no transpose.)
        // TODO(B3): masks as in Part A (the key and query of s[mt][n][e] follow
        //           from the layout above), then the online softmax for rows
        //           g and g + 8 of each row group: the row's 4 lanes are
        //           adjacent (shuffle offsets 1 and 2).
        // TODO(B4): O += P V_t. For keys 16kc .. 16kc + 15 the A operand is
        //           S's blocks 2kc and 2kc + 1 packed to half2:
        //             pa[0] = pack_half2(s[mt][2kc][0], s[mt][2kc][1]), pa[1] from
        //             [2kc][2..3], pa[2] from [2kc+1][0..1], pa[3] from [2kc+1][2..3];
        //           B fragments of V for dims 16dp .. 16dp + 15:
        //             ldmatrix_x4_trans(vf, Vb + swz<D>(16*kc + (lane & 7) + 8*((lane >> 3) & 1),
        //                                               16*dp + 8*(lane >> 4)));
        //             mma_16816(oacc[mt][2dp], pa, vf[0], vf[1]); ... [2dp + 1] with vf[2], vf[3]
        (void)Kb;
        (void)Vb;
        (void)kv0;
    }

    // TODO(B5): O = oacc / l (l summed over the row's 4 lanes), stored as
    //           __half2 pairs: row wr + 16mt + g + 8h of the tile, dims
    //           8n + 2t4 and 8n + 2t4 + 1, for rows < seq.
    (void)qf;
    (void)g;
    (void)t4;
    (void)scale_log2;
}

// ============================================================================
// launchers (complete; keep the signatures)
// ============================================================================

// Shared checks of both launchers. *empty = 1: nothing to do.
static cudaError_t check_args(const char *who, const void *q, const void *k, const void *v,
                              const void *o, int batch_heads, int seq, int head_dim,
                              float scale, int *empty)
{
    *empty = 0;
    if (batch_heads < 0 || seq < 0) {
        fprintf(stderr, "%s: negative shape (batch_heads %d, seq %d)\n", who, batch_heads, seq);
        return cudaErrorInvalidValue;
    }
    if (head_dim != 64 && head_dim != 128) {
        fprintf(stderr, "%s: head_dim %d is not supported (64 or 128)\n", who, head_dim);
        return cudaErrorInvalidValue;
    }
    if (!(scale > 0.0f) || isinf(scale)) {
        fprintf(stderr, "%s: scale must be positive and finite (got %g)\n", who, scale);
        return cudaErrorInvalidValue;
    }
    if (batch_heads > 65535) {
        fprintf(stderr, "%s: batch_heads %d > 65535 (one grid row per head)\n", who,
                batch_heads);
        return cudaErrorInvalidValue;
    }
    if (batch_heads == 0 || seq == 0) {
        *empty = 1;
        return cudaSuccess;
    }
    if (!FL_ALIGNED16(q) || !FL_ALIGNED16(k) || !FL_ALIGNED16(v) || !FL_ALIGNED16(o)) {
        fprintf(stderr, "%s: q, k, v and o must be 16-byte aligned\n", who);
        return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

static cudaError_t smem_optin(int *bytes)
{
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return cudaSuccess;
}

template <int D, int BC, int TY>
static size_t f32_smem_bytes()
{
    return (size_t)(TY * 8 * D + BC * (D + 4) + BC * D + TY * 8 * BC) * sizeof(float);
}

template <int D, int BC, int TY>
static cudaError_t launch_f32(const float *q, const float *k, const float *v, float *o,
                              int batch_heads, int seq, float scale_log2, int causal,
                              cudaStream_t stream)
{
    const int BR = TY * 8, NT = (D / 8) * TY;
    size_t smem = f32_smem_bytes<D, BC, TY>();
    CUDA_CHECK(cudaFuncSetAttribute(attention_f32_kernel<D, BC, TY>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    dim3 grid((unsigned int)CEIL_DIV(seq, BR), (unsigned int)batch_heads);
    attention_f32_kernel<D, BC, TY><<<grid, NT, smem, stream>>>(q, k, v, o, seq, scale_log2,
                                                                causal);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

// Tiles: d = 64: 128 query rows x 64 keys, 128 threads (97 KB of shared
// memory); d = 128: 64 x 32, 128 threads (73 KB). GPUs that allow less
// shared memory per block get half-height tiles.
EXTERN_C cudaError_t attention_fused_f32(const float *q, const float *k, const float *v,
                                         float *o, int batch_heads, int seq, int head_dim,
                                         float scale, int causal, cudaStream_t stream)
{
    int empty, optin;
    CUDA_CHECK(check_args("attention_fused_f32", q, k, v, o, batch_heads, seq, head_dim, scale,
                          &empty));
    if (empty) return cudaSuccess;
    CUDA_CHECK(smem_optin(&optin));
    const float sl2 = scale * kLog2e;
    if (head_dim == 64)
        return (size_t)optin >= f32_smem_bytes<64, 64, 16>()
                   ? launch_f32<64, 64, 16>(q, k, v, o, batch_heads, seq, sl2, causal, stream)
                   : launch_f32<64, 32, 8>(q, k, v, o, batch_heads, seq, sl2, causal, stream);
    return (size_t)optin >= f32_smem_bytes<128, 32, 8>()
               ? launch_f32<128, 32, 8>(q, k, v, o, batch_heads, seq, sl2, causal, stream)
               : launch_f32<128, 32, 4>(q, k, v, o, batch_heads, seq, sl2, causal, stream);
}

template <int D, int MT, int BC, int NW>
static size_t f16_smem_bytes()
{
    return (size_t)(16 * MT * NW * D + 4 * BC * D) * sizeof(__half);
}

template <int D, int MT, int BC, int NW>
static cudaError_t launch_f16(const __half *q, const __half *k, const __half *v, __half *o,
                              int batch_heads, int seq, float scale_log2, int causal,
                              cudaStream_t stream)
{
    const int BR = 16 * MT * NW;
    size_t smem = f16_smem_bytes<D, MT, BC, NW>();
    CUDA_CHECK(cudaFuncSetAttribute(attention_f16_kernel<D, MT, BC, NW>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    dim3 grid((unsigned int)CEIL_DIV(seq, BR), (unsigned int)batch_heads);
    attention_f16_kernel<D, MT, BC, NW><<<grid, 32 * NW, smem, stream>>>(q, k, v, o, seq,
                                                                         scale_log2, causal);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

// Tiles: d = 64: 128 query rows (4 warps x 32) x 64 keys (48 KB of shared
// memory); d = 128: 128 rows (8 warps x 16) x 64 keys (96 KB), or 64 x 32
// with 4 warps (48 KB) on GPUs that allow less.
EXTERN_C cudaError_t attention_fused_f16(const uint16_t *q, const uint16_t *k,
                                         const uint16_t *v, uint16_t *o, int batch_heads,
                                         int seq, int head_dim, float scale, int causal,
                                         cudaStream_t stream)
{
    int empty, optin;
    CUDA_CHECK(check_args("attention_fused_f16", q, k, v, o, batch_heads, seq, head_dim, scale,
                          &empty));
    if (empty) return cudaSuccess;
    CUDA_CHECK(smem_optin(&optin));
    const __half *hq = (const __half *)q, *hk = (const __half *)k, *hv = (const __half *)v;
    __half *ho = (__half *)o;
    const float sl2 = scale * kLog2e;
    if (head_dim == 64)
        return launch_f16<64, 2, 64, 4>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream);
    return (size_t)optin >= f16_smem_bytes<128, 1, 64, 8>()
               ? launch_f16<128, 1, 64, 8>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream)
               : launch_f16<128, 1, 32, 4>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream);
}
