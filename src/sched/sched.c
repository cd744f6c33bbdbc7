/* sched.c - entry point of qualify's scale-out (see sched.h): the plan
 * (tasks, the child command), then local GPUs or Slurm, then the merge. */
#include "compat.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "proc/proc.h"
#include "file.h"
#include "model/report.h"
#include "report/report.h"
#include "run/runner.h"
#include "sched/internal.h"
#include "sched/sched.h"
#include "store/store.h"
#include "xalloc.h"

bool mp_sched_wanted(const struct mp_sched_cfg *o)
{
    if (getenv(MP_SCHED_CHILD_VAR))
        return false;
    if (o->gpus || o->slurm || o->slurm_script || o->resume)
        return true;
    /* default --gpus: every GPU nvidia-smi lists; one GPU runs serially */
    char *g = mp_sched_gpus_detect();
    bool many = g && strchr(g, ',');
    free(g);
    return many;
}

/* options dropped from the child command: name, takes a value */
static const struct {
    const char *name;
    bool value;
} dropped[] = {
    {"gpus", true},  {"gpus-per-engine", true}, {"slurm", false}, {"slurm-args", true},
    {"slurm-script", true}, {"resume", true}, {"out", true}, {"only", true},
    {"port", true},  {"json", false},
};

void mp_sched_filter_opts(char **argv, int nopt, struct mp_strv *out)
{
    for (int i = 1; i < nopt; i++) {
        const char *w = argv[i];
        if (!strcmp(w, "--"))
            break;
        bool drop = false, skip_value = false;
        if (!strncmp(w, "--", 2)) {
            for (size_t k = 0; k < MP_ARRAY_SIZE(dropped); k++) {
                size_t l = strlen(dropped[k].name);
                if (strncmp(w + 2, dropped[k].name, l) != 0)
                    continue;
                if (w[2 + l] == '\0') {
                    drop = true;
                    skip_value = dropped[k].value;
                } else if (w[2 + l] == '=') {
                    drop = true;
                }
            }
        }
        if (!drop) {
            mp_strv_push(out, w);
            continue;
        }
        if (skip_value)
            i++;
    }
}

bool mp_sched_task_finished(const char *task_dir)
{
    struct mp_report t;
    mp_report_init(&t, task_dir);
    bool finished = false;
    mp_sched_task_load(task_dir, &t, &finished);
    mp_report_release(&t);
    return finished;
}


static int mkdir_p(const char *path)
{
    char *tmp = xstrdup(path);
    int rc = 0;
    for (char *p = tmp + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST) {
                rc = -errno;
                break;
            }
            *p = c;
            if (!c)
                break;
        }
    }
    free(tmp);
    return rc;
}

static void plan_release(struct mp_sched_plan *pl)
{
    for (size_t i = 0; i < pl->n; i++) {
        free(pl->t[i].name);
        free(pl->t[i].dir);
    }
    free(pl->t);
    free(pl->run_dir);
    free(pl->self);
    mp_strv_release(&pl->child_opts);
    memset(pl, 0, sizeof(*pl));
}

/* A task that runs again starts from an empty directory; what an earlier
 * try left is kept beside it as NAME.prev-K. */
/* A task of a dead run that is done again: end what its engines left (its
 * store's running attempts and recorded engine processes, as a serial
 * --resume does: a daemon that escaped group and marker included) before
 * its directory is moved aside. Best effort: a store that cannot be opened
 * or is locked by a live task is left alone. */
static void end_dead_task(const char *dir, bool quiet)
{
    struct mp_store *st = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    if (mp_store_open(dir, MP_STORE_LOCK, &st, &d) < 0)
        return;
    int killed = 0;
    if (mp_run_end_dead_run(st, &killed) == 0 && killed && !quiet)
        fprintf(stderr, "moeprobe: killed %d engine process(es) left by the interrupted task in %s\n",
                killed, dir);
    mp_store_close(st);
}

static void move_aside(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return;
    for (int k = 1; k < 1000; k++) {
        char *to = xasprintf("%s.prev-%d", dir, k);
        bool exists = stat(to, &st) == 0;
        if (!exists && rename(dir, to) == 0) {
            free(to);
            return;
        }
        free(to);
        if (!exists)
            return;
    }
}

/* The GPU sets of a local run (--gpus, else the ones found; none known:
 * one engine at a time, unpinned). 0, or MP_EXIT_USAGE with the error said. */
static int local_sets(const struct mp_sched_cfg *o, struct mp_strv *sets, char **detected)
{
    const char *list = o->gpus;
    if (!list)
        list = *detected = mp_sched_gpus_detect();
    if (!list) {
        mp_strv_push(sets, "");
        return 0;
    }
    struct mp_diag d = MP_DIAG_INIT;
    if (mp_sched_gpu_sets(list, o->gpus_per_engine, sets, &d) < 0) {
        mp_error("%s", d.msg);
        return MP_EXIT_USAGE;
    }
    return 0;
}

/* The run directory (absolute, into pl->run_dir) and its tasks/. 0, or
 * MP_EXIT_INTERNAL with the error said. */
static int make_run_dir(const struct mp_sched_cfg *o, struct mp_sched_plan *pl)
{
    if (mkdir_p(o->out_dir) < 0 || !(pl->run_dir = realpath(o->out_dir, NULL))) {
        mp_error("cannot create run directory '%s': %s", o->out_dir, strerror(errno));
        return MP_EXIT_INTERNAL;
    }
    char *tasks = xasprintf("%s/tasks", pl->run_dir);
    int e = mkdir_p(tasks);
    free(tasks);
    if (e < 0) {
        mp_error("cannot create '%s/tasks': %s", pl->run_dir, mp_strerror(e));
        return MP_EXIT_INTERNAL;
    }
    return 0;
}

/* The child command and one task per candidate (--only), each marked done
 * when --resume finds it finished. 0, or an exit code with the error said. */
static int plan_tasks(const struct mp_sched_cfg *o, char **argv, struct mp_sched_plan *pl)
{
    char self[PATH_MAX];
    int e = mp_proc_self_exe(self, sizeof(self));
    if (e < 0) {
        mp_error("cannot find this moeprobe's own path: %s", mp_strerror(e));
        return MP_EXIT_INTERNAL;
    }
    pl->self = xstrdup(self);
    pl->cmd = o->cmd;
    pl->ncmd = o->ncmd;
    pl->port = o->port;
    pl->grace_s = o->grace_s;
    pl->json = o->json;
    pl->quiet = o->quiet;
    mp_sched_filter_opts(argv, (int)(o->cmd - argv), &pl->child_opts);
    for (size_t i = 0; i < o->ncands; i++) {
        if (!mp_csv_has(o->only, o->cands[i].name))
            continue;
        pl->t = xreallocarray(pl->t, pl->n + 1, sizeof(*pl->t));
        struct mp_sched_task *t = &pl->t[pl->n++];
        t->name = xstrdup(o->cands[i].name);
        t->dir = xasprintf("%s/tasks/%s", pl->run_dir, t->name);
        t->skip = o->resume && mp_sched_task_finished(t->dir);
    }
    if (pl->n == 0) {
        mp_error("--only '%s' matches no candidate", o->only ? o->only : "");
        return MP_EXIT_USAGE;
    }
    return 0;
}

/* The tasks to run get a clean directory (what a dead run left of their
 * engines ended first); the index is written. 0, or MP_EXIT_INTERNAL. */
static int prepare_tasks(const struct mp_sched_cfg *o, struct mp_sched_plan *pl, size_t *todo)
{
    *todo = 0;
    for (size_t i = 0; i < pl->n; i++) {
        if (pl->t[i].skip)
            continue;
        (*todo)++;
        if (o->resume)
            end_dead_task(pl->t[i].dir, o->quiet);
        if (!o->slurm_script)
            move_aside(pl->t[i].dir);
    }
    if (mp_sched_index_write(pl->run_dir, pl) < 0) {
        mp_error("cannot write '%s/tasks/index.txt'", pl->run_dir);
        return MP_EXIT_INTERNAL;
    }
    if (o->resume && !o->quiet)
        fprintf(stderr, "moeprobe: resuming %s: %zu of %zu candidates to run\n", pl->run_dir,
                *todo, pl->n);
    return 0;
}

/* --slurm-script: the array job is written, not run. The exit code. */
static int write_slurm_script(const struct mp_sched_cfg *o, const struct mp_sched_plan *pl,
                              size_t todo)
{
    struct buf s = BUF_INIT;
    mp_sched_slurm_script(pl, o->slurm_args, &s);
    FILE *f = fopen(o->slurm_script, "w");
    bool ok = f && fwrite(s.data, 1, s.len, f) == s.len;
    if (f && fclose(f) != 0)
        ok = false;
    buf_release(&s);
    if (!ok) {
        mp_error("cannot write '%s': %s", o->slurm_script, strerror(errno));
        return MP_EXIT_INTERNAL;
    }
    chmod(o->slurm_script, 0755);
    fprintf(stderr,
            "moeprobe: wrote %s (%zu array task%s); submit it with 'sbatch %s', then run "
            "'moeprobe report --merge %s'\n",
            o->slurm_script, todo, todo == 1 ? "" : "s", o->slurm_script, pl->run_dir);
    return MP_EXIT_OK;
}

/* --slurm: the array job is written into tasks/ and submitted; runs until
 * it is over. Its exit code (0, < 128 an error, >= 128 a signal). */
static int run_slurm(const struct mp_sched_cfg *o, struct mp_sched_plan *pl, int sig_fd)
{
    char *script = xasprintf("%s/tasks/qualify.sbatch", pl->run_dir);
    struct buf s = BUF_INIT;
    mp_sched_slurm_script(pl, o->slurm_args, &s);
    char *dir = xasprintf("%s/tasks", pl->run_dir);
    int rc = mp_write_file_atomic(dir, "qualify.sbatch", s.data, s.len);
    free(dir);
    buf_release(&s);
    if (rc < 0) {
        mp_error("cannot write '%s': %s", script, mp_strerror(rc));
        rc = MP_EXIT_INTERNAL;
    } else {
        rc = mp_sched_run_slurm(pl, script, sig_fd);
    }
    free(script);
    return rc;
}

int mp_sched_qualify(const struct mp_sched_cfg *o, int argc, char **argv)
{
    struct mp_sched_plan pl;
    memset(&pl, 0, sizeof(pl));
    struct mp_strv sets = MP_STRV_INIT;
    int exit_code = MP_EXIT_USAGE;
    struct mp_signals sig = MP_SIGNALS_INIT;
    char *detected = NULL;
    size_t todo = 0;
    MP_UNUSED(argc);

    if (o->slurm && o->gpus)
        return mp_error("--gpus and --slurm cannot be combined: Slurm hands out the GPUs "
                        "(e.g. --slurm-args '--gres=gpu:1')"),
               MP_EXIT_USAGE;
    if (o->slurm_args && !o->slurm && !o->slurm_script)
        return mp_error("--slurm-args needs --slurm or --slurm-script"), MP_EXIT_USAGE;
    bool slurm = o->slurm || o->slurm_script;
    exit_code = slurm ? 0 : local_sets(o, &sets, &detected);
    if (exit_code == 0)
        exit_code = make_run_dir(o, &pl);
    if (exit_code == 0)
        exit_code = plan_tasks(o, argv, &pl);
    if (exit_code == 0)
        exit_code = prepare_tasks(o, &pl, &todo);
    if (exit_code != 0)
        goto out;
    if (o->slurm_script) {
        exit_code = write_slurm_script(o, &pl, todo);
        goto out;
    }
    int e = mp_signals_begin(&sig);
    if (e < 0) {
        mp_error("cannot set up signal handling: %s", mp_strerror(e));
        exit_code = MP_EXIT_INTERNAL;
        goto out;
    }
    int rc = 0;
    if (todo > 0)
        rc = slurm ? run_slurm(o, &pl, sig.fd) : mp_sched_run_local(&pl, &sets, sig.fd);
    if (rc != 0 && rc < 128) {
        exit_code = rc;
        goto out;
    }
    exit_code = mp_sched_merge(pl.run_dir, pl.json, pl.quiet);
    if (rc >= 128)
        exit_code = rc;
out:
    mp_signals_end(&sig);
    free(detected);
    mp_strv_release(&sets);
    plan_release(&pl);
    return exit_code;
}
