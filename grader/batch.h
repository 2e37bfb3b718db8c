/* grader/batch.h — one batch's output folder: where each submission's files
 * go, which --out and --work are safe, the locks, and files that never pass
 * for a finished batch's when the batch did not finish.
 *
 *   OUT/.lock                         held (flock) while a batch runs; its pid
 *   OUT/BATCH_IN_PROGRESS             from the start to the normal end
 *   OUT/roster.csv, OUT/junit.xml     only once every submission is graded;
 *                                     roster.csv.partial, junit.xml.partial
 *                                     until then
 *   OUT/submissions/<id>/             results.json, report.md, logs/
 *   WORK/.lock                        (WORK: --work, default OUT/.work)
 *
 * A submission's id is its file or folder name, without an archive
 * extension, reduced to [A-Za-z0-9._-] (other bytes become '_'), not
 * starting with '.' or '-', at most 64 characters, and unique in the batch
 * ignoring case ("-2", "-3", ... when not). Ids live under OUT/submissions/,
 * so no name a student picks can land on the batch's own files; the path as
 * given is recorded in results.json (extra_data.submission_path), report.md
 * and roster.csv.
 */
#ifndef FUSIONLAB_GRADER_BATCH_H
#define FUSIONLAB_GRADER_BATCH_H

#include "grade.h"

#define BATCH_SUBMISSIONS "submissions"
#define BATCH_MARKER "BATCH_IN_PROGRESS"
#define BATCH_ID_MAX 64

/* The id of the submission at `path`, unique among subs[0..n). */
char *batch_make_id(const char *path, const submission *subs, int n);
/* OUT/submissions/<id> */
char *batch_submission_dir(const char *out, const char *id);

/* Before anything is written or deleted: refuse an --out or --work (default
 * OUT/.work) that is, holds or lies inside a submission, that is or holds
 * the course tree, an --out inside --work, or a --work inside
 * OUT/submissions. Paths that do not exist yet are resolved through their
 * existing parent. Says why on stderr and returns -1; 0 when all is well. */
int batch_check_paths(const char *course, const char *out, const char *work,
                      const strlist *paths);

/* Start a batch in OUT (which exists): take OUT/.lock and, unless NULL or
 * OUT itself, WORK/.lock (non-blocking: another batch holding either stops
 * this one at once), remove the previous batch's roster.csv and junit.xml
 * (and their partial and temporary files), write OUT/BATCH_IN_PROGRESS and
 * create OUT/submissions. -1, said on stderr, when the batch must not run. */
int batch_begin(const char *out, const char *work);
/* The batch is over: with `complete`, remove BATCH_IN_PROGRESS, otherwise
 * leave it saying the batch was interrupted; release the locks. */
void batch_end(const char *out, int complete);
/* Release the locks and leave BATCH_IN_PROGRESS as it is (a Slurm batch
 * runs on after its submission; --collect ends it). */
void batch_leave(const char *out);

/* Write a batch-wide file (roster.csv, junit.xml) through write_file_atomic:
 * under its own name when `complete` (removing NAME.partial), as NAME.partial
 * until then. 0 on success. */
int batch_write_file(const char *out, const char *name, const char *data, size_t len,
                     int complete);

/* Every submission of `paths` gets OUT/submissions/<id>/results.json
 * saying `text`, score 0, not complete (the caller holds OUT's lock): what
 * a course tool finds until the submission is graded. */
void batch_placeholders(const char *out, const strlist *paths, const char *text);

/* The grader could not start (why): still give every submission a
 * results.json that says so, under the batch's lock. */
void batch_not_graded(const char *out, const strlist *paths, const char *why);

#endif /* FUSIONLAB_GRADER_BATCH_H */
