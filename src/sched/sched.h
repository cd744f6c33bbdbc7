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

struct mp_opts;

/* Environment variable set in every task's environment: a task never
 * schedules tasks itself. */
#define MP_SCHED_CHILD_VAR "MOEPROBE_SCHED_CHILD"

/* True when qualify with these options should run as tasks: --gpus,
 * --slurm, --slurm-script or --resume was given, or (not inside a task)
 * more than one GPU is visible. */
bool mp_sched_wanted(const struct mp_opts *o);

/* Run qualify as tasks. argc/argv are qualify's own (argv[0] =
 * "qualify"); o was parsed from them. Returns an exit code. */
int mp_sched_qualify(const struct mp_opts *o, int argc, char **argv);

/* Merge the task results of run_dir (tasks/index.txt, tasks/NAME/) into
 * run_dir/report.{json,md,html}: one report like a serial run's, or, when
 * the tasks' fingerprints differ, one report per fingerprint side by side
 * (run_dir/fingerprint-K/). Prints the Markdown (JSON with json) on stdout
 * and, unless quiet, a summary on stderr. Returns qualify's exit code:
 * 0 a recommendation, 1 none, 2 no task index, 3 I/O error. */
int mp_sched_merge(const char *run_dir, bool json, bool quiet);

#endif
