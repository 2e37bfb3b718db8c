// HOSTILE (#include of the worked solution, disguised): the directive is
// spelled with the %:  digraph for #, split by a backslash-newline, and its
// path is built by macros (stringized at preprocessing time), so no line of
// the file holds `#include` or the word "solutions". The preprocessor
// still resolves ../../solutions/01-vector-add/vector_add.cu from the
// lesson's include folder.
// Must stop it: includes limited to the lesson's public headers, checked on
// what the preprocessor includes, not on the text (and a sandbox in which
// solutions/ is not there).
%:define HS_STR_(x) #x
%:define HS_STR(x) HS_STR_(x)
%:define HS_UP ..
%:define HS_CAT(a, b) a ## b
%:define HS_PATH HS_STR(HS_UP/HS_UP/HS_CAT(solu, tions)/01-vector-add/vector_add.cu)
%:inc\
lude HS_PATH
