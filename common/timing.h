/* common/timing.h — the course's one timing protocol.
 *
 * Every speed figure in the course (tests, benches, the grader) comes from
 * fl_time_variants(), which does, for each sample:
 *
 *   prepare (untimed: e.g. poison the outputs)
 *   flush L2: reset persisting lines, then read a buffer >= 2x the L2 size
 *   device sync; wall clock t0
 *   hold the GPU (every SM spins ~300 us) while the host queues:
 *   event record -> run(ctx, stream) -> flush L2 again -> event record
 *   device sync; wall clock t1
 *
 * The hold keeps the host's launch latency out of the events (with
 * `adaptive_hold`, for timing trusted framework calls only: a variant whose
 * run() takes the host longer than the hold to queue, as a Python
 * framework's call can, gets a hold twice as long, up to 25 ms, and the
 * sample is taken again, what the longer hold adds to the wall clock taken
 * off it; never for code under test, whose host work during a longer hold,
 * copies on another stream included, would go unseen); the second
 * flush makes the outputs the work left dirty in L2 reach memory inside the
 * timed region (its cost on a clean L2, measured with empty samples, is
 * subtracted). So a sample is the GPU time from the first of the work's
 * loads to the last of its stores landing in memory.
 *
 * Each variant first gets `warmup` untimed runs. Variants are interleaved
 * (sample i runs them in rotated order), so a baseline and a candidate see
 * the same clocks, temperature and neighbours, and their ratio survives a
 * noisy machine. The events time the stream the launcher was handed; the
 * device sync and wall clock catch work the launcher hid elsewhere (another
 * stream, the legacy default stream): when the wall clock exceeds the events
 * by far more than launch overhead, the sample is charged the wall time and
 * the result is flagged `hidden_work`. After the loop each variant's
 * `check` re-verifies the output its last timed run left behind; with
 * `check_each` it verifies every run (warm-ups included, outside the timed
 * region), so a launcher that is right only sometimes (during warm-up, for
 * its first calls, for inputs it has not seen) is caught. The tests use
 * `prepare` to poison the outputs and give every run fresh inputs.
 */
#ifndef FUSIONLAB_TIMING_H
#define FUSIONLAB_TIMING_H

#include "check.h"

/* Launch the work to be timed on `stream`. */
typedef cudaError_t (*fl_run_fn)(void *ctx, cudaStream_t stream);
/* Verify the output; return 1 if correct, else 0 with a message in msg. */
typedef int (*fl_check_fn)(void *ctx, char *msg, size_t len);

typedef struct {
    const char *name;
    fl_run_fn run;       /* the work to time */
    void *ctx;
    double bytes;        /* bytes the work must move (declared by the caller) */
    double flops;        /* floating-point operations (0 if not meaningful) */
    fl_run_fn prepare;   /* optional, untimed, before every sample */
    fl_check_fn check;   /* optional, after the timed loop */
} fl_variant;

typedef struct {
    int warmup;          /* untimed runs of each variant before sampling */
    int samples;         /* timed samples of each variant */
    size_t flush_bytes;  /* L2 flush read size; 0 = 2x L2 (at least 32 MiB) */
    double ceiling_gbs;  /* > 0: also report % of this bandwidth */
    int check_each;      /* 1: run each variant's check after every warm-up and
                            timed run (untimed), not only after the loop */
    int adaptive_hold;   /* 1: a late sample is taken again with the variant's
                            hold doubled, up to 25 ms (./lab compare's PyTorch
                            and Triton calls); 0 (the tests, the benches, the
                            grader): the hold stays 300 us, late samples are
                            counted in launch_late */
} fl_timing_opts;

typedef struct {
    double median, mean, min, max, p10, p90;
} fl_stats;

typedef struct {
    const char *name;
    int samples;
    fl_stats us;            /* per-sample time in microseconds (as charged) */
    double event_median_us; /* what the events alone saw */
    double wall_median_us;  /* wall clock per sample, host overhead included */
    double gbs;             /* bytes / median time, 1 GB = 1e9 B */
    double tflops;          /* flops / median time */
    double pct_of_ceiling;  /* 100 * gbs / ceiling_gbs, or 0 */
    int hidden_work;        /* 1: wall clock far above the events */
    int check_ok;           /* -1 no check given, 0 failed, 1 passed */
    int check_failed_run;   /* with check_each: the first wrong run, counted
                               from 1 over warm-ups then samples; else 0 */
    int check_runs;         /* runs checked */
    char check_msg[512];
    int launch_late;        /* timed samples in which the GPU had passed the
                               start event before run() returned (with
                               adaptive_hold: even at the longest hold, 25 ms):
                               the host queued for longer than the hold, and
                               part of that wait may be in the time (C
                               launchers: never) */
} fl_timing;

EXTERN_C fl_timing_opts fl_timing_defaults(void);

/* 1 under the grader's speed audit (FUSIONLAB_TIMING_AUDIT set, not "0"):
 * the speed checks then run under Nsight Compute, which times every kernel
 * itself and slows each by its own overhead, so the protocol takes 1
 * warm-up and 3 samples and the tests judge the outputs only, not the
 * times (tests/fl_test.c). */
EXTERN_C int fl_timing_audit(void);

/* 1 in the worked solution's verifying runs under the grader
 * (FUSIONLAB_TIMING_UNTIMED set, not "0", read before main): those runs are
 * there for the references of every output a speed check compares
 * (grader/verify.c), not for its times. fl_time_variants then makes each
 * run of each variant, warm-ups and samples, in the protocol's order, with
 * its prepare and its check, and no flush, hold, event, empty sample or
 * clock: the same inputs and checks as a timed run, in a fraction of the
 * time. Its times are 0; the speed checks then judge the outputs only,
 * skip the copy ceiling and write no speed record (a check without one
 * scores nothing: grader/stage_score.c). */
EXTERN_C int fl_timing_untimed(void);

/* Time nv variants with the protocol above; out[i] describes v[i]. */
EXTERN_C cudaError_t fl_time_variants(const fl_variant *v, int nv,
                                      const fl_timing_opts *opts,
                                      fl_timing *out);

/* Statistics of n samples (n >= 1). Sorts x in place. Pure CPU. */
EXTERN_C fl_stats fl_stats_of(double *x, int n);

/* The hidden-work rule, exposed for the harness tests: given the medians of
 * the events, the wall clock and the host overhead of an empty sample,
 * decide whether work ran outside the timed stream. */
EXTERN_C int fl_hidden_work(double event_us, double wall_us,
                            double overhead_us);

/* Read `bytes` of `buf` on `stream` so that L2 holds nothing of interest
 * (defined in flush.cu). `sink` is one int of device memory. */
EXTERN_C cudaError_t fl_l2_flush(const void *buf, size_t bytes, int *sink,
                                 cudaStream_t stream);

/* Keep `blocks` x `threads` threads spinning for `us` microseconds of GPU
 * time on `stream` (flush.cu). With a grid that fills every SM, nothing else
 * runs meanwhile. */
EXTERN_C cudaError_t fl_gpu_hold(double us, int blocks, int threads,
                                 cudaStream_t stream);

/* The streaming kernels of the ceiling (flush.cu), on `stream`: `bytes` a
 * multiple of 16 and both pointers 16-byte aligned (else
 * cudaErrorInvalidValue). FL_STREAM_COPY and FL_STREAM_COPY_FLAT copy src
 * to dst (a grid the size of the GPU with four 16-byte loads in flight per
 * thread; one 16-byte element per thread); FL_STREAM_READ and
 * FL_STREAM_READ_FLAT (the same two shapes) read src and write nothing but,
 * never in practice, one int to `sink`; FL_STREAM_READ2_WRITE1 and
 * FL_STREAM_READ3_WRITE1 (one element per thread) read src's halves
 * (thirds) and write one element of dst for each two (three) read, as
 * c = a + b and y = (a + b) * s + c do: they move 3/4 (2/3) of the bytes of
 * a copy of `bytes`. */
typedef enum {
    FL_STREAM_COPY,
    FL_STREAM_COPY_FLAT,
    FL_STREAM_READ,
    FL_STREAM_READ_FLAT,
    FL_STREAM_READ2_WRITE1,
    FL_STREAM_READ3_WRITE1
} fl_stream_kind;
EXTERN_C cudaError_t fl_stream_device(fl_stream_kind kind, void *dst, const void *src,
                                      size_t bytes, int *sink, cudaStream_t stream);

/* The ceiling every memory-bound lesson is measured against ("the copy
 * ceiling"): measured, not read off a datasheet. Large device-to-device
 * streams timed with the protocol above, side by side: cudaMemcpyAsync, the
 * two copy kernels, two read-only streams (the copies' two shapes) and
 * streams of two and of three reads a write; the ceiling is the most bytes a
 * second any of them moved, in GB/s (1 GB = 1e9 bytes; bytes read + bytes
 * written). No one of them is enough alone: on an H200 a copy kernel moves
 * about 5% more than cudaMemcpy, on an H100 cudaMemcpy moves more than a
 * copy kernel, and there a kernel that reads three times for each write
 * (lesson 01's) moves more than any copy, since the memory turns from
 * reading to writing less often. A ceiling below what a kernel reaches would
 * make "% of the ceiling" read above 100. The first call measures (a few
 * hundred milliseconds); later calls in the same process return the cached
 * figure. bytes_per_buffer = 0 picks the default (256 MiB, capped at an
 * eighth of free memory). */
EXTERN_C cudaError_t fl_copy_bandwidth_gbs(size_t bytes_per_buffer,
                                           double *gbs);

/* The same measurement at `bytes_per_buffer` (rounded down to 16 bytes,
 * capped at an eighth of free memory; 0: cudaErrorInvalidValue), every call
 * anew, nothing cached: the ceiling of streams of a given size, which
 * fl_copy_ceiling_for below takes beside the 256 MiB one, since a shape
 * whose buffers are a few times the L2 can move more bytes a second than the
 * 256 MiB streams above. */
EXTERN_C cudaError_t fl_copy_bandwidth_at(size_t bytes_per_buffer, double *gbs);

/* The ceiling of a kernel that moves `bytes_moved` bytes (reads + writes):
 * the faster of the large streams above (fl_copy_bandwidth_gbs(0)) and the
 * same streams on buffers of bytes_moved / 2 each (fl_copy_bandwidth_at: a
 * copy then moves bytes_moved, the reads half of it, the mixed streams 3/4
 * and 2/3; buffers of at least 4 KiB; each size measured once in a
 * process). The streams of the kernel's size are the ones to beat near the
 * L2's size, where a few times its bytes move faster than 256 MiB streams do
 * (a figure above 100% otherwise); the large ones where a small stream is
 * slow for its launch and its latency, not its bandwidth. Every "% of the copy ceiling" of the
 * benches, the speed tests and ./lab compare is measured against it. */
EXTERN_C cudaError_t fl_copy_ceiling_for(double bytes_moved, double *gbs);

/* What the last measurement of fl_copy_bandwidth_gbs or _at in this process saw:
 * each way's GB/s (0 before the first). For the benches and ./lab doctor. */
typedef struct {
    double memcpy_gbs;   /* cudaMemcpyAsync, device to device */
    double kernel_gbs;   /* the faster of the two copy kernels */
    double read_gbs;     /* the faster read-only stream */
    double mixed_gbs;    /* the faster of two reads a write and three */
} fl_copy_ceiling;
EXTERN_C fl_copy_ceiling fl_copy_ceiling_parts(void);

#endif /* FUSIONLAB_TIMING_H */
