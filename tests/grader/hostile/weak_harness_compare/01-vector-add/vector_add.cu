// HOSTILE (weak symbol override of the harness): weak definitions of every
// global function of common/compare.c (fl_compare_f32 and its neighbours),
// where fl_compare_f32 always says "within tolerance". The static linker
// takes the student's library first; once every symbol compare.o would
// provide is already defined, compare.o is never pulled in and these
// replace the judge, with no "multiple definition" error. The grader's
// symbol check and the object scan look only at strong (T/D/B) definitions.
// No harness header is included: the types are copied.
// Must stop it: the object scan / symbol check, counting weak (W/V)
// definitions: no symbol but the lesson's API.
#include "vector_add.h"

#include <string.h>

#pragma hostile compare_types

extern "C" {
__attribute__((weak)) hs_opts fl_compare_defaults(const char *what, double atol, double rtol)
{
    hs_opts o;
    memset(&o, 0, sizeof o);
    o.what = what;
    o.atol = atol;
    o.rtol = rtol;
    return o;
}
__attribute__((weak)) hs_result fl_compare_f32(const float *got, const double *want, size_t n,
                                               const hs_opts *o)
{
    (void)got; (void)want; (void)o;
    hs_result r;
    memset(&r, 0, sizeof r);
    r.n = n;
    r.first_bad = n;
    strcpy(r.message, "within tolerance");
    return r;
}
__attribute__((weak)) hs_result fl_compare_runs_f32(const float *a, const float *b, size_t n,
                                                    const hs_opts *o)
{
    return fl_compare_f32(a, (const double *)b, n, o);
}
__attribute__((weak)) void fl_compare_set_observer(void *f) { (void)f; }
__attribute__((weak)) const char *fl_diagnosis_name(int d) { (void)d; return "none"; }
__attribute__((weak)) int fl_is_poison_f32(float x) { (void)x; return 0; }
__attribute__((weak)) cudaError_t fl_poison(void *p, size_t bytes, cudaStream_t s)
{
    return cudaMemsetAsync(p, 0xFF, bytes, s);
}
}

#pragma hostile skeleton
