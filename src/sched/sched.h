/* sched.h - scale-out of `moeprobe qualify`: candidates run as tasks in
 * parallel, on several local GPUs (--gpus) or as Slurm job-array tasks
 * (--slurm), and their results are merged into one report.
 *
 * A task is one candidate qualified by a child
 * `moeprobe qualify --only NAME --out RUNDIR/tasks/NAME ...` with the same
 * options and server command. Each task's record (candidate, GPUs, host,
 * start, end, exit) is RUNDIR/tasks/NAME/task.txt; the merged report is
 * written into RUNDIR like a serial run's (see docs/scale-out.md).
 *
 * Loop-thread only. Functions print their own messages and return process
 * exit codes (MP_EXIT_* in err.h, 128+N when interrupted by signal N). */
#ifndef MP_SCHED_H
#define MP_SCHED_H

#include "compat.h"

struct mp_candidate;

/* What scale-out needs of qualify's options (every pointer borrowed from
 * the caller for the duration of the call). */
struct mp_sched_cfg {
    const struct mp_candidate *cands;
    size_t ncands;
    const char *only;        /* --only list or NULL */
    const char *out_dir;
    int port;
    double grace_s;
    bool json, quiet;
    const char *gpus;        /* --gpus list as given, or NULL */
    int gpus_per_engine;
    bool slurm;
    const char *slurm_args, *slurm_script;
    const char *resume;      /* --resume RUNDIR or NULL */
    char **cmd;              /* the server command: points into qualify's argv */
    size_t ncmd;
};

/* Environment variable set in every task's environment: a task never
 * schedules tasks itself. */
#define MP_SCHED_CHILD_VAR "MOEPROBE_SCHED_CHILD"

/* True when qualify with these options should run as tasks: --gpus,
 * --slurm, --slurm-script or --resume was given, or (not inside a task)
 * more than one GPU is visible. */
bool mp_sched_wanted(const struct mp_sched_cfg *o);

/* Run qualify as tasks. argc/argv are qualify's own (argv[0] =
 * "qualify"); o was derived from them. Returns an exit code. */
int mp_sched_qualify(const struct mp_sched_cfg *o, int argc, char **argv);

/* Merge the task results of run_dir (tasks/index.txt, tasks/NAME/) into
 * run_dir/report.{json,md,html}: one report like a serial run's, or, when
 * the tasks' fingerprints differ, one report per fingerprint side by side
 * (run_dir/fingerprint-K/). Prints the Markdown (JSON with json) on stdout
 * and, unless quiet, a summary on stderr. Returns qualify's exit code:
 * 0 a recommendation, 1 none, 2 no task index, 3 I/O error. */
int mp_sched_merge(const char *run_dir, bool json, bool quiet);

#endif
