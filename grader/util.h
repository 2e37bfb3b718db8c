/* grader/util.h — strings, lists, files and paths for the grader.
 *
 * Nothing here exits or aborts: out of memory is the one exception (xmalloc
 * and friends print it and stop, since nothing sensible can follow).
 */
#ifndef FUSIONLAB_GRADER_UTIL_H
#define FUSIONLAB_GRADER_UTIL_H

#include <stdarg.h>
#include <stddef.h>

/* ---- memory and strings --------------------------------------------------- */

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap);

int starts_with(const char *s, const char *prefix);
int ends_with(const char *s, const char *suffix);

/* A growable string. */
typedef struct {
    char *s;
    size_t len, cap;
} sbuf;

void sbuf_add(sbuf *b, const char *s);
void sbuf_addn(sbuf *b, const char *s, size_t n);
void sbuf_addf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The string (never NULL); the buffer keeps owning it. */
const char *sbuf_str(sbuf *b);
/* Hand the string over (never NULL) and reset the buffer. */
char *sbuf_take(sbuf *b);
void sbuf_free(sbuf *b);

/* A list of owned strings. */
typedef struct {
    char **v;
    int n, cap;
} strlist;

void strlist_add(strlist *l, const char *s);
void strlist_addf(strlist *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int strlist_has(const strlist *l, const char *s);
void strlist_free(strlist *l);

/* A set of strings for membership tests (sorted array, binary search). */
typedef struct {
    char **v;
    size_t n, cap;
    int sorted;
} strset;

void strset_add(strset *s, const char *str);
int strset_has(strset *s, const char *str);
void strset_free(strset *s);

/* Replace every occurrence of `needle` (non-empty) in `s` by `with`;
 * returns a new string. */
char *str_replace_all(const char *s, const char *needle, const char *with);

/* Split `s` into words as a POSIX shell splits a command line, with no
 * expansion of any kind: blanks (space, tab, newline) separate words;
 * '...' keeps everything literally; "..." keeps everything but a backslash
 * before \, ", $ or `, which stands for that character; a backslash outside
 * quotes keeps the next character (a backslash-newline is removed). The
 * words are added to `out`. Returns 0, or -1 with *why set (an unterminated
 * quote, a backslash at the end) and `out` unchanged. */
int split_words(const char *s, strlist *out, char **why);

/* `s` as one word of a POSIX shell command line, in single quotes (a '
 * inside written '\'' ), added to `b`: what split_words gives back whole. */
void sbuf_add_sh_quoted(sbuf *b, const char *s);

/* Split the dependency list of a make rule ("OBJ: DEP DEP \ DEP", as a
 * compiler's -M writes it) into file names: blanks separate, a backslash-
 * newline continues the line, "\ " is a blank and "\#" a '#' within a name,
 * "$$" a '$'; any other backslash is part of the name. `s` is the text
 * after the rule's colon. */
void make_dep_words(const char *s, strlist *out);

/* The minor number of the GPU whose UUID is `uuid` (its device node is
 * /dev/nvidia<minor>), from `smi`, nvidia-smi's
 * --query-gpu=uuid,pci.bus_id --format=csv,noheader output, and the
 * driver's PROC/driver/nvidia/gpus/<bus id>/information ("Device Minor:");
 * -1 when either does not say. `proc` is "/proc" (a test's own tree in
 * tests). */
int gpu_minor_of(const char *smi, const char *uuid, const char *proc);

/* Make `s` valid UTF-8 holding only characters XML 1.0 allows, in place:
 * every byte that is not part of a valid sequence (lone or overlong forms,
 * UTF-16 surrogates, past U+10FFFF) becomes '?', and so do control
 * characters other than tab, newline and CR, DEL, the C1 controls, the
 * bidirectional overrides and isolates (U+202A-E, U+2066-9), and U+FFFE and
 * U+FFFF (one '?' for a whole character: the string may get shorter). */
void utf8_sanitize(char *s);

/* ---- escaping for the files course tools read ------------------------------
 * Each takes any bytes: the text is made valid first (utf8_sanitize). */

/* XML 1.0 character data, or (attr) an attribute value, which keeps its tab
 * and line ends as character references. & < > " ' are escaped, so "]]>"
 * never appears. */
void xml_escape(sbuf *b, const char *s, int attr);
/* One CSV field (RFC 4180): quoted when it holds a quote, comma, CR or LF. A
 * field starting with = + - @ (or tab or CR) gets a leading ' so that no
 * spreadsheet reads it as a formula. */
void csv_field(sbuf *b, const char *s);
/* Markdown inline text: one line (line ends become spaces), the characters
 * Markdown would read as markup backslash-escaped, and what would start a
 * list, heading or quote at the start ("- ", "1. ", "# ", "> ", "="). */
void md_escape(sbuf *b, const char *s);
/* A fenced code block holding `s` as it is: the fence is longer than any run
 * of backticks in it (at least three). */
void md_code_block(sbuf *b, const char *s);

/* Keep the first `head` and last `tail` bytes of s (cut at line
 * boundaries when one is near, never inside a UTF-8 sequence), with a note
 * of what was cut between them. */
char *trim_middle(const char *s, size_t head, size_t tail);

/* ---- files and paths ------------------------------------------------------- */

/* Read a whole file (at most `cap` bytes; *truncated says if there was more).
 * NULL if it cannot be read. The result is NUL-terminated; *len excludes it. */
char *read_file(const char *path, size_t cap, size_t *len, int *truncated);
/* read_file for what a step wrote into its scratch (a report, a log, its
 * evidence): a regular file only, never through a symbolic link (a step's
 * code could otherwise point its report at a file of the grader's, the
 * worked solution's evidence among them). */
char *read_step_file(const char *path, size_t cap, size_t *len, int *truncated);
/* Write a file through a temporary name and a rename: readers see the old or
 * the new contents, never half. 0 on success. */
int write_file_atomic(const char *path, const char *data, size_t len);
int write_file(const char *path, const char *data, size_t len);
int mkdir_p(const char *path);
/* Remove a file or a whole tree (never following links). 0 on success or
 * when nothing was there. */
int rm_rf(const char *path);
int copy_file(const char *from, const char *to);
int is_dir(const char *path);
int is_file(const char *path);
/* An absolute, normalised path of an existing file or folder (realpath). */
char *abs_path(const char *path);
/* The same for a path that may not exist (yet): its longest existing leading
 * part through realpath, the rest appended by name ("." and ".." resolved).
 * Relative paths are taken from the current folder. NULL on error. */
char *abs_path_any(const char *path);
/* 1 when `inner` is `outer` or lies inside it (both absolute, normalised). */
int path_within(const char *outer, const char *inner);
char *path_join(const char *a, const char *b);
const char *path_base(const char *path);

/* Seconds since an arbitrary start (monotonic). */
double now_s(void);
/* "2026-11-22 01:55:00 UTC" */
char *utc_timestamp(void);

#endif /* FUSIONLAB_GRADER_UTIL_H */
