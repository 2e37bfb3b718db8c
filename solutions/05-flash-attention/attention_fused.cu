//@{
// solutions/05-flash-attention/attention_fused.cu — worked solution of lesson 05.
//
// O = softmax(Q Kᵀ · scale) V in ONE kernel per precision, FlashAttention's
// way (Dao et al. 2022; the loop order of FlashAttention-2, Dao 2023): a
// block owns a tile of query rows, streams K and V through shared memory one
// tile at a time, and keeps for each row
//     m  the running max of the scores seen so far  (log2 units here)
//     l  the running sum of exp(score - m)
//     O  the running, unnormalised output  sum_j exp(s_j - m) v_j
// When a new tile raises m, the old l and O are rescaled by exp(m_old - m_new)
// (lesson 02's online softmax, with a vector O riding along). After the last
// tile O / l is the answer, written once. The (seq, seq) matrix never exists.
//
// Part A: float32 on the CUDA cores. Each thread owns an 8 x 8 block of S and
//         an 8 x 8 block of O (register tiling, as in a SIMT GEMM); P crosses
//         to the P·V product through shared memory.
// Part B: float16 on tensor cores with mma.sync m16n8k16 (float32 accumulate).
//         S stays in the accumulator registers: the fragment layout of S is
//         exactly the layout the P·V product wants for P, so P never touches
//         shared memory. Double-buffered K/V tiles with cp.async: tile t+1
//         loads while tile t computes.
//
// Build and check:  ./lab check 05   (student file)   ./lab test (this one)
//@ guided
//| // lessons/05-flash-attention/attention_fused.cu — YOUR FILE for lesson 05.
//| //
//| // O = softmax(Q Kᵀ · scale) V in ONE kernel: a block owns a tile of query
//| // rows, K and V stream through shared memory one tile at a time, and each row
//| // keeps a running max m, a running sum l and an unnormalised output O that
//| // are rescaled whenever m grows (the online softmax of lesson 02). The
//| // (seq, seq) matrix never exists.
//| //
//| // Part A: attention_f32_kernel, float32 on the CUDA cores  (TODO A1 .. A7)
//| // Part B: attention_f16_kernel, float16 on tensor cores    (TODO B1 .. B5, bonus)
//| //
//| // It compiles and runs as shipped, but the kernels write nothing yet, so
//| // `./lab check 05` fails. The tile loading, the synchronisation and the
//| // launchers are written for you; the math is yours. The lesson's README.md
//| // explains the why and has hints, mildest first: read it first.
//@ open
//| // lessons/05-flash-attention/attention_fused.cu — YOUR FILE for lesson 05, open level.
//| //
//| // Write the two launchers of attention.h and the kernels they start:
//| //   attention_fused_f32  O = softmax(Q Kᵀ · scale) V in ONE kernel, float32:
//| //                        the (seq, seq) matrix never exists, nothing is
//| //                        allocated, Q, K and V are read and O written once
//| //   attention_fused_f16  the same with float16 inputs and output (bonus:
//| //                        tensor cores), float32 inside
//| // for head_dim 64 and 128 (anything else, a negative shape or a scale
//| // that is not positive and finite: cudaErrorInvalidValue, O untouched),
//| // any seq >= 1 (0: nothing written), up to 65535 heads (more: right, or
//| // refused), causal or not, any positive scale, more than 2^32 elements,
//| // only on the `stream` given, without waiting for it. attention.h is the
//| // contract; the README says what the checks test and how fast Part A must
//| // be.
//| //
//| // Nothing else is given: no tile loads, no cp.async or mma wrappers, no
//| // launch shapes. Use the course's helpers if you like (check.h: CEIL_DIV,
//| // FL_ALIGNED16, CUDA_CHECK, CUDA_CHECK_LAST). As shipped it compiles and
//| // every check fails. `./lab level guided 05` switches to the guided file
//| // (yours is kept).
//@}
#include "attention.h"

#include <cuda_fp16.h>
//@[

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

//@{
// exp(x) = 2^(x log2 e): we fold log2 e into the scale once, and every
// exponential becomes one ex2 on the special-function unit.
//@ guided
//| // exp(x) = 2^(x log2 e). The launchers pass scale_log2 = scale * log2(e), so
//| // exp(s · scale - m) is exp2f(s · scale_log2 - m) with m kept in log2 units:
//| // one multiply-add and one hardware exp2 per score. (expf works too.)
//@}
static const float kLog2e = 1.4426950408889634f;

// ============================================================================
//@{
// device helpers: fast exp2, asynchronous copies, tensor-core fragments
//@ guided
//| // helpers (complete: use these)
//@}
// ============================================================================

//@{
// 2^x on the special-function unit (relative error ~2^-22; 2^-inf = 0).
__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

//@ guided
//@}
__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

//@{
// 16 bytes global -> shared. With valid == false the 16 bytes are zero-filled
// and src is not read (rows past seq). On sm_80+ this is cp.async: the copy
// runs in the background, the thread goes on, and async_wait<N>() waits until
// at most N committed groups are still in flight. Older GPUs copy at once.
//@ guided
//| // 16 bytes global -> shared; zero-filled when valid is false (src not read).
//| // On sm_80+ a cp.async: async_wait<N>() waits until at most N committed
//| // groups are still in flight. Older GPUs copy at once.
//@}
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

//@{
// Four 8x8 matrices of 16-bit values from shared memory, one row address per
// lane (lanes 8i..8i+7 address matrix i). Lane L receives, of each matrix,
// row L/4, columns 2(L%4) and 2(L%4)+1 — the mma operand layout. .trans
// hands out the transposed matrix instead (rows 2(L%4), 2(L%4)+1 of column L/4).
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

// C (16x8, f32) += A (16x16, f16, row-major) * B (16x8, f16, "col" = B[k][n]
// stored n-major). Per lane, with g = lane/4 and t = lane%4:
//   a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..2t+1]
//   a[2] = A[g][2t+8..2t+9]  a[3] = A[g+8][2t+8..2t+9]
//   b0 = B[2t..2t+1][g]      b1 = B[2t+8..2t+9][g]
//   c[0..1] = C[g][2t..2t+1] c[2..3] = C[g+8][2t..2t+1]
// sm_75 has no m16n8k16 for f32 accumulate: two m16n8k8 steps do the same.
__device__ __forceinline__ void mma_16816(float c[4], const uint32_t a[4], uint32_t b0,
                                          uint32_t b1)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
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

__device__ __forceinline__ float f4_at(const float4 &v, int e)
{
    return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w;
}

// ============================================================================
// Part A — float32 kernel
// ============================================================================

//@ guided
//@}
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

//@{
// ROWS rows of D floats, source rows row0 .. row0 + ROWS - 1, into shared
// memory with a row stride of STRIDE floats; rows past seq become zeros.
//@ guided
//| // ROWS rows of D floats, source rows row0 .. row0 + ROWS - 1, into shared
//| // memory with a row stride of STRIDE floats. Rows past seq are zeros. The NT
//| // threads of the block share the work; call async_commit/async_wait after.
//@}
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

//@{
// q, k, v, o are (batch_heads, seq, D), row-major; block (x, y) computes the
// query tile x of head y. Threads form a TY x TX grid (TX = D / 8): thread
// (ty, tx) owns
//   rows     ty*8 .. ty*8+7 of the tile                 (RM = 8)
//   S cols   tx, tx + TX, tx + 2TX, ...                 (CN = BC / TX keys)
//   O cols   4(tx + TX u) .. +3, u = 0, 1               (8 of the D columns)
// so each thread computes an 8 x CN block of S and an 8 x 8 block of O, with
// every value it reads from shared memory used 8 or CN times (register
// tiling, as in a SIMT GEMM: 16 loads feed 256 FMAs). The TX threads of a row
// sit in adjacent lanes of one warp: row max and row sum are shuffles.
// Shared memory (floats):
//   Qs [BR][D]       Q tile, loaded once, swizzled (below)
//   Ks [BC][D + 4]   K tile; the +4 pad puts rows tx, tx+1, ... (read together
//                    by neighbouring lanes) in different banks
//   Vs [BC][D]       V tile
//   Ps [BR][BC]      P tile, the bridge from the S layout to the O layout,
//                    swizzled as Qs
// The swizzle. A warp holds SW = 32 / TX values of ty, and its lanes read one
// float4 of Q (or P) at once from rows ty*8 + i of those SW threads: rows
// 8 apart, whose float4s at one column sit in the same four banks, so the read
// took SW passes through shared memory. Each row's float4 c is stored at
// c ^ (row / 8 % SW) instead: the SW rows' float4s then fall in SW different
// banks and the read takes one pass. A thread's rows share row / 8, so it
// finds every float4 through SW pointers fixed for the whole kernel (qp, pp).
// A pad would do the same but take 2 KB more shared memory, and at d = 128
// that leaves room for one block an SM instead of two. (On an H200, against
// the kernel without it: 2.7-4.5% less time at d = 64, 0.5-0.8% at d = 128;
// plots/reference/logs/attention-f32-swizzle-h200.log.)
// K and V of a tile load together, but K is waited for first, and V only
// before P·V: V's load runs under S = Q Kᵀ. At d = 64 K of tile t+1 also
// loads during P·V of tile t (PREFETCH). At d = 128 that made ptxas hold 40
// fewer registers and the kernel 8% slower, so there it waits.
//@ guided
//| // ============================================================================
//| // Part A — float32 kernel
//| // ============================================================================
//|
//| // q, k, v, o are (batch_heads, seq, D), row-major; block (x, y) computes the
//| // query tile x (BR rows) of head y. The threads form a TY x TX grid
//| // (TX = D / 8); thread (ty, tx) owns
//| //   rows     ty*RM .. ty*RM + RM-1 of the tile               (RM = 8)
//| //   S cols   tx, tx + TX, tx + 2TX, ... of the K tile        (CN = BC / TX keys)
//| //   O cols   4(tx + TX u) .. 4(tx + TX u) + 3, u = 0, 1      (8 of the D columns)
//| // i.e. an RM x CN block of S and an RM x 8 block of O, both in registers.
//| // The TX threads that share a row are adjacent lanes of one warp, so a row's
//| // max and sum are __shfl_xor_sync over offsets 1, 2, .. TX/2 (README, hint 3).
//| // Shared memory (floats), filled for you:
//| //   Qs [BR][D]       Q tile (rows past seq are 0)
//| //   Ks [BC][D + 4]   K tile (row stride KS = D + 4; keys past seq are 0)
//| //   Vs [BC][D]       V tile
//| //   Ps [BR][BC]      yours: P goes here between the two products
//@}
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
//@{
    constexpr int SW = 32 / TX;             // values of ty in a warp
    constexpr bool PREFETCH = D == 64;      // K of tile t+1 during P·V of tile t
    const int sw = ty % SW;                 // this thread's rows' swizzle
    const float *qp[SW], *pp[SW];           // float4 c + j of a row: qp[j] + 4c
#pragma unroll
    for (int j = 0; j < SW; ++j) {
        qp[j] = Qs + 4 * ((j ^ sw) - j);
        pp[j] = Ps + 4 * ((j ^ sw) - j);
    }
//@ guided
//@}
//@{
    // Causal: the last query tiles see the most keys. Start them first so the
    // short ones fill the gaps at the end of the grid.
//@ guided
//|     // Causal: the last query tiles have the most keys to see; start them first.
//@}
    const int qtile = causal ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x;
//@{
    const int q0 = qtile * BR;
//@ guided
//|     const int q0 = qtile * BR;                 // first query row of this block
//@}
    const size_t head = (size_t)blockIdx.y * seq * D;
    q += head;
    k += head;
    v += head;
    o += head;
//@{
    // With causal masking the rows of this tile see keys 0 .. q0 + BR - 1 only.
//@ guided
//|     // With the causal mask, rows q0 .. q0 + BR - 1 see keys 0 .. q0 + BR - 1 only.
//@}
    const int kv_end = causal ? min(seq, q0 + BR) : seq;
    const int ntiles = CEIL_DIV(kv_end, BC);

//@{
    // Q once, swizzled; rows past seq read as 0: they are computed and never
    // stored. With PREFETCH, K and V of tile 0 follow, K with Q, V apart.
    for (int i = tid; i < BR * D / 4; i += NT) {
        int r = i / (D / 4), c = i % (D / 4);
        bool ok = q0 + r < seq;
        copy16_async(Qs + r * D + 4 * (c ^ (r / RM % SW)),
                     ok ? q + (size_t)(q0 + r) * D + 4 * c : q, ok);
    }
    if (PREFETCH) {
        load_rows_f32<D, BC, KS, NT>(Ks, k, 0, seq);
        async_commit();
        load_rows_f32<D, BC, D, NT>(Vs, v, 0, seq);
    }
    async_commit();
//@ guided
//|     load_rows_f32<D, BR, D, NT>(Qs, q, q0, seq);
//|     async_commit();
//@}

//@{ A1
    float m[RM], l[RM], acc[RM][8];
#pragma unroll
    for (int i = 0; i < RM; ++i) {
        m[i] = -INFINITY; // no score seen yet (log2 units: m = max s · scale · log2 e)
        l[i] = 0.f;       // this thread's share of the row sum
#pragma unroll
        for (int c = 0; c < 8; ++c) acc[i][c] = 0.f;
    }
//@ guided
//|     // TODO(A1): this thread's state for its RM rows, in registers (plain
//|     //           local arrays indexed by unrolled loop counters):
//|     //             float m[RM];       running max, in log2 units (start -INFINITY)
//|     //             float l[RM];       running sum of exp2(s - m)    (start 0)
//|     //             float acc[RM][8];  the unnormalised O block       (start 0)
//@}

    for (int t = 0; t < ntiles; ++t) {
//@{
        const int kv0 = t * BC;
//@ guided
//|         const int kv0 = t * BC; // first key of this tile
//@}
//@{
        if (!PREFETCH) { // K_t, then V_t, as two groups of copies
            load_rows_f32<D, BC, KS, NT>(Ks, k, kv0, seq);
            async_commit();
            load_rows_f32<D, BC, D, NT>(Vs, v, kv0, seq);
            async_commit();
        }
        async_wait<1>(); // this thread's copies of K_t (and Q) have landed ...
        __syncthreads(); // ... and everyone else's; V_t may still be on its way
//@ guided
//|         load_rows_f32<D, BC, KS, NT>(Ks, k, kv0, seq);
//|         load_rows_f32<D, BC, D, NT>(Vs, v, kv0, seq);
//|         async_commit();
//|         async_wait<0>();
//|         __syncthreads(); // K_t, V_t (and Qs) are in shared memory for every thread
//@}

//@{ A2
        // ---- S = Q K_tᵀ for this thread's 8 x CN block (registers) ----
        float s[RM][CN];
#pragma unroll
        for (int i = 0; i < RM; ++i)
#pragma unroll
            for (int j = 0; j < CN; ++j) s[i][j] = 0.f;
#pragma unroll(4 / SW)
        for (int kg = 0; kg < D; kg += 4 * SW)
#pragma unroll
        for (int j = 0; j < SW; ++j) { // float4 kk / 4 of Q's rows, through qp[j]
            const int kk = kg + 4 * j;
            float4 qa[RM];
#pragma unroll
            for (int i = 0; i < RM; ++i) qa[i] = *(const float4 *)(qp[j] + (ty * RM + i) * D + kk);
#pragma unroll
            for (int j = 0; j < CN; ++j) {
                float4 kb = *(const float4 *)(Ks + (tx + TX * j) * KS + kk);
#pragma unroll
                for (int i = 0; i < RM; ++i) {
                    s[i][j] = fmaf(qa[i].x, kb.x, s[i][j]);
                    s[i][j] = fmaf(qa[i].y, kb.y, s[i][j]);
                    s[i][j] = fmaf(qa[i].z, kb.z, s[i][j]);
                    s[i][j] = fmaf(qa[i].w, kb.w, s[i][j]);
                }
            }
        }

//@ guided
//|         // TODO(A2): S = Q K_tᵀ for your RM x CN block, in registers:
//|         //             s[i][j] = sum_d Qs[(ty*RM + i)*D + d] * Ks[(tx + TX*j)*KS + d]
//|         //           Read float4s (4 dims at a time) and reuse each value: a Q
//|         //           float4 serves CN keys, a K float4 serves RM rows.
//@}
//@{ A3
        // Masks, only on tiles that need them: keys past seq (the zero-filled
        // rows of the last tile would otherwise score 0, not -inf) and,
        // causal, keys after the query.
        if (kv0 + BC > seq || (causal && kv0 + BC - 1 > q0 + ty * RM)) {
#pragma unroll
            for (int i = 0; i < RM; ++i)
#pragma unroll
                for (int j = 0; j < CN; ++j) {
                    int key = kv0 + tx + TX * j, query = q0 + ty * RM + i;
                    if (key >= seq || (causal && key > query)) s[i][j] = -INFINITY;
                }
        }

//@ guided
//|         // TODO(A3): the masks: key = kv0 + tx + TX*j is not a real key when
//|         //           key >= seq (zero-filled rows), and with causal != 0 a
//|         //           query (q0 + ty*RM + i) must not see key > query. Set s to
//|         //           -INFINITY there, so that exp turns it into 0.
//@}
//@{ A4
        // ---- online softmax, row by row ----
#pragma unroll
        for (int i = 0; i < RM; ++i) {
            float mx = s[i][0];
#pragma unroll
            for (int j = 1; j < CN; ++j) mx = fmaxf(mx, s[i][j]);
#pragma unroll
            for (int off = 1; off < TX; off *= 2) // the row's TX threads: adjacent lanes
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            // m_new = max(m_old, rowmax(S) · scale · log2 e)   (scale > 0)
            float m_new = fmaxf(m[i], mx * scale_log2);
            // A row with every key masked so far keeps m = -inf; exponents are
            // taken against 0 then, so they give 0, never inf - inf = NaN.
            float m_use = m_new == -INFINITY ? 0.f : m_new;
            float alpha = fast_exp2(m[i] - m_use); // exp(m_old - m_new): rescales l and O
            float rs = 0.f;
#pragma unroll
            for (int j = 0; j < CN; ++j) {
                s[i][j] = fast_exp2(fmaf(s[i][j], scale_log2, -m_use)); // P = exp(S·scale - m_new)
                rs += s[i][j];
            }
            // l_new = exp(m_old - m_new) l_old + rowsum(P). Each thread keeps
            // the sum over its own columns: the factor is the row's, so the
            // shares still add up to the row's l at the end.
            l[i] = l[i] * alpha + rs;
            m[i] = m_new;
#pragma unroll
            for (int c = 0; c < 8; ++c) acc[i][c] *= alpha; // O = exp(m_old - m_new) O ...
        }

//@ guided
//|         // TODO(A4): the online softmax, for each of your rows i:
//|         //             mx    = max over the row's BC scores (yours, then the
//|         //                     other TX - 1 threads' with __shfl_xor_sync)
//|         //             m_new = max(m[i], mx * scale_log2)
//|         //             alpha = exp2f(m[i] - m_new)       rescales the old l and O
//|         //             p     = exp2f(s * scale_log2 - m_new)   (overwrite s)
//|         //             l[i]  = alpha * l[i] + (sum of your p)
//|         //             acc[i][:] *= alpha;   m[i] = m_new
//|         //           (README: why your own share of l is enough until the end,
//|         //           and what to do when m_new is still -INFINITY.)
//@}
//@{ A5
        // P to shared memory: the P·V product needs whole rows of P, which
        // are spread over the TX threads of the row.
#pragma unroll
        for (int i = 0; i < RM; ++i)
#pragma unroll
            for (int j = 0; j < CN; ++j) { // column c of float4 c / 4, swizzled
                const int c = tx + TX * j;
                Ps[(ty * RM + i) * BC + ((((c >> 2) ^ sw) << 2) | (c & 3))] = s[i][j];
            }
        async_wait<0>(); // V_t
        __syncthreads(); // P and V_t visible to every thread, K_t read by all
        if (PREFETCH && t + 1 < ntiles) {
            load_rows_f32<D, BC, KS, NT>(Ks, k, kv0 + BC, seq);
            async_commit();
        }

//@ guided
//|         // TODO(A5): write your p into Ps[(ty*RM + i)*BC + tx + TX*j].
//|
//|         __syncthreads(); // P is in shared memory for every thread
//|
//@}
//@{ A6
        // ---- ... + P V_t ----
#pragma unroll((2 + SW - 1) / SW)
        for (int cg = 0; cg < BC; cg += 4 * SW)
#pragma unroll
        for (int j = 0; j < SW; ++j) { // float4 c / 4 of P's rows, through pp[j]
            const int c = cg + 4 * j;
            float4 pa[RM];
#pragma unroll
            for (int i = 0; i < RM; ++i) pa[i] = *(const float4 *)(pp[j] + (ty * RM + i) * BC + c);
#pragma unroll
            for (int e = 0; e < 4; ++e)
#pragma unroll
                for (int u = 0; u < 2; ++u) {
                    float4 vb = *(const float4 *)(Vs + (c + e) * D + 4 * (tx + TX * u));
#pragma unroll
                    for (int i = 0; i < RM; ++i) {
                        float p = f4_at(pa[i], e);
                        acc[i][4 * u + 0] = fmaf(p, vb.x, acc[i][4 * u + 0]);
                        acc[i][4 * u + 1] = fmaf(p, vb.y, acc[i][4 * u + 1]);
                        acc[i][4 * u + 2] = fmaf(p, vb.z, acc[i][4 * u + 2]);
                        acc[i][4 * u + 3] = fmaf(p, vb.w, acc[i][4 * u + 3]);
                    }
                }
        }
        __syncthreads(); // everyone is done with Ks, Vs and Ps before the next tile
        if (PREFETCH && t + 1 < ntiles) {
            load_rows_f32<D, BC, D, NT>(Vs, v, kv0 + BC, seq);
            async_commit();
        }
//@ guided
//|         // TODO(A6): acc += P V_t: acc[i][4u + e] += sum_c Ps[(ty*RM + i)*BC + c]
//|         //           * Vs[c*D + 4*(tx + TX*u) + e]  for c < BC, u = 0, 1, e = 0..3.
//|
//|         __syncthreads(); // everyone is done with Ks, Vs, Ps before the next tile
//@}
    }

//@{ A7
    // ---- O = O / l, written once ----
#pragma unroll
    for (int i = 0; i < RM; ++i) {
        float lt = l[i];
#pragma unroll
        for (int off = 1; off < TX; off *= 2) lt += __shfl_xor_sync(0xffffffffu, lt, off);
        float inv = 1.f / lt; // lt >= 1: the row's largest term is exp(0)
        int query = q0 + ty * RM + i;
        if (query < seq) {
#pragma unroll
            for (int u = 0; u < 2; ++u)
                ((float4 *)(o + (size_t)query * D))[tx + TX * u] =
                    make_float4(acc[i][4 * u] * inv, acc[i][4 * u + 1] * inv,
                                acc[i][4 * u + 2] * inv, acc[i][4 * u + 3] * inv);
        }
    }
//@ guided
//|     // TODO(A7): O = acc / l, written once: sum each row's l over its TX
//|     //           threads (shuffles), then store your 8 columns of every row
//|     //           i with q0 + ty*RM + i < seq (two float4 stores per row).
//|     (void)tx;
//|     (void)ty;
//|     (void)CN;
//|     (void)Ps;
//|     (void)o;
//|     (void)scale_log2;
//@}
}

//@{
// ============================================================================
// Part B — float16 kernel on tensor cores
// ============================================================================
//@ guided
//| // ============================================================================
//| // Part B — helpers for tensor cores (complete: use these)
//| // ============================================================================
//|
//| // Four 8x8 matrices of 16-bit values from shared memory, one row address per
//| // lane (lanes 8i .. 8i+7 give the 8 row addresses of matrix i). Lane L
//| // receives, of each matrix i, row L/4, columns 2(L%4) and 2(L%4)+1, packed in
//| // r[i]. The .trans version delivers the transposed matrix instead: rows
//| // 2(L%4) and 2(L%4)+1 of column L/4.
//| __device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const __half *p)
//| {
//|     asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
//|                  : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
//|                  : "r"(smem_u32(p)));
//| }
//|
//| __device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const __half *p)
//| {
//|     asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
//|                  : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
//|                  : "r"(smem_u32(p)));
//| }
//|
//| // C (16x8, float32) += A (16x16, float16) * B (16x8, float16), one warp.
//| // Per lane, with g = lane/4 and t = lane%4 (two halves per register, the
//| // lower column or k index in the low 16 bits):
//| //   a[0] = A[g][2t, 2t+1]      a[1] = A[g+8][2t, 2t+1]
//| //   a[2] = A[g][2t+8, 2t+9]    a[3] = A[g+8][2t+8, 2t+9]
//| //   b0   = B[2t, 2t+1][g]      b1   = B[2t+8, 2t+9][g]
//| //   c[0], c[1] = C[g][2t, 2t+1]     c[2], c[3] = C[g+8][2t, 2t+1]
//| __device__ __forceinline__ void mma_16816(float c[4], const uint32_t a[4], uint32_t b0,
//|                                           uint32_t b1)
//| {
//| #if __CUDA_ARCH__ >= 800
//|     asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
//|                  "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
//|                  : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
//|                  : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
//| #else // sm_75: the same product as two k = 8 steps
//|     asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
//|                  "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
//|                  : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
//|                  : "r"(a[0]), "r"(a[1]), "r"(b0));
//|     asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
//|                  "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
//|                  : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
//|                  : "r"(a[2]), "r"(a[3]), "r"(b1));
//| #endif
//| }
//|
//| // Two floats -> one register of two halves (lo in the low 16 bits).
//| __device__ __forceinline__ uint32_t pack_half2(float lo, float hi)
//| {
//|     __half2 h = __floats2half2_rn(lo, hi);
//|     uint32_t u;
//|     memcpy(&u, &h, sizeof u);
//|     return u;
//| }
//@}

//@{
// Element (row, col) of a [rows][D] half tile in shared memory. Rows are D*2
// bytes (a multiple of 128), so the 8 rows an ldmatrix reads at the same
// column would all hit the same banks; XOR-ing the 16-byte chunk index with
// row % 8 spreads them over 8 different chunks (no padding needed).
//@ guided
//| // Element (row, col) of a [rows][D] half tile in shared memory, swizzled:
//| // the 16-byte chunk index is XOR-ed with row % 8, so the 8 rows one ldmatrix
//| // reads at the same column sit in 8 different bank groups.
//@}
template <int D>
__device__ __forceinline__ int swz(int row, int col)
{
    return row * D + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

//@{
// ROWS x D halves from src rows row0.. (zeros past seq) into a swizzled tile.
//@ guided
//| // ROWS x D halves from src rows row0 .. (zeros past seq) into a swizzled tile.
//@}
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

//@{
// The masks and the online softmax of one key tile on mma accumulators (the
// C layout: s[mt][n][0..1] row g, keys kv0 + 8n + 2t4, +1; [2..3] row g + 8),
// for a warp whose first query row is wq_first; P = exp(S · scale - m) is
// left in s. Part B's kernel and the float32 tensor-core kernel share it.
template <int MT, int NB, int ND>
__device__ __forceinline__ void softmax_tile_mma(float (&s)[MT][NB][4], float (&m)[MT][2],
                                                 float (&l)[MT][2], float (&oacc)[MT][ND][4],
                                                 int kv0, int seq, int causal, int wq_first,
                                                 int g, int t4, float scale_log2)
{
    constexpr int BC = 8 * NB;
    if (kv0 + BC > seq || (causal && kv0 + BC - 1 > wq_first)) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int n = 0; n < NB; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    int key = kv0 + 8 * n + 2 * t4 + (e & 1);
                    int query = wq_first + 16 * mt + g + 8 * (e >> 1);
                    if (key >= seq || (causal && key > query)) s[mt][n][e] = -INFINITY;
                }
    }

    // ---- online softmax on the accumulators ----
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) { // row g (h = 0) and row g + 8 (h = 1)
            float mx = -INFINITY;
#pragma unroll
            for (int n = 0; n < NB; ++n)
                mx = fmaxf(mx, fmaxf(s[mt][n][2 * h], s[mt][n][2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1)); // the row's 4 lanes
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            // m_new = max(m_old, rowmax(S) · scale · log2 e)   (scale > 0)
            float m_new = fmaxf(m[mt][h], mx * scale_log2);
            float m_use = m_new == -INFINITY ? 0.f : m_new; // all masked: no NaN
            float alpha = fast_exp2(m[mt][h] - m_use);      // exp(m_old - m_new)
            float rs = 0.f;
#pragma unroll
            for (int n = 0; n < NB; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    // P = exp(S · scale - m_new), one FFMA and one ex2
                    float p = fast_exp2(fmaf(s[mt][n][2 * h + e], scale_log2, -m_use));
                    s[mt][n][2 * h + e] = p;
                    rs += p;
                }
            l[mt][h] = l[mt][h] * alpha + rs; // l_new = alpha l_old + rowsum(P) (lane share)
            m[mt][h] = m_new;
#pragma unroll
            for (int n = 0; n < ND; ++n) { // O = alpha O ...
                oacc[mt][n][2 * h] *= alpha;
                oacc[mt][n][2 * h + 1] *= alpha;
            }
        }
}

// A warp's state for its rows: O = 0, l = 0, m = -inf (log2 units).
template <int MT, int ND>
__device__ __forceinline__ void init_rows_mma(float (&oacc)[MT][ND][4], float (&m)[MT][2],
                                              float (&l)[MT][2])
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            m[mt][h] = -INFINITY;
            l[mt][h] = 0.f;
        }
#pragma unroll
        for (int n = 0; n < ND; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) oacc[mt][n][e] = 0.f;
    }
}

// Two neighbouring outputs of a row, as the output type wants them.
__device__ __forceinline__ void store_pair(float *row, int i, float a, float b)
{
    ((float2 *)row)[i] = make_float2(a, b);
}

__device__ __forceinline__ void store_pair(__half *row, int i, float a, float b)
{
    ((__half2 *)row)[i] = __floats2half2_rn(a, b);
}

// O = O / l for the warp's rows below seq, written once: each row's l is the
// sum of its 4 lanes' shares; lane (g, t4) holds dims 8n + 2t4, +1.
template <int D, int MT, typename T>
__device__ __forceinline__ void store_o_mma(T *o, const float (&oacc)[MT][D / 8][4],
                                            const float (&l)[MT][2], int wq_first, int seq,
                                            int g, int t4)
{
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float lt = l[mt][h];
            lt += __shfl_xor_sync(0xffffffffu, lt, 1);
            lt += __shfl_xor_sync(0xffffffffu, lt, 2);
            float inv = 1.f / lt;
            int query = wq_first + 16 * mt + g + 8 * h;
            if (query < seq) {
                T *orow = o + (size_t)query * D;
#pragma unroll
                for (int n = 0; n < D / 8; ++n)
                    store_pair(orow, 4 * n + t4, oacc[mt][n][2 * h] * inv,
                               oacc[mt][n][2 * h + 1] * inv);
            }
        }
}

//@ guided
//@}
//@{
// q, k, v, o are (batch_heads, seq, D) float16, row-major; block (x, y)
// computes query tile x of head y with NW warps, each owning MT row groups of
// 16 (BR = 16 MT NW rows per block). Per lane, with g = lane/4, t = lane%4, the
// accumulators hold (mma C layout):
//   s[mt][n][0..1] = S[row g][key 8n + 2t ..]    s[mt][n][2..3] = row g + 8
//   o[mt][n][0..1] = O[row g][dim 8n + 2t ..]    o[mt][n][2..3] = row g + 8
// so each lane keeps m and l for 2 rows per row group, and a row's 4 lanes
// (same g) are adjacent: row max and row sum are two shuffles.
// Shared memory (halves, swizzled): Qs [BR][D], Ks [2][BC][D], Vs [2][BC][D];
// K/V are double-buffered: tile t+1 loads while tile t computes.
//@ guided
//| // ============================================================================
//| // Part B — float16 kernel (bonus)
//| // ============================================================================
//|
//| // q, k, v, o are (batch_heads, seq, D) float16; block (x, y) computes query
//| // tile x of head y with NW warps; warp w owns rows wr .. wr + 16 MT - 1 of the
//| // tile (MT groups of 16 rows, BR = 16 MT NW). Shared memory (halves, swizzled,
//| // filled for you): Qs [BR][D], Ks [2][BC][D], Vs [2][BC][D] (K and V double
//| // buffered: tile t+1 loads while tile t computes).
//| // Per lane (g = lane/4, t4 = lane%4), in the mma C layout:
//| //   S block n (keys 8n .. 8n+7) of row group mt:  s[mt][n][0..1] = row g, keys 8n + 2t4, +1
//| //                                                 s[mt][n][2..3] = row g + 8, same keys
//| //   O block n (dims 8n .. 8n+7): the same with dims for keys
//@}
template <int D, int MT, int BC, int NW>
__global__ void __launch_bounds__(32 * NW, 8 / NW)
    attention_f16_kernel(const __half *__restrict__ q, const __half *__restrict__ k,
                         const __half *__restrict__ v, __half *__restrict__ o, int seq,
                         float scale_log2, int causal)
{
//@{
    constexpr int NT = 32 * NW, BR = 16 * MT * NW, KD = D / 16, NB = BC / 8, ND = D / 8;
//@ guided
//|     constexpr int NT = 32 * NW, BR = 16 * MT * NW, KD = D / 16;
//@}
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

//@{
    // Q as A operands: qf[mt][kk] is rows wr + 16mt .. +15, dims 16kk ..
    // 16kk+15. Lanes 0-7 address rows 0-7 at dim 0 (-> a[0]), 8-15 rows 8-15
    // (-> a[1]), 16-23 rows 0-7 at dim 8 (-> a[2]), 24-31 rows 8-15 at dim 8
    // (-> a[3]). Q stays in registers for the whole loop when its fragments
    // fit beside the S and O accumulators (QR: at most 160 of the 255
    // registers a thread may have for the three); for the wider tiles it does
    // not, and each key tile reads Q's fragments again from shared memory
    // (in the QK loop below), which costs less than the spills would.
    constexpr bool QR = MT * (KD + ND + NB) * 4 <= 160;
    uint32_t qf[QR ? MT : 1][QR ? KD : 1][4];
    if constexpr (QR)
//@ guided
//|     // Q, as mma A operands, for the whole loop: qf[mt][kk] covers rows
//|     // wr + 16mt .. +15 and dims 16kk .. 16kk + 15. Lanes 0-7 address rows 0-7
//|     // at dim 0 (-> a[0]), lanes 8-15 rows 8-15 (-> a[1]), 16-23 rows 0-7 at
//|     // dim 8 (-> a[2]), 24-31 rows 8-15 at dim 8 (-> a[3]).
//|     uint32_t qf[MT][KD][4];
//@}
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kk = 0; kk < KD; ++kk)
            ldmatrix_x4(qf[mt][kk], Qs + swz<D>(wr + 16 * mt + (lane & 7) + 8 * ((lane >> 3) & 1),
                                                16 * kk + 8 * (lane >> 4)));

//@{ B1
    float oacc[MT][ND][4], m[MT][2], l[MT][2];
    init_rows_mma(oacc, m, l); // O = 0, l = 0, m = -inf (no score seen yet)
//@ guided
//|     // TODO(B1): state in registers: float oacc[MT][D / 8][4] (0), and per
//|     //           row group and half (rows g, g + 8) float m[MT][2] (-INFINITY)
//|     //           and l[MT][2] (0).
//@}

//@{
    const int wq_first = q0 + wr, wq_last = q0 + wr + 16 * MT - 1;
//@ guided
//@}
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

//@{ B2
        // Causal: a warp whose rows all come before this tile's first key has
        // nothing to add (every score would be masked). It still takes part
        // in the __syncthreads() above.
        if (!(causal && kv0 > wq_last)) {
            // ---- S = Q K_tᵀ, on tensor cores ----
            float s[MT][NB][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int n = 0; n < NB; ++n)
#pragma unroll
                    for (int e = 0; e < 4; ++e) s[mt][n][e] = 0.f;
#pragma unroll
            for (int kk = 0; kk < KD; ++kk) {
                uint32_t qa[MT][4]; // Q's fragments for dims 16kk .. 16kk+15
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    if constexpr (QR) {
#pragma unroll
                        for (int e = 0; e < 4; ++e) qa[mt][e] = qf[mt][kk][e];
                    } else {
                        ldmatrix_x4(qa[mt], Qs + swz<D>(wr + 16 * mt + (lane & 7) +
                                                            8 * ((lane >> 3) & 1),
                                                        16 * kk + 8 * (lane >> 4)));
                    }
                }
#pragma unroll
                for (int np = 0; np < NB / 2; ++np) {
                    // B = Kᵀ: B[dim][key] = K[key][dim], so K's rows as stored
                    // are B's columns: no transpose. One x4 load gives keys
                    // 16np..+7 (dims 0-7, 8-15) and keys 16np+8..+15 (same).
                    uint32_t kf[4];
                    ldmatrix_x4(kf, Kb + swz<D>(16 * np + (lane & 7) + 8 * (lane >> 4),
                                                16 * kk + 8 * ((lane >> 3) & 1)));
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma_16816(s[mt][2 * np], qa[mt], kf[0], kf[1]);
                        mma_16816(s[mt][2 * np + 1], qa[mt], kf[2], kf[3]);
                    }
                }
            }

//@ guided
//|         // TODO(B2): S = Q K_tᵀ: float s[MT][BC / 8][4] = 0, then for every kk
//|         //           and every pair of key blocks np (keys 16np .. 16np + 15):
//|         //             uint32_t kf[4];
//|         //             ldmatrix_x4(kf, Kb + swz<D>(16*np + (lane & 7) + 8*(lane >> 4),
//|         //                                         16*kk + 8*((lane >> 3) & 1)));
//|         //             mma_16816(s[mt][2np],     qf[mt][kk], kf[0], kf[1]);
//|         //             mma_16816(s[mt][2np + 1], qf[mt][kk], kf[2], kf[3]);
//|         //           (README, hint 6: why K needs no transpose.)
//@}
//@{ B3
            softmax_tile_mma(s, m, l, oacc, kv0, seq, causal, wq_first, g, t4, scale_log2);

//@ guided
//|         // TODO(B3): masks as in Part A (the key and query of s[mt][n][e] follow
//|         //           from the layout above), then the online softmax for rows
//|         //           g and g + 8 of each row group: the row's 4 lanes are
//|         //           adjacent (shuffle offsets 1 and 2).
//@}
//@{ B4
            // ---- ... + P V_t, P straight from the S registers ----
            // The A operand for keys 16kc .. 16kc+15 is S's n-tiles 2kc and
            // 2kc+1, already in the a[0..3] layout: only a float -> half pack.
#pragma unroll
            for (int kc = 0; kc < BC / 16; ++kc) {
                uint32_t pa[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    pa[mt][0] = pack_half2(s[mt][2 * kc][0], s[mt][2 * kc][1]);
                    pa[mt][1] = pack_half2(s[mt][2 * kc][2], s[mt][2 * kc][3]);
                    pa[mt][2] = pack_half2(s[mt][2 * kc + 1][0], s[mt][2 * kc + 1][1]);
                    pa[mt][3] = pack_half2(s[mt][2 * kc + 1][2], s[mt][2 * kc + 1][3]);
                }
#pragma unroll
                for (int dp = 0; dp < D / 16; ++dp) {
                    // B = V: B[key][dim], stored key-major, so each lane needs
                    // two keys of one dim: the transposing load.
                    uint32_t vf[4];
                    ldmatrix_x4_trans(vf, Vb + swz<D>(16 * kc + (lane & 7) + 8 * ((lane >> 3) & 1),
                                                      16 * dp + 8 * (lane >> 4)));
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma_16816(oacc[mt][2 * dp], pa[mt], vf[0], vf[1]);
                        mma_16816(oacc[mt][2 * dp + 1], pa[mt], vf[2], vf[3]);
                    }
                }
            }
        }
//@ guided
//|         // TODO(B4): O += P V_t. For keys 16kc .. 16kc + 15 the A operand is
//|         //           S's blocks 2kc and 2kc + 1 packed to half2:
//|         //             pa[0] = pack_half2(s[mt][2kc][0], s[mt][2kc][1]), pa[1] from
//|         //             [2kc][2..3], pa[2] from [2kc+1][0..1], pa[3] from [2kc+1][2..3];
//|         //           B fragments of V for dims 16dp .. 16dp + 15:
//|         //             ldmatrix_x4_trans(vf, Vb + swz<D>(16*kc + (lane & 7) + 8*((lane >> 3) & 1),
//|         //                                               16*dp + 8*(lane >> 4)));
//|         //             mma_16816(oacc[mt][2dp], pa, vf[0], vf[1]); ... [2dp + 1] with vf[2], vf[3]
//|         (void)Kb;
//|         (void)Vb;
//|         (void)kv0;
//@}
    }

//@{ B5
    // ---- O = O / l, written once as float16 ----
    store_o_mma<D>(o, oacc, l, wq_first, seq, g, t4);
//@ guided
//|     // TODO(B5): O = oacc / l (l summed over the row's 4 lanes), stored as
//|     //           __half2 pairs: row wr + 16mt + g + 8h of the tile, dims
//|     //           8n + 2t4 and 8n + 2t4 + 1, for rows < seq.
//|     (void)qf;
//|     (void)g;
//|     (void)t4;
//|     (void)scale_log2;
//@}
}

//@{
// ============================================================================
// Going further: float32 on tensor cores, three TF32 products a multiply
// ============================================================================

// Not the lesson's path (Part A is): attention_fused_f32_tc (attention.h),
// which ./lab compare times beside Part A, runs it on GPUs with TF32 tensor
// cores (sm_80 and newer) and the shared memory for it. It is what passes
// SDPA's memory-efficient kernel, which works this way too, at head_dim 128.
// README, "Going further", has the numbers.
//
// A TF32 operand keeps 10 of a float's 23 mantissa bits, too few for the
// lesson's float32 tolerance on its own. Split each float x into hi (x
// rounded to TF32) and lo = x - hi (exact in float32; the tensor core reads
// its top 10 bits), and a b = ah bh + ah bl + al bh + al bl: the last product
// is 2^-22 of a b and is left out, the other three are three mma.sync
// m16n8k8 TF32 steps. Three products still cost less than the CUDA cores'
// FMAs: on an H200 this kernel took 0.71x the time of Part A's at d = 64 and
// 0.67x at d = 128.
//
// Accuracy beside speed. A tensor core adds its products into the
// accumulator with less care than an FFMA rounds (it truncates), so a long
// chain of mma.sync into one accumulator drifts: O summed that way over 4096
// keys came out 8-9x further from Part A's output than it does now. So P·V
// adds each key block's three products into a fresh accumulator and
// that into O with ordinary float32 adds (S's chains, D / 8 steps of three,
// are short enough as they are).
//
// Layout: as Part B, each of NW warps owns MT row groups of 16, the mma C
// layout puts S[row g][key 8n + 2t ..] and O[row g][dim 8n + 2t ..] in lane
// (g, t). For Q·Kᵀ the sum over dims may take them in any order, as long as
// Q and K agree: the A fragment's k = t is dim 2t and k = t + 4 dim 2t + 1,
// so both dims of a lane are one 8-byte load from shared memory. For P·V the
// same trick on keys turns S's C fragment into P's A fragment with no
// shuffle (k = t is key 2t, k = t + 4 key 2t + 1), and V's B fragment reads
// the same two keys. Rows of Q and K are D + 8 floats apart, rows of V
// D + 4: every fragment load then hits 32 different banks.
// hi: x rounded to TF32 (half a TF32 step added, the 13 low bits cleared);
// lo: the rest, exact.
__device__ __forceinline__ void split_tf32(float x, uint32_t &hi, uint32_t &lo)
{
    hi = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    lo = __float_as_uint(x - __uint_as_float(hi));
}

// C (16x8, float32) += A (16x8, TF32) * B (8x8, TF32), one warp.
__device__ __forceinline__ void mma_tf32(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
#if __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// c += (ah + al)(bh + bl) less al bl, the small products first.
__device__ __forceinline__ void mma_3xtf32(float c[4], const uint32_t ah[4], const uint32_t al[4],
                                           uint32_t bh0, uint32_t bh1, uint32_t bl0, uint32_t bl1)
{
    mma_tf32(c, al, bh0, bh1);
    mma_tf32(c, ah, bl0, bl1);
    mma_tf32(c, ah, bh0, bh1);
}

// q, k, v, o as Part A. Shared memory (floats): Qs [BR][D + 8], Ks [BC][D + 8],
// Vs [BC][D + 4]. K and V of a tile are two groups of copies; K of tile t+1
// loads during P·V of tile t and V of t+1 during S of t+1.
template <int D, int BC, int NW, int MT>
__global__ void __launch_bounds__(32 * NW)
    attention_f32_tc_kernel(const float *__restrict__ q, const float *__restrict__ k,
                            const float *__restrict__ v, float *__restrict__ o, int seq,
                            float scale_log2, int causal)
{
#if __CUDA_ARCH__ >= 800
    constexpr int NT = 32 * NW, BR = 16 * MT * NW, QS = D + 8, VS = D + 4, NB = BC / 8,
                  ND = D / 8;
    extern __shared__ float4 smem_tc[];
    float *Qs = (float *)smem_tc;
    float *Ks = Qs + BR * QS;
    float *Vs = Ks + BC * QS;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    const int qtile = causal ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x;
    const int q0 = qtile * BR, wr = 16 * MT * warp;
    const size_t head = (size_t)blockIdx.y * seq * D;
    q += head;
    k += head;
    v += head;
    o += head;
    const int kv_end = causal ? min(seq, q0 + BR) : seq;
    const int ntiles = CEIL_DIV(kv_end, BC);
    load_rows_f32<D, BR, QS, NT>(Qs, q, q0, seq);
    load_rows_f32<D, BC, QS, NT>(Ks, k, 0, seq);
    async_commit();
    load_rows_f32<D, BC, VS, NT>(Vs, v, 0, seq);
    async_commit();

    float oacc[MT][ND][4], m[MT][2], l[MT][2];
    init_rows_mma(oacc, m, l); // O = 0, l = 0, m = -inf (no score seen yet)
    const int wq_first = q0 + wr, wq_last = wq_first + 16 * MT - 1;
    for (int t = 0; t < ntiles; ++t) {
        const int kv0 = t * BC;
        async_wait<1>(); // Q and K_t; V_t may still be on its way
        __syncthreads();
        // Causal: a warp whose rows all come before this tile's first key
        // has nothing to add; it still meets every barrier.
        const bool active = !(causal && kv0 > wq_last);
        float s[MT][NB][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int n = 0; n < NB; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[mt][n][e] = 0.f;
        if (active) {
            // ---- S = Q K_tᵀ ----
#pragma unroll
            for (int kk = 0; kk < D / 8; ++kk) {
                uint32_t ah[MT][4], al[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) { // rows g and g + 8, dims 8kk + 2t4, +1
                    const float *qa = Qs + (wr + 16 * mt + g) * QS + 8 * kk + 2 * t4;
                    float2 r0 = *(const float2 *)qa, r1 = *(const float2 *)(qa + 8 * QS);
                    split_tf32(r0.x, ah[mt][0], al[mt][0]);
                    split_tf32(r1.x, ah[mt][1], al[mt][1]);
                    split_tf32(r0.y, ah[mt][2], al[mt][2]);
                    split_tf32(r1.y, ah[mt][3], al[mt][3]);
                }
#pragma unroll
                for (int n = 0; n < NB; ++n) { // key 8n + g, the same two dims
                    float2 kb = *(const float2 *)(Ks + (8 * n + g) * QS + 8 * kk + 2 * t4);
                    uint32_t bh0, bl0, bh1, bl1;
                    split_tf32(kb.x, bh0, bl0);
                    split_tf32(kb.y, bh1, bl1);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt)
                        mma_3xtf32(s[mt][n], ah[mt], al[mt], bh0, bh1, bl0, bl1);
                }
            }
            softmax_tile_mma(s, m, l, oacc, kv0, seq, causal, wq_first, g, t4, scale_log2);
        }
        async_wait<0>(); // V_t
        __syncthreads(); // ... visible to all; every warp is past S, Ks is free
        if (t + 1 < ntiles) {
            load_rows_f32<D, BC, QS, NT>(Ks, k, kv0 + BC, seq);
            async_commit();
        }
        if (active) {
            // ---- O += P V_t, one key block at a time ----
#pragma unroll
            for (int kc = 0; kc < NB; ++kc) {
                uint32_t ph[MT][4], pl[MT][4]; // A: (g, k = t) is key 2t, (g, t + 4) key 2t + 1
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    split_tf32(s[mt][kc][0], ph[mt][0], pl[mt][0]);
                    split_tf32(s[mt][kc][2], ph[mt][1], pl[mt][1]);
                    split_tf32(s[mt][kc][1], ph[mt][2], pl[mt][2]);
                    split_tf32(s[mt][kc][3], ph[mt][3], pl[mt][3]);
                }
#pragma unroll
                for (int n = 0; n < ND; ++n) { // B: keys 8kc + 2t4, +1 of dim 8n + g
                    const float *vb = Vs + (8 * kc + 2 * t4) * VS + 8 * n + g;
                    uint32_t bh0, bl0, bh1, bl1;
                    split_tf32(vb[0], bh0, bl0);
                    split_tf32(vb[VS], bh1, bl1);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        float c[4] = {0.f, 0.f, 0.f, 0.f};
                        mma_3xtf32(c, ph[mt], pl[mt], bh0, bh1, bl0, bl1);
#pragma unroll
                        for (int e = 0; e < 4; ++e) oacc[mt][n][e] += c[e];
                    }
                }
            }
        }
        __syncthreads(); // every warp is done with Vs
        if (t + 1 < ntiles) {
            load_rows_f32<D, BC, VS, NT>(Vs, v, kv0 + BC, seq);
            async_commit();
        }
    }

    // ---- O = O / l, written once ----
    store_o_mma<D>(o, oacc, l, wq_first, seq, g, t4);
#else
    (void)q, (void)k, (void)v, (void)o, (void)seq, (void)scale_log2, (void)causal;
    __trap(); // no TF32 mma here: f32_tensor_cores never picks this kernel
#endif
}

// ============================================================================
// Going further: float16 on Hopper's warpgroup MMA (wgmma, sm_90a)
// ============================================================================

// Not the lesson's path (Part B is): attention_fused_f16_wgmma (attention.h),
// which ./lab compare times beside Part B. Part B's mma.sync is a warp's
// instruction: 16 rows at a time, and every operand passes through the
// warp's registers (ldmatrix for K and V, each key tile). Hopper adds wgmma:
// the four warps of a warpgroup multiply a 64-row tile together, and the
// tensor cores read B straight from shared memory, described by a 64-bit
// descriptor. Here, for every key tile, S = Q Kᵀ is one chain of D/16 wgmma
// (Q from registers, K from shared memory) and O += P V one chain of BC/16
// (P from registers, V from shared memory). The rest is Part B's: a wgmma
// accumulator has, in each warp of the group, the mma.sync C layout (warp w
// holds rows 16w .. 16w+15, lane (g, t4) the elements of s[mt][n][e] with
// mt = 0), and the A operand from registers the a[0..3] layout, so the
// masks, the online softmax, P's packing and the epilogue are Part B's
// functions on the same arrays. 8 warps (two warpgroups, 128 query rows),
// K and V double-buffered with cp.async as in Part B.
//
// wgmma exists only in code built for sm_90a, the Hopper-specific target
// (nvcc -arch=sm_90a); the course's builds are for sm_90 and older, where
// this kernel is an empty one that traps. CMakeLists.txt adds sm_90a code
// to the library ./lab compare loads for the worked solution and to
// test_05_flash_attention_wgmma (Part B's tests run against this kernel),
// and the launcher asks the GPU which code it loaded (hopper_wgmma).
//
// The descriptor's layout, "128-byte swizzle": a tile of K or V is stored as
// D/64 blocks, block h holding dims 64h .. 64h+63 of every key in rows of 128
// bytes (row = key), and within each 8 rows (1024 bytes, 1024-aligned) the
// 16-byte chunk c of row r at chunk position c ^ (r % 8): 8 rows a bank
// cycle, no conflicts. The descriptor gives the address (the tile's, or 32
// bytes on per 16 dims for S's steps), the stride of 8-row groups (1024 B)
// and, for V, read transposed (its rows are keys, the product's k), the
// stride of the 64-dim blocks.

__device__ __forceinline__ void wg_fence()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wg_commit_wait()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
}

// The compiler does not know that wgmma reads its registers and writes its
// accumulators asynchronously, between wgmma.fence and the wait. Naming every
// such register here pins it: before the fence, every write to an operand
// (O's rescale, P's packing) has happened; after the wait, no read of a
// result moves above it. (Without the first, a multi-tile O went wrong: the
// rescale landed after the fence.)
template <int N>
__device__ __forceinline__ void wg_hold(float *r)
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

template <int N>
__device__ __forceinline__ void wg_hold(uint32_t *r)
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

// What cp.async wrote (the generic proxy) visible to wgmma's reads (the
// async proxy): each thread after its copies landed, before the barrier.
__device__ __forceinline__ void proxy_fence_async()
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// A shared-memory operand of wgmma: address, leading and stride byte offsets
// (16-byte units), 128-byte swizzle (bits 62-63 = 1).
__device__ __forceinline__ uint64_t wg_desc(const void *p, uint32_t lbo, uint32_t sbo)
{
    const uint64_t a = smem_u32(p);
    return ((a & 0x3FFFFu) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
           (1ull << 62);
}

// D (64 x N, float32, the accumulators) (+)= A (64 x 16, float16, registers)
// B (16 x N, float16, shared memory), for the whole warpgroup. accumulate 0:
// D = A B. TRANS_B 0: B's k is the contiguous dimension (K's dims for S); 1:
// its n is (V's dims for O). One wrapper a width N, each naming its N/2
// accumulators %0 .. %(N/2 - 1) (WG_R*: their names in the instruction, 16 a
// macro; WG_ACC16: their operands), then A's four registers, the descriptor,
// the accumulate flag and TRANS_B.
#define WG_R0 "%0, %1, %2, %3, %4, %5, %6, %7, " \
    "%8, %9, %10, %11, %12, %13, %14, %15"
#define WG_R16 ", %16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31"
#define WG_R32 ", %32, %33, %34, %35, %36, %37, %38, %39, " \
    "%40, %41, %42, %43, %44, %45, %46, %47"
#define WG_R48 ", %48, %49, %50, %51, %52, %53, %54, %55, " \
    "%56, %57, %58, %59, %60, %61, %62, %63"
#define WG_R64 ", %64, %65, %66, %67, %68, %69, %70, %71, " \
    "%72, %73, %74, %75, %76, %77, %78, %79"
#define WG_R80 ", %80, %81, %82, %83, %84, %85, %86, %87, " \
    "%88, %89, %90, %91, %92, %93, %94, %95"
#define WG_R96 ", %96, %97, %98, %99, %100, %101, %102, %103, " \
    "%104, %105, %106, %107, %108, %109, %110, %111"
#define WG_R112 ", %112, %113, %114, %115, %116, %117, %118, %119, " \
    "%120, %121, %122, %123, %124, %125, %126, %127"
#define WG_ACC16(i)                                                                 \
    "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]),            \
        "+f"(d[(i) + 4]), "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7]),        \
        "+f"(d[(i) + 8]), "+f"(d[(i) + 9]), "+f"(d[(i) + 10]), "+f"(d[(i) + 11]),      \
        "+f"(d[(i) + 12]), "+f"(d[(i) + 13]), "+f"(d[(i) + 14]), "+f"(d[(i) + 15])

template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n64k16(float *d, const uint32_t a[4], uint64_t desc_b,
                                                int accumulate)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
                 WG_R0 WG_R16
                 "}, "
                 "{%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
                 : WG_ACC16(0), WG_ACC16(16)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate),
                   "n"(TRANS_B));
#endif
}

template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n128k16(float *d, const uint32_t a[4], uint64_t desc_b,
                                                 int accumulate)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
                 WG_R0 WG_R16 WG_R32 WG_R48
                 "}, "
                 "{%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
                 : WG_ACC16(0), WG_ACC16(16), WG_ACC16(32), WG_ACC16(48)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate),
                   "n"(TRANS_B));
#endif
}

template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n192k16(float *d, const uint32_t a[4], uint64_t desc_b,
                                                 int accumulate)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {"
                 WG_R0 WG_R16 WG_R32 WG_R48
                 WG_R64 WG_R80
                 "}, "
                 "{%96, %97, %98, %99}, %100, p, 1, 1, %102;\n}\n"
                 : WG_ACC16(0), WG_ACC16(16), WG_ACC16(32), WG_ACC16(48),
                   WG_ACC16(64), WG_ACC16(80)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate),
                   "n"(TRANS_B));
#endif
}

template <int TRANS_B>
__device__ __forceinline__ void wgmma_m64n256k16(float *d, const uint32_t a[4], uint64_t desc_b,
                                                 int accumulate)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
                 WG_R0 WG_R16 WG_R32 WG_R48
                 WG_R64 WG_R80 WG_R96 WG_R112
                 "}, "
                 "{%128, %129, %130, %131}, %132, p, 1, 1, %134;\n}\n"
                 : WG_ACC16(0), WG_ACC16(16), WG_ACC16(32), WG_ACC16(48),
                   WG_ACC16(64), WG_ACC16(80), WG_ACC16(96), WG_ACC16(112)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate),
                   "n"(TRANS_B));
#endif
}

// One chain step of N = 64, 128, 192 or 256 columns: O's are D wide, S's BC.
template <int N, int TRANS_B>
__device__ __forceinline__ void wgmma_step(float *d, const uint32_t a[4], uint64_t desc_b,
                                           int accumulate)
{
    static_assert(N == 64 || N == 128 || N == 192 || N == 256, "a width with a wrapper");
    if constexpr (N == 64) wgmma_m64n64k16<TRANS_B>(d, a, desc_b, accumulate);
    else if constexpr (N == 128) wgmma_m64n128k16<TRANS_B>(d, a, desc_b, accumulate);
    else if constexpr (N == 192) wgmma_m64n192k16<TRANS_B>(d, a, desc_b, accumulate);
    else wgmma_m64n256k16<TRANS_B>(d, a, desc_b, accumulate);
}

// ROWS x D halves from src rows row0.. (zeros past seq) into the 128-byte
// swizzle layout above: chunk c of row r to block c / 8, row r, position
// (c % 8) ^ (r % 8). Each thread one column of chunks, as load_tile_f16.
template <int D, int ROWS, int NT>
__device__ __forceinline__ void load_tile_sw128(__half *dst, const __half *src, int row0,
                                                int seq)
{
    constexpr int CH = D / 8, RS = NT / CH;
    static_assert(NT % CH == 0 && RS % 8 == 0 && ROWS % RS == 0, "a tile of whole passes");
    const int r0 = threadIdx.x / CH, c = threadIdx.x % CH;
    copy_column_async<ROWS, RS, 64, D, ROWS / RS>(
        dst + (c / 8) * ROWS * 64 + r0 * 64 + (((c % 8) ^ (r0 & 7)) << 3), src,
        (size_t)(row0 + r0) * D + c * 8, row0 + r0, seq);
}

// Layout and grid as Part B's kernel (block (x, y): query tile x of head y),
// BR = 128 rows, NT = 256 threads; warp w owns rows 16w .. 16w+15, and
// warpgroup w / 4 rows 64(w/4) ... Shared memory: Qs [128][D] (Part B's
// swizzle, read once into registers), then Ks [2][BC x D] and Vs [2][BC x D]
// in the 128-byte swizzle layout, every tile 1024-aligned.
template <int D, int BC>
__global__ void __launch_bounds__(256, 1)
    attention_f16_wgmma_kernel(const __half *__restrict__ q, const __half *__restrict__ k,
                               const __half *__restrict__ v, __half *__restrict__ o, int seq,
                               float scale_log2, int causal)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int NT = 256, BR = 128, KD = D / 16, NB = BC / 8, ND = D / 8;
    extern __shared__ __align__(1024) uint4 smem_wg[];
    __half *Qs = (__half *)smem_wg;
    __half *Ks = Qs + BR * D;
    __half *Vs = Ks + 2 * BC * D;
    if (smem_u32(smem_wg) % 1024 != 0) __trap(); // the swizzle needs 1024-aligned tiles

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    const int qtile = causal ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x;
    const int q0 = qtile * BR, wr = warp * 16;
    const size_t head = (size_t)blockIdx.y * seq * D;
    q += head;
    k += head;
    v += head;
    o += head;
    const int kv_end = causal ? min(seq, q0 + BR) : seq;
    const int ntiles = CEIL_DIV(kv_end, BC);

    load_tile_f16<D, BR, NT>(Qs, q, q0, seq);
    async_commit();
    load_tile_sw128<D, BC, NT>(Ks, k, 0, seq);
    load_tile_sw128<D, BC, NT>(Vs, v, 0, seq);
    async_commit();
    async_wait<1>();
    __syncthreads();

    float oacc[1][ND][4], m[1][2], l[1][2];
    init_rows_mma(oacc, m, l);
    const int wq_first = q0 + wr, wg_last = q0 + 64 * (warp / 4) + 63;

    for (int t = 0; t < ntiles; ++t) {
        const int kv0 = t * BC, buf = t & 1;
        async_wait<0>();
        proxy_fence_async();
        __syncthreads(); // tile t visible to all; every warpgroup done with tile t-1
        if (t + 1 < ntiles) {
            load_tile_sw128<D, BC, NT>(Ks + (buf ^ 1) * BC * D, k, kv0 + BC, seq);
            load_tile_sw128<D, BC, NT>(Vs + (buf ^ 1) * BC * D, v, kv0 + BC, seq);
            async_commit();
        }
        const __half *Kb = Ks + buf * BC * D, *Vb = Vs + buf * BC * D;
        // Causal: a warpgroup whose 64 rows all come before the tile skips it
        // (the same for its four warps: wgmma is the group's instruction).
        if (causal && kv0 > wg_last) continue;

        // ---- S = Q K_tᵀ: dims 16kk .. 16kk+15 are bytes 32(kk % 4) of block kk / 4 ----
        // Q's fragments (this warp's 16 rows, the A operand), read again from
        // Qs for every tile. Read once before the loop, as Part B does, they
        // were overwritten: with S's and O's products of one width (64 keys at
        // d = 64, 128 at d = 128) ptxas (CUDA 13.0) gave their registers,
        // live across the loop in the PTX, to P's packing inside it, so from
        // the second tile on S was P Kᵀ (the SASS showed it; the lesson's tests
        // failed 20 of Part B's 33 checks). Read per tile, every width was
        // right, and it costs D/16 ldmatrix a tile.
        uint32_t qf[KD][4];
#pragma unroll
        for (int kk = 0; kk < KD; ++kk)
            ldmatrix_x4(qf[kk], Qs + swz<D>(wr + (lane & 7) + 8 * ((lane >> 3) & 1),
                                            16 * kk + 8 * (lane >> 4)));
        float s[1][NB][4];
        wg_hold<KD * 4>(&qf[0][0]);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < KD; ++kk)
            wgmma_step<BC, 0>(&s[0][0][0], qf[kk],
                              wg_desc(Kb + (kk / 4) * BC * 64 + (kk % 4) * 16, 16, 1024), kk > 0);
        wg_commit_wait();
        wg_hold<BC / 2>(&s[0][0][0]);

        softmax_tile_mma(s, m, l, oacc, kv0, seq, causal, wq_first, g, t4, scale_log2);

        // ---- O += P V_t: keys 16kc .. 16kc+15 are rows 16kc .. of every block ----
        uint32_t pa[BC / 16][4];
#pragma unroll
        for (int kc = 0; kc < BC / 16; ++kc) {
            pa[kc][0] = pack_half2(s[0][2 * kc][0], s[0][2 * kc][1]);
            pa[kc][1] = pack_half2(s[0][2 * kc][2], s[0][2 * kc][3]);
            pa[kc][2] = pack_half2(s[0][2 * kc + 1][0], s[0][2 * kc + 1][1]);
            pa[kc][3] = pack_half2(s[0][2 * kc + 1][2], s[0][2 * kc + 1][3]);
        }
        wg_hold<D / 2>(&oacc[0][0][0]);
        wg_hold<BC / 4>(&pa[0][0]);
        wg_fence();
#pragma unroll
        for (int kc = 0; kc < BC / 16; ++kc)
            wgmma_step<D, 1>(&oacc[0][0][0], pa[kc],
                             wg_desc(Vb + kc * 16 * 64, BC * 128, 1024), 1);
        wg_commit_wait();
        wg_hold<D / 2>(&oacc[0][0][0]);
    }

    store_o_mma<D>(o, oacc, l, wq_first, seq, g, t4);
#else
    (void)q, (void)k, (void)v, (void)o, (void)seq, (void)scale_log2, (void)causal;
    __trap(); // not built for sm_90a: hopper_wgmma says so and the launcher never starts it
#endif
}

//@ guided
//@}
// ============================================================================
//@{
// launchers
//@ guided
//| // launchers (complete; keep the signatures)
//@}
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

//@{
// The tensor-core kernel's tiles: 4 warps of 2 row groups (128 query rows),
// 32 keys a tile; 55 KB of shared memory at d = 64, 102 KB at d = 128.
// Timed on an H200 against 64 keys a tile, 8 warps and one row group a warp
// (plots/reference/logs/attention-f32-tc-h200.log).
constexpr int kTcKeys = 32, kTcWarps = 4, kTcGroups = 2;

template <int D>
static size_t f32_tc_smem_bytes()
{
    constexpr int BR = 16 * kTcWarps * kTcGroups;
    return (size_t)((BR + kTcKeys) * (D + 8) + kTcKeys * (D + 4)) * sizeof(float);
}

// 1 when this GPU runs attention_f32_tc_kernel at head_dim D: TF32 tensor
// cores (sm_80 on), the kernel built for them (its PTX for sm_80 or newer,
// not the empty sm_75 instance compiled on at run time) and the shared
// memory its tiles take.
template <int D>
static cudaError_t f32_tensor_cores(int optin, int *yes)
{
    int dev, major;
    cudaFuncAttributes attr;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaFuncGetAttributes(&attr, attention_f32_tc_kernel<D, kTcKeys, kTcWarps, kTcGroups>));
    *yes = major >= 8 && attr.ptxVersion >= 80 && (size_t)optin >= f32_tc_smem_bytes<D>();
    return cudaSuccess;
}

template <int D>
static cudaError_t launch_f32_tc(const float *q, const float *k, const float *v, float *o,
                                 int batch_heads, int seq, float scale_log2, int causal,
                                 cudaStream_t stream)
{
    auto kernel = attention_f32_tc_kernel<D, kTcKeys, kTcWarps, kTcGroups>;
    const int BR = 16 * kTcWarps * kTcGroups;
    size_t smem = f32_tc_smem_bytes<D>();
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)smem));
    dim3 grid((unsigned int)CEIL_DIV(seq, BR), (unsigned int)batch_heads);
    kernel<<<grid, 32 * kTcWarps, smem, stream>>>(q, k, v, o, seq, scale_log2, causal);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

// The Hopper kernel's shared memory: Qs, then two K and two V tiles.
template <int D, int BC>
static size_t wgmma_smem_bytes()
{
    return (size_t)(128 * D + 4 * BC * D) * sizeof(__half);
}

// Whether this GPU runs attention_f16_wgmma_kernel<D, BC>: a Hopper (9.0)
// that loaded the kernel's sm_90a code and allows its shared memory. The
// sm_90a kernel keeps its accumulators in registers (over 200 a thread); the one
// other builds get only traps and needs a handful, so the register count the
// GPU reports for the loaded code tells them apart (without a copy, which
// would wait on the default stream).
template <int D, int BC>
static cudaError_t hopper_wgmma(int optin, int *yes)
{
    int dev, major, minor;
    cudaFuncAttributes attr;
    *yes = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (major != 9 || minor != 0 || (size_t)optin < wgmma_smem_bytes<D, BC>()) return cudaSuccess;
    CUDA_CHECK(cudaFuncGetAttributes(&attr, attention_f16_wgmma_kernel<D, BC>));
    *yes = attr.numRegs >= 64;
    return cudaSuccess;
}

template <int D, int BC>
static cudaError_t launch_f16_wgmma(const __half *q, const __half *k, const __half *v,
                                    __half *o, int batch_heads, int seq, float scale_log2,
                                    int causal, cudaStream_t stream)
{
    auto kernel = attention_f16_wgmma_kernel<D, BC>;
    size_t smem = wgmma_smem_bytes<D, BC>();
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)smem));
    dim3 grid((unsigned int)CEIL_DIV(seq, 128), (unsigned int)batch_heads);
    kernel<<<grid, 256, smem, stream>>>(q, k, v, o, seq, scale_log2, causal);
    CUDA_CHECK_LAST();
    return cudaSuccess;
}

//@ guided
//| // Tiles: d = 64: 128 query rows x 64 keys, 128 threads (97 KB of shared
//| // memory); d = 128: 64 x 32, 128 threads (73 KB). GPUs that allow less
//| // shared memory per block get half-height tiles.
//@}
//@]
//@{
//@ guided
//@ open
//|
//| // ============================================================================
//| // your kernels (any number, any names)
//| // ============================================================================
//|
//|
//| // ============================================================================
//| // the launchers: the API of attention.h (keep the signatures)
//| // ============================================================================
//|
//@}
EXTERN_C cudaError_t attention_fused_f32(const float *q, const float *k, const float *v,
                                         float *o, int batch_heads, int seq, int head_dim,
                                         float scale, int causal, cudaStream_t stream)
{
//@{
//@ guided
//@ open
//|     // TODO: check the arguments, launch your float32 kernel on `stream`,
//|     //       return cudaSuccess or the error (CUDA_CHECK_LAST returns it).
//|     (void)q, (void)k, (void)v, (void)o, (void)batch_heads, (void)seq;
//|     (void)head_dim, (void)scale, (void)causal, (void)stream;
//|     return cudaErrorNotYetImplemented;
//@}
//@[
    int empty, optin;
    CUDA_CHECK(check_args("attention_fused_f32", q, k, v, o, batch_heads, seq, head_dim, scale,
                          &empty));
    if (empty) return cudaSuccess;
    CUDA_CHECK(smem_optin(&optin));
    const float sl2 = scale * kLog2e;
//@{
    // The big tiles need 97 KB (d = 64) and 113 KB (d = 128: 64 keys a tile,
    // 4-7% faster than 32 on an H100, attention-tiles-h100.log) of shared
    // memory per block; GPUs that allow less get smaller tiles.
    if (head_dim == 64)
        return (size_t)optin >= f32_smem_bytes<64, 64, 16>()
                   ? launch_f32<64, 64, 16>(q, k, v, o, batch_heads, seq, sl2, causal, stream)
                   : launch_f32<64, 32, 8>(q, k, v, o, batch_heads, seq, sl2, causal, stream);
    if ((size_t)optin >= f32_smem_bytes<128, 64, 8>())
        return launch_f32<128, 64, 8>(q, k, v, o, batch_heads, seq, sl2, causal, stream);
    return (size_t)optin >= f32_smem_bytes<128, 32, 8>()
               ? launch_f32<128, 32, 8>(q, k, v, o, batch_heads, seq, sl2, causal, stream)
               : launch_f32<128, 32, 4>(q, k, v, o, batch_heads, seq, sl2, causal, stream);
//@ guided
//|     if (head_dim == 64)
//|         return (size_t)optin >= f32_smem_bytes<64, 64, 16>()
//|                    ? launch_f32<64, 64, 16>(q, k, v, o, batch_heads, seq, sl2, causal, stream)
//|                    : launch_f32<64, 32, 8>(q, k, v, o, batch_heads, seq, sl2, causal, stream);
//|     return (size_t)optin >= f32_smem_bytes<128, 32, 8>()
//|                ? launch_f32<128, 32, 8>(q, k, v, o, batch_heads, seq, sl2, causal, stream)
//|                : launch_f32<128, 32, 4>(q, k, v, o, batch_heads, seq, sl2, causal, stream);
//@}
//@]
}

//@{
// Going further: float32 on tensor cores (attention.h). Not Part A's
// launcher, so not what the grader times a student's Part A against: on an
// H200 it takes 0.71x Part A's time at d = 64 and 0.67x at d = 128, and a
// student's Part A as fast as the worked one would then earn only part of
// the speed points. ./lab compare times it beside Part A.
EXTERN_C cudaError_t attention_fused_f32_tc(const float *q, const float *k, const float *v,
                                            float *o, int batch_heads, int seq, int head_dim,
                                            float scale, int causal, cudaStream_t stream)
{
    int empty, optin, tc = 0;
    CUDA_CHECK(check_args("attention_fused_f32_tc", q, k, v, o, batch_heads, seq, head_dim,
                          scale, &empty));
    if (empty) return cudaSuccess;
    CUDA_CHECK(smem_optin(&optin));
    if (head_dim == 64) CUDA_CHECK(f32_tensor_cores<64>(optin, &tc));
    else CUDA_CHECK(f32_tensor_cores<128>(optin, &tc));
    if (!tc) return cudaErrorNotSupported;
    const float sl2 = scale * kLog2e;
    return head_dim == 64
               ? launch_f32_tc<64>(q, k, v, o, batch_heads, seq, sl2, causal, stream)
               : launch_f32_tc<128>(q, k, v, o, batch_heads, seq, sl2, causal, stream);
}

//@ guided
//@}
//@[
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

//@{
//@ guided
//| // Tiles: d = 64: 128 query rows (4 warps x 32) x 64 keys (48 KB of shared
//| // memory); d = 128: 128 rows (8 warps x 16) x 64 keys (96 KB), or 64 x 32
//| // with 4 warps (48 KB) on GPUs that allow less.
//@}
//@]
EXTERN_C cudaError_t attention_fused_f16(const uint16_t *q, const uint16_t *k,
                                         const uint16_t *v, uint16_t *o, int batch_heads,
                                         int seq, int head_dim, float scale, int causal,
                                         cudaStream_t stream)
{
//@{
//@ guided
//@ open
//|     // TODO (bonus): the same for float16 (the tensors hold __half bit
//|     //       patterns: cast to const __half *). Return cudaSuccess or the error.
//|     (void)q, (void)k, (void)v, (void)o, (void)batch_heads, (void)seq;
//|     (void)head_dim, (void)scale, (void)causal, (void)stream;
//|     return cudaErrorNotYetImplemented;
//@}
//@[
    int empty, optin;
    CUDA_CHECK(check_args("attention_fused_f16", q, k, v, o, batch_heads, seq, head_dim, scale,
                          &empty));
    if (empty) return cudaSuccess;
    CUDA_CHECK(smem_optin(&optin));
    const __half *hq = (const __half *)q, *hk = (const __half *)k, *hv = (const __half *)v;
    __half *ho = (__half *)o;
    const float sl2 = scale * kLog2e;
//@{
    // Tiles: the fastest of 8 shapes per head_dim on an H100 (seq 4096, 32
    // heads; plots/reference/logs/attention-tiles-h100.log), where the GPU
    // allows their shared memory:
    //   d = 64:  128 rows (4 warps x 32) x 128 keys, Q read per tile (80 KB);
    //            else 128 x 64 keys, Q in registers (48 KB)
    //   d = 128: full: 256 rows (8 warps x 32) x 64 keys, Q read per tile
    //            (128 KB); causal: 128 rows (8 warps x 16) x 128 keys, Q in
    //            registers (160 KB); else 128 x 64 (96 KB), else 64 x 32 with
    //            4 warps (48 KB).
    if (head_dim == 64)
        return (size_t)optin >= f16_smem_bytes<64, 2, 128, 4>()
                   ? launch_f16<64, 2, 128, 4>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream)
                   : launch_f16<64, 2, 64, 4>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream);
    if (!causal && (size_t)optin >= f16_smem_bytes<128, 2, 64, 8>())
        return launch_f16<128, 2, 64, 8>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream);
    if (causal && (size_t)optin >= f16_smem_bytes<128, 1, 128, 8>())
        return launch_f16<128, 1, 128, 8>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream);
    return (size_t)optin >= f16_smem_bytes<128, 1, 64, 8>()
               ? launch_f16<128, 1, 64, 8>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream)
               : launch_f16<128, 1, 32, 4>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream);
//@ guided
//|     if (head_dim == 64)
//|         return launch_f16<64, 2, 64, 4>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream);
//|     return (size_t)optin >= f16_smem_bytes<128, 1, 64, 8>()
//|                ? launch_f16<128, 1, 64, 8>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream)
//|                : launch_f16<128, 1, 32, 4>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream);
//@}
//@]
}
//@{

// Going further: float16 on Hopper's wgmma (attention.h). Not Part B's
// launcher, for the same reason as attention_fused_f32_tc: ./lab compare
// times it beside Part B. cudaErrorNotSupported off Hopper and in the
// course's own builds (no sm_90a code).
EXTERN_C cudaError_t attention_fused_f16_wgmma(const uint16_t *q, const uint16_t *k,
                                               const uint16_t *v, uint16_t *o, int batch_heads,
                                               int seq, int head_dim, float scale, int causal,
                                               cudaStream_t stream)
{
    int empty, optin, yes;
    CUDA_CHECK(check_args("attention_fused_f16_wgmma", q, k, v, o, batch_heads, seq, head_dim,
                          scale, &empty));
    if (empty) return cudaSuccess;
    CUDA_CHECK(smem_optin(&optin));
    if (head_dim == 64) CUDA_CHECK((hopper_wgmma<64, 64>(optin, &yes)));
    else CUDA_CHECK((hopper_wgmma<128, 192>(optin, &yes)));
    if (!yes) return cudaErrorNotSupported;
    const __half *hq = (const __half *)q, *hk = (const __half *)k, *hv = (const __half *)v;
    __half *ho = (__half *)o;
    const float sl2 = scale * kLog2e;
    // Tiles: 128 query rows (two warpgroups) and 64 keys at d = 64 (48 KB of
    // shared memory, 110 registers a thread: two blocks an SM), 192 keys at
    // d = 128 (224 KB, 236 registers): the fastest of the pairs timed on an
    // H200 (attention-f16-wgmma-h200.log).
    return head_dim == 64
               ? launch_f16_wgmma<64, 64>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream)
               : launch_f16_wgmma<128, 192>(hq, hk, hv, ho, batch_heads, seq, sl2, causal, stream);
}

//@ guided
//@}
