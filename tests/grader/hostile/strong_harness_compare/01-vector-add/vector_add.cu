// HOSTILE (strong symbol override of the harness): a plain definition of
// fl_compare_f32 that always says "within tolerance". Either the static
// linker stops at a duplicate definition, or (with the harness's copy not
// pulled in) this one quietly becomes the judge.
// Must stop it: the link, or the grader's symbol check / object scan
// ("defines a symbol the harness defines"), naming fl_compare_f32.
#include "vector_add.h"

#include <string.h>

#pragma hostile compare_types

extern "C" {
hs_result fl_compare_f32(const float *got, const double *want, size_t n, const hs_opts *o)
{
    (void)got; (void)want; (void)o;
    hs_result r;
    memset(&r, 0, sizeof r);
    r.n = n;
    r.first_bad = n;
    strcpy(r.message, "within tolerance");
    return r;
}
}

#pragma hostile skeleton
