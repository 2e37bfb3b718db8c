/* grader/intake.h — take the allowed files out of one submission.
 *
 * A submission is a folder, or a .tar/.tar.gz/.tgz/.zip archive, holding
 * copies of lesson files at their paths under lessons/ (01-vector-add/
 * vector_add.cu), optionally under lessons/ or one top-level folder. Only
 * the files the manifest lists are taken; everything else is listed as
 * ignored. An archive is listed before anything is read from it: an entry
 * with an absolute path, a `..` component, a link or a special file refuses
 * the whole archive, and nothing is extracted. The files that are taken are
 * read through a pipe (tar -xO, unzip -p) into memory, never written by the
 * archiver, and capped in size.
 */
#ifndef FUSIONLAB_GRADER_INTAKE_H
#define FUSIONLAB_GRADER_INTAKE_H

#include "manifest.h"
#include "util.h"

typedef enum {
    FILE_OK,
    FILE_MISSING,
    FILE_TOO_LARGE,
    FILE_BINARY,
    FILE_LINK,
    FILE_UNREADABLE,
} file_status;

typedef struct {
    const lesson_info *lesson;
    const char *name;   /* exercise file name (the manifest's string) */
    file_status status;
    char *data;         /* FILE_OK: the contents */
    size_t len;
    char *note;         /* why it was refused, or NULL */
} taken_file;

typedef struct {
    char *path;         /* as given */
    char *kind;         /* "folder", "tar archive", "zip archive" */
    int refused;        /* nothing was taken */
    char *refusal;      /* why */
    strlist unsafe;     /* archive entries that made it refuse */
    strlist ignored;    /* files not taken, with the reason when there is one */
    strlist notes;      /* anything else worth saying */
    char *prefix;       /* the folder the lesson folders were found under */
    taken_file *files;  /* one per manifest exercise file, in manifest order */
    int n_files;
} intake;

void intake_load(const char *path, const manifest *m, long max_bytes, intake *out);
/* Files of one lesson; *n is set to their count. */
taken_file *intake_lesson_files(intake *in, const lesson_info *l, int *n);
/* 1 when at least one file of the lesson was found (taken or refused). */
int intake_lesson_submitted(const intake *in, const lesson_info *l);
void intake_free(intake *in);

#endif /* FUSIONLAB_GRADER_INTAKE_H */
