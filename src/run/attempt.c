#include "run/attempt.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
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
#include "knowledge/knowledge.h"
#include "logs/announce.h"
#include "logs/logscan.h"
#include "proc/proc.h"
#include "run/delivery.h"
#include "run/launch.h"
#include "run/ports.h"
#include "run/telemetry.h"
#include "store/store.h"
#include "verdict/stats.h"
#include "xalloc.h"

#define PROMPT_COUNT MP_NPROMPTS
#define LOG_CAP_BYTES (512L << 20)
#define TAG_HEALTH 1
#define TAG_MODELS 2

struct att {
    const struct mp_attempt_opts *o;
    struct mp_attempt_result *r;
    struct mp_proc *proc;
    struct mp_logscan *ls;
    struct mp_lg *lg;
    FILE *logf, *timesf, *reqf;
    int64_t t_spawn;
    long log_bytes;
    bool log_capped;
    unsigned events;
    bool exited, eof;
    int exit_status;
    int signo;
    char model[512];
    /* workload */
    int cur_phase;
    unsigned long gen_started;
    bool failed;               /* first failure recorded */
    int64_t t_fail;
    char *req_fail_class, *req_fail_msg;
    int64_t last_draw;
    const struct mp_store_mask *mask; /* secret values to mask in files, or NULL */
    bool io_err;               /* the store or an evidence file failed: stop */
    int ev_errno;              /* first failed write of an evidence file (errno), 0 = none */
    const char *ev_file;       /* that file's name in the attempt directory */
    int follow_fd;             /* attach mode: the followed log file, or -1 */
    struct buf follow_part;    /* its partial last line */
    bool follow_cut;           /* that line passed the length bound */
    long nreq_stored;          /* requests written to the store */
    long req_lines;            /* lines written to requests.jsonl */
    long fail_req_line;        /* requests.jsonl line of the first failed request */
    bool died_early;           /* the engine was gone before teardown began */
    /* where the engine says it listens (read until it is ready) */
    bool before_ready;         /* still waiting for ready: read announcements */
    long nlines;               /* engine log lines so far */
    char *const *argv;         /* the final command (borrowed from the launch) */
    size_t argc;
    bool container;            /* launched as a container run */
    int64_t t_mismatch;        /* when an unreachable announced port was seen, 0 = not */
    long announce_line;        /* its log line */
    char mismatch_why[512];
    bool selected;             /* the engine logged that its model is built */
    bool same_checked;         /* o->same_config was asked */
    bool same;                 /* ... and said this is a configuration tested already */
    bool said_resolved;        /* progress_lines: the resolution was reported */
    bool resolve_stop;         /* resolve_only: stopped once resolved */
    struct mp_gpu_sampler *gpu; /* NVML telemetry, or NULL */
    char *sized[PROMPT_COUNT]; /* prompts of sized_tokens tokens (built on first use) */
    int sized_tokens;
    char last_line[96];        /* the engine's last log line (live line during start-up) */
    char *nondefault;          /* the engine's "non-default args" line (knob delivery) */
    long nondefault_line;
};

/* progress_lines: one line per state change. */
static void note(struct att *a, const char *fmt, ...) MP_PRINTF(2, 3);
static void note(struct att *a, const char *fmt, ...)
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

/* Grace after an announcement that cannot be reached: a wrapper or proxy
 * that does forward moeprobe's port answers within it. */
#define MISMATCH_GRACE_NS 5000000000LL

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
static bool ev_ok(struct att *a, bool ok, const char *name)
{
    if (!ok && !a->ev_errno) {
        a->ev_errno = errno ? errno : EIO;
        a->ev_file = name;
        a->io_err = true;
    }
    return ok;
}

static void on_line(void *ud, const char *line, size_t len, bool truncated)
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
        size_t n = MP_MIN(len, sizeof(a->last_line) - 1);
        for (size_t i = 0; i < n; i++) /* shown on a terminal: printable ASCII only */
            a->last_line[i] = (line[i] >= 0x20 && line[i] < 0x7f) ? line[i] : '?';
        a->last_line[n] = '\0';
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
        ev_ok(a, fputs("[moeprobe: server.log capped at 512 MiB; the engine flooded its output]\n",
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
    if (ev_ok(a, ok, "server.log"))
        ev_ok(a, fprintf(a->timesf, "%.3f\n", (double)(mp_now_ns() - a->t_spawn) / 1e9) > 0,
              "server.times");
}

static void check_exit(struct att *a)
{
    if (!a->exited && a->proc) {
        int st;
        if (mp_proc_exited(a->proc, &st)) {
            a->exited = true;
            a->exit_status = st;
        }
    }
}

static void drain_signals(struct att *a)
{
    int fd = a->o->signal_fd;
    if (fd < 0)
        return;
    struct signalfd_siginfo si;
    for (;;) {
        ssize_t n = read(fd, &si, sizeof(si));
        if (n != (ssize_t)sizeof(si))
            break;
        if (si.ssi_signo == SIGCHLD) {
            mp_proc_reap_orphans();
            continue;
        }
        if (!a->signo)
            a->signo = (int)si.ssi_signo;
    }
}

#define FOLLOW_LINE_MAX (64 * 1024)

/* Attach mode: read what the followed log file gained since the last turn
 * (at most 4 MiB a turn, so a flood cannot starve the loop) and hand its
 * complete lines to on_line. A regular file is always "readable", so it is
 * read once per turn instead of being polled. */
static void follow_log(struct att *a)
{
    if (a->follow_fd < 0)
        return;
    char chunk[65536];
    for (int turns = 0; turns < 64; turns++) {
        ssize_t n = read(a->follow_fd, chunk, sizeof(chunk));
        if (n <= 0)
            return;
        for (ssize_t i = 0; i < n; i++) {
            char c = chunk[i];
            if (c == '\n') {
                size_t len = a->follow_part.len;
                if (len && a->follow_part.data[len - 1] == '\r')
                    len--;
                on_line(a, a->follow_part.data, len, a->follow_cut);
                buf_reset(&a->follow_part);
                a->follow_cut = false;
            } else if (a->follow_part.len < FOLLOW_LINE_MAX) {
                buf_addc(&a->follow_part, c);
            } else {
                a->follow_cut = true;
            }
        }
    }
}

/* One turn of the event loop: wait for transfers, engine output, signals. */
static void pump(struct att *a, int timeout_ms)
{
    struct curl_waitfd extra[2];
    unsigned n = 0;
    int outfd = a->eof || !a->proc ? -1 : mp_proc_output_fd(a->proc);
    if (outfd >= 0) {
        extra[n].fd = outfd;
        extra[n].events = CURL_WAIT_POLLIN;
        extra[n].revents = 0;
        n++;
    }
    if (a->o->signal_fd >= 0) {
        extra[n].fd = a->o->signal_fd;
        extra[n].events = CURL_WAIT_POLLIN;
        extra[n].revents = 0;
        n++;
    }
    if (timeout_ms < 0)
        timeout_ms = 0;
    mp_lg_poll(a->lg, extra, n, timeout_ms);
    if (outfd >= 0) {
        int rc = mp_proc_read_lines(a->proc, on_line, a);
        if (rc != 0)
            a->eof = true;
    }
    follow_log(a);
    /* the evidence is current on disk every turn (one write a turn, not a
     * line): someone tailing server.log sees it, and a kill -9 of moeprobe
     * loses nothing the engine said before the turn */
    if (a->logf && !a->ev_errno && ev_ok(a, fflush(a->logf) == 0, "server.log"))
        ev_ok(a, fflush(a->timesf) == 0, "server.times");
    drain_signals(a);
    check_exit(a);
    mp_gpu_sample(a->gpu, (double)mp_now_ns() / 1e9, 1.0);
}

static double ms(int64_t ns)
{
    return (double)ns / 1e6;
}

static void set_fail(struct att *a, const char *cls, const char *msg)
{
    if (a->failed)
        return;
    a->failed = true;
    a->t_fail = mp_now_ns();
    a->req_fail_class = xstrdup(cls);
    a->req_fail_msg = xstrdup(msg);
    note(a, "failed: %s: %.300s", cls, msg);
    a->r->ok_before_failure = a->r->req_ok;
    a->r->fail_request_line = a->fail_req_line;
    if (a->cur_phase >= 0 && (size_t)a->cur_phase < a->r->nphases)
        a->r->fail_phase = xstrdup(a->r->phases[a->cur_phase].name);
}

static const char *lg_outcome_class(enum mp_lg_outcome oc)
{
    switch (oc) {
    case MP_LG_HTTP_ERROR:
        return "http-error";
    case MP_LG_STREAM_ERROR:
        return "stream-error";
    case MP_LG_CUT:
        return "stream-cut";
    case MP_LG_PROTOCOL:
        return "protocol-error";
    case MP_LG_CONNECT:
        return "connection-refused";
    case MP_LG_TIMEOUT:
        return "request-timeout";
    default:
        return "request-failed";
    }
}

/* One finished request into requests.jsonl and the store: one line / row per request, never
 * anything per event. Its figures are lgstats' (one definition): e2e_ms of a request that
 * entered the metrics is its E2E latency (to the last token event); of any other, the time to
 * its end (the failure). */
static void write_request(struct att *a, const struct mp_lg_result *res, const char *phase)
{
    struct mp_lg_req_metrics q;
    mp_lg_request_metrics(res, &q);
    double e2e = q.ok ? q.e2el_ms : ms(res->t_end_ns - res->t_start_ns);
    struct buf b = BUF_INIT;
    buf_printf(&b, "{\"id\":%ld,\"phase\":", res->id);
    buf_add_json_str(&b, phase, strlen(phase));
    buf_printf(&b, ",\"outcome\":\"%s\",\"http_status\":%d,\"start_s\":%.6f,\"ttft_ms\":%.3f,"
                   "\"e2e_ms\":%.3f,\"output_tokens\":%d,\"chunks\":%d",
               res->outcome == MP_LG_OK ? "ok" : lg_outcome_class(res->outcome), res->http_status,
               (double)(res->t_start_ns - a->t_spawn) / 1e9,
               res->t_first_token_ns ? ms(res->t_first_token_ns - res->t_start_ns) : -1.0,
               e2e, res->output_tokens, res->chunks);
    if (res->prompt_tokens >= 0)
        buf_printf(&b, ",\"prompt_tokens\":%d", res->prompt_tokens);
    char *err = res->error[0] ? mp_store_mask_apply(a->mask, res->error, strlen(res->error), false, NULL)
                              : NULL;
    if (err) {
        buf_adds(&b, ",\"error\":");
        buf_add_json_str(&b, err, strlen(err));
    }
    buf_adds(&b, "}\n");
    if (!a->ev_errno)
        ev_ok(a, fwrite(b.data, 1, b.len, a->reqf) == b.len && fflush(a->reqf) == 0,
              "requests.jsonl");
    a->req_lines++;
    buf_release(&b);
    if (a->o->store && !a->io_err) {
        struct mp_store_request rq = {
            .seq = ++a->nreq_stored,
            .req_id = res->id,
            .phase = phase,
            .outcome = res->outcome == MP_LG_OK ? "ok" : lg_outcome_class(res->outcome),
            .http_status = res->http_status,
            .start_s = (double)(res->t_start_ns - a->t_spawn) / 1e9,
            .ttft_ms = res->t_first_token_ns ? ms(res->t_first_token_ns - res->t_start_ns) : -1.0,
            .e2e_ms = e2e,
            .output_tokens = res->output_tokens,
            .chunks = res->chunks,
            .req_tok_s = q.tok_s,
            .error = err,
        };
        if (mp_store_add_request(a->o->store, a->o->store_attempt, &rq) < 0)
            a->io_err = true;
    }
    free(err);
}

static void handle_gen_result(struct att *a, struct mp_lg_result *res)
{
    struct mp_attempt_result *r = a->r;
    struct mp_phase_result *ph = a->cur_phase >= 0 ? &r->phases[a->cur_phase] : NULL;
    write_request(a, res, ph ? ph->name : "?");
    if (res->outcome == MP_LG_OK) {
        r->req_ok++;
        if (ph) {
            ph->ok++;
            ph->tokens += res->output_tokens;
            if (res->prompt_tokens >= 0) {
                ph->prompt_tokens += res->prompt_tokens;
                ph->prompt_n++;
            }
        }
        if (ph)
            mp_lg_metrics_add(&ph->m, res); /* bounded: nothing here grows with the events */
        int pidx = res->user_tag;
        if (pidx >= 0 && (size_t)pidx < r->ntexts && !r->texts[pidx] && res->text)
            r->texts[pidx] = xstrndup(res->text, res->text_len);
    } else {
        r->req_failed++;
        if (ph)
            ph->failed++;
        if (!a->failed)
            a->fail_req_line = a->req_lines;
        char msg[640];
        if (res->http_status && res->outcome == MP_LG_HTTP_ERROR && strncmp(res->error, "HTTP ", 5))
            snprintf(msg, sizeof(msg), "HTTP %d: %s", res->http_status, res->error);
        else
            snprintf(msg, sizeof(msg), "%s", res->error[0] ? res->error : lg_outcome_class(res->outcome));
        set_fail(a, lg_outcome_class(res->outcome), msg);
    }
}

static void draw_progress(struct att *a, const char *what, int done, int total)
{
    if (!a->o->progress)
        return;
    int64_t now = mp_now_ns();
    if (now - a->last_draw < 200000000LL && done != total)
        return;
    a->last_draw = now;
    double el = (double)(now - a->t_spawn) / 1e9;
    double rate = 0;
    if (a->cur_phase >= 0) {
        struct mp_phase_result *ph = &a->r->phases[a->cur_phase];
        double w = (double)(now - a->t_spawn) / 1e9 - a->r->ready_s;
        MP_UNUSED(w);
        if (ph->wall_s > 0)
            rate = ph->tokens / ph->wall_s;
    }
    char eta[48] = "";
    if (a->o->eta_after_s >= 0) {
        double left = a->o->eta_after_s + MP_MAX(0.0, a->o->expect_s - el);
        if (left >= 90)
            snprintf(eta, sizeof(eta), "  run ETA ~%.0f min", left / 60);
        else
            snprintf(eta, sizeof(eta), "  run ETA ~%.0f s", left);
    }
    if (!strcmp(what, "startup"))
        fprintf(stderr, "\r\033[K[%s] startup %.0fs%s | %.60s", a->o->label ? a->o->label : "", el,
                eta, a->last_line);
    else
        fprintf(stderr, "\r\033[K[%s] %s %d/%d  %.1f tok/s  %.0fs%s", a->o->label ? a->o->label : "",
                what, done, total, rate, el, eta);
    fflush(stderr);
}

/* Soak progress: elapsed/remaining, requests, tok/s, 95 % failure-rate bound. */
static void draw_soak(struct att *a, const struct mp_phase_result *ph, double duration_s)
{
    if (!a->o->progress)
        return;
    int64_t now = mp_now_ns();
    if (now - a->last_draw < 1000000000LL)
        return;
    a->last_draw = now;
    double rem = duration_s - ph->wall_s;
    fprintf(stderr, "\r\033[K[%s] soak %.0fs elapsed, %.0fs left, %d ok / %d failed, %.1f tok/s, "
                    "failure rate < %.2g (95%%)",
            a->o->label ? a->o->label : "", ph->wall_s, rem > 0 ? rem : 0, ph->ok, ph->failed,
            ph->wall_s > 0 ? ph->tokens / ph->wall_s : 0.0,
            mp_stats_failure_upper95((unsigned long)ph->ok));
    fflush(stderr);
}

static void clear_progress(struct att *a)
{
    if (a->o->progress) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

static bool stalled(struct att *a)
{
    if (mp_lg_inflight(a->lg) == 0)
        return false;
    int64_t last = mp_lg_last_progress_ns(a->lg);
    return last && (double)(mp_now_ns() - last) / 1e9 > a->o->wl->stall_timeout_s;
}

static void copy_resolved(struct att *a);

/* progress_lines: what the engine resolved, once its selections are logged
 * (or at ready). */
static void say_resolved(struct att *a)
{
    if (a->said_resolved || !a->o->progress_lines)
        return;
    a->said_resolved = true;
    copy_resolved(a);
    const struct mp_resolved *rs = &a->r->res;
    note(a, "resolved: MoE %s%s%s (%.1f s after start)",
         rs->moe_backend ? rs->moe_backend : "(not logged)",
         rs->attention_backend ? ", attention " : "",
         rs->attention_backend ? rs->attention_backend : "",
         (double)(mp_now_ns() - a->t_spawn) / 1e9);
}

/* Resolve first: once the selections are logged, ask whether this is a
 * configuration tested already. True when it is (the attempt stops). */
static bool check_same(struct att *a)
{
    if (!a->o->same_config || a->same_checked)
        return a->same;
    a->same_checked = true;
    copy_resolved(a);
    char *same_as = NULL, *why = NULL;
    if (a->o->same_config(a->o->same_ud, &a->r->res, &same_as, &why)) {
        a->same = true;
        a->r->same_as = same_as;
        a->r->same_why = why;
    } else {
        free(same_as);
        free(why);
    }
    return a->same;
}

/* Wait for /health 200 and a model in /v1/models. Returns true when ready. */
static bool wait_ready(struct att *a)
{
    const struct mp_workload *wl = a->o->wl;
    int64_t deadline = a->t_spawn + (int64_t)(wl->ready_timeout_s * 1e9);
    int64_t next_probe = mp_now_ns();
    bool probing = false, ready_line_probed = false;
    while (!a->signo && !a->io_err) {
        int64_t now = mp_now_ns();
        if (a->exited || (a->events & MP_LOGEV_FATAL))
            return false;
        if (now > deadline)
            return false;
        if (a->selected)
            say_resolved(a);
        if (a->selected && a->o->resolve_only) {
            a->resolve_stop = true;
            return false;
        }
        if (a->selected && check_same(a))
            return false;
        if (a->t_mismatch && now - a->t_mismatch > MISMATCH_GRACE_NS) {
            a->req_fail_class = xstrdup("port-mismatch");
            a->req_fail_msg = xstrdup(a->mismatch_why);
            return false;
        }
        /* the engine logged that it is ready: ask now rather than at the
         * next 250 ms poll (which stays for engines that do not log it) */
        if (!ready_line_probed && (a->events & MP_LOGEV_READY)) {
            ready_line_probed = true;
            next_probe = now;
        }
        if (!probing && now >= next_probe) {
            mp_lg_get(a->lg, "/health", 2.0, TAG_HEALTH);
            probing = true;
        }
        int64_t wait = probing ? 100 : (next_probe - now) / 1000000;
        pump(a, (int)MP_MIN(wait, 100));
        draw_progress(a, "startup", 0, 1);
        struct mp_lg_result res;
        while (mp_lg_next_result(a->lg, &res) == 1) {
            bool ok = res.http_status == 200 && res.outcome == MP_LG_OK;
            if (res.user_tag == TAG_HEALTH && ok) {
                mp_lg_get(a->lg, "/v1/models", 5.0, TAG_MODELS);
            } else if (res.user_tag == TAG_MODELS && ok) {
                cJSON *j = cJSON_ParseWithLength(res.text ? res.text : "", res.text_len);
                cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");
                cJSON *first = cJSON_IsArray(data) ? cJSON_GetArrayItem(data, 0) : NULL;
                cJSON *id = cJSON_GetObjectItemCaseSensitive(first, "id");
                if (cJSON_IsString(id)) {
                    snprintf(a->model, sizeof(a->model), "%s", id->valuestring);
                    cJSON_Delete(j);
                    mp_lg_result_release(&res);
                    if (a->o->resolve_only) {
                        a->resolve_stop = true; /* ready before a selection milestone */
                        return false;
                    }
                    return !check_same(a);
                }
                cJSON_Delete(j);
                probing = false;
                next_probe = mp_now_ns() + 250000000LL;
            } else {
                probing = false;
                next_probe = mp_now_ns() + 250000000LL;
            }
            mp_lg_result_release(&res);
        }
    }
    return false;
}

/* After a failure, keep reading the log until the engine has said what
 * happened: it exits, or its crash is in the log and no request is in
 * flight, or settle_s passes. */
static void settle(struct att *a, double settle_s)
{
    int64_t deadline = mp_now_ns() + (int64_t)(settle_s * 1e9);
    while (!a->signo && mp_now_ns() < deadline) {
        if (a->exited && a->eof)
            break;
        const struct mp_logresult *lr = mp_logscan_result(a->ls);
        if (lr->has_crash && mp_lg_inflight(a->lg) == 0 && lr->crash.engine_dead)
            break;
        pump(a, 50);
        struct mp_lg_result res;
        while (mp_lg_next_result(a->lg, &res) == 1) {
            if (res.kind == MP_LG_GEN)
                handle_gen_result(a, &res);
            mp_lg_result_release(&res);
        }
    }
}

/* The failure watch, after every turn of a phase's loop. MP_OUT_CLEAN: go
 * on; MP_OUT_CRASH: a failure was recorded (the caller settles); any other
 * outcome ends the attempt as it is. */
static enum mp_outcome watch(struct att *a, const char *phase)
{
    if (a->signo)
        return MP_OUT_INTERRUPTED;
    if (a->io_err)
        return MP_OUT_ERROR;
    if (a->events & MP_LOGEV_FATAL)
        set_fail(a, "engine-fatal", "the engine logged a fatal error");
    if (a->exited)
        set_fail(a, "process-exit", "the engine exited during the workload");
    if (a->failed)
        return MP_OUT_CRASH;
    if (stalled(a)) {
        a->req_fail_class = xstrdup("hang");
        a->req_fail_msg = xasprintf("no token progress for %.0f s with %zu request(s) in flight",
                                    a->o->wl->stall_timeout_s, mp_lg_inflight(a->lg));
        a->r->fail_phase = xstrdup(phase);
        a->r->ok_before_failure = a->r->req_ok;
        return MP_OUT_HANG;
    }
    return MP_OUT_CLEAN;
}

/* Prompt pidx of about ntok tokens (0: the short fixed prompt); owned by
 * the attempt. */
static const char *prompt_for(struct att *a, int pidx, int ntok)
{
    if (ntok <= 0)
        return mp_prompts[pidx];
    if (ntok != a->sized_tokens) {
        for (size_t i = 0; i < PROMPT_COUNT; i++) {
            free(a->sized[i]);
            a->sized[i] = NULL;
        }
        a->sized_tokens = ntok;
    }
    if (!a->sized[pidx])
        a->sized[pidx] = mp_prompt_sized((size_t)pidx, ntok);
    return a->sized[pidx];
}

/* Run the phases. Returns the outcome (CLEAN, CRASH, HANG, INTERRUPTED). */
static enum mp_outcome run_workload(struct att *a)
{
    const struct mp_workload *wl = a->o->wl;
    struct mp_attempt_result *r = a->r;
    size_t nph = wl->nphases;
    bool extend = wl->min_total_ok > 0;
    int top_level = 1;
    for (size_t i = 0; i < nph; i++)
        top_level = MP_MAX(top_level, wl->phases[i].level);
    for (size_t pi = 0; pi < nph + (extend ? 1 : 0); pi++) {
        struct mp_phase_spec sp;
        if (pi < nph) {
            sp = wl->phases[pi];
        } else {
            if (r->req_ok >= wl->min_total_ok)
                break;
            memset(&sp, 0, sizeof(sp));
            snprintf(sp.name, sizeof(sp.name), "extended");
            sp.level = top_level;
            sp.requests = (int)(wl->min_total_ok - r->req_ok);
            if (wl->extend_budget_s > 0) {
                double left = wl->extend_budget_s - (double)(mp_now_ns() - a->t_spawn) / 1e9;
                if (left <= 0)
                    break;
                sp.duration_s = left;
            }
        }
        struct mp_phase_result *ph = &r->phases[r->nphases++];
        snprintf(ph->name, sizeof(ph->name), "%s", sp.name);
        ph->level = sp.level;
        ph->planned = sp.requests;
        a->cur_phase = (int)(r->nphases - 1);
        int64_t t0 = mp_now_ns();
        int64_t t_end = sp.duration_s > 0 ? t0 + (int64_t)(sp.duration_s * 1e9) : INT64_MAX;
        int started = 0, done = 0;
        while (done < sp.requests) {
            bool expired = mp_now_ns() >= t_end;
            if (expired && done == started)
                break; /* duration over and nothing in flight */
            while (!a->failed && !expired && started < sp.requests &&
                   (int)mp_lg_inflight(a->lg) < sp.level) {
                int pidx = (int)(a->gen_started % PROMPT_COUNT);
                int ntok = sp.input_tokens > 0 ? sp.input_tokens : wl->input_tokens;
                if (mp_lg_start(a->lg, prompt_for(a, pidx, ntok), pidx) < 0) {
                    set_fail(a, "client-error", "could not start a request");
                    break;
                }
                a->gen_started++;
                started++;
            }
            pump(a, 100);
            struct mp_lg_result res;
            while (mp_lg_next_result(a->lg, &res) == 1) {
                if (res.kind == MP_LG_GEN) {
                    handle_gen_result(a, &res);
                    done++;
                }
                mp_lg_result_release(&res);
            }
            ph->wall_s = (double)(mp_now_ns() - t0) / 1e9;
            if (sp.duration_s > 0)
                draw_soak(a, ph, sp.duration_s);
            else
                draw_progress(a, ph->name, done, sp.requests);
            enum mp_outcome w = watch(a, ph->name);
            if (w == MP_OUT_CRASH)
                break;
            if (w != MP_OUT_CLEAN)
                return w;
        }
        ph->wall_s = (double)(mp_now_ns() - t0) / 1e9;
        ph->tok_s = ph->wall_s > 0 ? ph->tokens / ph->wall_s : 0;
        if (ph->m.req_tok_s.n)
            ph->req_tok_s_p50 = mp_hist_percentile(&ph->m.req_tok_s, 50);
        note(a, "phase %s: %d ok, %d failed, %.1f tok/s in %.1f s", ph->name, ph->ok, ph->failed,
             ph->tok_s, ph->wall_s);
        if (a->failed)
            break;
    }
    if (a->failed) {
        settle(a, 10.0);
        return MP_OUT_CRASH;
    }
    return MP_OUT_CLEAN;
}

/* The output check: greedy completions of fixed prompts, one at a time. */
static enum mp_outcome run_quality(struct att *a, const struct mp_lg_config *base)
{
    const struct mp_attempt_opts *o = a->o;
    struct mp_attempt_result *r = a->r;
    struct mp_lg_config qc = *base;
    qc.ignore_eos = false;
    qc.max_tokens = o->quality_max_tokens > 0 ? o->quality_max_tokens : 32;
    struct mp_lg *main_lg = a->lg;
    a->lg = mp_lg_new(&qc);
    r->nquality = o->nquality;
    r->quality_texts = xcalloc(o->nquality + 1, sizeof(*r->quality_texts));
    struct mp_phase_result *ph = &r->phases[r->nphases++];
    snprintf(ph->name, sizeof(ph->name), "quality");
    ph->level = 1;
    ph->planned = (int)o->nquality;
    a->cur_phase = (int)(r->nphases - 1);
    int64_t t0 = mp_now_ns();
    enum mp_outcome out = MP_OUT_CLEAN;
    for (size_t i = 0; i < o->nquality && out == MP_OUT_CLEAN; i++) {
        if (mp_lg_start(a->lg, o->quality_prompts[i], -1 - (int)i) < 0) {
            set_fail(a, "client-error", "could not start a request");
            break;
        }
        bool done = false;
        while (!done) {
            pump(a, 100);
            struct mp_lg_result res;
            while (mp_lg_next_result(a->lg, &res) == 1) {
                if (res.kind == MP_LG_GEN) {
                    if (res.outcome == MP_LG_OK)
                        r->quality_texts[i] = xstrndup(res.text ? res.text : "", res.text_len);
                    handle_gen_result(a, &res);
                    done = true;
                }
                mp_lg_result_release(&res);
            }
            draw_progress(a, "quality", (int)i, (int)o->nquality);
            enum mp_outcome w = watch(a, "quality");
            if (w == MP_OUT_CRASH)
                break;
            if (w != MP_OUT_CLEAN) {
                out = w;
                break;
            }
        }
        if (a->failed) {
            settle(a, 10.0);
            out = MP_OUT_CRASH;
        }
    }
    ph->wall_s = (double)(mp_now_ns() - t0) / 1e9;
    ph->tok_s = ph->wall_s > 0 ? ph->tokens / ph->wall_s : 0;
    mp_lg_free(a->lg);
    a->lg = main_lg;
    return out;
}


static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static void copy_resolved(struct att *a)
{
    mp_resolved_release(&a->r->res);
    mp_resolved_from_log(&a->r->res, mp_logscan_result(a->ls));
}

/* Once ready: did the knobs reach the engine? (run/delivery.h) */
static void check_delivery(struct att *a, const struct mp_launch *l, const char *marker)
{
    if (a->o->attach_url || !a->proc)
        return; /* filled in as unverified at the end */
    struct mp_delivery_ctx x = {
        .cand = a->o->cand,
        .launch = l,
        .leader = mp_proc_pid(a->proc),
        .marker = marker[0] ? marker : NULL,
        .nondefault = a->nondefault,
        .nondefault_line = a->nondefault_line,
        .port = a->o->port,
    };
    mp_delivery_check(&x, a->r);
}

/* Fill fail_* from the log (the engine's own words) or the request failure. */
static void classify_failure(struct att *a)
{
    struct mp_attempt_result *r = a->r;
    const struct mp_logresult *lr = mp_logscan_result(a->ls);
    if (r->outcome == MP_OUT_STARTUP_FAILURE && a->req_fail_class &&
        !strcmp(a->req_fail_class, "port-mismatch")) {
        r->fail_class = xstrdup(a->req_fail_class);
        r->fail_message = xstrdup(a->req_fail_msg);
        r->fail_line = a->announce_line;
    } else if (r->outcome == MP_OUT_STARTUP_FAILURE) {
        if (lr->startup_error) {
            r->fail_message = xstrdup(lr->startup_error);
            r->fail_line = lr->startup_error_line;
        } else if (lr->has_crash && lr->crash.message) {
            r->fail_message = xstrdup(lr->crash.message);
            r->fail_line = lr->crash.line;
        } else if (lr->n_error_lines > 0) {
            /* nothing recognised: quote what it said last */
            struct buf q = BUF_INIT;
            buf_printf(&q, "%s; its last error lines: ",
                       a->req_fail_msg ? a->req_fail_msg : "the engine never became ready");
            mp_logresult_quote_errors(lr, "server.log", &q);
            r->fail_message = buf_detach(&q, NULL);
            r->fail_line = lr->error_lines[lr->n_error_lines - 1].line;
        }
        r->fail_class = xstrdup(lr->has_crash && lr->crash.cls ? lr->crash.cls : "startup");
    } else if (r->outcome == MP_OUT_CRASH || r->outcome == MP_OUT_HANG) {
        /* Only a CUDA fault in the log may be diagnosed with launch
         * blocking; without one, an engine that died crashed, and one that
         * stayed up answered wrongly (the first bad response is the
         * evidence). */
        r->cuda_fault = lr->has_crash && mp_kn_class_name_is_cuda_fault(lr->crash.cls);
        r->engine_died = a->died_early || (lr->has_crash && lr->crash.engine_dead);
        if (r->outcome == MP_OUT_CRASH && lr->has_crash && (r->cuda_fault || r->engine_died)) {
            r->fail_class = xstrdup(lr->crash.cls ? lr->crash.cls : "cuda-other");
            r->fail_message = dup_or_null(lr->crash.message);
            r->fail_line = lr->crash.line;
            r->engine_dead = lr->crash.engine_dead;
            for (size_t i = 0; i < lr->crash.nsites; i++)
                mp_strv_push(&r->sites, lr->crash.sites[i]);
            free(r->launch_site);
            r->launch_site = dup_or_null(lr->crash.launch_site);
        } else {
            r->fail_class = dup_or_null(a->req_fail_class);
            r->fail_message = dup_or_null(a->req_fail_msg);
        }
    }
    if (!r->fail_message && r->outcome != MP_OUT_CLEAN && a->req_fail_msg)
        r->fail_message = xstrdup(a->req_fail_msg);
    if (!r->fail_class && r->outcome != MP_OUT_CLEAN && a->req_fail_class)
        r->fail_class = xstrdup(a->req_fail_class);
}

static FILE *open_in(const char *dir, const char *name, struct mp_attempt_result *r)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    /* never through a link planted in the run directory */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        r->fail_message = xasprintf("cannot create '%s': %s", path,
                                    e == ELOOP ? "it is a symbolic link (never written through)"
                                               : strerror(e));
    }
    return f;
}

int mp_attempt_run(const struct mp_attempt_opts *o, struct mp_attempt_result *r, int *signo_out)
{
    struct att a;
    memset(&a, 0, sizeof(a));
    a.o = o;
    a.r = r;
    a.cur_phase = -1;
    a.follow_fd = -1;
    a.mask = o->store ? mp_store_mask(o->store) : NULL;
    struct mp_launch launch;
    memset(&launch, 0, sizeof(launch));
    int rc = 0;
    char marker[96] = "";
    char base_url[512];
    int64_t t_begin = mp_now_ns();

    r->dir = xstrdup(o->dir);
    r->index = o->index;
    r->launch_blocking = o->launch_blocking;
    r->ntexts = PROMPT_COUNT;
    r->texts = xcalloc(PROMPT_COUNT, sizeof(*r->texts));
    struct stat dst;
    if (mkdir(o->dir, 0777) != 0 &&
        (errno != EEXIST || lstat(o->dir, &dst) != 0 || !S_ISDIR(dst.st_mode))) {
        /* a link planted under the attempt's name is not followed */
        int e = errno == EEXIST ? ENOTDIR : errno;
        r->fail_message = xasprintf("cannot create '%s': %s", o->dir,
                                    e == ENOTDIR ? "something other than a directory is there"
                                                 : strerror(e));
        r->outcome = MP_OUT_ERROR;
        rc = -e;
        goto out;
    }
    a.logf = open_in(o->dir, "server.log", r);
    a.timesf = a.logf ? open_in(o->dir, "server.times", r) : NULL;
    a.reqf = a.timesf ? open_in(o->dir, "requests.jsonl", r) : NULL;
    if (!a.reqf) {
        r->outcome = MP_OUT_ERROR;
        rc = MP_EDB;
        goto out;
    }

    const char *blocking_env[] = {"CUDA_LAUNCH_BLOCKING=1", NULL};
    char cname[128];
    mp_launch_container_name(cname, sizeof(cname), (long)getpid(), o->cand->name, o->index,
                             o->launch_blocking);
    if (o->attach_url) {
        r->command = xasprintf("(attached to %s%s%s)", o->attach_url,
                               o->attach_log ? ", log " : "", o->attach_log ? o->attach_log : "");
    } else {
        mp_launch_build(&launch, o->cmd, o->ncmd, o->cand, o->port,
                        o->launch_blocking ? blocking_env : NULL, cname);
        r->command = mp_launch_display(&launch);
        mp_proc_new_marker(marker, sizeof(marker));
    }
    struct mp_proc_spec spec = {
        .argv = mp_strv_array(&launch.argv),
        .env_add = mp_strv_array(&launch.env),
        .marker = marker,
        .cwd = o->cwd,
        .container_runtime = launch.container_runtime,
        .container_name = launch.container_name,
        .container_client = launch.client.n ? mp_strv_array(&launch.client) : NULL,
    };
    a.ls = mp_logscan_new(o->kn);
    if (o->attach_url) {
        snprintf(base_url, sizeof(base_url), "%s", o->attach_url);
        size_t bl = strlen(base_url);
        while (bl > 0 && base_url[bl - 1] == '/')
            base_url[--bl] = '\0';
    } else {
        snprintf(base_url, sizeof(base_url), "http://127.0.0.1:%d", o->port);
    }
    struct mp_lg_config lgc = {
        .base_url = base_url,
        .model = "",
        .chat = o->wl->chat,
        .max_tokens = o->wl->max_tokens,
        .ignore_eos = true,
        .api_key = o->wl->api_key,
        .request_timeout_s = 0,
        .text_keep = 4096,
    };
    struct mp_diag d = MP_DIAG_INIT;
    a.t_spawn = mp_now_ns();
    if (o->attach_url) {
        if (o->attach_log) {
            a.follow_fd = open(o->attach_log, O_RDONLY | O_CLOEXEC);
            if (a.follow_fd < 0) {
                rc = -errno;
                r->outcome = MP_OUT_ERROR;
                r->fail_class = xstrdup("spawn");
                r->fail_message = xasprintf("cannot read the log '%s': %s", o->attach_log,
                                            strerror(errno));
                goto out;
            }
        }
        if (o->store && mp_store_attempt_spawned(o->store, o->store_attempt, r->command, 0, 0, "") < 0)
            a.io_err = true;
    } else {
        rc = mp_proc_spawn(&spec, &a.proc, &d);
        if (rc < 0) {
            r->outcome = MP_OUT_ERROR;
            r->fail_class = xstrdup("spawn");
            r->fail_message = xstrdup(d.msg[0] ? d.msg : mp_strerror(rc));
            goto out;
        }
        note(&a, "started: pid %d, attempt %d", (int)mp_proc_pid(a.proc), o->index);
        if (o->store && mp_store_attempt_spawned(o->store, o->store_attempt, r->command,
                                                 mp_proc_pid(a.proc),
                                                 mp_proc_starttime(mp_proc_pid(a.proc)), marker) < 0)
            a.io_err = true;
    }
    /* the GPUs the engine is given: the candidate's CUDA_VISIBLE_DEVICES, else ours */
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    for (size_t i = 0; o->cand && i < o->cand->env.n; i++)
        if (!strncmp(o->cand->env.v[i], "CUDA_VISIBLE_DEVICES=", 21))
            visible = o->cand->env.v[i] + 21;
    a.gpu = mp_gpu_sampler_open(NULL, visible);
    /* Ready probes use a model-less loadgen; generation gets the served model name. */
    a.lg = mp_lg_new(&lgc);
    a.argv = launch.argv.v;
    a.argc = launch.argv.n;
    a.container = launch.container_runtime != NULL;
    a.before_ready = !o->attach_url;
    bool ready = wait_ready(&a);
    a.before_ready = false;
    if (ready) {
        say_resolved(&a);
        note(&a, "ready in %.1f s", (double)(mp_now_ns() - a.t_spawn) / 1e9);
    }
    r->ready_s = (double)(mp_now_ns() - a.t_spawn) / 1e9;
    if (a.signo) {
        r->outcome = MP_OUT_INTERRUPTED;
    } else if (a.same) {
        r->outcome = MP_OUT_SAME_CONFIG; /* stopped at once: nothing more to learn */
        check_delivery(&a, &launch, marker); /* ... but did it run the candidate's knobs? */
    } else if (a.resolve_stop) {
        r->outcome = MP_OUT_RESOLVED; /* resolve: the selections are all it asks for */
        check_delivery(&a, &launch, marker); /* which road, if the knobs arrived */
    } else if (!ready) {
        r->outcome = MP_OUT_STARTUP_FAILURE;
        /* let the engine finish saying why (one that listens elsewhere
         * has said it) */
        int64_t deadline = mp_now_ns() + 3000000000LL;
        while (!a.req_fail_class && !(a.exited && a.eof) && mp_now_ns() < deadline && !a.signo)
            pump(&a, 50);
        if (!a.req_fail_class && !a.exited && !(a.events & MP_LOGEV_FATAL)) {
            a.req_fail_class = xstrdup("ready-timeout");
            a.req_fail_msg = xasprintf("the engine did not become ready within %.0f s",
                                       o->wl->ready_timeout_s);
        }
    } else {
        copy_resolved(&a);
        check_delivery(&a, &launch, marker);
        mp_lg_free(a.lg);
        lgc.model = a.model;
        a.lg = mp_lg_new(&lgc);
        int64_t t_work = mp_now_ns();
        r->outcome = run_workload(&a);
        if (r->outcome == MP_OUT_CLEAN && o->nquality)
            r->outcome = run_quality(&a, &lgc);
        r->workload_s = (double)(mp_now_ns() - t_work) / 1e9;
    }
    clear_progress(&a);

    /* teardown */
    struct mp_teardown td;
    memset(&td, 0, sizeof(td));
    int64_t t_td = mp_now_ns();
    a.died_early = a.exited;
    if (a.proc)
        mp_proc_teardown(a.proc, o->wl->grace_s, on_line, &a, &td);
    else
        follow_log(&a); /* attached: the server is not ours to stop */
    check_exit(&a);
    r->teardown_s = (double)(mp_now_ns() - t_td) / 1e9;
    r->teardown_leftovers = td.leftovers;
    r->teardown_killed = td.killed;
    r->escapees_killed = td.escapees_killed;
    if (a.proc && (a.exited || !td.was_running)) {
        char desc[128];
        mp_proc_describe_status(a.exited ? a.exit_status : td.exit_status, desc, sizeof(desc));
        r->exit_desc = xstrdup(desc);
    }
    if (a.ls)
        mp_logscan_finish(a.ls);
    copy_resolved(&a);
    if (a.exited && r->outcome == MP_OUT_STARTUP_FAILURE && !a.req_fail_msg) {
        a.req_fail_class = xstrdup("process-exit");
        a.req_fail_msg = xasprintf("the engine %s before it became ready", r->exit_desc ? r->exit_desc : "exited");
    }
    classify_failure(&a);
    if (!r->ndlv)
        mp_delivery_unverified(o->cand, o->launch_blocking ? blocking_env : NULL,
                               o->attach_url ? "attached to a server moeprobe did not start"
                                             : "the engine did not become ready",
                               r);
    rc = 0;
    if (!a.ev_errno && ev_ok(&a, fflush(a.logf) == 0, "server.log"))
        ev_ok(&a, fflush(a.timesf) == 0, "server.times");
    if (a.ev_errno) {
        r->outcome = MP_OUT_ERROR;
        free(r->fail_class);
        free(r->fail_message);
        r->fail_class = xstrdup(MP_FAIL_EVIDENCE);
        r->fail_message = xasprintf("cannot write '%s/%s': %s", o->dir, a.ev_file,
                                    strerror(a.ev_errno));
        rc = -a.ev_errno;
    } else if (a.io_err) {
        r->outcome = MP_OUT_ERROR;
        free(r->fail_message);
        r->fail_message = xasprintf("cannot write the evidence store: %s", mp_store_errmsg(o->store));
        rc = MP_EDB;
    }

out:
    if (a.logf && fclose(a.logf) != 0 && rc == 0)
        rc = -errno;
    if (a.timesf)
        fclose(a.timesf);
    if (a.reqf)
        fclose(a.reqf);
    mp_gpu_summary(a.gpu, &r->gpu);
    mp_gpu_sampler_close(a.gpu);
    for (size_t i = 0; i < PROMPT_COUNT; i++)
        free(a.sized[i]);
    free(a.req_fail_class);
    free(a.req_fail_msg);
    free(a.nondefault);
    mp_lg_free(a.lg);
    mp_proc_free(a.proc);
    if (a.follow_fd >= 0)
        close(a.follow_fd);
    buf_release(&a.follow_part);
    mp_logscan_free(a.ls);
    mp_launch_release(&launch);
    r->wall_s = (double)(mp_now_ns() - t_begin) / 1e9;
    if (signo_out)
        *signo_out = a.signo;
    return rc;
}

