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

#endif /* FUSIONLAB_GUARD_H */
