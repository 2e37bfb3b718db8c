/* common/compare.c — tolerance comparison and diagnosis (see compare.h). */
#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

fl_compare_opts fl_compare_defaults(const char *what, double atol, double rtol)
{
    fl_compare_opts o;
    memset(&o, 0, sizeof o);
    o.what = what ? what : "output";
    o.atol = atol;
    o.rtol = rtol;
    return o;
}

int fl_is_poison_f32(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits == FL_POISON_F32_BITS;
}

cudaError_t fl_poison(void *dev_ptr, size_t bytes, cudaStream_t stream)
{
    return fl_cuda_report(cudaMemsetAsync(dev_ptr, FL_POISON_BYTE, bytes, stream),
                          "fl_poison", __FILE__, __LINE__);
}

const char *fl_diagnosis_name(fl_diagnosis d)
{
    switch (d) {
    case FL_DIAG_NONE: return "ok";
    case FL_DIAG_UNWRITTEN_ALL: return "unwritten";
    case FL_DIAG_UNWRITTEN_TAIL: return "unwritten-tail";
    case FL_DIAG_UNWRITTEN_SOME: return "unwritten-holes";
    case FL_DIAG_TAIL: return "tail";
    case FL_DIAG_OVERFLOW: return "overflow";
    case FL_DIAG_NONFINITE: return "nonfinite";
    case FL_DIAG_RACE: return "race";
    case FL_DIAG_WRONG: return "wrong";
    }
    return "?";
}

/* "index 17" or "row 3 col 5" */
static void where(char *buf, size_t len, size_t i, size_t cols)
{
    if (cols > 0)
        snprintf(buf, len, "row %zu col %zu", i / cols, i % cols);
    else
        snprintf(buf, len, "index %zu", i);
}

static void fmt_value(char *buf, size_t len, double v, int poison)
{
    if (poison)
        snprintf(buf, len, "nan (never written)");
    else
        snprintf(buf, len, "%.9g", v);
}

/* What we learned while scanning, beyond the public result. */
typedef struct {
    size_t min_bad_col;     /* smallest column index among bad elements */
    size_t bad_rows;        /* rows holding at least one bad element */
    size_t last_bad_row;    /* to count bad_rows in one pass */
    size_t nonfinite_large; /* NaN/inf (not poison) where magnitude is large */
} scan_extra;

static const char *advice(fl_diagnosis d, const fl_compare_opts *o, int by_row)
{
    switch (d) {
    case FL_DIAG_NONE:
        return "";
    case FL_DIAG_UNWRITTEN_ALL:
        return "no element was written (all still hold the NaN poison): is the "
               "kernel launched, does every thread store its result, and did the "
               "launch fail (check the error printed above)?";
    case FL_DIAG_UNWRITTEN_TAIL:
        return by_row
                   ? "the end of each row was never written: the loop over "
                     "columns stops early (loop while col < cols, stepping by "
                     "the number of threads in the row)"
                   : "the last elements were never written: the grid does not "
                     "cover all n elements (round the block count up with "
                     "CEIL_DIV(n, block), or use a grid-stride loop, and handle "
                     "the leftovers after the last full vector)";
    case FL_DIAG_UNWRITTEN_SOME:
        return "some elements were never written (still NaN poison) while "
               "others were: the indexing leaves gaps (check the index "
               "formula and the stride of any loop)";
    case FL_DIAG_TAIL:
        return by_row
                   ? "only the end of each row is wrong: check the bounds "
                     "mask and the leftover columns after the last full "
                     "block or vector"
                   : "only the tail is wrong: check the bounds mask "
                     "(if (i < n)) and how the leftover elements after the last "
                     "full block or vector are handled";
    case FL_DIAG_OVERFLOW:
        return o->overflow_hint
                   ? o->overflow_hint
                   : "NaN/inf appear exactly where the inputs are large: an "
                     "intermediate overflows float32 (for exp, subtract the "
                     "maximum first)";
    case FL_DIAG_NONFINITE:
        return "NaN/inf appear where the inputs are ordinary: look for a "
               "division by zero, sqrt or log of a negative number, or a read "
               "of memory nothing wrote";
    case FL_DIAG_RACE:
        return "two runs on the same input disagree: a race (a missing "
               "__syncthreads() between writing and reading shared memory, or "
               "two threads writing the same element)";
    case FL_DIAG_WRONG:
        return "values are wrong throughout: check the formula and the index "
               "arithmetic against the reference";
    }
    return "";
}

static void compose(fl_compare_result *r, const fl_compare_opts *o,
                    const char *verb, int by_row)
{
    char pos[64], gotv[64], wantv[64];
    if (r->diagnosis == FL_DIAG_NONE) {
        snprintf(r->message, sizeof r->message,
                 "all %zu elements of %s %s (max abs error %.3g)", r->n,
                 o->what, verb, r->max_abs_err);
        return;
    }
    where(pos, sizeof pos, r->first_bad, o->cols);
    fmt_value(gotv, sizeof gotv, r->got_first, fl_is_poison_f32(r->got_first));
    snprintf(wantv, sizeof wantv, "%.9g", r->want_first);
    snprintf(r->message, sizeof r->message,
             "%zu of %zu elements of %s wrong, first at %s: got %s, want %s "
             "(%zu never written, %zu NaN/inf) -- %s",
             r->n_bad, r->n, o->what, pos, gotv, wantv, r->n_unwritten,
             r->n_nonfinite, advice(r->diagnosis, o, by_row));
}

static fl_diagnosis diagnose(const fl_compare_result *r, const scan_extra *x,
                             const fl_compare_opts *o, int *by_row)
{
    *by_row = 0;
    if (r->n_bad == 0) return FL_DIAG_NONE;
    if (r->n_unwritten == r->n) return FL_DIAG_UNWRITTEN_ALL;
    /* A tail: every element from the first bad one to the end is bad. */
    int suffix = r->last_bad == r->n - 1 && r->n_bad == r->n - r->first_bad;
    /* The end of each row: in at least two rows, exactly the columns from
     * the same c0 > 0 to the last one are bad, and nothing else. */
    int row_end = o->cols > 1 && x->min_bad_col > 0 && x->bad_rows >= 2 &&
                  r->n_bad == x->bad_rows * (o->cols - x->min_bad_col);
    if (r->n_unwritten == r->n_bad) {
        if (suffix && r->first_bad > 0) return FL_DIAG_UNWRITTEN_TAIL;
        if (row_end) { *by_row = 1; return FL_DIAG_UNWRITTEN_TAIL; }
        return FL_DIAG_UNWRITTEN_SOME;
    }
    if (r->n_nonfinite > 0 && o->magnitude &&
        x->nonfinite_large * 10 >= r->n_nonfinite * 9)
        return FL_DIAG_OVERFLOW;
    if (r->n_nonfinite > 0) return FL_DIAG_NONFINITE;
    /* A tail: the bad elements sit in the last stretch (at most half the
     * array, and at most n/64 or 1024 elements), and either fill it or fit
     * in the last 32 (the leftovers after the last full vector or warp). */
    size_t tail_span = r->n / 64 > 1024 ? r->n / 64 : 1024;
    size_t stretch = r->n - r->first_bad;
    if (r->first_bad > 0 && stretch <= tail_span && stretch <= r->n / 2 &&
        (suffix || stretch <= 32))
        return FL_DIAG_TAIL;
    if (row_end) { *by_row = 1; return FL_DIAG_TAIL; }
    return FL_DIAG_WRONG;
}

static fl_compare_observer g_observer;

void fl_compare_set_observer(fl_compare_observer f) { g_observer = f; }

fl_compare_result fl_compare_f32(const float *got, const double *want, size_t n,
                                 const fl_compare_opts *o)
{
    fl_compare_result r;
    scan_extra x = {(size_t)-1, 0, (size_t)-1, 0};
    memset(&r, 0, sizeof r);
    r.n = n;
    r.first_bad = n;
    for (size_t i = 0; i < n; ++i) {
        double g = (double)got[i], w = want[i];
        int bad;
        if (isfinite(g)) {
            double err = fabs(g - w);
            if (err > r.max_abs_err) {
                r.max_abs_err = err;
                r.max_err_index = i;
            }
            bad = !(err <= o->atol + o->rtol * fabs(w));
        } else {
            /* inf is right only where the reference is the same inf */
            bad = !(isinf(g) && g == w);
        }
        if (!bad) continue;
        if (r.n_bad == 0) {
            r.first_bad = i;
            r.got_first = got[i];
            r.want_first = w;
        }
        r.last_bad = i;
        r.n_bad++;
        if (fl_is_poison_f32(got[i])) {
            r.n_unwritten++;
        } else if (!isfinite(g)) {
            r.n_nonfinite++;
            if (o->magnitude && (double)o->magnitude[i] > o->overflow_above)
                x.nonfinite_large++;
        }
        if (o->cols > 0) {
            if (i % o->cols < x.min_bad_col) x.min_bad_col = i % o->cols;
            if (i / o->cols != x.last_bad_row) {
                x.last_bad_row = i / o->cols;
                x.bad_rows++;
            }
        }
    }
    int by_row;
    r.diagnosis = diagnose(&r, &x, o, &by_row);
    compose(&r, o, "within tolerance", by_row);
    if (g_observer) g_observer(got, want, n, o, &r);
    return r;
}

fl_compare_result fl_compare_runs_f32(const float *run1, const float *run2,
                                      size_t n, const fl_compare_opts *o)
{
    fl_compare_result r;
    memset(&r, 0, sizeof r);
    r.n = n;
    r.first_bad = n;
    for (size_t i = 0; i < n; ++i) {
        if (memcmp(&run1[i], &run2[i], sizeof(float)) == 0) continue;
        if (r.n_bad == 0) {
            r.first_bad = i;
            r.got_first = run2[i];
            r.want_first = (double)run1[i];
        }
        r.last_bad = i;
        r.n_bad++;
        double e = fabs((double)run1[i] - (double)run2[i]);
        if (e > r.max_abs_err) {
            r.max_abs_err = e;
            r.max_err_index = i;
        }
    }
    r.diagnosis = r.n_bad ? FL_DIAG_RACE : FL_DIAG_NONE;
    if (r.n_bad) {
        char pos[64];
        where(pos, sizeof pos, r.first_bad, o->cols);
        snprintf(r.message, sizeof r.message,
                 "%zu of %zu elements of %s differ between two runs on the same "
                 "input, first at %s: %.9g then %.9g -- %s",
                 r.n_bad, n, o->what, pos, r.want_first, (double)r.got_first,
                 advice(FL_DIAG_RACE, o, 0));
        return r;
    }
    /* Identical runs prove nothing if neither wrote: poison equals poison. */
    for (size_t i = 0; i < n; ++i) {
        if (!fl_is_poison_f32(run2[i])) continue;
        if (r.n_unwritten++ == 0) r.first_bad = i;
        r.last_bad = i;
    }
    if (r.n_unwritten) {
        r.n_bad = r.n_unwritten;
        r.got_first = run2[r.first_bad];
        r.want_first = NAN;
        r.diagnosis = r.n_unwritten == n ? FL_DIAG_UNWRITTEN_ALL : FL_DIAG_UNWRITTEN_SOME;
        char pos[64];
        where(pos, sizeof pos, r.first_bad, o->cols);
        snprintf(r.message, sizeof r.message,
                 "%zu of %zu elements of %s were never written in either run, first "
                 "at %s -- %s", r.n_unwritten, n, o->what, pos,
                 advice(r.diagnosis, o, 0));
    } else {
        compose(&r, o, "identical in two runs", 0);
    }
    return r;
}
