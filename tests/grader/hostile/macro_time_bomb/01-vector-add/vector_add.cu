// HOSTILE (compile-time bomb, preprocessor): HS_A47 expands to 2^47 tokens
// "+1" inside an #if, which the preprocessor evaluates token by token in
// constant memory and no output: hours of CPU at nearly no memory, then
// the same again for every later compile step.
// Must stop it: the build's time limit (the process group or sandbox
// killed at the limit, the grader goes on).
#include "vector_add.h"

#define HS_A0 +1
#define HS_A1 HS_A0 HS_A0
#define HS_A2 HS_A1 HS_A1
#define HS_A3 HS_A2 HS_A2
#define HS_A4 HS_A3 HS_A3
#define HS_A5 HS_A4 HS_A4
#define HS_A6 HS_A5 HS_A5
#define HS_A7 HS_A6 HS_A6
#define HS_A8 HS_A7 HS_A7
#define HS_A9 HS_A8 HS_A8
#define HS_A10 HS_A9 HS_A9
#define HS_A11 HS_A10 HS_A10
#define HS_A12 HS_A11 HS_A11
#define HS_A13 HS_A12 HS_A12
#define HS_A14 HS_A13 HS_A13
#define HS_A15 HS_A14 HS_A14
#define HS_A16 HS_A15 HS_A15
#define HS_A17 HS_A16 HS_A16
#define HS_A18 HS_A17 HS_A17
#define HS_A19 HS_A18 HS_A18
#define HS_A20 HS_A19 HS_A19
#define HS_A21 HS_A20 HS_A20
#define HS_A22 HS_A21 HS_A21
#define HS_A23 HS_A22 HS_A22
#define HS_A24 HS_A23 HS_A23
#define HS_A25 HS_A24 HS_A24
#define HS_A26 HS_A25 HS_A25
#define HS_A27 HS_A26 HS_A26
#define HS_A28 HS_A27 HS_A27
#define HS_A29 HS_A28 HS_A28
#define HS_A30 HS_A29 HS_A29
#define HS_A31 HS_A30 HS_A30
#define HS_A32 HS_A31 HS_A31
#define HS_A33 HS_A32 HS_A32
#define HS_A34 HS_A33 HS_A33
#define HS_A35 HS_A34 HS_A34
#define HS_A36 HS_A35 HS_A35
#define HS_A37 HS_A36 HS_A36
#define HS_A38 HS_A37 HS_A37
#define HS_A39 HS_A38 HS_A38
#define HS_A40 HS_A39 HS_A39
#define HS_A41 HS_A40 HS_A40
#define HS_A42 HS_A41 HS_A41
#define HS_A43 HS_A42 HS_A42
#define HS_A44 HS_A43 HS_A43
#define HS_A45 HS_A44 HS_A44
#define HS_A46 HS_A45 HS_A45
#define HS_A47 HS_A46 HS_A46
#if 0 HS_A47
#endif

#pragma hostile skeleton
