/* att_open.c - an attempt's set-up (its directory and evidence files, the
 * launch, the spawn or the attached server, the GPU sampler, the one loop
 * and load generator), its summary after teardown, and its release (see
 * att_internal.h). */
#include "run/att_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "logs/logscan.h"
#include "observe/srvmetrics.h"
#include "observe/telemetry.h"
#include "proc/proc.h"
#include "engine/delivery.h"
#include "engine/launch.h"
#include "store/store.h"
#include "xalloc.h"

static const char *const blocking_env[] = {"CUDA_LAUNCH_BLOCKING=1", NULL};

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static struct mp_delivery_ctx dlv_ctx(const struct att *a)
{
    return (struct mp_delivery_ctx){
        .cand = a->o->cand,
        .launch = a->launch,
        .leader = mp_proc_pid(a->proc),
        .marker = a->marker[0] ? a->marker : NULL,
        .nondefault = a->nondefault,
        .nondefault_line = a->nondefault_line,
        .port = a->o->port,
    };
}

static void dlv_over(void *ud)
{
    att_raise(ud, EV_VERIFIED);
}

bool att_check_delivery(struct att *a)
{
    if (a->o->attach_url || !a->proc)
        return false; /* filled in as unverified at the end */
    struct mp_delivery_ctx x = dlv_ctx(a);
    struct mp_strv argv = MP_STRV_INIT;
    bool on_loop = false;
    if (!mp_delivery_inspect_argv(&x, &argv)) {
        mp_delivery_check_inspected(&x, NULL, a->r);
    } else {
        struct mp_capture c = {.argv = mp_strv_array(&argv),
                               .timeout_s = MP_DELIVERY_INSPECT_TIMEOUT_S, .with_stderr = true};
        struct mp_diag d = MP_DIAG_INIT;
        buf_init(&a->dlv_out);
        if (mp_proc_capture_start(a->loop, &c, &a->dlv_out, dlv_over, a, &a->dlv_run, &d) == 0) {
            on_loop = true;
        } else {
            struct mp_dlv_inspect in = {.rc = -1, .status = -1, .err = d.msg};
            mp_delivery_check_inspected(&x, &in, a->r);
        }
    }
    mp_strv_release(&argv);
    return on_loop;
}

void att_delivery_done(struct att *a)
{
    if (!a->dlv_run)
        return;
    bool over = mp_proc_capture_over(a->dlv_run);
    struct mp_dlv_inspect in = {.rc = over ? 0 : -1};
    in.status = mp_proc_capture_finish(a->dlv_run);
    a->dlv_run = NULL;
    in.out = a->dlv_out.data;
    in.err = "interrupted before it answered";
    struct mp_delivery_ctx x = dlv_ctx(a);
    mp_delivery_check_inspected(&x, &in, a->r);
    buf_release(&a->dlv_out);
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

/* The attempt directory (a real one, never a planted link) and its three
 * evidence files. 0, or <0 with r->fail_message. */
static int open_files(struct att *a)
{
    const char *dir = a->o->dir;
    struct mp_attempt_result *r = a->r;
    struct stat dst;
    if (mkdir(dir, 0777) != 0 &&
        (errno != EEXIST || lstat(dir, &dst) != 0 || !S_ISDIR(dst.st_mode))) {
        /* a link planted under the attempt's name is not followed */
        int e = errno == EEXIST ? ENOTDIR : errno;
        r->fail_message = xasprintf("cannot create '%s': %s", dir,
                                    e == ENOTDIR ? "something other than a directory is there"
                                                 : strerror(e));
        return -e;
    }
    a->logf = open_in(dir, "server.log", r);
    a->timesf = a->logf ? open_in(dir, "server.times", r) : NULL;
    a->reqf = a->timesf ? open_in(dir, "requests.jsonl", r) : NULL;
    return a->reqf ? 0 : MP_EDB;
}

/* Where the server is: the attached URL (no trailing '/'), or ours. */
static void set_base_url(struct att *a)
{
    if (a->o->attach_url) {
        snprintf(a->base_url, sizeof(a->base_url), "%s", a->o->attach_url);
        size_t bl = strlen(a->base_url);
        while (bl > 0 && a->base_url[bl - 1] == '/')
            a->base_url[--bl] = '\0';
    } else {
        snprintf(a->base_url, sizeof(a->base_url), "http://127.0.0.1:%d", a->o->port);
    }
}

/* Spawn the engine (or open the attached server's log). 0, or <0 with
 * r->fail_message (*spawn_failed: the command itself could not run). */
static int start_engine(struct att *a, bool *spawn_failed)
{
    const struct mp_attempt_opts *o = a->o;
    struct mp_attempt_result *r = a->r;
    struct mp_launch *l = a->launch;
    a->t_spawn = mp_now_ns();
    if (o->attach_url) {
        if (o->attach_log) {
            a->follow_fd = open(o->attach_log, O_RDONLY | O_CLOEXEC);
            if (a->follow_fd < 0) {
                int e = errno;
                *spawn_failed = true;
                r->fail_message = xasprintf("cannot read the log '%s': %s", o->attach_log, strerror(e));
                return -e;
            }
        }
        if (o->store && mp_store_attempt_spawned(o->store, o->store_attempt, r->command, 0, 0, "") < 0)
            a->io_err = true;
        return 0;
    }
    struct mp_proc_spec spec = {
        .argv = mp_strv_array(&l->argv),
        .env_add = mp_strv_array(&l->env),
        .marker = a->marker,
        .cwd = o->cwd,
        .container_runtime = l->container_runtime,
        .container_name = l->container_name,
        .container_client = l->client.n ? mp_strv_array(&l->client) : NULL,
    };
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_proc_spawn(&spec, &a->proc, &d);
    if (rc < 0) {
        *spawn_failed = true;
        r->fail_message = xstrdup(d.msg[0] ? d.msg : mp_strerror(rc));
        return rc;
    }
    pid_t pid = mp_proc_pid(a->proc);
    mp_att_note(a, "started: pid %d, attempt %d", (int)pid, o->index);
    if (o->store && mp_store_attempt_spawned(o->store, o->store_attempt, r->command, pid,
                                             mp_proc_starttime(pid), a->marker) < 0)
        a->io_err = true;
    return 0;
}

/* The launch: the command, its display form, the marker. */
static void build_launch(struct att *a)
{
    const struct mp_attempt_opts *o = a->o;
    a->launch = xcalloc(1, sizeof(*a->launch));
    /* which selection lines the command can print (logs/selstop.h) */
    mp_selstop_init(&a->sel, mp_seltiming_builtin(), NULL, 0);
    if (o->attach_url) {
        a->r->command = xasprintf("(attached to %s%s%s)", o->attach_url,
                                  o->attach_log ? ", log " : "", o->attach_log ? o->attach_log : "");
        return;
    }
    char cname[128];
    mp_launch_container_name(cname, sizeof(cname), (long)getpid(), o->cand->name, o->index,
                             o->launch_blocking);
    /* CUDA_LAUNCH_BLOCKING=1, then the core-dump variables (run/crashinfo.h):
     * instruments, not the candidate's knobs, so not checked for delivery */
    struct mp_crash_env_in ci = {
        .dir = o->dir, .run_dir = o->run_dir,
        .allowed = !o->no_coredump, .keep = o->keep_coredumps, .cmd = o->cmd, .ncmd = o->ncmd,
        .cand = o->cand,
    };
    mp_crash_env_build(&ci, &a->crash);
    struct mp_strv extra = MP_STRV_INIT;
    if (o->launch_blocking)
        mp_strv_push(&extra, blocking_env[0]);
    for (size_t i = 0; i < a->crash.env.n; i++)
        mp_strv_push(&extra, a->crash.env.v[i]);
    mp_launch_build(a->launch, o->cmd, o->ncmd, o->cand, o->port,
                    extra.n ? (const char *const *)mp_strv_array(&extra) : NULL, cname);
    mp_crash_env_unlist(&a->crash, &a->launch->env_knobs);
    mp_strv_release(&extra);
    a->r->command = mp_launch_display(a->launch);
    mp_proc_new_marker(a->marker, sizeof(a->marker));
    a->argv = a->launch->argv.v;
    a->argc = a->launch->argv.n;
    a->container = a->launch->container_runtime != NULL;
    mp_selstop_init(&a->sel, mp_seltiming_builtin(), a->argv, a->argc);
}

/* NVML telemetry for the GPUs the engine is given: the candidate's
 * CUDA_VISIBLE_DEVICES, else ours. On its own thread: an NVML call that
 * blocks never delays the loop, which stamps token events (without a
 * thread the tick samples). */
static void open_sampler(struct att *a)
{
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    for (size_t i = 0; a->o->cand && i < a->o->cand->env.n; i++)
        if (!strncmp(a->o->cand->env.v[i], "CUDA_VISIBLE_DEVICES=", 21))
            visible = a->o->cand->env.v[i] + 21;
    a->gpu = mp_gpu_sampler_open(NULL, visible);
    (void)mp_gpu_sampler_start(a->gpu, 1.0);
}

int att_open(struct att *a, const struct mp_attempt_opts *o, struct mp_attempt_result *r,
             bool *spawn_failed)
{
    memset(a, 0, sizeof(*a));
    a->o = o;
    a->r = r;
    a->cur_phase = -1;
    a->follow_fd = -1;
    a->pidfd = -1;
    a->t_begin = mp_now_ns();
    mp_lines_init(&a->follow, MP_ATT_FOLLOW_LINE_MAX);
    a->mask = o->store ? mp_store_mask(o->store) : NULL;
    r->dir = xstrdup(o->dir);
    r->index = o->index;
    r->launch_blocking = o->launch_blocking;
    r->ntexts = PROMPT_COUNT;
    r->texts = xcalloc(PROMPT_COUNT, sizeof(*r->texts));
    a->loop = mp_loop_new();
    if (!a->loop) {
        int e = errno;
        r->fail_message = xasprintf("cannot create an event loop: %s", strerror(e));
        return -e;
    }
    int rc = open_files(a);
    if (rc < 0)
        return rc;
    build_launch(a);
    a->ls = mp_logscan_new(o->kn);
    set_base_url(a);
    rc = start_engine(a, spawn_failed);
    if (rc < 0)
        return rc;
    open_sampler(a);
    /* one load generator for the attempt: probes, the load (with the served
     * model's name once it is known) and the /metrics scrapes */
    struct mp_lg_config lgc = {
        .base_url = a->base_url,
        .model = NULL, /* per request: the served model's name, once ready */
        .chat = o->wl->chat,
        .max_tokens = o->wl->max_tokens,
        .ignore_eos = true,
        .api_key = o->wl->api_key,
        .request_timeout_s = 0,
        .text_keep = 4096,
    };
    a->lg = mp_lg_new_on(a->loop, &lgc);
    a->srvm = mp_srvm_new(a->lg); /* server metrics (observe/srvmetrics.h) */
    att_timers_init(a);
    mp_att_watch(a);
    if (a->io_err)
        att_raise(a, EV_IO_ERROR);
    return 0;
}

/* What the failure is judged from (verdict/classify.h): what moeprobe saw,
 * how the engine's main process ended, and the log's own words. */
static void record_obs(struct att *a)
{
    struct mp_attempt_obs *o = &a->r->obs;
    const struct mp_logresult *lr = mp_logscan_result(a->ls);
    mp_attempt_obs_release(o);
    o->recorded = true;
    o->seen = a->seen;
    o->seen_message = dup_or_null(a->seen_msg);
    o->announce_line = a->announce_line;
    o->died_early = a->died_early;
    o->exited = a->exited;
    o->exit_status = a->exited ? a->exit_status : -1;
    o->lines_after_exit = a->died_early ? a->nlines - a->lines_at_exit : 0;
    o->crash = lr->has_crash;
    if (lr->has_crash) {
        o->crash_class = dup_or_null(lr->crash.cls);
        o->crash_message = dup_or_null(lr->crash.message);
        o->crash_launch_site = dup_or_null(lr->crash.launch_site);
        o->crash_line = lr->crash.line;
        o->crash_engine_dead = lr->crash.engine_dead;
        for (size_t i = 0; i < lr->crash.nsites; i++)
            mp_strv_push(&o->crash_sites, lr->crash.sites[i]);
    }
    o->startup_error = dup_or_null(lr->startup_error);
    o->startup_error_line = lr->startup_error_line;
    if (lr->n_error_lines > 0) {
        struct buf q = BUF_INIT;
        mp_logresult_quote_errors(lr, "server.log", &q);
        o->error_quote = buf_detach(&q, NULL);
        o->last_error_line = lr->error_lines[lr->n_error_lines - 1].line;
    }
}

/* The teardown's account, and how the engine's main process ended. */
static void teardown_facts(struct att *a)
{
    struct mp_attempt_result *r = a->r;
    struct mp_teardown td;
    memset(&td, 0, sizeof(td));
    if (a->stop) {
        mp_proc_stop_end(a->stop, &td);
        a->stop = NULL;
    }
    r->teardown_s = a->t_teardown ? (double)(mp_now_ns() - a->t_teardown) / 1e9 : 0;
    r->teardown_leftovers = td.leftovers;
    r->teardown_killed = td.killed;
    r->escapees_killed = td.escapees_killed;
    int st;
    if (!a->exited && a->proc && mp_proc_exited(a->proc, &st)) { /* reaped by the teardown */
        a->exited = true;
        a->exit_status = st;
    }
    if (a->proc && (a->exited || !td.was_running)) {
        char desc[128];
        mp_proc_describe_status(a->exited ? a->exit_status : td.exit_status, desc, sizeof(desc));
        r->exit_desc = xstrdup(desc);
    }
}

/* What the GPU side recorded: the core dump's lines (which, where the dump
 * replaced the traceback, become the log's crash for the judgement), the
 * Xids of NVML and of the kernel log; the dump files' fate. */
static void collect_gpu_fault(struct att *a)
{
    struct mp_gpu_xid_event ev[MP_GPU_MAX_XID_EVENTS];
    const char *why = NULL;
    size_t n = mp_gpu_xid_events(a->gpu, ev, MP_ARRAY_SIZE(ev), &why);
    char pci[16][16];
    size_t npci = mp_gpu_pci_addrs(a->gpu, pci, MP_ARRAY_SIZE(pci));
    if (!a->ev_errno && a->logf)
        mp_att_ev_ok(a, fflush(a->logf) == 0, "server.log"); /* read back below */
    struct mp_crash_collect_in in = {
        .dir = a->o->dir, .leader = a->proc ? mp_proc_pid(a->proc) : 0, .t_spawn_ns = a->t_spawn,
        .t_end_ns = mp_now_ns(), .ev = ev, .nev = MP_MIN(n, MP_ARRAY_SIZE(ev)), .nvml_why = why,
        .keep = a->o->keep_coredumps, .run_dir = a->o->run_dir, .coredump_words = a->crash.words,
        .pids = a->tree_pids, .npids = a->ntree_pids, .pci = (const char(*)[16])pci,
        .npci = npci,
    };
    mp_crash_collect(&in, a->r);
}

void att_summarise(struct att *a)
{
    const struct mp_attempt_opts *o = a->o;
    struct mp_attempt_result *r = a->r;
    mp_att_unwatch_signals(a);
    teardown_facts(a);
    if (a->ls)
        mp_logscan_finish(a->ls);
    mp_att_copy_resolved(a);
    record_obs(a); /* a failure is judged from these: verdict/classify.h (run/runner.c) */
    collect_gpu_fault(a); /* dumps, Xids, dump files (run/crashinfo.h) */
    if (r->outcome != MP_OUT_CLEAN && r->outcome != MP_OUT_STARTUP_FAILURE &&
        r->outcome != MP_OUT_CRASH && r->outcome != MP_OUT_HANG && a->seen) {
        /* moeprobe's own words for what stopped it (an I/O error, a signal) */
        r->fail_class = xstrdup(mp_seen_name(a->seen));
        r->fail_message = dup_or_null(a->seen_msg);
    }
    if (!r->ndlv)
        mp_delivery_unverified(o->cand, o->launch_blocking ? blocking_env : NULL,
                               o->attach_url ? "attached to a server moeprobe did not start"
                                             : "the engine did not become ready",
                               r);
    if (!a->ev_errno && mp_att_ev_ok(a, fflush(a->logf) == 0, "server.log"))
        mp_att_ev_ok(a, fflush(a->timesf) == 0, "server.times");
    if (a->ev_errno) {
        free(r->fail_class);
        free(r->fail_message);
        r->fail_class = xstrdup(MP_FAIL_EVIDENCE);
        r->fail_message = xasprintf("cannot write '%s/%s': %s", o->dir, a->ev_file,
                                    strerror(a->ev_errno));
    } else if (a->local_err) {
        /* moeprobe's limit, not the engine's failure: no verdict from it (exit 3) */
        free(r->fail_class);
        free(r->fail_message);
        r->fail_class = xstrdup(MP_FAIL_EVIDENCE);
        r->fail_message = xasprintf("%s; not the engine's failure", a->local_err);
    } else if (a->io_err) {
        free(r->fail_message);
        r->fail_message = xasprintf("cannot write the evidence store: %s", mp_store_errmsg(o->store));
    }
}

int att_close(struct att *a, int rc)
{
    struct mp_attempt_result *r = a->r;
    if (rc == 0 && a->ev_errno)
        rc = -a->ev_errno;
    else if (rc == 0 && a->local_err)
        rc = MP_ELIMIT; /* moeprobe's own resources ran out (exit 3) */
    else if (rc == 0 && a->io_err)
        rc = MP_EDB;
    if (a->logf && fclose(a->logf) != 0 && rc == 0)
        rc = -errno;
    if (a->timesf)
        fclose(a->timesf);
    if (a->reqf)
        fclose(a->reqf);
    mp_gpu_summary(a->gpu, &r->gpu);
    mp_gpu_sampler_close(a->gpu);
    mp_srvm_free(a->srvm);
    for (size_t i = 0; i < PROMPT_COUNT; i++)
        free(a->sized[i]);
    free(a->seen_msg);
    free(a->nondefault);
    free(a->local_err);
    mp_proc_stop_end(a->stop, NULL);
    mp_proc_capture_finish(a->dlv_run); /* only when the loop failed in VERIFYING */
    a->dlv_run = NULL;
    buf_release(&a->dlv_out);
    mp_lg_free(a->lg);
    if (a->loop)
        mp_loop_timer_stop(a->loop, &a->t_tick);
    mp_loop_free(a->loop);
    mp_proc_free(a->proc);
    if (a->follow_fd >= 0)
        close(a->follow_fd);
    mp_lines_release(&a->follow);
    mp_logscan_free(a->ls);
    if (a->launch) {
        mp_launch_release(a->launch);
        free(a->launch);
    }
    mp_crash_env_release(&a->crash);
    r->wall_s = (double)(mp_now_ns() - a->t_begin) / 1e9;
    return rc;
}
