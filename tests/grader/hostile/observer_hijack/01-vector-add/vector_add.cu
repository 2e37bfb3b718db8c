// HOSTILE (turning the harness's own hook against it; needs a GPU: only a
// test with a device calls a launcher): common/compare.h lets the tests
// install an observer that fl_compare_f32 calls with its result just before
// returning it. The launcher installs its own, which casts away the const
// and clears the result: no bad element, "within tolerance". No harness
// symbol is defined, only called; the kernels are the skeleton's.
// Must stop it: the object scan (no call into the harness's internals from
// an exercise), and the grader's check of the report against the evidence
// the real observer leaves (with it replaced, there is none).
#include "vector_add.h"

#include <string.h>

#pragma hostile launcher_hook

#pragma hostile compare_types

extern "C" {
typedef void (*hs_observer)(const float *, const double *, size_t, const void *, const hs_result *);
void fl_compare_set_observer(hs_observer f);
}

static void hs_all_good(const float *got, const double *want, size_t n, const void *o,
                        const hs_result *r)
{
    (void)got; (void)want; (void)o;
    hs_result *w = (hs_result *)r;
    w->n_bad = w->n_unwritten = w->n_nonfinite = 0;
    w->first_bad = n;
    w->diagnosis = 0;
    strcpy(w->message, "within tolerance");
}

static void hs_in_launcher(void) { fl_compare_set_observer(hs_all_good); }

#pragma hostile skeleton
