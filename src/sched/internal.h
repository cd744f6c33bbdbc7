/* internal.h - shared by the files of src/sched (not a public API).
 * Errors follow err.h: 0 or a negative code. */
#ifndef MP_SCHED_INTERNAL_H
#define MP_SCHED_INTERNAL_H

#include "compat.h"

#include <stdint.h>

#include "buf.h"
#include "model/candidate.h"
#include "err.h"


/* Name of the variable that marks every process of one local task (the
 * child moeprobe, its engine and whatever escaped): after the task exited
 * the GPUs are handed on only when no process carries it any more. */
#define MP_SCHED_TASK_VAR "MOEPROBE_SCHED_TASK"

/* One task = one candidate. */
struct mp_sched_task {
    char *name;
    char *dir;             /* RUNDIR/tasks/NAME (absolute) */
    bool skip;             /* --resume: finished before; not run again */
};

/* What to run: the candidates as tasks, and the child command. */
struct mp_sched_plan {
    char *run_dir;         /* absolute */
    char *self;            /* absolute path of this moeprobe binary */
    struct mp_strv child_opts; /* qualify options for every task (no --out/--only/--port/sched) */
    char *const *cmd;      /* server command words (borrowed from argv) */
    size_t ncmd;
    int port;              /* --port, or 0 */
    double grace_s;        /* the task's own teardown grace */
    struct mp_sched_task *t;
    size_t n;
    bool json, quiet;
};

/* ---- sched.c ---- */
/* Filter qualify's options (argv[1..nopt)) into out: drop the scale-out
 * options and --out/--only/--port/--json/--resume (with their values, both
 * "--opt V" and "--opt=V" forms). */
void mp_sched_filter_opts(char **argv, int nopt, struct mp_strv *out);
/* A task directory holds a finished result (report.json, not interrupted). */
bool mp_sched_task_finished(const char *task_dir);

/* ---- child.c ---- */
/* Full argv of task i: self qualify OPTS --only NAME --out DIR [--port P] -- CMD. */
void mp_sched_child_argv(const struct mp_sched_plan *pl, size_t i, int port, struct mp_strv *out);

/* ---- task.c: RUNDIR/tasks/NAME/task.txt, "key=value" lines ---- */
struct mp_sched_rec {
    char *candidate, *gpus, *host, *job, *note;
    int64_t start_ns, end_ns;   /* wall clock; 0 = unknown */
    int exit_code;              /* task's exit code, 128+N for a signal, -1 unknown */
};
int mp_sched_rec_write(const char *task_dir, const struct mp_sched_rec *r);
/* 0, -ENOENT, MP_EPARSE. Unknown keys are ignored (forward compatible). */
int mp_sched_rec_read(const char *task_dir, struct mp_sched_rec *r);
void mp_sched_rec_release(struct mp_sched_rec *r);
/* RUNDIR/tasks/index.txt: candidate names in report order, one a line. */
int mp_sched_index_write(const char *run_dir, const struct mp_sched_plan *pl);
int mp_sched_index_read(const char *run_dir, struct mp_strv *names);

/* ---- gpus.c ---- */
/* Split the --gpus list ("0,1,2,3"; ids or UUIDs) into sets of per GPUs,
 * each as a CUDA_VISIBLE_DEVICES value ("0,1"). GPUs left over (fewer than
 * per) are unused (warning). 0, or MP_EUSAGE with d->msg. */
int mp_sched_gpu_sets(const char *list, int per, struct mp_strv *sets, struct mp_diag *d);
/* GPU indexes nvidia-smi lists, comma-separated, or NULL when none/no tool.
 * Caller frees. */
char *mp_sched_gpus_detect(void);
/* 1 when nvidia-smi shows a compute process on one of the GPUs of set,
 * 0 when none, -1 when it cannot tell (no nvidia-smi, fake ids). */
int mp_sched_gpus_busy(const char *set);
/* Run a helper (argv, no shell; mp_proc_run_capture) for at most timeout_s,
 * its stdout+stderr (bounded, 1 MiB) into out (never left NULL). Returns the
 * exit status (0..255), 128+N for a signal, 127 when it could not be started
 * or MP_ETIMEOUT when it was killed at the timeout (the reason in out). */
int mp_sched_capture(char *const *argv, double timeout_s, struct buf *out);

/* ---- local.c ---- */
/* Run the plan's tasks on the GPU sets, at most one task per set at a time.
 * sets may hold empty strings (no pinning). signal_fd: signalfd for
 * INT/TERM/HUP/CHLD. Returns 0, or 128+N when interrupted (every task torn
 * down), or MP_EXIT_INTERNAL. */
int mp_sched_run_local(struct mp_sched_plan *pl, const struct mp_strv *sets, int signal_fd);

/* ---- slurm.c ---- */
/* The sbatch script for the plan's tasks that are not skipped. */
void mp_sched_slurm_script(const struct mp_sched_plan *pl, const char *slurm_args, struct buf *out);
/* Submit the script and follow the job until no task of it is queued or
 * running. Returns 0, 128+N when interrupted (job cancelled), or an exit
 * code (MP_EXIT_INTERNAL when sbatch failed). */
int mp_sched_run_slurm(struct mp_sched_plan *pl, const char *script_path, int signal_fd);

/* ---- merge.c ---- */
struct mp_report;
/* Load task_dir's results into rep (initialised by the caller) from its
 * store; a task without a database has no result (-ENOENT). *finished:
 * every candidate finished and the task was not interrupted. 0, -ENOENT,
 * MP_EDB (or another mp_store_open error). */
int mp_sched_task_load(const char *task_dir, struct mp_report *rep, bool *finished);

#endif
