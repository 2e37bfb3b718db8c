/* tests/test_references.c — the lessons' CPU references, on the CPU (runs in CI).
 *
 * Every lesson's test and bench judge the GPU against one reference module
 * (lessons/NN-name/NAME_reference.c). Here each computes answers known by hand
 * on inputs a few elements long, chosen so that the right arithmetic is
 * exact in double and a wrong one (float where double is meant, a missing
 * max subtraction, a mask ignored, the wrong row or head) is visibly off.
 */
#include <criterion/criterion.h>

#include "thresholds.h"
#include "attention_reference.h"
#include "layernorm_reference.h"
#include "softmax_reference.h"
#include "transpose_reference.h"
#include "vector_add_reference.h"

#include <math.h>

TestSuite(vector_add_reference, .timeout = 10);
TestSuite(softmax_reference, .timeout = 10);
TestSuite(layernorm_reference, .timeout = 10);
TestSuite(transpose_reference, .timeout = 10);
TestSuite(attention_reference, .timeout = 10);

/* Asserts want[i] == expect[i] for i < n, bitwise as doubles. */
static void assert_exact(const double *want, const double *expect, size_t n, const char *what)
{
    for (size_t i = 0; i < n; ++i)
        cr_assert(want[i] == expect[i], "%s[%zu] = %.17g, expected %.17g", what, i, want[i],
                  expect[i]);
}

/* ---- lesson 01 ------------------------------------------------------------- */

Test(vector_add_reference, part_a_is_the_float_sum)
{
    /* 2^24 + 1 is not a float: the float sum rounds to 2^24, the double
     * sum would not */
    cr_assert(vector_add_ref(16777216.0f, 1.0f) == 16777216.0);
    const float a[3] = {16777216.0f, 0.5f, -3.0f}, b[3] = {1.0f, 0.25f, 3.0f};
    const double expect[3] = {16777216.0, 0.75, 0.0};
    double want[3];
    vector_add_reference(a, b, want, 3);
    assert_exact(want, expect, 3, "c");
}

Test(vector_add_reference, part_b_in_double_sum_first)
{
    /* (1 + 2^-24) * 3 keeps its 2^-24 in double; float would round to 3 */
    cr_assert(fused_elementwise_ref(1.0f, 0x1p-24f, 3.0f, 0.0f) == 3.0 + 3.0 * 0x1p-24);
    /* a + b cancels to 0.25 exactly before the scale */
    const float a[2] = {3000.5f, 1.0f}, b[2] = {-3000.25f, 2.0f}, c[2] = {0.125f, -1.0f};
    const double expect[2] = {0.25 * -3.5 + 0.125, 3.0 * -3.5 - 1.0};
    double want[2];
    fused_elementwise_reference(a, b, c, -3.5f, want, 2);
    assert_exact(want, expect, 2, "y");
}

Test(vector_add_reference, part_b_atol_grows_with_s)
{
    /* 2|s| + 1 roundings' worth: the bench's figure at s = 1.5 was 4e-6 */
    cr_assert(fused_elementwise_atol(1.5f) == 4e-6, "atol(1.5) = %.17g",
              fused_elementwise_atol(1.5f));
    cr_assert(fused_elementwise_atol(0.0f) == L01_FUSED_ATOL_PER_Y);
    cr_assert(fused_elementwise_atol(-2.75f) == fused_elementwise_atol(2.75f));
    cr_assert(fabs(fused_elementwise_atol(-2.75f) - 6.5 * L01_FUSED_ATOL_PER_Y) <= 1e-20);
}

/* ---- lesson 02 ------------------------------------------------------------- */

Test(softmax_reference, known_rows)
{
    /* row 0: equal values; row 1: values whose exp overflows unless the
     * max is subtracted first; row 2: masked (-inf) but the last column */
    const float x[3][4] = {
        {3.0f, 3.0f, 3.0f, 3.0f},
        {1000.0f, 1000.0f, -20000.0f, -20000.0f},
        {-INFINITY, -INFINITY, -INFINITY, 7.5f},
    };
    const double expect[12] = {0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0};
    double y[12];
    softmax_reference(&x[0][0], y, 3, 4);
    assert_exact(y, expect, 12, "y");
}

Test(softmax_reference, ratio_of_two)
{
    /* exp(ln 3) = 3: weights 1/4 and 3/4 (ln 3 rounded to float moves them
     * by ~3e-8) */
    const float x[2] = {0.0f, logf(3.0f)};
    double y[2];
    softmax_reference(x, y, 1, 2);
    cr_assert(fabs(y[0] - 0.25) < 1e-7 && fabs(y[1] - 0.75) < 1e-7, "y = %.17g, %.17g", y[0],
              y[1]);
    cr_assert(fabs(y[1] / y[0] - exp((double)x[1])) <= 1e-15 * exp((double)x[1]));
    cr_assert(fabs(y[0] + y[1] - 1.0) <= 1e-15);
}

/* ---- lesson 03 ------------------------------------------------------------- */

Test(layernorm_reference, eps_is_pytorchs)
{
    cr_assert(LAYERNORM_EPS == 1e-5f);
}

/* Two rows of four: row 0 has mean 1000 and deviations 3, -1, -1, -1 (var
 * 3), row 1 is flat (var 0). With eps = 1 both rstd are exact (1/2 and 1),
 * and so is every value below. */
Test(layernorm_reference, forward_and_backward_by_hand)
{
    const float x[8] = {1003.0f, 999.0f, 999.0f, 999.0f, -2.25f, -2.25f, -2.25f, -2.25f};
    const float w[4] = {1.0f, 2.0f, 0.5f, -1.0f}, b[4] = {0.25f, 0.0f, -0.5f, 1.0f};
    const float dy[8] = {1.0f, 0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    double y[8], mean[2], rstd[2], dx[8], dw[4], db[4];
    float mean_in[2], rstd_in[2];
    layernorm_reference(x, w, b, dy, 2, 4, 1.0f, y, mean, rstd, mean_in, rstd_in, dx, dw, db);

    const double mean_x[2] = {1000.0, -2.25}, rstd_x[2] = {0.5, 1.0};
    assert_exact(mean, mean_x, 2, "mean");
    assert_exact(rstd, rstd_x, 2, "rstd");
    cr_assert(mean_in[0] == 1000.0f && mean_in[1] == -2.25f && rstd_in[0] == 0.5f &&
              rstd_in[1] == 1.0f);
    /* xhat = 1.5, -0.5, -0.5, -0.5 and 0 (the flat row: y = bias) */
    const double y_x[8] = {1.75, -1.0, -0.75, 1.5, 0.25, 0.0, -0.5, 1.0};
    assert_exact(y, y_x, 8, "y");
    /* row 0: g = dy w = (1, 0, 0, 0), mean(g) = 1/4, mean(g xhat) = 3/8;
     * row 1: xhat = 0, so dx = rstd (g - mean(g)) = w - 5/8 */
    const double dx_x[8] = {0.09375, -0.03125, -0.03125, -0.03125,
                            0.375,   1.375,    -0.125,   -1.625};
    assert_exact(dx, dx_x, 8, "dx");
    const double dw_x[4] = {1.5, 0.0, 0.0, 0.0}, db_x[4] = {2.0, 1.0, 1.0, 1.0};
    assert_exact(dw, dw_x, 4, "dweight");
    assert_exact(db, db_x, 4, "dbias");
}

Test(layernorm_reference, two_pass_variance_on_a_large_mean)
{
    /* mean 10^4, deviations +-2^-4: two passes give var = 2^-8 exactly,
     * where E[x^2] - mean^2 would subtract two numbers near 10^8 */
    const float x[4] = {10000.0625f, 9999.9375f, 10000.0625f, 9999.9375f};
    double mean, rstd;
    layernorm_ref_row_stats(x, 4, 0.0, &mean, &rstd);
    cr_assert(mean == 10000.0 && rstd == 16.0, "mean %.17g rstd %.17g", mean, rstd);
}

Test(layernorm_reference, mean_allowance)
{
    double unit = layernorm_y_allowance(1.0, 1.0);
    cr_assert(unit == L03_Y_MEAN_ULPS * 0x1p-24);
    cr_assert(layernorm_y_allowance(-1000.0, 0.5) == 500.0 * unit);

    /* y: within atol + rtol |want| + allow |w| is accepted, past it not,
     * and NaN never */
    const double want[4] = {1.0, 1.0, -2.0, 1.0}, allow[1] = {1e-3};
    const float w[4] = {1.0f, 1.0f, 0.5f, 1.0f};
    float got[4] = {1.0f + 1.09e-3f, 1.0f + 1.13e-3f, -2.0f - 0.7e-3f, NAN};
    layernorm_accept_mean_error(got, want, 4, 4, 1e-4, 1e-5, LAYERNORM_ALLOW_Y, allow, w);
    cr_assert(got[0] == 1.0f, "within 1e-4 + 1e-5 + 1e-3: accepted (got %.9g)", got[0]);
    cr_assert(got[1] != 1.0f, "past the bound: left as it was");
    cr_assert(got[2] != -2.0f, "the allowance scales with |w| = 0.5: 7e-4 is past it");
    cr_assert(isnan(got[3]));

    /* rstd: its share, allow x L03_RSTD_MEAN_ULPS / L03_Y_MEAN_ULPS, relative */
    const double rstd_want[2] = {100.0, 100.0}, rstd_allow[2] = {1e-3, 1e-3};
    double share = 1e-3 * (L03_RSTD_MEAN_ULPS / L03_Y_MEAN_ULPS) * 100.0;
    float rstd_got[2] = {(float)(100.0 + 0.9 * share), (float)(100.0 + 1.1 * share)};
    layernorm_accept_mean_error(rstd_got, rstd_want, 2, 0, 0.0, 0.0, LAYERNORM_ALLOW_RSTD,
                                rstd_allow, NULL);
    cr_assert(rstd_got[0] == 100.0f && rstd_got[1] != 100.0f, "rstd %.9g %.9g", rstd_got[0],
              rstd_got[1]);
}

/* ---- lesson 04 ------------------------------------------------------------- */

Test(transpose_reference, two_by_three)
{
    const float in[6] = {1, 2, 3, 4, 5, 6}; /* (2, 3) */
    const double expect[6] = {1, 4, 2, 5, 3, 6}; /* (3, 2) */
    double out[6];
    transpose_reference(in, out, 2, 3);
    assert_exact(out, expect, 6, "out");
}

/* ---- lesson 05 ------------------------------------------------------------- */

Test(attention_reference, one_key_and_equal_scores)
{
    /* one key: its weight is 1, O = V */
    const float q[2] = {0.3f, -0.7f}, k[8] = {5, 6, 0, 0, 0, 0, 0, 0};
    const float v[8] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f};
    double s[4], out[2];
    attention_reference_attend(q, k, v, 1, 2, 1.0, s, out);
    cr_assert(out[0] == 1.0 && out[1] == 2.0, "O = %.17g %.17g", out[0], out[1]);
    /* q = 0: every score is 0, every weight 1, O is the mean of V's rows */
    const float q0[2] = {0.0f, 0.0f};
    double smax = attention_reference_attend(q0, k, v, 4, 2, 0.125, s, out);
    cr_assert(out[0] == 4.0 && out[1] == 5.0 && smax == 0.0, "O = %.17g %.17g, smax %g", out[0],
              out[1], smax);
}

Test(attention_reference, large_scores_and_a_ratio)
{
    /* scores 1000 and 1000: exp(1000) overflows a double, exp(s - max) not */
    const float q[1] = {1000.0f}, k2[2] = {1.0f, 1.0f}, v2[2] = {4.0f, 8.0f};
    double s[2], out[1];
    double smax = attention_reference_attend(q, k2, v2, 2, 1, 1.0, s, out);
    cr_assert(out[0] == 6.0 && smax == 1000.0, "O = %.17g, smax %.17g", out[0], smax);
    /* scores 0 and ln 3: weights 1/4, 3/4 */
    const float q1[1] = {1.0f}, k3[2] = {0.0f, logf(3.0f)};
    attention_reference_attend(q1, k3, v2, 2, 1, 1.0, s, out);
    cr_assert(fabs(out[0] - 7.0) < 1e-6, "O = %.17g, expected ~7", out[0]);
}

Test(attention_reference, rows_heads_and_the_causal_mask)
{
    /* 2 heads, seq 2, d 1: head h's V is (10h + 1, 10h + 2); key 1 scores
     * far above key 0 in every head */
    const float q[4] = {1.0f, 1.0f, 1.0f, 1.0f}, k[4] = {0.0f, 50.0f, 0.0f, 50.0f};
    const float v[4] = {1.0f, 2.0f, 11.0f, 12.0f};
    double s[2], out[1];
    /* causal, query 0 sees key 0 only: O = V[h, 0], whatever key 1 scores */
    attention_reference_row(q, k, v, 2, 1, 1, 1.0, 1, 0, s, out);
    cr_assert(out[0] == 11.0, "head 1, query 0, causal: O = %.17g, expected 11", out[0]);
    /* not causal: key 1 takes all but e^-50 of the weight */
    attention_reference_row(q, k, v, 2, 1, 0, 1.0, 1, 0, s, out);
    cr_assert(fabs(out[0] - 12.0) < 1e-20 + 1e-15 * 12.0, "head 1, query 0: O = %.17g", out[0]);
    attention_reference_row(q, k, v, 2, 1, 1, 1.0, 0, 1, s, out);
    cr_assert(fabs(out[0] - 2.0) < 1e-15 * 2.0, "head 0, query 1, causal: O = %.17g", out[0]);
}

Test(attention_reference, f16_sampled_bound)
{
    /* linear in max |V|: L05_F16_ATOL at 0, L05_F16_SAMPLED_VTOL per unit */
    cr_assert(attention_f16_sampled_atol(0.0) == L05_F16_ATOL);
    cr_assert(attention_f16_sampled_atol(2.0) ==
              L05_F16_SAMPLED_VTOL * 2.0 + L05_F16_ATOL);
    cr_assert(attention_f16_sampled_atol(1.0) < L05_F16_BASELINE_ATOL);
}
