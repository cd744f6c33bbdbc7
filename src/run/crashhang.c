/* crashhang.c - a hang's evidence and its GPU core dump as steps on the
 * attempt's loop (run/crashhang.h): /health and the engine's token counter
 * twice across a short window, then a dump through every pipe the engine's
 * processes opened, and the kernels the dump's warps were in as cuda-gdb
 * lists them. */
#include "run/crashhang.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "http/loadgen.h"
#include "logs/coredump.h"
#include "logs/demangle.h"
#include "logs/gpufault.h"
#include "loop.h"
#include "observe/srvmetrics.h"
#include "proc/proc.h"
#include "run/crashinfo.h"
#include "xalloc.h"

#define LOOK_TIMEOUT_S 2.0     /* each GET of a look */
#define LOOK_WAIT_NS 3000000000LL /* the most a look waits for both answers */
#define CONFIRM_NS 2000000000LL /* between the two looks at /health and /metrics */
#define TRIGGER_NS 5000000000LL /* the most the pipes get to take their bytes */
#define DUMP_LOOK_NS 500000000LL /* between looks at the dump files */
#define GDB_NS 60000000000LL   /* cuda-gdb on one dump */
#define PIPE_BYTES (1 << 20)   /* what triggers a dump (vLLM's blog: 1 MiB of zeros) */
#define MAX_PIPES 16
#define ZERO_CHUNK 65536

enum step { H_LOOK, H_CONFIRM, H_TRIGGER, H_DUMPS, H_GDB, H_DONE };

struct hpipe {
    int fd;                    /* open for writing, -1 once done */
    long pid;                  /* from its name pipe_<pid> */
    size_t sent;
    char file[PATH_MAX];       /* its dump, once seen */
    off_t last;                /* the dump's size at the last look (-1 none) */
    bool ready;
};

struct mp_hang {
    struct mp_hang_in in;
    struct mp_lg *lg;
    struct mp_loop *loop;
    struct mp_gpu_fault *g;
    void (*wake)(void *ud);
    void *ud;
    enum step step;
    int64_t deadline;
    bool gone;
    /* the looks: [0] during the stall, [1] CONFIRM_NS later */
    int look;
    long id_health, id_metrics; /* in flight, 0 none */
    long health[2];
    double gen[2];
    char why[2][160];
    int64_t t0;
    bool evidence_done;
    /* the dump */
    struct hpipe p[MAX_PIPES];
    size_t np, nopen, nready;
    int64_t dumps_until;
    struct buf dump;           /* the dump sentence so far */
    size_t gi;                 /* the pipe whose dump cuda-gdb reads */
    struct mp_proc *gdb;
    struct buf gdb_out;
    bool gdb_eof, gdb_exited;
};

/* ---------- the looks ---------- */

static void send_look(struct mp_hang *h)
{
    h->health[h->look] = 0;
    h->gen[h->look] = NAN;
    h->why[h->look][0] = '\0';
    h->id_health = MP_MAX(mp_lg_get(h->lg, "/health", LOOK_TIMEOUT_S, MP_HANG_TAG), 0);
    h->id_metrics = MP_MAX(mp_lg_get_max(h->lg, "/metrics", LOOK_TIMEOUT_S, MP_PROM_MAX_INPUT,
                                         MP_HANG_TAG), 0);
    if (!h->id_metrics)
        snprintf(h->why[h->look], sizeof(h->why[0]), "/metrics could not be read: no transfer");
    h->deadline = mp_now_ns() + LOOK_WAIT_NS;
}

/* the engine's generated-token counter of a /metrics answer (NAN: why says) */
static double gen_tokens(const struct mp_lg_result *res, char *why, size_t whyn)
{
    double v = NAN;
    struct mp_srvm_snap sn;
    if (res->http_status != 200)
        snprintf(why, whyn, "/metrics answered %d", res->http_status);
    else if (mp_srvm_snap_read(&sn, res->text ? res->text : "", res->text_len, why, whyn) == 0)
        v = sn.gen;
    if (isnan(v) && !why[0])
        snprintf(why, whyn, "/metrics has no vllm:generation_tokens_total");
    return v;
}

bool mp_hang_take(struct mp_hang *h, const struct mp_lg_result *res)
{
    if (!h || res->user_tag != MP_HANG_TAG)
        return false;
    if (res->id == h->id_health) {
        h->id_health = 0;
        h->health[h->look] = res->http_status; /* 0: no answer */
    } else if (res->id == h->id_metrics) {
        h->id_metrics = 0;
        h->why[h->look][0] = '\0';
        h->gen[h->look] = gen_tokens(res, h->why[h->look], sizeof(h->why[0]));
    }
    return true; /* ours (a cancelled one's too) */
}

static void cancel_looks(struct mp_hang *h)
{
    if (h->id_health)
        mp_lg_cancel(h->lg, h->id_health);
    if (h->id_metrics)
        mp_lg_cancel(h->lg, h->id_metrics);
    h->id_health = h->id_metrics = 0;
}

/* The evidence sentence into g->hang, from both looks (the second may be
 * missing: the engine went away). */
static void evidence(struct mp_hang *h)
{
    double dt = (double)(mp_now_ns() - h->t0) / 1e9;
    long h1 = h->health[0], h2 = h->look ? h->health[1] : 0;
    double g1 = h->gen[0], g2 = h->look ? h->gen[1] : NAN;
    struct buf s = BUF_INIT;
    buf_printf(&s, "during the stall /health answered %ld, then %ld %.1f s later", h1, h2, dt);
    if (isnan(g1) || isnan(g2))
        buf_printf(&s, "; the token counter could not be read (%s)",
                   h->why[0][0] ? h->why[0] : h->look ? h->why[1] : "the engine went away");
    else if (g2 == g1)
        buf_printf(&s, "; the engine's vllm:generation_tokens_total stayed at %.0f: it generated "
                       "nothing for anyone",
                   g1);
    else
        buf_printf(&s, "; the engine's vllm:generation_tokens_total rose from %.0f to %.0f: it "
                       "generated tokens, but none reached moeprobe's streams",
                   g1, g2);
    if (h1 == 200 && h2 == 200 && !isnan(g1) && g2 == g1)
        buf_adds(&s, " (a wedged server: healthy by /health, no progress by /metrics)");
    free(h->g->hang);
    h->g->hang = buf_detach(&s, NULL);
    h->evidence_done = true;
}

/* ---------- the trigger: 1 MiB of zeros into each pipe ---------- */

static void pipe_close(struct mp_hang *h, struct hpipe *p)
{
    if (p->fd < 0)
        return;
    mp_loop_fd_del(h->loop, p->fd);
    close(p->fd);
    p->fd = -1;
    h->nopen--;
}

static void on_pipe(struct mp_loop *l, int fd, unsigned what, void *ud)
{
    static const char zeros[ZERO_CHUNK];
    struct mp_hang *h = ud;
    struct hpipe *p = NULL;
    (void)l;
    (void)what;
    for (size_t i = 0; i < h->np && !p; i++)
        if (h->p[i].fd == fd)
            p = &h->p[i];
    if (!p)
        return;
    while (p->sent < PIPE_BYTES) {
        ssize_t w = write(fd, zeros, MP_MIN((size_t)ZERO_CHUNK, PIPE_BYTES - p->sent));
        if (w > 0)
            p->sent += (size_t)w;
        else if (w < 0 && errno == EINTR)
            continue;
        else if (w < 0 && errno == EAGAIN)
            return; /* the next writable event goes on */
        else
            break;  /* its reader is gone: the pipe counts as triggered */
    }
    pipe_close(h, p);
    if (!h->nopen)
        h->wake(h->ud);
}

/* Open every FIFO pipe_<pid> of the directory for writing, watched on the
 * loop; false with g->hang_dump saying why when there is none. */
static bool trigger(struct mp_hang *h)
{
    size_t noreader = 0;
    DIR *d = opendir(h->in.dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && h->np < MAX_PIPES) {
        char path[PATH_MAX];
        struct stat st;
        int pl = snprintf(path, sizeof(path), "%s/%s", h->in.dir, e->d_name);
        if (strncmp(e->d_name, "pipe_", 5) || pl < 0 || (size_t)pl >= sizeof(path) ||
            lstat(path, &st) != 0 || !S_ISFIFO(st.st_mode))
            continue;
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            noreader++; /* ENXIO: the process that opened it is gone */
            continue;
        }
        struct hpipe *p = &h->p[h->np++];
        p->fd = fd;
        p->pid = strtol(e->d_name + 5, NULL, 10);
        p->last = -1;
        h->nopen++;
        if (mp_loop_fd_set(h->loop, fd, MP_LOOP_OUT, on_pipe, h) < 0)
            pipe_close(h, p); /* cannot be watched: counted, not written */
    }
    if (d)
        closedir(d);
    if (!h->np)
        h->g->hang_dump = xasprintf("no pipe to trigger a dump through%s",
                                    noreader ? " (their processes are gone)"
                                             : " (no process of the engine opened one)");
    return h->np > 0;
}

/* ---------- the dumps ---------- */

/* Has the dump of p been written? Its size held for one look. */
static bool dump_ready(const char *dir, struct hpipe *p)
{
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "core_%ld.", p->pid);
    DIR *d = opendir(dir);
    struct dirent *e;
    bool ready = false;
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        int pl = snprintf(p->file, sizeof(p->file), "%s/%s", dir, e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) || pl < 0 || (size_t)pl >= sizeof(p->file) ||
            lstat(p->file, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        ready = st.st_size > 0 && st.st_size == p->last;
        p->last = st.st_size;
        break;
    }
    if (d)
        closedir(d);
    return ready;
}

/* One look at every dump not yet written: done, or its writer is gone (a
 * driver may end the process once the dump is written). */
static void look_at_dumps(struct mp_hang *h)
{
    for (size_t i = 0; i < h->np; i++) {
        struct hpipe *p = &h->p[i];
        if (p->ready)
            continue;
        p->ready = dump_ready(h->in.dir, p) || (h->gone && p->last > 0);
        h->nready += p->ready;
    }
}

static void add_hang_kernel(struct mp_gpu_fault *g, const char *name, long pid, const char *file,
                            const char *state)
{
    struct buf dm = BUF_INIT, sh = BUF_INIT;
    struct mp_kernel_fault k;
    memset(&k, 0, sizeof(k));
    k.device = k.sm = k.warp = -1;
    k.pid = pid;
    k.dump_file = (char *)file;
    k.dump_state = (char *)state;
    if (name) {
        k.name = (char *)name;
        if (mp_demangle_is_mangled(name, strlen(name)) &&
            mp_demangle(name, strlen(name), &dm) == 0) {
            k.mangled = (char *)name;
            k.name = dm.data;
            k.demangled = true;
        }
        struct mp_kfamily f;
        bool fam = mp_gf_family(k.name, k.mangled, &f);
        k.family = fam ? (char *)f.id : NULL;
        k.family_label = fam ? (char *)f.label : NULL;
        mp_demangle_short(k.name, fam && f.key[0] ? f.key : NULL, &sh);
        k.short_name = sh.data;
    }
    mp_gpu_fault_add_kernel(g, &k);
    buf_release(&dm);
    buf_release(&sh);
}

/* ---------- cuda-gdb on each dump ---------- */

static void gdb_line(void *ud, const char *line, size_t len, bool truncated)
{
    struct buf *out = ud;
    (void)truncated;
    if (!buf_fits(out, len + 1))
        return; /* read and dropped: cuda-gdb must never block on a full pipe */
    buf_add(out, line, len);
    buf_addc(out, '\n');
}

static void on_gdb_output(struct mp_loop *l, int fd, unsigned what, void *ud)
{
    struct mp_hang *h = ud;
    (void)what;
    if (mp_proc_read_lines(h->gdb, gdb_line, &h->gdb_out) != 0) {
        mp_loop_fd_del(l, fd);
        h->gdb_eof = true;
        h->wake(h->ud);
    }
}

static void on_gdb_exit(struct mp_loop *l, int pidfd, void *ud)
{
    struct mp_hang *h = ud;
    (void)l;
    (void)pidfd;
    h->gdb_exited = true;
    h->wake(h->ud);
}

static void gdb_stop(struct mp_hang *h)
{
    if (!h->gdb)
        return;
    if (mp_proc_output_fd(h->gdb) >= 0)
        mp_loop_fd_del(h->loop, mp_proc_output_fd(h->gdb));
    if (mp_proc_pidfd(h->gdb) >= 0)
        mp_loop_fd_del(h->loop, mp_proc_pidfd(h->gdb));
    mp_proc_free(h->gdb); /* killed (its group) and reaped when still running */
    h->gdb = NULL;
    buf_release(&h->gdb_out);
}

/* Start cuda-gdb on p's dump; false with why when it cannot be run. */
static bool gdb_start(struct mp_hang *h, const struct hpipe *p, char *why, size_t whyn)
{
    if (mp_proc_find_command("cuda-gdb") != 0) {
        snprintf(why, whyn, "cuda-gdb not found to read it (cuda-gdb -batch -ex 'target cudacore "
                            "%s' -ex 'info cuda kernels')",
                 p->file);
        return false;
    }
    char *target = xasprintf("target cudacore %s", p->file);
    char *const argv[] = {"cuda-gdb", "-batch", "-nx", "-ex", target, "-ex", "info cuda kernels",
                          NULL};
    struct mp_proc_spec spec = {.argv = argv};
    struct mp_diag dg = MP_DIAG_INIT;
    int rc = mp_proc_spawn(&spec, &h->gdb, &dg);
    free(target);
    if (rc < 0) {
        snprintf(why, whyn, "cuda-gdb listed no kernel (%s)", dg.msg);
        h->gdb = NULL;
        return false;
    }
    buf_set_max(&h->gdb_out, MP_CAPTURE_MAX);
    h->gdb_eof = h->gdb_exited = false;
    if (mp_loop_fd_set(h->loop, mp_proc_output_fd(h->gdb), MP_LOOP_IN, on_gdb_output, h) < 0)
        h->gdb_eof = true;
    if (mp_proc_pidfd(h->gdb) < 0 ||
        mp_loop_watch_pid(h->loop, mp_proc_pidfd(h->gdb), on_gdb_exit, h) < 0)
        h->gdb_exited = true; /* no pidfd: looked at by mp_proc_exited below */
    h->deadline = mp_now_ns() + GDB_NS;
    return true;
}

/* cuda-gdb's answer for p (it ended, or its time is up) into the sentence. */
static void gdb_finish(struct mp_hang *h, const struct hpipe *p, bool ended)
{
    struct mp_strv names = MP_STRV_INIT;
    char why[PATH_MAX + 128];
    size_t n = ended ? mp_cudagdb_kernels(h->gdb_out.data, h->gdb_out.len, &names) : 0;
    if (!ended)
        snprintf(why, sizeof(why), "cuda-gdb listed no kernel ('cuda-gdb' did not finish "
                                   "within %.0f s (killed))", (double)GDB_NS / 1e9);
    else
        snprintf(why, sizeof(why), "cuda-gdb listed no kernel (exit status)");
    gdb_stop(h);
    if (!n) {
        buf_printf(&h->dump, "; process %ld: %s", p->pid, why);
        add_hang_kernel(h->g, NULL, p->pid, p->file, "kept: not read");
    } else {
        buf_printf(&h->dump, "; process %ld's warps were in ", p->pid);
        for (size_t k = 0; k < names.n; k++) {
            add_hang_kernel(h->g, names.v[k], p->pid, p->file, NULL);
            const struct mp_kernel_fault *hk = &h->g->k[h->g->nk - 1];
            buf_printf(&h->dump, "%s%.300s", k ? ", " : "", hk->name);
            if (hk->family_label)
                buf_printf(&h->dump, " (%s)", hk->family_label);
        }
    }
    mp_strv_release(&names);
}

/* The next dump to read, started; false when none is left. */
static bool gdb_next(struct mp_hang *h)
{
    for (; h->gi < h->np; h->gi++) {
        struct hpipe *p = &h->p[h->gi];
        char why[PATH_MAX + 128];
        if (!p->ready)
            continue;
        if (gdb_start(h, p, why, sizeof(why)))
            return true;
        buf_printf(&h->dump, "; process %ld: %s", p->pid, why);
        add_hang_kernel(h->g, NULL, p->pid, p->file, "kept: not read");
    }
    return false;
}

/* ---------- the steps ---------- */

static void finish_dump(struct mp_hang *h)
{
    if (h->nready < h->np)
        buf_printf(&h->dump, "; %zu dump(s) not finished within %.0f s", h->np - h->nready,
                   MP_CD_HANG_WAIT_S);
    free(h->g->hang_dump);
    h->g->hang_dump = buf_detach(&h->dump, NULL);
    h->step = H_DONE;
}

/* Both looks are in (or the engine went away): the sentence, then the dump. */
static void after_looks(struct mp_hang *h)
{
    evidence(h);
    free(h->g->hang_dump);
    h->g->hang_dump = NULL;
    if (!h->in.pipes) {
        h->g->hang_dump = xstrdup("no dump: the engine was not started with a core-dump pipe "
                                  "(attached, --no-coredump, or a container that cannot see the "
                                  "attempt directory)");
        h->step = H_DONE;
    } else if (h->gone || !trigger(h)) {
        h->step = H_DONE;
    } else {
        h->step = H_TRIGGER;
        h->deadline = mp_now_ns() + TRIGGER_NS;
    }
}

static void look_step(struct mp_hang *h, int64_t now)
{
    if ((h->id_health || h->id_metrics) && now < h->deadline)
        return;
    cancel_looks(h); /* past its wait: what is missing counts as no answer */
    if (h->look == 0 && !h->gone) {
        h->t0 = now;
        h->step = H_CONFIRM;
        h->deadline = now + CONFIRM_NS;
    } else {
        after_looks(h);
    }
}

static void dumps_step(struct mp_hang *h, int64_t now)
{
    if (!h->gone && now < h->deadline)
        return;
    look_at_dumps(h);
    if (h->nready < h->np && !h->gone && now < h->dumps_until) {
        h->deadline = MP_MIN(now + DUMP_LOOK_NS, h->dumps_until);
        return;
    }
    buf_printf(&h->dump, "triggered through %zu pipe(s), %zu dump(s) written", h->np, h->nready);
    h->step = H_GDB;
    h->gi = 0;
    if (!gdb_next(h))
        finish_dump(h);
}

static void gdb_step(struct mp_hang *h, int64_t now)
{
    if (!h->gdb_exited || !h->gdb_eof) {
        if (now < h->deadline)
            return;
    } else if (!mp_proc_exited(h->gdb, NULL)) {
        h->deadline = MP_MIN(h->deadline, now + 10000000LL); /* reaped in a moment */
        if (now < h->deadline)
            return;
    }
    gdb_finish(h, &h->p[h->gi], h->gdb_eof && mp_proc_exited(h->gdb, NULL));
    h->gi++;
    if (!gdb_next(h))
        finish_dump(h);
}

int64_t mp_hang_step(struct mp_hang *h)
{
    for (;;) {
        enum step was = h->step;
        int64_t now = mp_now_ns();
        switch (h->step) {
        case H_LOOK:
            look_step(h, now);
            break;
        case H_CONFIRM:
            if (h->gone) {
                after_looks(h);
            } else if (now >= h->deadline) {
                h->look = 1;
                send_look(h);
                h->step = H_LOOK;
            }
            break;
        case H_TRIGGER:
            if (h->nopen && now < h->deadline)
                break;
            for (size_t i = 0; i < h->np; i++)
                pipe_close(h, &h->p[i]);
            h->step = H_DUMPS;
            h->dumps_until = now + (int64_t)(MP_CD_HANG_WAIT_S * 1e9);
            h->deadline = now + DUMP_LOOK_NS;
            break;
        case H_DUMPS:
            dumps_step(h, now);
            break;
        case H_GDB:
            gdb_step(h, now);
            break;
        case H_DONE:
            return 0;
        }
        if (h->step == was)
            return h->deadline;
    }
}

struct mp_hang *mp_hang_begin(const struct mp_hang_in *in, struct mp_lg *lg,
                              struct mp_gpu_fault *g, void (*wake)(void *ud), void *ud,
                              int64_t *deadline)
{
    struct mp_hang *h = xcalloc(1, sizeof(*h));
    h->in = *in;
    h->lg = lg;
    h->loop = mp_lg_loop(lg);
    h->g = g;
    h->wake = wake;
    h->ud = ud;
    for (size_t i = 0; i < MAX_PIPES; i++)
        h->p[i].fd = -1;
    h->t0 = mp_now_ns();
    send_look(h);
    *deadline = h->deadline;
    return h;
}

void mp_hang_engine_gone(struct mp_hang *h)
{
    if (h)
        h->gone = true;
}

/* Cut short before DONE: say where. */
static void cut_short(struct mp_hang *h)
{
    if (!h->evidence_done) {
        free(h->g->hang);
        h->g->hang = h->look || h->step == H_CONFIRM
            ? xasprintf("during the stall /health answered %ld; moeprobe stopped before it "
                        "looked again", h->health[0])
            : xstrdup("moeprobe stopped before it looked at /health and /metrics");
        return;
    }
    if (h->step == H_TRIGGER || h->step == H_DUMPS)
        buf_printf(&h->dump, "triggered through %zu pipe(s); moeprobe stopped before the "
                             "dumps were written", h->np);
    else
        buf_adds(&h->dump, "; moeprobe stopped before the dumps were read");
    free(h->g->hang_dump);
    h->g->hang_dump = buf_detach(&h->dump, NULL);
}

const char *mp_hang_end(struct mp_hang *h)
{
    if (!h)
        return NULL;
    if (h->step != H_DONE)
        cut_short(h);
    cancel_looks(h);
    for (size_t i = 0; i < h->np; i++)
        pipe_close(h, &h->p[i]);
    gdb_stop(h);
    buf_release(&h->dump);
    const char *ev = h->g->hang;
    free(h);
    return ev;
}
