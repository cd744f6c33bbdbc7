/* slurm.c - one Slurm job-array task per candidate: the sbatch script,
 * submission, and following the job with squeue (see internal.h). */
#include "compat.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "clock.h"
#include "proc/proc.h"
#include "sched/internal.h"
#include "sched/sched.h"
#include "strv.h"
#include "xalloc.h"

/* squeue every 1 s at first, backing off to every 15 s */
#define POLL_FIRST_MS 1000
#define POLL_MAX_MS 15000
/* sbatch/squeue/scancel talk to slurmctld; a hung controller must not hang us */
#define SLURM_CMD_TIMEOUT_S 120.0

void mp_sched_slurm_script(const struct mp_sched_plan *pl, const char *slurm_args, struct buf *out)
{
    buf_adds(out, "#!/bin/bash\n"
                  "# moeprobe qualify: one array task per candidate; each writes its results\n"
                  "# into RUNDIR/tasks/<candidate>/. Merge them afterwards with\n"
                  "#   moeprobe report --merge RUNDIR\n"
                  "#SBATCH --job-name=moeprobe-qualify\n");
    buf_adds(out, "#SBATCH --array=");
    bool first = true;
    for (size_t i = 0; i < pl->n; i++) {
        if (pl->t[i].skip)
            continue;
        buf_printf(out, "%s%zu", first ? "" : ",", i);
        first = false;
    }
    buf_printf(out, "\n#SBATCH --output=%s/tasks/slurm-%%A_%%a.out\n", pl->run_dir);
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd)))
        buf_printf(out, "#SBATCH --chdir=%s\n", cwd);
    if (slurm_args) {
        struct mp_strv w = MP_STRV_INIT;
        if (mp_split_words(slurm_args, &w, NULL) == 0) {
            for (size_t i = 0; i < w.n; i++)
                buf_printf(out, "#SBATCH %s\n", w.v[i]);
        }
        mp_strv_release(&w);
    }
    buf_adds(out, "set -u\nnames=(");
    for (size_t i = 0; i < pl->n; i++) {
        buf_addc(out, ' ');
        buf_add_shell_quoted(out, pl->t[i].name);
    }
    buf_adds(out, " )\nname=${names[$SLURM_ARRAY_TASK_ID]}\ndir=");
    char *tasks = xasprintf("%s/tasks", pl->run_dir);
    buf_add_shell_quoted(out, tasks);
    free(tasks);
    buf_adds(out, "/$name\n"
                  "mkdir -p \"$dir\"\n"
                  "start=$(date +%s%N)\n"
                  "export " MP_SCHED_CHILD_VAR "=1\n");
    struct mp_strv argv = MP_STRV_INIT;
    /* the child argv with the name and directory as shell variables */
    mp_strv_push(&argv, pl->self);
    mp_strv_push(&argv, "qualify");
    for (size_t k = 0; k < pl->child_opts.n; k++)
        mp_strv_push(&argv, pl->child_opts.v[k]);
    for (size_t k = 0; k < argv.n; k++) {
        buf_add_shell_quoted(out, argv.v[k]);
        buf_adds(out, " \\\n    ");
    }
    mp_strv_release(&argv);
    buf_adds(out, "--only \"$name\" --out \"$dir\"");
    if (pl->port) /* tasks may share a node: each its own port */
        buf_printf(out, " --port $((%d + SLURM_ARRAY_TASK_ID))", pl->port);
    buf_adds(out, " --");
    for (size_t k = 0; k < pl->ncmd; k++) {
        buf_addc(out, ' ');
        buf_add_shell_quoted(out, pl->cmd[k]);
    }
    buf_adds(out,
             " \\\n    >\"$dir/task.log\" 2>&1\n"
             "rc=$?\n"
             "end=$(date +%s%N)\n"
             "printf 'candidate=%s\\nhost=%s\\ngpus=%s\\njob=%s\\nstart_ns=%s\\nend_ns=%s\\nexit=%s\\n' \\\n"
             "    \"$name\" \"$(hostname)\" \"${CUDA_VISIBLE_DEVICES:-}\" \\\n"
             "    \"${SLURM_ARRAY_JOB_ID:-}_${SLURM_ARRAY_TASK_ID:-}\" \"$start\" \"$end\" \"$rc\" \\\n"
             "    >\"$dir/task.txt.tmp\" && mv \"$dir/task.txt.tmp\" \"$dir/task.txt\"\n"
             "# 0: a recommendation, 1: none qualified - both are a finished task\n"
             "[ \"$rc\" -le 1 ] && exit 0\n"
             "exit \"$rc\"\n");
}

struct counts {
    size_t pending, running, other, total;
};

/* squeue's view of the job: 1 while any task is queued or running, 0 when
 * none is, <0 when squeue failed. */
static int job_alive(const char *job, struct counts *c, struct buf *err)
{
    struct buf o = BUF_INIT;
    char *argv[] = {"squeue", "-h", "-r", "-o", "%T", "-j", (char *)job, NULL};
    int rc = mp_sched_capture(argv, SLURM_CMD_TIMEOUT_S, &o);
    memset(c, 0, sizeof(*c));
    int res;
    if (rc != 0) {
        /* a finished job that slurmctld forgot: "Invalid job id specified" */
        res = strstr(o.data, "Invalid job id") ? 0 : -1;
        buf_reset(err);
        buf_adds(err, o.data);
    } else {
        char *save = NULL;
        for (char *l = strtok_r(o.data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            c->total++;
            if (!strcmp(l, "PENDING") || !strcmp(l, "CONFIGURING"))
                c->pending++;
            else if (!strcmp(l, "RUNNING") || !strcmp(l, "COMPLETING"))
                c->running++;
            else
                c->other++;
        }
        res = c->total > 0;
    }
    buf_release(&o);
    return res;
}

static void cancel(const char *job)
{
    struct buf o = BUF_INIT;
    char *argv[] = {"scancel", (char *)job, NULL};
    mp_sched_capture(argv, SLURM_CMD_TIMEOUT_S, &o);
    buf_release(&o);
}

int mp_sched_run_slurm(struct mp_sched_plan *pl, const char *script_path, int signal_fd)
{
    struct buf o = BUF_INIT, err = BUF_INIT;
    char *job = NULL;
    int rc = 0;
    size_t todo = 0;
    for (size_t i = 0; i < pl->n; i++)
        todo += !pl->t[i].skip;
    char *sargv[] = {"sbatch", "--parsable", (char *)script_path, NULL};
    int st = mp_sched_capture(sargv, SLURM_CMD_TIMEOUT_S, &o);
    /* "123" or "123;cluster" */
    size_t l = o.data ? strspn(o.data, "0123456789") : 0;
    if (st != 0 || l == 0) {
        mp_error("sbatch failed (%s): %s", st == 127 ? "not installed?" : "see its message",
                 o.data ? o.data : "");
        rc = MP_EXIT_INTERNAL;
        goto out;
    }
    job = xstrndup(o.data, l);
    if (!pl->quiet)
        fprintf(stderr, "moeprobe: submitted Slurm job %s (%zu array task%s, script %s)\n", job,
                todo, todo == 1 ? "" : "s", script_path);
    int interval = POLL_FIRST_MS;
    int failures = 0;
    int64_t next = mp_now_ns();
    bool tty = isatty(2) && !pl->quiet;
    char last[160] = "";
    for (;;) {
        int64_t now = mp_now_ns();
        if (now >= next) {
            struct counts c;
            int alive = job_alive(job, &c, &err);
            if (alive < 0) {
                if (++failures >= 5) {
                    mp_error("squeue keeps failing: %s", err.data ? err.data : "");
                    rc = MP_EXIT_INTERNAL;
                    goto out;
                }
            } else {
                failures = 0;
                if (!alive)
                    break;
                char line[160];
                size_t finished = todo > c.total ? todo - c.total : 0;
                snprintf(line, sizeof(line),
                         "slurm job %s: %zu pending, %zu running, %zu finished of %zu", job,
                         c.pending, c.running, finished, todo);
                if (!pl->quiet && strcmp(line, last) != 0) {
                    fprintf(stderr, tty ? "\rmoeprobe: %s\033[K" : "moeprobe: %s\n", line);
                    snprintf(last, sizeof(last), "%s", line);
                }
            }
            next = now + (int64_t)interval * 1000000;
            interval = interval * 2 > POLL_MAX_MS ? POLL_MAX_MS : interval * 2;
            continue;
        }
        struct pollfd p = {.fd = signal_fd, .events = POLLIN};
        int timeout = (int)((next - now) / 1000000 + 1);
        if (poll(&p, 1, timeout) < 0 && errno != EINTR) {
            rc = MP_EXIT_INTERNAL;
            goto out;
        }
        if (p.revents & POLLIN) {
            struct signalfd_siginfo si;
            int signo = 0;
            while (read(signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (si.ssi_signo != SIGCHLD && !signo)
                    signo = (int)si.ssi_signo;
            }
            mp_proc_reap_orphans();
            if (signo) {
                if (tty)
                    fputc('\n', stderr);
                mp_warn("interrupted: cancelling Slurm job %s", job);
                cancel(job);
                rc = 128 + signo;
                goto out;
            }
        }
    }
    if (tty && last[0])
        fputc('\n', stderr);
    if (!pl->quiet)
        fprintf(stderr, "moeprobe: Slurm job %s is done; merging the task results\n", job);
out:
    free(job);
    buf_release(&o);
    buf_release(&err);
    return rc;
}
