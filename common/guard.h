/* common/guard.h — device-side helpers that keep a fast answer honest.
 *
 *   fl_checksum   a 64-bit fingerprint of a device buffer: taken before and
 *                 after a launcher runs, it shows whether the launcher wrote
 *                 into memory it was given as input
 *   fl_rotate     a cyclic shift of a device buffer into another: the timed
 *                 runs of the tests feed each sample different contents at
 *                 the same addresses, so a result cached by pointer or by
 *                 content is stale and a kernel that skips repeated inputs
 *                 has nothing to skip
 *   fl_unrotate_f32
 *                 the inverse on the host, for checking a rotated output
 *                 against the unrotated reference
 *   fl_uniform_at, fl_fill_uniform_dev, fl_fill_uniform_host
 *                 inputs generated from a key: element i is a function of
 *                 (key, i) alone, the same bits on the GPU and the host, so
 *                 a test fills gigabytes on the GPU with a new key before
 *                 every timed run and checks any element it likes on the
 *                 host without copying the inputs back
 *   fl_hold_begin, fl_hold_active, fl_hold_end
 *                 keep a stream busy with one spinning block until released
 *                 (or a timeout passes): work queued behind it cannot start,
 *                 which shows whether a launcher used the stream it was given
 */
#ifndef FUSIONLAB_GUARD_H
#define FUSIONLAB_GUARD_H

#include "check.h"

#include <stdint.h>

/* Order-independent 64-bit checksum of `bytes` of device memory at `d`
 * (any alignment), computed on the GPU; synchronous. */
EXTERN_C cudaError_t fl_checksum(const void *d, size_t bytes, uint64_t *out);

/* dst[i] = src[(i + shift) % n] for the n elements of `elem` bytes each,
 * on `stream` (two device-to-device copies). dst and src must not overlap. */
EXTERN_C cudaError_t fl_rotate(void *dst, const void *src, size_t n, size_t elem,
                               size_t shift, cudaStream_t stream);

/* In place on the host: undo fl_rotate on an output of n floats, so that
 * x[(i + shift) % n] receives what x[i] held. Pure CPU. */
EXTERN_C void fl_unrotate_f32(float *x, size_t n, size_t shift);

/* The value of element i of the inputs of `key`, in [lo, hi]:
 *   h = a 64-bit hash of (key, i),  u = (h >> 40) x 2^-24 in [0, 1),
 *   value = fmaf(hi - lo, u, lo)   (one rounding, on either side).
 * The host and the GPU compute it with the same integer and fused
 * multiply-add operations, so both give the same float. */
EXTERN_C float fl_uniform_at(uint64_t key, size_t i, float lo, float hi);

/* d[i] = fl_uniform_at(key, i, lo, hi) for i < n, on the GPU, on `stream`. */
EXTERN_C cudaError_t fl_fill_uniform_dev(float *d, size_t n, uint64_t key, float lo, float hi,
                                         cudaStream_t stream);

/* The same on the host. */
EXTERN_C void fl_fill_uniform_host(float *x, size_t n, uint64_t key, float lo, float hi);

/* A stream held by a spinning block. */
typedef struct {
    volatile unsigned int *flags; /* host view of the mapped flags */
    cudaStream_t stream;
} fl_hold;

/* Queue on `stream` one block that spins until fl_hold_end releases it or
 * `timeout_s` seconds pass (by the GPU's clock), and wait until it runs. */
EXTERN_C cudaError_t fl_hold_begin(fl_hold *h, cudaStream_t stream, double timeout_s);

/* 1 while the block still spins (not released, not timed out). */
EXTERN_C int fl_hold_active(const fl_hold *h);

/* Release the block, wait for `stream`, free the flags. *timed_out (when not
 * NULL) tells whether the block gave up by itself before the release. */
EXTERN_C cudaError_t fl_hold_end(fl_hold *h, int *timed_out);

#endif /* FUSIONLAB_GUARD_H */
