/* rundir.c - the run directory a run command writes into (--out, --resume):
 * refused when it is a file, holds links where moeprobe writes, or already
 * holds a run (named, with how to see or continue it). */
#include "cli/opts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include "buf.h"
#include "err.h"
#include "report/report.h"
#include "run/runner.h"
#include "store/store.h"
#include "xalloc.h"

/* s with control characters shown as '?' (it goes to a terminal). */
static void add_printable(struct buf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        buf_addc(b, *p < 0x20 || *p == 0x7f ? '?' : (char)*p);
}

/* Is dir/lock held by another moeprobe right now? */
static bool run_dir_locked(const char *dir)
{
    char *lp = xasprintf("%s/lock", dir);
    int fd = open(lp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    free(lp);
    if (fd < 0)
        return false;
    bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd); /* also releases the lock if we got it */
    return held;
}

/* "qualify of MODEL (candidates a, b) started DATE; server command: ..." */
static void describe_run(const char *dir, struct buf *b, char **sub_out, bool *finished)
{
    struct mp_store *st = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    if (mp_store_open(dir, MP_STORE_READONLY, &st, &d) < 0) {
        buf_printf(b, "its %s cannot be read (", MP_STORE_DB_NAME);
        add_printable(b, d.msg);
        buf_adds(b, ")");
        return;
    }
    char *sub = NULL;
    struct mp_strv argv = MP_STRV_INIT;
    struct mp_report rep;
    mp_report_init(&rep, dir);
    if (mp_store_run_argv(st, &sub, &argv) < 0) {
        buf_adds(b, "a run whose record is empty");
        goto out;
    }
    mp_store_load(st, &rep, NULL);
    mp_report_fill_fingerprint(&rep);
    buf_printf(b, "a '%s' run", sub);
    if (rep.fp.model) {
        buf_adds(b, " of ");
        add_printable(b, rep.fp.model);
    }
    buf_printf(b, " (%zu candidate%s", rep.n, rep.n == 1 ? "" : "s");
    for (size_t i = 0; i < rep.n; i++) {
        buf_adds(b, i ? ", " : ": ");
        add_printable(b, rep.c[i].cand.name);
    }
    buf_adds(b, ")");
    if (rep.started) {
        buf_adds(b, " started ");
        add_printable(b, rep.started);
    }
    *finished = rep.finished && !rep.interrupted;
    buf_adds(b, *finished ? ", finished" : rep.finished ? ", interrupted" : ", not finished");
    size_t k = 0;
    while (k < argv.n && strcmp(argv.v[k], "--") != 0)
        k++;
    if (k + 1 < argv.n) {
        struct buf c = BUF_INIT;
        for (size_t i = k + 1; i < argv.n; i++) {
            if (c.len)
                buf_addc(&c, ' ');
            buf_add_shell_word(&c, argv.v[i]);
        }
        buf_adds(b, "; server command: ");
        add_printable(b, c.data);
        buf_release(&c);
    }
out:
    *sub_out = sub;
    mp_strv_release(&argv);
    mp_report_release(&rep);
    mp_store_close(st);
}

int mp_cli_run_dir_check(const char *cmd, const char *dir, bool resume)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (resume)
            return mp_error("--resume: '%s': %s", dir, strerror(errno)), MP_EXIT_USAGE;
        return 0; /* a new run directory */
    }
    if (!S_ISDIR(st.st_mode)) {
        mp_error("%s '%s' is a file, not a directory: a run directory holds one run's store, "
                 "attempts and reports; give a new or empty directory",
                 resume ? "--resume" : "--out", dir);
        return MP_EXIT_USAGE;
    }
    /* what moeprobe writes at the top of a run directory: never through a
     * link planted there (the store opens with O_NOFOLLOW too) */
    static const char *const names[] = {
        "lock", MP_STORE_DB_NAME, MP_STORE_DB_NAME "-wal", MP_STORE_DB_NAME "-shm",
        MP_STORE_DB_NAME "-journal", "attempts", "tasks", "report.json", "report.md",
        "report.html", "minimize.json", "index.txt",
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(names); i++) {
        char *p = xasprintf("%s/%s", dir, names[i]);
        bool link = lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
        free(p);
        if (link) {
            struct buf d = BUF_INIT;
            add_printable(&d, dir);
            mp_error("%s: '%s/%s' is a symbolic link: moeprobe never writes through a link "
                     "inside a run directory; remove it, or give another %s",
                     cmd, d.data, names[i], resume ? "run directory" : "--out DIR");
            buf_release(&d);
            return MP_EXIT_USAGE;
        }
    }
    if (resume)
        return 0;
    char *db = xasprintf("%s/%s", dir, MP_STORE_DB_NAME);
    char *tasks = xasprintf("%s/tasks/index.txt", dir); /* a scale-out run's (src/sched) */
    bool has_db = lstat(db, &st) == 0, has_tasks = lstat(tasks, &st) == 0;
    free(db);
    free(tasks);
    if (!has_db && !has_tasks)
        return 0;
    if (run_dir_locked(dir))
        return 0; /* the store refuses it: "in use by another moeprobe" */
    struct buf b = BUF_INIT, hint = BUF_INIT;
    char *sub = NULL;
    bool finished = false;
    if (has_db)
        describe_run(dir, &b, &sub, &finished);
    else
        buf_adds(&b, "a scale-out run (tasks/)");
    const char *rsub = has_db ? sub : "qualify";
    if (finished) {
        buf_adds(&hint, "; 'moeprobe report ");
        buf_add_shell_word(&hint, dir);
        buf_adds(&hint, "' shows that run again");
    } else if (rsub && (!strcmp(rsub, "qualify") || !strcmp(rsub, "diagnose"))) {
        buf_printf(&hint, ", or continue that run with 'moeprobe %s --resume ", rsub);
        buf_add_shell_word(&hint, dir);
        buf_adds(&hint, "'");
    }
    struct buf d = BUF_INIT;
    add_printable(&d, dir);
    mp_error("%s: '%s' already holds a run: %s. A run directory holds one run: give another "
             "--out DIR%s",
             cmd, d.data, b.data, hint.data ? hint.data : "");
    free(sub);
    buf_release(&b);
    buf_release(&d);
    buf_release(&hint);
    return MP_EXIT_USAGE;
}

/* One run directory: while its lock is ours (a live run holds it: its own
 * teardown ends its processes), every engine process its store recorded
 * that is still alive. Returns the number signalled. */
static int end_dead_one(const char *dir)
{
    char *lp = xasprintf("%s/lock", dir);
    int fd = open(lp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    free(lp);
    if (fd < 0)
        return 0;
    int killed = 0;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        struct mp_store *st = NULL;
        struct mp_diag d = MP_DIAG_INIT;
        if (mp_store_open(dir, MP_STORE_READONLY, &st, &d) == 0) {
            int k = mp_run_end_seen_procs(st);
            killed = k > 0 ? k : 0;
            mp_store_close(st);
        }
    }
    close(fd); /* releases the lock */
    return killed;
}

int mp_cli_end_dead_run_procs(const char *dir)
{
    int killed = end_dead_one(dir);
    char *tasks = xasprintf("%s/tasks", dir); /* a --gpus run: each task's own store */
    DIR *d = opendir(tasks);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char *td = xasprintf("%s/%s", tasks, e->d_name);
        killed += end_dead_one(td);
        free(td);
    }
    if (d)
        closedir(d);
    free(tasks);
    if (killed)
        mp_warn("ended %d engine process%s that a dead run left running (recorded in its store: "
                "pid, start time and boot id matched)",
                killed, killed == 1 ? "" : "es");
    return killed;
}
