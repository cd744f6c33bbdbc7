/* attempt.c - one start of the engine for a candidate: set-up, launch, the
 * workload (phases.c), teardown and the summary (see attempt.h; the shared
 * state is in att_internal.h). */
#include "run/att_internal.h"
#include "run/gpuwait.h"

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

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

void mp_att_copy_resolved(struct att *a)
{
    mp_resolved_release(&a->r->res);
    mp_resolved_from_log(&a->r->res, mp_logscan_result(a->ls));
}

/* Once ready: did the knobs reach the engine? (engine/delivery.h) */
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
    mp_lines_init(&a.follow, MP_ATT_FOLLOW_LINE_MAX);
    a.mask = o->store ? mp_store_mask(o->store) : NULL;
    a.loop = mp_loop_new();
    if (!a.loop) {
        r->fail_message = xasprintf("cannot create an event loop: %s", strerror(errno));
        r->outcome = MP_OUT_ERROR;
        return -errno;
    }
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
        .model = NULL, /* per request: the served model's name, once ready */
        .chat = o->wl->chat,
        .max_tokens = o->wl->max_tokens,
        .ignore_eos = true,
        .api_key = o->wl->api_key,
        .request_timeout_s = 0,
        .text_keep = 4096,
    };
    /* the GPUs the engine is given: the candidate's CUDA_VISIBLE_DEVICES, else ours;
     * opened before the spawn so that the previous engine's memory is seen free first */
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    for (size_t i = 0; o->cand && i < o->cand->env.n; i++)
        if (!strncmp(o->cand->env.v[i], "CUDA_VISIBLE_DEVICES=", 21))
            visible = o->cand->env.v[i] + 21;
    a.gpu = mp_gpu_sampler_open(NULL, visible);
    double waited = 0;
    int wsig = 0;
    if (o->gpuwait && !o->attach_url &&
        !mp_gpuwait_before_start(o->gpuwait, a.gpu, o->signal_fd, !o->progress && !o->progress_lines,
                                 o->label ? o->label : "", &waited, &wsig)) {
        if (wsig) { /* interrupted while waiting: nothing was started */
            a.signo = wsig;
            r->outcome = MP_OUT_INTERRUPTED;
            goto out;
        }
        mp_att_note(&a, "started with GPU memory still held after waiting %.0f s", waited);
    }
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
        mp_att_note(&a, "started: pid %d, attempt %d", (int)mp_proc_pid(a.proc), o->index);
        if (o->store && mp_store_attempt_spawned(o->store, o->store_attempt, r->command,
                                                 mp_proc_pid(a.proc),
                                                 mp_proc_starttime(mp_proc_pid(a.proc)), marker) < 0)
            a.io_err = true;
    }
    /* its own thread: an NVML call that blocks never delays the loop, which
     * stamps token events; without a thread, capture.c samples each turn */
    (void)mp_gpu_sampler_start(a.gpu, 1.0);
    /* one loadgen for the attempt: probes, the load (with the served model's
     * name once it is known) and the /metrics scrapes */
    a.lg = mp_lg_new_on(a.loop, &lgc);
    a.srvm = mp_srvm_new(a.lg); /* server metrics (observe/srvmetrics.h) */
    mp_att_watch(&a);
    a.argv = launch.argv.v;
    a.argc = launch.argv.n;
    a.container = launch.container_runtime != NULL;
    a.before_ready = !o->attach_url;
    bool ready = mp_att_wait_ready(&a);
    a.before_ready = false;
    if (ready) {
        mp_att_say_resolved(&a);
        mp_att_note(&a, "ready in %.1f s", (double)(mp_now_ns() - a.t_spawn) / 1e9);
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
            mp_att_pump(&a, 50);
        if (!a.req_fail_class && !a.exited && !(a.events & MP_LOGEV_FATAL)) {
            a.req_fail_class = xstrdup("ready-timeout");
            a.req_fail_msg = xasprintf("the engine did not become ready within %.0f s",
                                       o->wl->ready_timeout_s);
        }
    } else {
        mp_att_copy_resolved(&a);
        check_delivery(&a, &launch, marker);
        int64_t t_work = mp_now_ns();
        r->outcome = mp_att_run_workload(&a);
        if (r->outcome == MP_OUT_CLEAN && o->nquality)
            r->outcome = mp_att_run_quality(&a);
        r->workload_s = (double)(mp_now_ns() - t_work) / 1e9;
    }
    mp_att_clear_progress(&a);

    /* teardown */
    struct mp_teardown td;
    memset(&td, 0, sizeof(td));
    int64_t t_td = mp_now_ns();
    a.died_early = a.exited;
    mp_att_unwatch(&a);
    if (a.proc)
        mp_proc_teardown(a.proc, o->wl->grace_s, mp_att_on_line, &a, &td);
    else
        mp_att_follow_log(&a); /* attached: the server is not ours to stop */
    mp_att_check_exit(&a);
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
    mp_att_copy_resolved(&a);
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
    if (!a.ev_errno && mp_att_ev_ok(&a, fflush(a.logf) == 0, "server.log"))
        mp_att_ev_ok(&a, fflush(a.timesf) == 0, "server.times");
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
    mp_srvm_free(a.srvm);
    for (size_t i = 0; i < PROMPT_COUNT; i++)
        free(a.sized[i]);
    free(a.req_fail_class);
    free(a.req_fail_msg);
    free(a.nondefault);
    mp_lg_free(a.lg);
    mp_loop_free(a.loop);
    mp_proc_free(a.proc);
    if (a.follow_fd >= 0)
        close(a.follow_fd);
    mp_lines_release(&a.follow);
    mp_logscan_free(a.ls);
    mp_launch_release(&launch);
    r->wall_s = (double)(mp_now_ns() - t_begin) / 1e9;
    if (signo_out)
        *signo_out = a.signo;
    return rc;
}
