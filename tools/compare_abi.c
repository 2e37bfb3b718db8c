/* tools/compare_abi.c — what tools/compare.py must know of the C side, told
 * by the C side.
 *
 * Compiled into every fusionlab_compare_NN_* shared library (lesson_add's
 * COMPARE, cmake/Lesson.cmake). compare.py calls fl_time_variants through
 * ctypes with structures it declares itself, in Python; nothing but these
 * functions tells it that its declarations still match common/timing.h. It
 * compares its ctypes sizes and member offsets with the ones the C compiler
 * chose and refuses to time anything when they differ (a member added, a type
 * changed), instead of handing the harness shifted fields.
 *
 * The lessons' facts compare.py needs (the bytes an operation must move, the
 * FLOPs of attention, the tests' tolerances, LayerNorm's eps) come from the
 * lessons' headers and tests/thresholds.h through fl_compare_fact, so that
 * each is written once, in C.
 *
 *   python3 tests/test_compare.py --lib build/libfusionlab_compare_01_solution.so
 *   checks the guard without a GPU.
 */
#include "common/timing.h"
#include "lessons/01-vector-add/vector_add.h"
#include "lessons/02-fused-softmax/softmax.h"
#include "lessons/03-layernorm/layernorm.h"
#include "lessons/03-layernorm/layernorm_reference.h"
#include "lessons/05-flash-attention/attention.h"
#include "tests/thresholds.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

EXTERN_C size_t fl_timing_sizeof_variant(void);
EXTERN_C size_t fl_timing_sizeof_opts(void);
EXTERN_C size_t fl_timing_sizeof_stats(void);
EXTERN_C size_t fl_timing_sizeof_timing(void);
EXTERN_C size_t fl_timing_offsetof(const char *type, const char *member);
EXTERN_C double fl_compare_fact(const char *name, double a, double b, double c, double d);

/* ============================================================================
 * the layout of common/timing.h's structures
 * ========================================================================== */

size_t fl_timing_sizeof_variant(void) { return sizeof(fl_variant); }
size_t fl_timing_sizeof_opts(void) { return sizeof(fl_timing_opts); }
size_t fl_timing_sizeof_stats(void) { return sizeof(fl_stats); }
size_t fl_timing_sizeof_timing(void) { return sizeof(fl_timing); }

typedef struct {
    const char *type, *member;
    size_t offset;
} member_offset;

#define MEMBER(T, m) {#T, #m, offsetof(T, m)}

static const member_offset kMembers[] = {
    MEMBER(fl_variant, name),           MEMBER(fl_variant, run),
    MEMBER(fl_variant, ctx),            MEMBER(fl_variant, bytes),
    MEMBER(fl_variant, flops),          MEMBER(fl_variant, prepare),
    MEMBER(fl_variant, check),
    MEMBER(fl_timing_opts, warmup),     MEMBER(fl_timing_opts, samples),
    MEMBER(fl_timing_opts, flush_bytes), MEMBER(fl_timing_opts, ceiling_gbs),
    MEMBER(fl_timing_opts, check_each), MEMBER(fl_timing_opts, adaptive_hold),
    MEMBER(fl_stats, median),           MEMBER(fl_stats, mean),
    MEMBER(fl_stats, min),              MEMBER(fl_stats, max),
    MEMBER(fl_stats, p10),              MEMBER(fl_stats, p90),
    MEMBER(fl_timing, name),            MEMBER(fl_timing, samples),
    MEMBER(fl_timing, us),              MEMBER(fl_timing, event_median_us),
    MEMBER(fl_timing, wall_median_us),  MEMBER(fl_timing, gbs),
    MEMBER(fl_timing, tflops),          MEMBER(fl_timing, pct_of_ceiling),
    MEMBER(fl_timing, hidden_work),     MEMBER(fl_timing, check_ok),
    MEMBER(fl_timing, check_failed_run), MEMBER(fl_timing, check_runs),
    MEMBER(fl_timing, check_msg),       MEMBER(fl_timing, launch_late),
};

/* The offset of type.member, or (size_t)-1 when this file does not know the
 * member (compare.py declares one that timing.h does not have). */
size_t fl_timing_offsetof(const char *type, const char *member)
{
    for (size_t i = 0; i < sizeof kMembers / sizeof kMembers[0]; ++i)
        if (strcmp(kMembers[i].type, type) == 0 && strcmp(kMembers[i].member, member) == 0)
            return kMembers[i].offset;
    return (size_t)-1;
}

/* The name of the i-th member this file knows of `type` (0-based), or NULL
 * past the last: compare.py checks that it declares every one (a member it
 * left out can hide in a structure's padding, where no size tells). */
const char *fl_timing_member(const char *type, int i)
{
    for (size_t k = 0; k < sizeof kMembers / sizeof kMembers[0]; ++k)
        if (strcmp(kMembers[k].type, type) == 0 && i-- == 0) return kMembers[k].member;
    return NULL;
}

/* ============================================================================
 * the lessons' facts
 * ========================================================================== */

/* One fact by name: a formula of the lessons' headers evaluated at (a, b, c,
 * d), or a constant (the arguments unused). NAN for a name it does not know. */
double fl_compare_fact(const char *name, double a, double b, double c, double d)
{
    (void)d;
    /* bytes each operation must move (the fused versions' counts) */
    if (strcmp(name, "vector_add_bytes") == 0) return VECTOR_ADD_BYTES(a);
    if (strcmp(name, "elementwise_fused_bytes") == 0) return ELEMENTWISE_FUSED_BYTES(a);
    if (strcmp(name, "softmax_fused_bytes") == 0) return SOFTMAX_FUSED_BYTES(a, b);
    if (strcmp(name, "layernorm_fwd_fused_bytes") == 0) return LAYERNORM_FWD_FUSED_BYTES(a, b);
    if (strcmp(name, "layernorm_bwd_fused_bytes") == 0) return LAYERNORM_BWD_FUSED_BYTES(a, b);
    /* scratch the launchers take, in floats: (rows, cols), or (cols) */
    if (strcmp(name, "layernorm_fwd_unfused_scratch_floats") == 0)
        return (double)LAYERNORM_FWD_UNFUSED_SCRATCH_FLOATS(a, b);
    if (strcmp(name, "layernorm_bwd_unfused_scratch_floats") == 0)
        return (double)LAYERNORM_BWD_UNFUSED_SCRATCH_FLOATS(a, b);
    if (strcmp(name, "layernorm_bwd_scratch_floats") == 0)
        return (double)LAYERNORM_BWD_SCRATCH_FLOATS(a);
    /* (batch_heads, seq, head_dim, element size) and (..., causal) */
    if (strcmp(name, "attention_fused_bytes") == 0) return ATTENTION_FUSED_BYTES(a, b, c, d);
    if (strcmp(name, "attention_flops") == 0) return ATTENTION_FLOPS(a, b, c, d != 0.0);

    static const struct {
        const char *name;
        double value;
    } constants[] = {
        {"L01_FUSED_RTOL", L01_FUSED_RTOL},
        {"L02_ATOL", L02_ATOL},
        {"L02_RTOL", L02_RTOL},
        {"L03_FWD_ATOL", L03_FWD_ATOL},
        {"L03_FWD_RTOL", L03_FWD_RTOL},
        {"L03_DX_ATOL", L03_DX_ATOL},
        {"L03_DX_RTOL", L03_DX_RTOL},
        {"L03_DWB_ATOL_PER_ROW", L03_DWB_ATOL_PER_ROW},
        {"L03_DWB_RTOL", L03_DWB_RTOL},
        {"L05_F32_ATOL", L05_F32_ATOL},
        {"L05_F32_RTOL", L05_F32_RTOL},
        {"L05_F16_BASELINE_ATOL", L05_F16_BASELINE_ATOL},
        {"LAYERNORM_EPS", LAYERNORM_EPS},
        {"LAYERNORM_MAX_COLS", LAYERNORM_MAX_COLS},
        {"SOFTMAX_MAX_COLS", (double)SOFTMAX_MAX_COLS},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; ++i)
        if (strcmp(constants[i].name, name) == 0) return constants[i].value;
    return NAN;
}
