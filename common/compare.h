/* common/compare.h — compare a result with a reference and say what is wrong.
 *
 * Nothing here exits or asserts: a comparison returns a result struct whose
 * `message` a test can hand straight to its assertion. Outputs are poisoned
 * with NaN (every byte 0xFF) before each run, so an element the kernel never
 * wrote fails and is recognised as unwritten.
 *
 *   fl_compare_opts o = fl_compare_defaults("y", 1e-6, 1e-5);
 *   fl_compare_result r = fl_compare_f32(got, want, n, &o);
 *   cr_assert(r.n_bad == 0, "%s", r.message);
 */
#ifndef FUSIONLAB_COMPARE_H
#define FUSIONLAB_COMPARE_H

#include "check.h"

#include <stdint.h>

/* Byte written everywhere by fl_poison: as float32 it is a NaN that no
 * arithmetic produces (GPUs produce 0x7fffffff), so "unwritten" is visible. */
#define FL_POISON_BYTE 0xFF
#define FL_POISON_F32_BITS 0xFFFFFFFFu

typedef enum {
    FL_DIAG_NONE = 0,        /* every element within tolerance */
    FL_DIAG_UNWRITTEN_ALL,   /* no element written */
    FL_DIAG_UNWRITTEN_TAIL,  /* the last elements were never written */
    FL_DIAG_UNWRITTEN_SOME,  /* holes: some elements never written */
    FL_DIAG_TAIL,            /* only the tail (or the end of each row) wrong */
    FL_DIAG_OVERFLOW,        /* NaN/inf where the inputs are large */
    FL_DIAG_NONFINITE,       /* NaN/inf where the inputs are ordinary */
    FL_DIAG_RACE,            /* two runs on the same input disagree */
    FL_DIAG_WRONG            /* wrong values with no simpler pattern */
} fl_diagnosis;

typedef struct {
    const char *what;          /* name of the array in messages, e.g. "y" */
    double atol, rtol;         /* pass: |got - want| <= atol + rtol * |want| */
    size_t cols;               /* > 0: positions reported as (row, col) */
    /* Optional overflow evidence: magnitude[i] is the size of the input that
     * produced element i (e.g. the row's max |x|). When NaN/inf outputs sit
     * where magnitude > overflow_above, the diagnosis is FL_DIAG_OVERFLOW. */
    const float *magnitude;
    double overflow_above;
    const char *overflow_hint; /* optional advice replacing the generic one */
} fl_compare_opts;

typedef struct {
    size_t n;              /* elements compared */
    size_t n_bad;          /* elements outside tolerance (NaN counts as bad) */
    size_t first_bad;      /* index of the first bad element (n if none) */
    size_t last_bad;       /* index of the last bad element */
    size_t n_unwritten;    /* bad elements still holding the poison */
    size_t n_nonfinite;    /* bad elements that are NaN/inf but not poison */
    float got_first;       /* got[first_bad] */
    double want_first;     /* want[first_bad] */
    double max_abs_err;    /* over finite elements */
    size_t max_err_index;
    fl_diagnosis diagnosis;
    char message[1024];    /* one paragraph a student can act on */
} fl_compare_result;

/* Defaults: the given tolerances, no (row, col) reporting, no overflow data. */
EXTERN_C fl_compare_opts fl_compare_defaults(const char *what, double atol,
                                             double rtol);

/* Compare got (float, host) with want (double, host) element by element. */
EXTERN_C fl_compare_result fl_compare_f32(const float *got, const double *want,
                                          size_t n, const fl_compare_opts *o);

/* Compare two runs of the same kernel on the same input, bitwise. Any
 * difference is diagnosed as a race (FL_DIAG_RACE); identical runs that
 * still hold the poison are reported as unwritten. */
EXTERN_C fl_compare_result fl_compare_runs_f32(const float *run1,
                                               const float *run2, size_t n,
                                               const fl_compare_opts *o);

/* Called after every fl_compare_f32 with what it compared and concluded,
 * when set (the tests set one that leaves evidence for the grader:
 * common/evidence.h). NULL: none. */
typedef void (*fl_compare_observer)(const float *got, const double *want, size_t n,
                                    const fl_compare_opts *o, const fl_compare_result *r);
EXTERN_C void fl_compare_set_observer(fl_compare_observer f);

/* Short name of a diagnosis ("unwritten-tail", "overflow", ...). */
EXTERN_C const char *fl_diagnosis_name(fl_diagnosis d);

/* 1 if x carries the poison pattern. */
EXTERN_C int fl_is_poison_f32(float x);

/* Fill `bytes` of device memory with the poison (cudaMemsetAsync). */
EXTERN_C cudaError_t fl_poison(void *dev_ptr, size_t bytes,
                               cudaStream_t stream);

#endif /* FUSIONLAB_COMPARE_H */
