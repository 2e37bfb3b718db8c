// HOSTILE (other submissions' results read at compile time): the scratch
// student folder sits in the grader's work folder, by default OUT/.work,
// so from this file's folder ../../../ is OUT: including a classmate's
// results.json (here a previous batch's, OUT/submissions/zz_previous_batch;
// any name the student can guess works) makes the compiler quote it in
// errors in this student's report.
// Must stop it: includes limited to the lesson's public headers, compiler
// diagnostics shown only for the student's own file, and a sandbox that
// shows the build nothing of the output folder.
#include "vector_add.h"
#include "../../../submissions/zz_previous_batch/results.json"

#pragma hostile skeleton
