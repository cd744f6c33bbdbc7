#include "run/runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "proc/proc.h"
#include "report/report.h"
#include "store/store.h"
#include "verdict/sameconf.h"
#include "verdict/stats.h"
#include "xalloc.h"

struct same_ctx {
    const struct mp_runctx *ctx;
    const struct mp_report *rep;
    size_t ci;
};

/* Is candidate ci, resolved as res, the same configuration as a candidate
 * tested in full already? */
static bool same_config(void *ud, const struct mp_resolved *res, char **same_as, char **why)
{
    const struct same_ctx *s = ud;
    const struct mp_candidate *me = &s->rep->c[s->ci].cand;
    for (size_t j = 0; j < s->rep->n; j++) {
        const struct mp_attempt_result *p = mp_cand_primary(&s->rep->c[j]);
        if (j == s->ci || !p || p->outcome == MP_OUT_SAME_CONFIG ||
            p->outcome == MP_OUT_INTERRUPTED || p->outcome == MP_OUT_ERROR)
            continue;
        struct mp_sameconf sc;
        mp_sameconf_judge(s->ctx->kn, &s->rep->c[j].cand, &p->res, me, res, &sc);
        if (sc.same) {
            *same_as = xstrdup(s->rep->c[j].cand.name);
            *why = sc.why;
            return true;
        }
        mp_sameconf_release(&sc);
    }
    return false;
}

/* path is a symbolic link (planted in the run directory)? Says so. */
static bool is_link(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
        return false;
    mp_error("'%s' is a symbolic link: moeprobe never writes through a link inside a run "
             "directory; remove it", path);
    return true;
}

/* The attempt directory and what the attempt writes in it must not be
 * links: MP_EUSAGE (message printed) or 0. */
static int check_attempt_dir(const char *dir)
{
    static const char *const files[] = {"server.log", "server.times", "requests.jsonl"};
    if (is_link(dir))
        return MP_EUSAGE;
    for (size_t i = 0; i < MP_ARRAY_SIZE(files); i++) {
        char p[4200];
        snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
        if (is_link(p))
            return MP_EUSAGE;
    }
    return 0;
}

int mp_run_attempt(struct mp_runctx *ctx, struct mp_report *rep, size_t ci, bool blocking,
                   const struct mp_workload *wl, const struct mp_attempt_result **out)
{
    struct mp_cand_report *c = &rep->c[ci];
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/attempts", ctx->run_dir);
    if (is_link(dir))
        return MP_EUSAGE;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return mp_error("cannot create '%s': %s", dir, strerror(errno));
    int index = (int)c->nattempts + 1;
    int64_t att_id = 0;
    if (ctx->store) {
        if (mp_store_candidate(ctx->store, ci, &c->cand) < 0 ||
            mp_store_next_index(ctx->store, ci, &index) < 0)
            return mp_error("cannot write the evidence store: %s", mp_store_errmsg(ctx->store));
    }
    snprintf(dir, sizeof(dir), "%s/attempts/%s-%d%s", ctx->run_dir, c->cand.name, index,
             blocking ? "-blocking" : "");
    if (check_attempt_dir(dir) < 0)
        return MP_EUSAGE;
    int port = ctx->port;
    if (ctx->attach_url) {
        port = 0; /* someone else's server: no port of ours */
    } else if (port == 0) {
        port = mp_free_port();
        if (port < 0)
            return mp_error("cannot find a free port: %s", mp_strerror(port));
    } else if (mp_port_in_use(port)) {
        mp_error("port %d is already in use; pick another with --port or leave it out", port);
        return MP_EUSAGE;
    }
    if (ctx->store && mp_store_attempt_begin(ctx->store, ci, index, blocking, dir, &att_id) < 0)
        return mp_error("cannot write the evidence store: %s", mp_store_errmsg(ctx->store));
    char label[128];
    snprintf(label, sizeof(label), "%s %zu/%zu%s", c->cand.name, ci + 1, rep->n,
             blocking ? " blocking" : "");
    struct mp_attempt_opts o = {
        .dir = dir,
        .cmd = ctx->cmd,
        .ncmd = ctx->ncmd,
        .cand = &c->cand,
        .port = port,
        .launch_blocking = blocking,
        .index = index,
        .kn = ctx->kn,
        .wl = wl ? wl : ctx->wl,
        .signal_fd = ctx->signal_fd,
        .label = label,
        .progress = ctx->progress,
        .quality_prompts = ctx->quality_prompts,
        .nquality = ctx->nquality,
        .store = ctx->store,
        .store_attempt = att_id,
        .attach_url = ctx->attach_url,
        .attach_log = ctx->attach_log,
        .cwd = ctx->cwd,
    };
    struct same_ctx sc = {ctx, rep, ci};
    if (ctx->dedupe && !blocking && !mp_cand_primary(c) && !ctx->attach_url) {
        o.same_config = same_config;
        o.same_ud = &sc;
    }
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    int signo = 0;
    int rc = mp_attempt_run(&o, &r, &signo);
    if (signo)
        ctx->signo = signo;
    bool spawn_failed = r.outcome == MP_OUT_ERROR && r.fail_class && !strcmp(r.fail_class, "spawn");
    if (!ctx->quiet && !spawn_failed) {
        fprintf(stderr, "moeprobe: %s: %s", label, mp_outcome_name(r.outcome));
        if (r.res.moe_backend)
            fprintf(stderr, ", MoE backend %s", r.res.moe_backend);
        fprintf(stderr, ", %lu ok / %lu failed", r.req_ok, r.req_failed);
        if (r.fail_class)
            fprintf(stderr, " (%s)", r.fail_class);
        if (r.same_as)
            fprintf(stderr, " (same as %s: not tested again)", r.same_as);
        fprintf(stderr, " in %.1f s\n", r.wall_s);
        if (r.teardown_leftovers > 0)
            mp_warn("%d process(es) of %s survived teardown", r.teardown_leftovers, label);
    }
    if (rc < 0 && r.outcome == MP_OUT_ERROR && r.fail_message && !r.fail_class)
        mp_error("%s", r.fail_message);
    if (ctx->store && rc != MP_EDB &&
        mp_store_attempt_finish(ctx->store, att_id, &r) < 0) {
        mp_error("cannot write the evidence store: %s", mp_store_errmsg(ctx->store));
        rc = MP_EDB;
    }
    const struct mp_attempt_result *added = mp_report_add_attempt(rep, ci, &r);
    if (out)
        *out = added;
    return rc;
}

/* Median per-request decode rate of the lowest-concurrency phase that both
 * modes ran ("warmup"/"sequential" normally), so contention does not skew
 * the blocked/normal ratio. <0 when unknown. */
static double phase_rate(const struct mp_cand_report *c, bool blocking, const char *phase)
{
    double best = -1;
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->launch_blocking != blocking)
            continue;
        for (size_t k = 0; k < a->nphases; k++) {
            if (!strcmp(a->phases[k].name, phase) && a->phases[k].req_tok_s_p50 > 0)
                best = MP_MAX(best, a->phases[k].req_tok_s_p50);
        }
    }
    return best;
}

static double throughput_ratio(const struct mp_cand_report *c)
{
    static const char *const phases[] = {"sequential", "warmup"};
    for (size_t i = 0; i < MP_ARRAY_SIZE(phases); i++) {
        double rn = phase_rate(c, false, phases[i]), rb = phase_rate(c, true, phases[i]);
        if (rn > 0 && rb > 0)
            return rb / rn;
    }
    return -1;
}

static bool is_failure(enum mp_outcome o)
{
    return o == MP_OUT_CRASH;
}

int mp_diagnose(struct mp_runctx *ctx, struct mp_report *rep, size_t ci)
{
    struct mp_cand_report *c = &rep->c[ci];
    struct mp_diagnosis *dg = &c->diag;
    const struct mp_attempt_result *p = mp_cand_primary(c);
    if (!p)
        return 0;
    if (p->outcome != MP_OUT_CRASH) {
        if (p->outcome == MP_OUT_STARTUP_FAILURE || p->outcome == MP_OUT_HANG) {
            free(dg->note);
            dg->note = xasprintf("a %s is not diagnosed with CUDA_LAUNCH_BLOCKING=1: it is not "
                                 "an asynchronously reported kernel fault",
                                 p->outcome == MP_OUT_HANG ? "hang" : "startup failure");
        }
        return 0;
    }
    if (!p->cuda_fault) {
        /* launch blocking discriminates CUDA faults only: a cut stream, an
         * HTTP 500 or a Python error is the same with it */
        free(dg->note);
        dg->note = xstrdup("not a CUDA fault: not diagnosed with CUDA_LAUNCH_BLOCKING=1");
        return 0;
    }
    /* evidence from normal mode */
    size_t nfail = 0;
    for (size_t j = 0; j < c->nattempts; j++)
        nfail += !c->attempts[j].launch_blocking && is_failure(c->attempts[j].outcome);
    if (nfail == 1 && p->ready_s < ctx->cheap_start_s) {
        if (!ctx->quiet)
            fprintf(stderr, "moeprobe: %s: one failure is thin evidence; repeating the normal run "
                            "once (start-up took %.1f s)\n", c->cand.name, p->ready_s);
        const struct mp_attempt_result *again = NULL;
        int rc = mp_run_attempt(ctx, rep, ci, false, NULL, &again);
        if (rc < 0 || ctx->signo)
            return rc;
    }
    size_t n_att = 0;
    struct mp_stats_attempt *obs = xcalloc(c->nattempts + 1, sizeof(*obs));
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->launch_blocking)
            continue;
        if (a->outcome == MP_OUT_CRASH) {
            obs[n_att].served = a->ok_before_failure;
            obs[n_att].failed = true;
            n_att++;
        } else if (a->outcome == MP_OUT_CLEAN) {
            obs[n_att].served = a->req_ok;
            obs[n_att].failed = false;
            n_att++;
        }
    }
    struct mp_stats_async est;
    mp_stats_async_estimate(obs, n_att, &est);
    free(obs);
    unsigned long need = est.required_n;
    bool capped = false;
    if (ctx->diag_max_requests && need > ctx->diag_max_requests) {
        capped = true;
        need = ctx->diag_max_requests;
    }
    dg->done = true;
    dg->requests_required = est.required_n;
    free(dg->reasoning);
    dg->reasoning = xstrdup(est.why);
    if (!ctx->quiet)
        fprintf(stderr, "moeprobe: %s: %s\n", c->cand.name, est.why);

    struct mp_workload wl = *ctx->wl;
    wl.min_total_ok = need;
    const struct mp_attempt_result *b = NULL;
    int rc = mp_run_attempt(ctx, rep, ci, true, &wl, &b);
    if (rc < 0 || ctx->signo)
        return rc;
    dg->requests_clean = b->req_ok;
    dg->throughput_ratio = throughput_ratio(c);
    free(dg->note);
    dg->note = NULL;
    if (b->outcome == MP_OUT_CLEAN) {
        dg->launch_blocking = "clean";
        if (b->req_ok >= est.required_n) {
            dg->confidence = 0.95;
        } else {
            dg->confidence = 0;
            dg->note = xasprintf("the blocked run served %lu requests clean, %lu short of the %lu "
                                 "required%s",
                                 b->req_ok, est.required_n - b->req_ok, est.required_n,
                                 capped ? " (capped by --diagnose-max-requests)" : "");
        }
    } else if (b->outcome == MP_OUT_CRASH) {
        dg->launch_blocking = "crashed";
        dg->confidence = 0.95;
        free(dg->pinned_site);
        dg->pinned_site = b->sites.n ? xstrdup(b->sites.v[0]) : NULL;
        if (!dg->pinned_site && b->fail_message)
            dg->pinned_site = xstrdup(b->fail_message);
        free(dg->launch_site);
        dg->launch_site = b->launch_site ? xstrdup(b->launch_site) : NULL;
    } else {
        dg->launch_blocking = NULL;
        dg->confidence = 0;
        dg->note = xasprintf("the CUDA_LAUNCH_BLOCKING=1 run ended as %s%s%s, so the diagnosis "
                             "is inconclusive",
                             mp_outcome_name(b->outcome), b->fail_message ? ": " : "",
                             b->fail_message ? b->fail_message : "");
    }
    return 0;
}

int mp_run_end_dead_run(struct mp_store *st, int *killed)
{
    struct mp_store_leftover *l = NULL;
    size_t n = 0;
    *killed = 0;
    if (mp_store_running_attempts(st, &l, &n) < 0)
        return MP_EDB;
    for (size_t i = 0; i < n; i++)
        *killed += mp_proc_end_leftover(l[i].pid, l[i].start, l[i].marker);
    mp_store_leftovers_free(l, n);
    return mp_store_mark_interrupted(st);
}
