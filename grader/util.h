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

/* Make `s` valid UTF-8 in place: every byte that is not part of a valid
 * sequence becomes '?'; NUL-free control characters other than tab and
 * newline become '?' too (JSON and XML consumers choke on them). */
void utf8_sanitize(char *s);

/* Keep the first `head` and last `tail` bytes of s (cut at line
 * boundaries when one is near), with a note of what was cut between them. */
char *trim_middle(const char *s, size_t head, size_t tail);

/* ---- files and paths ------------------------------------------------------- */

/* Read a whole file (at most `cap` bytes; *truncated says if there was more).
 * NULL if it cannot be read. The result is NUL-terminated; *len excludes it. */
char *read_file(const char *path, size_t cap, size_t *len, int *truncated);
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
char *path_join(const char *a, const char *b);
const char *path_base(const char *path);

/* Seconds since an arbitrary start (monotonic). */
double now_s(void);
/* "2026-11-22 01:55:00 UTC" */
char *utc_timestamp(void);

#endif /* FUSIONLAB_GRADER_UTIL_H */
