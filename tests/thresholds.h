/* tests/thresholds.h — every pass mark of the course, in one place.
 *
 * These are the students' thresholds: a correct kernel written with the
 * lesson's ideas passes them on any recent NVIDIA GPU. The worked solutions'
 * own targets are higher; the lesson READMEs state them with the measured figures.
 * Students may read this file; the grader always uses the course's copy.
 */
#ifndef FUSIONLAB_THRESHOLDS_H
#define FUSIONLAB_THRESHOLDS_H

/* ---- lesson 01: vector add -> fused elementwise ---------------------------- */
#define L01_SPEED_N ((size_t)1 << 26)     /* 64 Mi elements, 256 MiB per array */
#define L01_MIN_SPEEDUP 1.6               /* fused vs unfused (bytes say 2.0x) */
#define L01_MIN_PCT_CEILING 60.0          /* fused, % of measured copy GB/s */
/* Part A (c = a + b) is compared bitwise: a float32 addition has one right
 * answer, whatever the kernel. Part B: |y - ref| <= atol + rtol |ref|, ref in
 * double, atol = L01_FUSED_ATOL_PER_Y x (2|s| + 1). The tests keep |a|, |b|,
 * |c| <= 1 and |a + b| <= 2 (also where a and b nearly cancel: a + b is then
 * exact), so a + b, (a + b) s and y are at most 2|s| + 1 in size; float32
 * rounds each at most once, by at most 2^-24 of it: 3 x 6e-8 x (2|s| + 1) in
 * all, 5x under atol (4e-6 at the s = 1.5 of most cases; an FMA rounds one
 * time less). a*s + b*s + c is not within it where a + b cancels: its
 * products round at 2^-24 of |a s|, up to 4096 |s| there. */
#define L01_FUSED_ATOL_PER_Y 1e-6
#define L01_FUSED_RTOL 1e-6

/* ---- lesson 02: fused softmax ------------------------------------------- */
#define L02_SPEED_ROWS ((size_t)4096)     /* 4096 x 4096 floats: 64 MiB in, */
#define L02_SPEED_COLS ((size_t)4096)     /* 64 MiB out                      */
#define L02_MIN_SPEEDUP 2.5               /* fused vs unfused (bytes say 4.0x) */
#define L02_MIN_PCT_CEILING 60.0          /* fused, % of measured copy GB/s */
/* |y - ref| <= atol + rtol |ref|, ref in double, u = 2^-24 (6e-8). For
 * y = e_j / d, e_j = exp(x_j - m), a float32 kernel makes, relative to y:
 *   e_j: x_j - m rounds by u |x_j - m|, and the exponential's argument
 *        (t log2(e) in __expf, the FMA of exp2f with log2(e) folded in) by
 *        u |x_j - m| more; __expf and exp2f add 2 to 4 u: (2|x_j - m| + 4) u;
 *   d:   one rounding per addition along the longest chain of additions:
 *        ~40 u on rows held in registers, ~250 u at worst (~1e-6 in
 *        practice: the roundings have both signs) for rows of 10^6 columns
 *        over 512 threads;
 *   y:   the division, or the reciprocal and the product: 1 to 2 u.
 * atol: elements with y < 1e-13 have x_j - m < -29.9 (d >= 1), where the
 * first term grows past rtol, and exp underflows (to 0 below 1e-38); every
 * element above it has |x_j - m| < 30: at most 64 u = 3.8e-6 from e_j. All
 * elements of the tested rows except those of the wide-spread rows are
 * above it (|x_j - m| <= 8: y >= 3e-4 / cols), so y is checked to rtol.
 * (Before, atol was 1e-6: at 4096 columns y ~ 2e-4, so any error under
 * 0.5% passed, and under 12% at 10^6 columns.) A kernel that rounds
 * x log2(e) before subtracting the max is off by u |x| log2(e): 4e-5 at
 * |x| = 1000, the large-mean rows. */
#define L02_ATOL 1e-13
#define L02_RTOL 1e-5
#define L02_ROWSUM_TOL 1e-5               /* |sum_j y[r, j] - 1| per row: the same
                                             bounds, summed over the row */
#define L02_OVERFLOW_ABOVE 80.0           /* |x| past which a softmax without
                                             the max subtracted breaks (exp(89)
                                             is inf in float32, exp(-104) is 0) */

/* ---- lesson 03: LayerNorm forward and backward ---------------------------- */
/* (LayerNorm's eps is the lesson's own: LAYERNORM_EPS, in
 * lessons/03-layernorm/layernorm_reference.h, with the CPU reference.) */
#define L03_SPEED_ROWS ((size_t)4096)     /* speed checks at 4096 x 4096 */
#define L03_SPEED_COLS ((size_t)4096)
#define L03_FWD_MIN_SPEEDUP 2.5           /* fused vs unfused (bytes say 6x) */
#define L03_BWD_MIN_SPEEDUP 2.0           /* deterministic fused vs unfused (8x) */
#define L03_MIN_PCT_CEILING 50.0          /* both, % of measured copy GB/s */
/* Correctness: |got - ref| <= atol + rtol |ref|, ref in double. Each bound
 * is the error a float kernel makes, with a margin (test_03 derives them). */
#define L03_FWD_ATOL 1e-5                 /* y, mean, rstd: a few roundings of */
#define L03_FWD_RTOL 1e-5                 /* values ~3 times rstd ~2: ~1e-6 */
#define L03_Y_MEAN_ULPS 16.0              /* y also gets this many units in the
                                             last place of |mean| (2^-24 |mean|),
                                             times rstd |w|: y carries the float
                                             mean's error, amplified by rstd |w|
                                             (316 |w| on a flat row). Parallel sums,
                                             Welford, 1/cols and y = x*a + c are
                                             off by at most ~5 units; E[x^2] -
                                             mean^2 by ~5000 on rows of mean/std
                                             1000 */
#define L03_RSTD_MEAN_ULPS 2.0            /* rstd also gets this many units of
                                             |mean| times rstd, relative: Welford
                                             rounds the mean at every step, to
                                             first order in the sum of squares
                                             (measured: ~0.06 units on the
                                             large-mean rows; E[x^2] - mean^2,
                                             by the same bound, 500 to 2500) */
#define L03_DX_ATOL 1e-4                  /* dx: the flat row scales every */
#define L03_DX_RTOL 1e-5                  /* rounding of g = dy w by rstd = 316:
                                             ~3e-5 where g - mean(g) cancels */
#define L03_DWB_ATOL_PER_ROW 1e-6         /* dweight, dbias: atol = this x rows: */
#define L03_DWB_RTOL 1e-5                 /* sums of rows of terms ~1, ~1e-7 of
                                             rounding per row added (8x margin);
                                             a row missing or doubled is off by ~1 */

/* ---- lesson 04: memory-traffic analysis ---------------------------------- */
#define L04_COUNTER_TOLERANCE 0.10        /* |model - DRAM counters| / counters. A right
                                             model reads within 1% (the fused backward's
                                             per-block partials, left out, are 0.8%);
                                             writes come out under it by the dirty lines
                                             still in L2 when a kernel ends: 26 MB on the
                                             H200 (60 MiB L2), 5.3% of the smallest write
                                             the check draws (30720 x 4096 floats, 503 MB).
                                             10% leaves room for a GPU with a larger L2;
                                             a model off by a whole matrix pass is off by
                                             6% (bwd unfused reads) to 100%: A_count
                                             grades the models exactly, this checks them
                                             against the hardware */
#define L04_COUNTER_ROWS_MIN ((size_t)30720) /* B_counters: rows drawn from fl_seed in */
#define L04_COUNTER_ROWS_MAX ((size_t)34816) /* [MIN, MAX], steps of 128, cols 4096; */
#define L04_COUNTER_COLS ((size_t)4096)      /* lesson 01: rows x 4096 elements */
#define L04_TRANSPOSE_N ((size_t)8192)    /* 8192 x 8192 floats, 256 MiB */
#define L04_MIN_TRANSPOSE_SPEEDUP 3.0     /* tiled vs naive (worked: 5.7x on the H200) */
#define L04_MIN_TRANSPOSE_PCT_CEILING 50.0 /* tiled, % of copy GB/s (worked: 77%) */
#define L04_SAMPLED_ROWS 16               /* rows of out compared after each timed run
                                             and past 2^32 (the first and last always);
                                             every other check compares all of out. A
                                             transpose is a copy: bitwise, no tolerance */
#define L04_BIG_SLACK_BYTES ((size_t)1 << 30) /* free memory kept beyond the two arrays
                                                 of the past-2^32 transpose */

/* ---- lesson 05: flash-attention-lite --------------------------------------- */
/* float32: |O - ref| <= atol + rtol |ref|, ref in double (or the unfused
 * float32 path, checked against double on sampled rows). Where the bound
 * comes from: O is a ratio of sums the kernel rounds in float32 (u = 2^-24):
 * scores of d <= 128 products, then l and O over up to seq terms, with one
 * rescaling per tile and hardware exponentials (ex2.approx: 2 ulp). The
 * worst-case bound grows with the count of terms, (seq + d) u max|V| (1e-3
 * at seq 4096, |V| <= 4), but rounding errors of random sign grow as its
 * square root: about sqrt(seq + d) u max|V| = 1.6e-5 there. 1e-4 + 1e-4 |O|
 * is 6x that, and one float16 step anywhere (2^-11 = 4.9e-4 relative) breaks
 * it. */
#define L05_F32_ATOL 1e-4
#define L05_F32_RTOL 1e-4
/* float16: |O - ref| <= FACTOR x the unfused float16 path's max error on the
 * same inputs + ATOL x mag (mag = 1 for inputs of unit size; the largest
 * |O| for inputs at float16's range edges). Where it comes from: with S, m,
 * l and O in float32, the fused kernel rounds only P (each weight by up to
 * u16 = 2^-11 relative, so O by up to u16 max|V|) and O itself (u16/2 |O|);
 * the unfused path rounds S and P to float16 and O too, so the fused error
 * is about the unfused one or less: 2x leaves room for another order of
 * summation, and 1e-3, two float16 ulps of a value near 1, covers shapes
 * where the unfused path happens to be exact (seq 1). */
#define L05_F16_FACTOR 2.0
#define L05_F16_ATOL 1e-3
#define L05_F16_UNIT_ROUNDOFF 0x1p-11     /* u16: float16's relative rounding step */
/* Sanity bound of the unfused float16 path (else the course is broken):
 * 2e-2 at unit size; for the range cases (L05_F16_BASELINE_ATOL + 2 |S|max
 * u16) x mag, since rounding S to float16 moves each weight exp(S) by up to
 * |S|max u16 relative. */
#define L05_F16_BASELINE_ATOL 2e-2
/* float16 rows checked without an unfused run (65535 heads, tensors past
 * 2^31 elements: no S fits): |O - ref| <= SAMPLED_VTOL max|V| + L05_F16_ATOL.
 * The fused kernel's bound is (u16 + u16/2) max|V| (P and O rounded), 2 u16
 * for one that normalises by the sum of the rounded P; doubled as above:
 * 4 u16 = 2^-9. */
#define L05_F16_SAMPLED_VTOL 0x1p-9
#define L05_SPEED_SEQ 4096                /* speed checks at seq 4096, head_dim 64, */
#define L05_SPEED_HEAD_DIM 64             /* 32 heads: S is 2 GiB in float32 */
#define L05_SPEED_BATCH_HEADS 32
#define L05_MIN_SPEEDUP_F32 1.0           /* Part A: fused vs unfused, float32 */
#define L05_MIN_SPEEDUP_F16 2.0           /* Part B bonus: fused vs unfused, float16 */
#define L05_MEM_SEQ 32768                 /* memory check: S alone exceeds the GPU */
#define L05_MEM_SLACK_MIB 64              /* device memory the fused call may take */

#endif /* FUSIONLAB_THRESHOLDS_H */
