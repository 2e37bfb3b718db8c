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
#define L01_FUSED_ATOL 4e-6               /* |y - ref| <= atol + rtol |ref|: a */
#define L01_FUSED_RTOL 1e-6               /* few float32 roundings of |y| <= 4 */

/* ---- lesson 02: fused softmax ------------------------------------------- */
#define L02_SPEED_ROWS ((size_t)4096)     /* 4096 x 4096 floats: 64 MiB in, */
#define L02_SPEED_COLS ((size_t)4096)     /* 64 MiB out                      */
#define L02_MIN_SPEEDUP 2.5               /* fused vs unfused (bytes say 4.0x) */
#define L02_MIN_PCT_CEILING 60.0          /* fused, % of measured copy GB/s */
#define L02_ATOL 1e-6                     /* |y - ref| <= atol + rtol |ref|, */
#define L02_RTOL 1e-5                     /* ref in double precision          */
#define L02_ROWSUM_TOL 1e-5               /* |sum_j y[r, j] - 1| per row */
#define L02_OVERFLOW_ABOVE 80.0           /* |x| past which a softmax without
                                             the max subtracted breaks (exp(89)
                                             is inf in float32, exp(-104) is 0) */

/* ---- lesson 03: LayerNorm forward and backward ---------------------------- */
#define L03_EPS 1e-5f                     /* LayerNorm's eps, as in PyTorch */
#define L03_SPEED_ROWS ((size_t)4096)     /* speed checks at 4096 x 4096 */
#define L03_SPEED_COLS ((size_t)4096)
#define L03_FWD_MIN_SPEEDUP 2.5           /* fused vs unfused (bytes say 6x) */
#define L03_BWD_MIN_SPEEDUP 2.0           /* deterministic fused vs unfused (8x) */
#define L03_MIN_PCT_CEILING 50.0          /* both, % of measured copy GB/s */
#define L03_FWD_ATOL 1e-5                 /* y, mean, rstd: |got - ref| <= */
#define L03_FWD_RTOL 1e-5                 /* atol + rtol |ref| (the lesson README) */
#define L03_DX_ATOL 1e-4                  /* dx: the flat row scales every */
#define L03_DX_RTOL 1e-5                  /* rounding by rstd = 316 */
#define L03_DWB_ATOL_PER_ROW 1e-6         /* dweight, dbias: atol = this x rows */
#define L03_DWB_RTOL 1e-5                 /* (sums over rows; test_03 says why) */

/* ---- lesson 04: memory-traffic analysis ---------------------------------- */
#define L04_COUNTER_TOLERANCE 0.10        /* |model - DRAM counters| / counters */
#define L04_TRANSPOSE_N ((size_t)8192)    /* 8192 x 8192 floats, 256 MiB */
#define L04_MIN_TRANSPOSE_SPEEDUP 3.0     /* tiled vs naive */
#define L04_MIN_TRANSPOSE_PCT_CEILING 50.0

/* ---- lesson 05: flash-attention-lite --------------------------------------- */
#define L05_F32_ATOL 1e-4                 /* float32: |O - ref| <= atol + rtol |ref|, */
#define L05_F32_RTOL 1e-4                 /* ref in double (or the checked unfused) */
#define L05_F16_FACTOR 2.0                /* float16: |O - ref| <= 2 x the unfused */
#define L05_F16_ATOL 1e-3                 /* float16 path's max error + 1e-3 (about
                                             one float16 rounding of |O| ~ 1) */
#define L05_F16_BASELINE_ATOL 2e-2        /* sanity bound of the unfused float16 path */
#define L05_SPEED_SEQ 4096                /* speed checks at seq 4096, head_dim 64, */
#define L05_SPEED_HEAD_DIM 64             /* 32 heads: S is 2 GiB in float32 */
#define L05_SPEED_BATCH_HEADS 32
#define L05_MIN_SPEEDUP_F32 1.0           /* Part A: fused vs unfused, float32 */
#define L05_MIN_SPEEDUP_F16 2.0           /* Part B bonus: fused vs unfused, float16 */
#define L05_MEM_SEQ 32768                 /* memory check: S alone exceeds the GPU */
#define L05_MEM_SLACK_MIB 64              /* device memory the fused call may take */

#endif /* FUSIONLAB_THRESHOLDS_H */
