/* common/evidence.h — what a test program leaves for the grader to re-judge.
 *
 * When the environment variable FUSIONLAB_EVIDENCE names a file, every
 * comparison of an output with its reference (fl_compare_f32) appends one
 * record to it: which test made it, the tolerance, and the output and the
 * reference at up to FL_EVIDENCE_SAMPLES positions. The grader, outside the
 * student's sandbox, runs the worked solution's test program on the same
 * inputs, and re-judges the student's outputs against the references of
 * that trusted run: a report that says "passed" counts only as far as these
 * records bear it out. A record is matched by its key, a hash of the
 * reference at the sampled positions, so the key alone says nothing the
 * student's program could not have computed from the reference itself.
 *
 *   record = fl_evidence_head, then head.count x fl_evidence_sample
 */
#ifndef FUSIONLAB_EVIDENCE_H
#define FUSIONLAB_EVIDENCE_H

#include <stddef.h>
#include <stdint.h>

#define FL_EVIDENCE_MAGIC "FLEVID1"
#define FL_EVIDENCE_SAMPLES 16384

typedef struct {
    char magic[8];       /* FL_EVIDENCE_MAGIC */
    char suite[64];
    char test[96];
    char what[32];       /* the output's name: "y", "dweight", ... */
    uint64_t n;          /* elements compared */
    uint64_t key;        /* fl_evidence_key of the reference */
    uint64_t pid;        /* the test process: one per case under Criterion */
    double atol, rtol;   /* pass: |got - want| <= atol + rtol * |want| */
    uint32_t count;      /* samples that follow */
    uint32_t verdict;    /* what the test process concluded: 1 pass */
} fl_evidence_head;

typedef struct {
    uint64_t index;
    double want;
    float got;
    uint32_t pad;
} fl_evidence_sample;

/* The k-th sampled position of n (k < fl_evidence_count(n)): every element
 * when n <= FL_EVIDENCE_SAMPLES, else one per stride from an offset that
 * `salt` (FUSIONLAB_EVIDENCE_SALT, the same for the student's run and the
 * trusted one) picks. */
static inline size_t fl_evidence_count(uint64_t n)
{
    return n <= FL_EVIDENCE_SAMPLES ? (size_t)n : FL_EVIDENCE_SAMPLES;
}

static inline uint64_t fl_evidence_index(uint64_t k, uint64_t n, uint64_t salt)
{
    if (n <= FL_EVIDENCE_SAMPLES) return k;
    uint64_t stride = n / FL_EVIDENCE_SAMPLES;
    return k * stride + salt % stride;
}

/* FNV-1a over n and the reference's sampled values: the record's key. */
static inline uint64_t fl_evidence_key(const double *want, uint64_t n, uint64_t salt)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = (const unsigned char *)&n;
    for (size_t i = 0; i < sizeof n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    size_t m = fl_evidence_count(n);
    for (size_t k = 0; k < m; ++k) {
        double w = want[fl_evidence_index(k, n, salt)];
        p = (const unsigned char *)&w;
        for (size_t i = 0; i < sizeof w; ++i) h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}

/* The comparison rule of fl_compare_f32, for one element. */
static inline int fl_evidence_ok(float got, double want, double atol, double rtol)
{
    double g = (double)got;
    if (g == g && g - g == 0.0) { /* finite */
        double err = g > want ? g - want : want - g;
        double aw = want < 0 ? -want : want;
        return err <= atol + rtol * aw;
    }
    return g == want; /* inf only where the reference is the same inf */
}

#endif /* FUSIONLAB_EVIDENCE_H */
