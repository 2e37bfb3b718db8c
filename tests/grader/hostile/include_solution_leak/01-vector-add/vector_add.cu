// HOSTILE (the worked solution leaked through compiler errors): includes the
// solution after poisoning identifiers it uses on nearly every line (if,
// return, size_t, float4, ...): the preprocessor stops at each use and
// quotes the source line verbatim, and a grader that shows the build's
// errors hands the student the solution, line by line.
// (The same works for any file the compiler can open: tests, thresholds.)
// Must stop it: includes limited to the lesson's public headers, and
// compiler diagnostics shown only for the student's own file.
#include "vector_add.h"
#include "device.h" /* what the solution includes, first: the poison spares them */
#include <stdint.h>
#pragma GCC poison if for return size_t float4 threadIdx blockIdx const
#include "../../solutions/01-vector-add/vector_add.cu"
