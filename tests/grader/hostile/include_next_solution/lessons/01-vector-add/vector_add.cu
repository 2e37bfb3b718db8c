// HOSTILE (#include_next of the worked solution): a filter that looks for
// `#include "..."` lines misses `#include_next`, which in a main source file
// searches like #include: the include folder <course>/lessons/01-vector-add
// resolves ../../solutions/01-vector-add/vector_add.cu.
// Must stop it: includes limited to the lesson's public headers, whatever
// the directive's spelling (and a sandbox in which solutions/ is not there).
#include_next "../../solutions/01-vector-add/vector_add.cu"
