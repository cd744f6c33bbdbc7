/* capture.c - an attempt's view of the engine: its output into server.log and
 * server.times (masked, capped), the attach-mode log follower, signals and
 * the loop turn (see att_internal.h). */
#include "run/att_internal.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "escape.h"
#include "http/lgstats.h"
#include "http/loadgen.h"
#include "loop.h"
#include "knowledge/knowledge.h"
#include "logs/announce.h"
#include "logs/logscan.h"
#include "proc/proc.h"
#include "engine/delivery.h"
#include "engine/launch.h"
#include "engine/ports.h"
#include "observe/srvmetrics.h"
#include "observe/telemetry.h"
#include "store/store.h"
#include "verdict/stats.h"
#include "xalloc.h"

/* progress_lines: one line per state change. */
void mp_att_note(struct att *a, const char *fmt, ...)
{
    if (!a->o->progress_lines)
        return;
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* engine words: no control character (C0, DEL, C1, bidi) to the terminal */
    char *shown = mp_term_dup(msg);
    fprintf(stderr, "moeprobe: [%s] %s\n", a->o->label ? a->o->label : "", shown);
    free(shown);
}


static void check_announce(struct att *a, const char *line, size_t len)
{
    struct mp_announce an;
    if (mp_announce_parse(line, len, &an) != MP_ANNOUNCE_TCP || a->r->announced_port)
        return;
    a->r->announced_port = an.port;
    if (mp_ports_judge(a->argv, a->argc, a->container, an.port, a->o->port, a->mismatch_why,
                       sizeof(a->mismatch_why)) == MP_PORT_MISMATCH) {
        a->t_mismatch = mp_now_ns();
        a->announce_line = a->nlines;
    }
}

/* Note the first failed write of an evidence file (server.log,
 * server.times, requests.jsonl: a full disk, a file-size limit, an I/O
 * error): the attempt stops, later writes to its files are skipped, and it
 * ends as "evidence-incomplete" (never clean over a cut log). Returns ok. */
bool mp_att_ev_ok(struct att *a, bool ok, const char *name)
{
    if (!ok && !a->ev_errno) {
        a->ev_errno = errno ? errno : EIO;
        a->ev_file = name;
        a->io_err = true;
    }
    return ok;
}

void mp_att_on_line(void *ud, const char *line, size_t len, bool truncated)
{
    struct att *a = ud;
    a->nlines++;
    if (a->ls)
        a->events |= mp_logscan_line(a->ls, line, len);
    if (!a->nondefault && len > 20 && memmem(line, len, "non-default args: {", 19)) {
        a->nondefault = xstrndup(line, len);
        a->nondefault_line = a->nlines;
    }
    if (a->o->progress) {
        /* masked whole, then cut: no part of a secret reaches the live line */
        size_t ml = 0;
        char *m = mp_term_mask(line, len, &ml);
        size_t n = MP_MIN(ml, sizeof(a->last_line) - 1);
        for (size_t i = 0; i < n; i++) /* shown on a terminal: printable ASCII only */
            a->last_line[i] = (m[i] >= 0x20 && m[i] < 0x7f) ? m[i] : '?';
        a->last_line[n] = '\0';
        free(m);
    }
    if (a->before_ready) {
        check_announce(a, line, len);
        if (!a->selected && memmem(line, len, "Model loading took", 18))
            a->selected = true;
    }
    if (a->log_capped || a->ev_errno)
        return;
    if (a->log_bytes + (long)len + 1 > LOG_CAP_BYTES) {
        a->log_capped = true;
        mp_att_ev_ok(a, fputs("[moeprobe: server.log capped at 512 MiB; the engine flooded its output]\n",
                       a->logf) >= 0, "server.log");
        return;
    }
    a->log_bytes += (long)len + 1;
    /* masked before anything is written; a cut line's tail that begins a
     * secret is masked too */
    bool changed = false;
    size_t mlen = 0;
    char *masked = mp_store_mask_apply_ex(a->mask, line, len, truncated ? MP_MASK_CUT : 0,
                                          &changed, &mlen);
    if (changed) {
        line = masked;
        len = mlen;
    }
    bool ok = fwrite(line, 1, len, a->logf) == len;
    free(masked);
    if (ok && truncated)
        ok = fputs(" [moeprobe: line truncated]", a->logf) >= 0;
    if (ok)
        ok = fputc('\n', a->logf) != EOF;
    if (mp_att_ev_ok(a, ok, "server.log"))
        mp_att_ev_ok(a, fprintf(a->timesf, "%.3f\n", (double)(mp_now_ns() - a->t_spawn) / 1e9) > 0,
              "server.times");
}

void mp_att_check_exit(struct att *a)
{
    if (!a->exited && a->proc) {
        int st;
        if (mp_proc_exited(a->proc, &st)) {
            a->exited = true;
            a->exit_status = st;
        }
    }
}

/* The signalfd: SIGCHLD reaps orphans; the first other signal interrupts. */
static void on_signal(struct mp_loop *l, int signo, void *ud)
{
    struct att *a = ud;
    (void)l;
    if (signo == SIGCHLD) {
        mp_proc_reap_orphans();
        return;
    }
    if (!a->signo)
        a->signo = signo;
}

/* The engine's output pipe is readable: its lines (at most about 1 MiB a
 * turn, so a flood cannot starve the loop), or its end. */
static void on_output(struct mp_loop *l, int fd, unsigned what, void *ud)
{
    struct att *a = ud;
    (void)what;
    if (mp_proc_read_lines(a->proc, mp_att_on_line, a) != 0) {
        a->eof = true;
        mp_loop_fd_del(l, fd);
    }
}

void mp_att_watch(struct att *a)
{
    if (a->o->signal_fd >= 0)
        mp_loop_watch_signals(a->loop, a->o->signal_fd, on_signal, a);
    int outfd = a->proc ? mp_proc_output_fd(a->proc) : -1;
    if (outfd >= 0)
        mp_loop_fd_set(a->loop, outfd, MP_LOOP_IN, on_output, a);
}

void mp_att_unwatch(struct att *a)
{
    if (a->o->signal_fd >= 0)
        mp_loop_fd_del(a->loop, a->o->signal_fd);
    int outfd = a->proc ? mp_proc_output_fd(a->proc) : -1;
    if (outfd >= 0)
        mp_loop_fd_del(a->loop, outfd);
}

/* Attach mode: read what the followed log file gained since the last turn
 * (at most 4 MiB a turn, so a flood cannot starve the loop) and hand its
 * complete lines to on_line (a line longer than MP_ATT_FOLLOW_LINE_MAX goes
 * on cut, as soon as it passes the bound). A partial last line waits for
 * the rest: the file is still being written. A regular file is always
 * "readable", so it is read once per turn instead of being polled. */
void mp_att_follow_log(struct att *a)
{
    if (a->follow_fd < 0)
        return;
    char chunk[65536];
    for (int turns = 0; turns < 64; turns++) {
        ssize_t n = read(a->follow_fd, chunk, sizeof(chunk));
        if (n <= 0)
            return;
        mp_lines_feed(&a->follow, chunk, (size_t)n, mp_att_on_line, a);
    }
}

/* One turn of the event loop: wait for transfers, engine output, signals. */
void mp_att_pump(struct att *a, int timeout_ms)
{
    if (timeout_ms < 0)
        timeout_ms = 0;
    mp_lg_poll(a->lg, timeout_ms);
    mp_att_follow_log(a);
    /* the evidence is current on disk every turn (one write a turn, not a
     * line): someone tailing server.log sees it, and a kill -9 of moeprobe
     * loses nothing the engine said before the turn */
    if (a->logf && !a->ev_errno && mp_att_ev_ok(a, fflush(a->logf) == 0, "server.log"))
        mp_att_ev_ok(a, fflush(a->timesf) == 0, "server.times");
    mp_att_check_exit(a);
    mp_gpu_sample(a->gpu, (double)mp_now_ns() / 1e9, 1.0);
}

bool mp_att_next_result(struct att *a, struct mp_lg_result *res)
{
    while (mp_lg_next_result(a->lg, res) == 1) {
        if (!mp_srvm_take(a->srvm, res))
            return true;
        mp_lg_result_release(res); /* a /metrics scrape: the scraper's */
    }
    return false;
}
