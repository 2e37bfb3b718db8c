/* grader/sandbox.h — run one grading step (compile, scan, tests, sanitizer)
 * inside bubblewrap.
 *
 * Every step that compiles or runs a student's code runs as
 *
 *   bwrap --unshare-user --uid 65534 --gid 65534 --unshare-pid --unshare-net
 *         --unshare-ipc --unshare-uts --die-with-parent --new-session
 *         --clearenv [--setenv ...] --proc /proc --dev /dev --tmpfs /tmp
 *         --ro-bind SYSTEM... --ro-bind RO... --bind RW... [masks] [GPU nodes]
 *         -- COMMAND...
 *
 * with, around it, the rlimits of the step (set by proc_run in the child
 * before bwrap starts, so the sandbox inherits them). Folders are bound at
 * the same path inside as outside, so the build's absolute paths still work;
 * whatever is not bound does not exist inside. When the grader runs as root,
 * bwrap itself is started as an unprivileged user (nobody unless
 * --sandbox-uid says otherwise): the step's processes are that user outside
 * the sandbox too, so its process limit counts only them, and a file the
 * step may write must belong to that user (sandbox_own()).
 *
 * Ending bwrap ends everything the step started: the step's pid namespace
 * dies with its first process, and --die-with-parent ties that one to bwrap.
 */
#ifndef FUSIONLAB_GRADER_SANDBOX_H
#define FUSIONLAB_GRADER_SANDBOX_H

#include "util.h"

#include <sys/types.h>

typedef struct {
    int enabled;          /* 0: --no-sandbox (every report says so) */
    char *bwrap;          /* the bwrap program */
    int drop_ids;         /* the grader is root: steps run as uid/gid */
    uid_t uid;
    gid_t gid;
    strlist system_ro;    /* system folders every step sees, read-only */
    strlist gpu_nodes;    /* /dev/nvidia*: the control nodes and, when the grader
                             was given one GPU by UUID (CUDA_VISIBLE_DEVICES, as
                             --gpus sets it), only that GPU's /dev/nvidiaN */
    int gpu_minor;        /* that N, or -1: every GPU's node */
} sandbox_cfg;

/* What a step sees and may do. Lists are NULL-ended; any may be NULL. */
typedef struct {
    const char *const *ro;    /* bound read-only (skipped when missing) */
    const char *const *rw;    /* bound read-write: must exist */
    const char *const *hide;  /* inside ro/rw binds: folders become empty,
                                 files /dev/null */
    const char *const *env;   /* NAME=value: the step's whole environment
                                 besides PATH, HOME, TMPDIR and LANG */
    int gpu;                  /* bind the GPU's device nodes and /sys */
    const char *chdir;
} sandbox_step;


/* Find bwrap and the system folders, and try a sandbox: 0 when steps can be
 * sandboxed; otherwise -1 and *why (caller frees) says why not. `uid` < 0:
 * nobody (65534) when the grader is root. */
int sandbox_init(sandbox_cfg *c, long uid, char **why);
/* The system's folders (what a sandbox binds read-only, and where a student's
 * file may take its includes from) into c->system_ro: what sandbox_init
 * does first; --no-sandbox needs the list too. */
void sandbox_system(sandbox_cfg *c);
/* Check that the sandbox's user can read `path` (a folder the steps bind):
 * 0 when it can; otherwise -1 and *why. */
int sandbox_check_readable(const sandbox_cfg *c, const char *path, char **why);
/* The argv that runs `argv` as the step, in *out (owned; out->v is
 * NULL-ended, so it can go to proc_run; free with strlist_free). With the
 * sandbox off it is argv unchanged. */
void sandbox_argv(const sandbox_cfg *c, const sandbox_step *st, char *const argv[],
                  strlist *out);
/* Make `path` (a file or a whole folder) belong to the sandbox's user, so a
 * step may write it. No-op unless the grader is root. 0 on success. */
int sandbox_own(const sandbox_cfg *c, const char *path);
void sandbox_free(sandbox_cfg *c);

#endif /* FUSIONLAB_GRADER_SANDBOX_H */
