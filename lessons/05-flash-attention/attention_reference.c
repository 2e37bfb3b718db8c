/* lessons/05-flash-attention/attention_reference.c — see attention_reference.h. */
#include "attention_reference.h"
#include "thresholds.h"

#include <math.h>

double attention_reference_attend(const float *qi, const float *kh, const float *vh, int keys,
                                  int d, double scale, double *s, double *out)
{
    /* all scores first: the row max m makes every weight exp(s - m) <= 1,
     * so scores near +-100 neither overflow nor vanish all together */
    double mx = -INFINITY, smax = 0.0;
    for (int j = 0; j < keys; ++j) {
        const float *kj = kh + (size_t)j * d;
        double acc = 0.0;
        for (int c = 0; c < d; ++c) acc += (double)qi[c] * (double)kj[c];
        s[j] = acc * scale;
        if (s[j] > mx) mx = s[j];
        if (fabs(s[j]) > smax) smax = fabs(s[j]);
    }
    double l = 0.0;
    for (int c = 0; c < d; ++c) out[c] = 0.0;
    for (int j = 0; j < keys; ++j) {
        double w = exp(s[j] - mx);
        l += w;
        const float *vj = vh + (size_t)j * d;
        for (int c = 0; c < d; ++c) out[c] += w * (double)vj[c];
    }
    for (int c = 0; c < d; ++c) out[c] /= l;
    return smax;
}

double attention_reference_row(const float *q, const float *k, const float *v, int seq, int d,
                               int causal, double scale, int h, int i, double *s, double *out)
{
    const float *qi = q + ((size_t)h * seq + i) * d;
    const float *kh = k + (size_t)h * seq * d, *vh = v + (size_t)h * seq * d;
    return attention_reference_attend(qi, kh, vh, causal ? i + 1 : seq, d, scale, s, out);
}

double attention_f16_sampled_atol(double max_abs_v)
{
    return L05_F16_SAMPLED_VTOL * max_abs_v + L05_F16_ATOL;
}
