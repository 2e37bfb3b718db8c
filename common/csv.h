/* common/csv.h — results as CSV (RFC 4180), with a header row.
 *
 *   fl_csv *c = fl_csv_open("out.csv", "device,n,fused_us");
 *   char dev[300]; fl_csv_quote(info.name, dev, sizeof dev);
 *   fl_csv_row(c, "%s,%zu,%.3f", dev, n, us);
 *   fl_csv_close(c);
 *
 * Each row must have as many fields as the header; a row that does not is
 * refused (returns -1, writes nothing), so a plot never reads shifted columns.
 */
#ifndef FUSIONLAB_CSV_H
#define FUSIONLAB_CSV_H

#include "check.h"

typedef struct fl_csv fl_csv;

/* Create (truncate) path and write the header. NULL on error, with the
 * reason printed to stderr. path "-" writes to stdout. */
EXTERN_C fl_csv *fl_csv_open(const char *path, const char *header);

/* Append one row, printf-style (no trailing newline in fmt). 0 or -1. */
EXTERN_C int fl_csv_row(fl_csv *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Flush and close; 0 or -1 (a write error seen at any point). */
EXTERN_C int fl_csv_close(fl_csv *c);

/* Number of fields in one CSV line, honouring quotes. */
EXTERN_C int fl_csv_count_fields(const char *line);

/* Copy `in` to `out` as one CSV field: quoted (with "" for ") when it holds
 * a comma, quote or newline. Returns 0, or -1 when out is too small. */
EXTERN_C int fl_csv_quote(const char *in, char *out, size_t len);

#endif /* FUSIONLAB_CSV_H */
