/* grader/proc.h — run a program with a hard wall-clock limit.
 *
 * The program runs in a process group of its own, with stdout and stderr
 * captured together (the first `head` and the last `tail` bytes are kept,
 * so a test that prints forever cannot fill the grader's memory). At the
 * limit the whole group gets SIGTERM, then SIGKILL `grace_s` later: a
 * Criterion runner and every test process it forked die together. After a
 * normal exit whatever is left of the group is killed too (a forked test
 * stuck on the GPU). No shell is involved: argv goes to execvp as it is.
 */
#ifndef FUSIONLAB_GRADER_PROC_H
#define FUSIONLAB_GRADER_PROC_H

#include <stddef.h>
#include <sys/types.h>

/* Limits of a run, set with setrlimit in the child before exec. 0: none. */
typedef struct {
    unsigned long long as_bytes;    /* RLIMIT_AS: compilers and tools */
    unsigned long long data_bytes;  /* RLIMIT_DATA: GPU programs (CUDA
                                       reserves address space it never
                                       touches, so RLIMIT_AS would stop it) */
    unsigned long long fsize_bytes; /* RLIMIT_FSIZE */
    double cpu_s;                   /* RLIMIT_CPU, per process */
    long nproc;                     /* RLIMIT_NPROC: processes and threads */
} proc_limits;

typedef struct {
    double timeout_s;      /* 0: no limit */
    double grace_s;        /* SIGTERM -> SIGKILL (default 5 s) */
    const char *cwd;       /* NULL: the grader's */
    const char *const *env_set;   /* "NAME=value" entries to set, NULL-ended */
    const char *const *env_unset; /* names to remove, NULL-ended */
    size_t head, tail;     /* output kept (defaults 256 KiB each) */
    int discard_stderr;    /* 1: stderr to /dev/null (default: with stdout) */
    const proc_limits *limits; /* NULL: the grader's own */
    int clear_env;         /* 1: start from an empty environment (PATH kept):
                              nothing of the grader's may be read back from
                              /proc/PID/environ of what it starts */
    int set_ids;           /* 1: become uid/gid (no supplementary groups)
                              before exec (the grader runs as root) */
    uid_t uid;
    gid_t gid;
} proc_opts;

typedef struct {
    int started;           /* 0: fork or exec failed (see output) */
    int exit_code;         /* when it exited */
    int term_signal;       /* when a signal ended it (0 otherwise) */
    int timed_out;         /* killed at the limit */
    int interrupted;       /* the grader was asked to stop (SIGINT/SIGTERM) */
    double elapsed_s;
    char *output;          /* stdout + stderr, head and tail; never NULL */
    size_t output_bytes;   /* all that was printed, kept or not */
} proc_result;

/* Run argv[0] (searched on PATH). Returns 0 when it exited with status 0. */
int proc_run(char *const argv[], const proc_opts *o, proc_result *r);
void proc_result_free(proc_result *r);

/* Install SIGINT/SIGTERM handlers that stop the running child and make
 * proc_interrupted() true (the grader then writes what it has and stops). */
void proc_install_signal_handlers(void);
int proc_interrupted(void);

#endif /* FUSIONLAB_GRADER_PROC_H */
