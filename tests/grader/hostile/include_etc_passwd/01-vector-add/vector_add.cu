// HOSTILE (a system file leaked through compiler errors): /etc/passwd is not
// C++, so the compiler reports its first lines as errors and quotes them:
// the grading machine's accounts end up in the student's report. Any file
// the compiler can read leaks the same way (/etc/hosts, ~/.ssh/config, a
// colleague's notes).
// Must stop it: includes limited to the lesson's public headers, compiler
// diagnostics shown only for the student's own file, and a sandbox without
// /etc/passwd.
#include "vector_add.h"
#include "/etc/passwd"

#pragma hostile skeleton
