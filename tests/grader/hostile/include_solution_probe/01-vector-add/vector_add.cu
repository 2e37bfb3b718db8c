// HOSTILE (#include of the worked solution, found by probing): __has_include
// tries the solution at relative depths from every include folder and at
// absolute paths where a course is often checked out, and includes the
// first that exists; only if none does, the skeleton below compiles.
// Must stop it: includes limited to the lesson's public headers (and a
// sandbox in which solutions/ is not there).
#if __has_include("../../solutions/01-vector-add/vector_add.cu")
#include "../../solutions/01-vector-add/vector_add.cu"
#elif __has_include("../../../solutions/01-vector-add/vector_add.cu")
#include "../../../solutions/01-vector-add/vector_add.cu"
#elif __has_include("../../../../solutions/01-vector-add/vector_add.cu")
#include "../../../../solutions/01-vector-add/vector_add.cu"
#elif __has_include("../../../../../solutions/01-vector-add/vector_add.cu")
#include "../../../../../solutions/01-vector-add/vector_add.cu"
#elif __has_include("/work/main/solutions/01-vector-add/vector_add.cu")
#include "/work/main/solutions/01-vector-add/vector_add.cu"
#elif __has_include("/opt/fusion-lab/solutions/01-vector-add/vector_add.cu")
#include "/opt/fusion-lab/solutions/01-vector-add/vector_add.cu"
#elif __has_include("/srv/fusion-lab/solutions/01-vector-add/vector_add.cu")
#include "/srv/fusion-lab/solutions/01-vector-add/vector_add.cu"
#else
#define HS_SKELETON 1
#include "vector_add.h"
#endif
#ifdef HS_SKELETON
#pragma hostile skeleton
#endif
