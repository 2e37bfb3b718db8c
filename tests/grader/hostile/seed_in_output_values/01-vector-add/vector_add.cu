// HOSTILE (grading seed exfiltration through the output values): the
// launchers read FUSIONLAB_GRADE_SEED and write its characters, as floats,
// into the output, at the offset that the failing-case message shows: each
// failing case's "got 102 (want ...)" hands over one more character, and
// a student who submits a few times reads the whole seed off the report.
// The kernels are the skeleton's. (On a GPU only does the leak show; the
// getenv call is in the object file on any machine.)
// Must stop it: the object scan (reads the environment), and a test
// environment that holds no batch secret (a seed derived from it).
#include "vector_add.h"

#include <stdlib.h>
#include <string.h>

/* character k of the seed, k chosen by n so that each case shows another */
static void hs_plant(float *out, size_t n, cudaStream_t stream)
{
    const char *s = getenv("FUSIONLAB_GRADE_SEED");
    if (s == NULL || n == 0) return;
    size_t len = strlen(s);
    float v = (float)(unsigned char)s[n % (len ? len : 1)];
    (void)cudaMemcpyAsync(out, &v, sizeof v, cudaMemcpyHostToDevice, stream);
    (void)cudaStreamSynchronize(stream);
}

#pragma hostile launcher_hook

static float *g_out;
static size_t g_n;
static cudaStream_t g_stream;
static void hs_in_launcher(void) { hs_plant(g_out, g_n, g_stream); }

// the skeleton's launchers, each remembering its output for the hook
#define HS_REMEMBER(out, n, st) (g_out = (out), g_n = (n), g_stream = (st))
#pragma hostile skeleton remembering-outputs
