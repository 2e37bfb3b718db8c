/* grader/shard.h — one batch graded in shards: on every GPU of a machine
 * (--gpus), on a Slurm cluster (--slurm), and put back together (--collect).
 *
 * A shard is an ordinary grading run given the batch's whole list of
 * submissions and `--shard I/N`: it makes every submission's id from the
 * whole list (so ids are those one run would make), grades the submissions
 * whose place k in the list has k % N == I, and writes into OUT/shards/I/:
 *
 *   plan.json                   N, I, the roster's header, every (id, path)
 *   submissions/<id>/           as a single run writes them
 *   pieces/<id>.csv, <id>.xml   the submission's roster.csv row and
 *                               junit.xml <testsuite>, written with it
 *   BATCH_IN_PROGRESS           until the shard finished
 *
 * Collecting checks that every shard of one plan is there and finished,
 * moves each submissions/<id> to OUT/submissions/<id> and writes
 * OUT/roster.csv and OUT/junit.xml from the pieces, in the list's order:
 * the files a single run would have written (but for junit's times).
 */
#ifndef FUSIONLAB_GRADER_SHARD_H
#define FUSIONLAB_GRADER_SHARD_H

#include "grade.h"

/* "I/N" with 0 <= I < N <= SHARD_MAX: 0, or -1 when it is not that. */
#define SHARD_MAX 4096
int shard_parse(const char *v, int *i, int *n);

/* OUT/shards, and OUT/shards/I */
char *shard_root(const char *out);
char *shard_dir(const char *out, int i);

/* In a shard's own OUT (OUT/shards/I): plan.json (every id and path of the
 * batch, in order) and one submission's pieces. 0 on success. */
int shard_write_plan(const grader *g, int shard, int of, char *const *ids,
                     char *const *paths, int n);
int shard_write_pieces(const grader *g, const submission *s);

/* --collect OUT: 0 when the batch is complete, 1 when shards are missing or
 * unfinished (the partial files are written), 2 on an error. `locked`: the
 * caller holds OUT's lock already (--gpus). */
int collect_main(const char *out, int locked);

/* The options a worker or a Slurm task is started with. */
typedef struct {
    const char *self;      /* this program */
    const char *out;       /* the batch's OUT (absolute) */
    const char *work;      /* --work as given, or NULL */
    long sandbox_uid;      /* --sandbox-uid, or -1 */
    int no_sandbox;
    int jobs_given;        /* --jobs was given (else each worker gets CPUs / workers) */
    strlist passthru;      /* every other argument, submissions included */
    const strlist *paths;  /* the submissions, in order */
    int n_subs;
    int per_gpu;           /* --per-gpu: workers on each GPU (1: one each) */
} shard_launch;

/* --gpus LIST|all: one worker per GPU (per_gpu of them with --per-gpu,
 * sharing a lock: gpulock.c), each a shard of its own on
 * CUDA_VISIBLE_DEVICES=that GPU, then collect. Returns the exit code. */
int gpus_main(shard_launch *L, const char *gpus);

/* --slurm OPTIONS: write OUT/slurm/job.sh and submit it as a job array of
 * `shards` tasks with sbatch (OPTIONS split at spaces, added to sbatch's
 * command line). Returns the exit code. */
int slurm_main(shard_launch *L, const char *sbatch_opts, int shards);

#endif /* FUSIONLAB_GRADER_SHARD_H */
