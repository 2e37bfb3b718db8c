/* common/csv.c — see csv.h. */
#include "csv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fl_csv {
    FILE *f;
    int fields;
    int failed;
    int is_stdout;
};

int fl_csv_count_fields(const char *line)
{
    int n = 1, quoted = 0;
    for (const char *p = line; *p; ++p) {
        if (*p == '"') quoted = !quoted; /* "" inside quotes toggles twice */
        else if (*p == ',' && !quoted) n++;
    }
    return n;
}

int fl_csv_quote(const char *in, char *out, size_t len)
{
    int needs = strpbrk(in, ",\"\r\n") != NULL;
    size_t j = 0;
    if (len == 0) return -1;
    if (needs) {
        if (j + 1 >= len) return -1;
        out[j++] = '"';
    }
    for (const char *p = in; *p; ++p) {
        size_t need = (*p == '"' && needs) ? 2 : 1;
        if (j + need >= len) { out[0] = '\0'; return -1; }
        if (need == 2) out[j++] = '"';
        out[j++] = *p;
    }
    if (needs) {
        if (j + 1 >= len) { out[0] = '\0'; return -1; }
        out[j++] = '"';
    }
    out[j] = '\0';
    return 0;
}

fl_csv *fl_csv_open(const char *path, const char *header)
{
    fl_csv *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (strcmp(path, "-") == 0) {
        c->f = stdout;
        c->is_stdout = 1;
    } else {
        c->f = fopen(path, "w");
        if (!c->f) {
            fprintf(stderr, "csv: cannot write %s: %s\n", path, strerror(errno));
            free(c);
            return NULL;
        }
    }
    c->fields = fl_csv_count_fields(header);
    if (fprintf(c->f, "%s\n", header) < 0) c->failed = 1;
    return c;
}

int fl_csv_row(fl_csv *c, const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= sizeof line) {
        fprintf(stderr, "csv: row too long\n");
        return -1;
    }
    int got = fl_csv_count_fields(line);
    if (got != c->fields) {
        fprintf(stderr, "csv: row has %d fields, header has %d: %s\n", got,
                c->fields, line);
        return -1;
    }
    if (fprintf(c->f, "%s\n", line) < 0) {
        c->failed = 1;
        return -1;
    }
    return 0;
}

int fl_csv_close(fl_csv *c)
{
    if (!c) return -1;
    int bad = c->failed;
    if (c->is_stdout) {
        if (fflush(c->f) != 0) bad = 1;
    } else if (fclose(c->f) != 0) {
        bad = 1;
    }
    free(c);
    return bad ? -1 : 0;
}
