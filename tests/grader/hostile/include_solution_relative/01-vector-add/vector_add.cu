// HOSTILE (#include of the worked solution): the whole file is one include.
// "vector_add.h" is found through -I <course>/lessons/01-vector-add, so the
// same search finds ../../solutions/01-vector-add/vector_add.cu relative to
// it: the worked solution compiles as this student's work, and on a GPU
// scores full marks.
// Must stop it: includes limited to the lesson's public headers (and a
// sandbox in which solutions/ is not there to include).
#include "../../solutions/01-vector-add/vector_add.cu"
