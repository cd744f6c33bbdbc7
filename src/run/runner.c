#include "run/runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "escape.h"
#include "proc/proc.h"
#include "report/report.h"
#include "run/score.h"
#include "store/store.h"
#include "verdict/classify.h"
#include "verdict/diagnose.h"
#include "verdict/eta.h"
#include "verdict/inherit.h"
#include "verdict/sameconf.h"
#include "verdict/stats.h"
#include "xalloc.h"

/* Candidates after ci that have no attempt yet. */
static size_t candidates_left(const struct mp_report *rep, size_t ci)
{
    size_t n = 0;
    for (size_t j = ci + 1; j < rep->n; j++)
        n += rep->c[j].nattempts == 0 && !rep->c[j].not_applicable;
    return n;
}

static void measure_attempt(struct mp_runctx *ctx, const struct mp_attempt_result *r)
{
    if (r->outcome != MP_OUT_STARTUP_FAILURE && r->outcome != MP_OUT_ERROR &&
        r->outcome != MP_OUT_SAME_CONFIG && r->outcome != MP_OUT_INTERRUPTED && r->ready_s > 0) {
        ctx->meas_ready_s += r->ready_s;
        ctx->meas_ready++;
    }
    if (r->workload_s > 0 && r->req_ok + r->req_failed > 0) {
        ctx->meas_full++;
        ctx->meas_full_s += r->wall_s;
        ctx->meas_req_s += r->workload_s;
        ctx->meas_reqs += r->req_ok + r->req_failed;
    }
    if (r->score) { /* the scoring pass: part of the attempt's wall time and so of the ETA */
        ctx->meas_score_s += r->score->score_s + r->score->task_s;
        ctx->meas_score++;
    }
}

/* The scoring plan in the estimator's numbers; NULL when there is none. */
static const struct mp_eta_score *eta_score(const struct mp_score_plan *p, struct mp_eta_score *o)
{
    if (!p || !mp_score_plan_requests(p))
        return NULL;
    *o = (struct mp_eta_score){p->npassages, p->repeat, p->ngreedy, p->greedy_tokens,
                               p->tasks ? p->tasks->n : 0, p->tasks ? p->tasks->max_tokens : 0,
                               p->level};
    return o;
}

/* The rest of the run as verdict/eta.h estimates it from rep. */
static void estimate(const struct mp_runctx *ctx, const struct mp_report *rep, struct mp_eta *e)
{
    if (ctx->eta_prepare)
        ctx->eta_prepare(ctx->eta_ud, rep);
    bool *cheap = xcalloc(rep->n + 1, sizeof(*cheap));
    if (ctx->dedupe)
        mp_eta_predict_cheap(ctx->kn, rep, cheap);
    struct mp_eta_score sc;
    struct mp_eta_in in = {
        .rep = rep,
        .wl = ctx->wl,
        .nquality = ctx->nquality,
        .score = eta_score(ctx->score, &sc),
        .cheap = cheap,
        .diagnose = ctx->diagnose,
        .resolve_only = ctx->resolve_only,
        .diag_cap = ctx->diag_max_requests,
        .diag_budget_s = ctx->diag_budget_s,
        .extra_attempts = ctx->eta_extra_attempts,
        .extra_wl = ctx->eta_extra_wl,
        .extra_fail_share = ctx->eta_extra_fail_share,
    };
    mp_eta_estimate(&in, e);
    free(cheap);
}

/* The plan after the first engine start, then the estimate after each
 * attempt: what is left and how long it should take, from what was
 * measured (verdict/eta.h; diagnoses of crashes seen so far included,
 * ones not yet seen not). */
static void say_estimate(struct mp_runctx *ctx, const struct mp_report *rep, size_t ci)
{
    size_t rem = candidates_left(rep, ci);
    struct mp_eta est;
    estimate(ctx, rep, &est);
    char eta[224] = "unknown yet";
    if (est.known) {
        char a[32], b[32], c[32], d[32];
        mp_stats_fmt_duration(a, sizeof(a), est.remaining_s);
        mp_stats_fmt_duration(b, sizeof(b), est.startup_s);
        mp_stats_fmt_duration(c, sizeof(c), est.request_s);
        mp_stats_fmt_duration(d, sizeof(d), est.overhead_s);
        /* what the rest goes into (#27) */
        snprintf(eta, sizeof(eta), "%s (engine start-ups %s, requests %s, moeprobe %s)", a, b, c, d);
    }
    if (!ctx->plan_said) {
        ctx->plan_said = true;
        size_t configs = 0;
        for (size_t j = 0; j < rep->n; j++) {
            const struct mp_attempt_result *p = mp_cand_primary(&rep->c[j]);
            if (!p || p->outcome == MP_OUT_SAME_CONFIG)
                continue;
            bool seen = false;
            for (size_t k = 0; k < j && !seen; k++) {
                const struct mp_attempt_result *q = mp_cand_primary(&rep->c[k]);
                seen = q && q->outcome != MP_OUT_SAME_CONFIG && p->res.moe_backend &&
                       q->res.moe_backend && !strcmp(p->res.moe_backend, q->res.moe_backend);
            }
            configs += !seen;
        }
        fprintf(stderr,
                "moeprobe: plan: %zu candidate%s, %zu configuration%s seen so far, about %zu more "
                "engine start%s (each crash adds up to 4: more evidence and a "
                "CUDA_LAUNCH_BLOCKING=1 run)",
                rep->n, rep->n == 1 ? "" : "s", configs, configs == 1 ? "" : "s", rem,
                rem == 1 ? "" : "s");
        if (ctx->score)
            fprintf(stderr, "; each serving candidate then runs a scoring pass of %zu requests",
                    mp_score_plan_requests(ctx->score));
        if (ctx->meas_score)
            fprintf(stderr, " (%.1f s measured)", ctx->meas_score_s / (double)ctx->meas_score);
        if (ctx->meas_ready)
            fprintf(stderr, "; start-up %.1f s", ctx->meas_ready_s / (double)ctx->meas_ready);
        if (ctx->meas_reqs)
            fprintf(stderr, ", %.2g s per request", ctx->meas_req_s / (double)ctx->meas_reqs);
        if (est.known)
            fprintf(stderr, ", a full attempt about %.0f s", est.attempt_s);
        fprintf(stderr, " measured; ETA %s\n", eta);
    } else if (rem || est.diagnosis_s > 0 || ctx->eta_extra_attempts > 0) {
        fprintf(stderr, "moeprobe: estimate: %zu candidate%s left, ETA %s\n", rem,
                rem == 1 ? "" : "s", eta);
    }
}

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
        struct mp_candidate ea, eb; /* as the engines ran them: with what they inherited */
        mp_inherit_effective(s->ctx->inherited, &s->rep->c[j].cand, &ea);
        mp_inherit_effective(s->ctx->inherited, me, &eb);
        mp_sameconf_judge(s->ctx->kn, &ea, &p->res, &eb, res, &sc);
        mp_candidate_release(&ea);
        mp_candidate_release(&eb);
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

/* Where attempt index of candidate ci goes, and its port: prepared in
 * *dir, *port and the store (its attempt row, *att_id). 0, or <0 with the
 * message printed. */
static int prepare_attempt(struct mp_runctx *ctx, struct mp_report *rep, size_t ci, bool blocking,
                           const struct mp_workload *wl, char *dir, size_t dirn, int *index,
                           int *port, int64_t *att_id)
{
    struct mp_cand_report *c = &rep->c[ci];
    snprintf(dir, dirn, "%s/attempts", ctx->run_dir);
    if (is_link(dir))
        return MP_EUSAGE;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return mp_error("cannot create '%s': %s", dir, strerror(errno));
    *index = (int)c->nattempts + 1;
    if (ctx->store) {
        /* the run's workload, once per store session (the store skips repeats) */
        if (mp_store_set_workload(ctx->store, ctx->wl ? ctx->wl : wl) < 0 ||
            mp_store_candidate(ctx->store, ci, &c->cand) < 0 ||
            mp_store_next_index(ctx->store, ci, index) < 0)
            return mp_error("cannot write the evidence store: %s", mp_store_errmsg(ctx->store));
    }
    snprintf(dir, dirn, "%s/attempts/%s-%d%s", ctx->run_dir, c->cand.name, *index,
             blocking ? "-blocking" : "");
    if (check_attempt_dir(dir) < 0)
        return MP_EUSAGE;
    *port = ctx->port;
    if (ctx->attach_url) {
        *port = 0; /* someone else's server: no port of ours */
    } else if (*port == 0) {
        *port = mp_free_port();
        if (*port < 0)
            return mp_error("cannot find a free port: %s", mp_strerror(*port));
    } else if (mp_port_in_use(*port)) {
        mp_error("port %d is already in use; pick another with --port or leave it out", *port);
        return MP_EUSAGE;
    }
    if (ctx->store && mp_store_attempt_begin(ctx->store, ci, *index, blocking, dir, att_id) < 0)
        return mp_error("cannot write the evidence store: %s", mp_store_errmsg(ctx->store));
    return 0;
}

/* The attempt's line on stderr: outcome, backend, counts, class; for a
 * startup failure the engine's own words; survivors of the teardown. */
static void say_attempt(const char *label, const struct mp_attempt_result *r)
{
    /* the backend and class are the engine's words: shown escaped */
    struct buf line = BUF_INIT;
    buf_printf(&line, "moeprobe: %s: %s", label, mp_outcome_name(r->outcome));
    if (r->res.moe_backend)
        buf_printf(&line, ", MoE backend %s", r->res.moe_backend);
    buf_printf(&line, ", %lu ok / %lu failed", r->req_ok, r->req_failed);
    if (r->fail_class)
        buf_printf(&line, " (%s)", r->fail_class);
    if (r->same_as)
        buf_printf(&line, " (same as %s: not tested again)", r->same_as);
    buf_printf(&line, " in %.1f s", r->wall_s);
    mp_term_write(stderr, line.data, line.len);
    fputc('\n', stderr);
    buf_release(&line);
    if (r->outcome == MP_OUT_STARTUP_FAILURE && r->fail_message) {
        char *why = mp_term_dup(r->fail_message); /* the engine's words */
        fprintf(stderr, "moeprobe: %s: %s\n", label, why);
        free(why);
    }
    if (r->teardown_leftovers > 0)
        mp_warn("%d process(es) of %s survived teardown", r->teardown_leftovers, label);
}

/* What moeprobe could not do, said once (runner.h: every failure returned
 * is printed). */
static void say_failure(int rc, const char *label, const struct mp_attempt_result *r)
{
    if (rc == MP_ECOMMAND)
        mp_error("%s", r->fail_message ? r->fail_message : "cannot start the server command");
    else if (rc < 0 && r->fail_message && mp_attempt_evidence_incomplete(r))
        mp_error("%s: %s; its evidence is incomplete, no verdict is drawn from it", label,
                 r->fail_message);
    else if (rc < 0 && r->outcome == MP_OUT_ERROR && r->fail_message && !r->fail_class)
        mp_error("%s", r->fail_message);
}

int mp_run_attempt(struct mp_runctx *ctx, struct mp_report *rep, size_t ci, bool blocking,
                   const struct mp_workload *wl, const struct mp_attempt_result **out)
{
    struct mp_cand_report *c = &rep->c[ci];
    char dir[4096];
    int index = 0, port = 0;
    int64_t att_id = 0;
    if (out)
        *out = NULL;
    if (ctx->gpuwait && !ctx->attach_url) {
        /* the previous engine's GPU memory first (run/gpuwait.h) */
        double waited;
        int sig = 0;
        snprintf(dir, sizeof(dir), "%s %zu/%zu%s", c->cand.name, ci + 1, rep->n,
                 blocking ? " blocking" : "");
        mp_gpuwait_before_start(ctx->gpuwait, ctx->signal_fd, ctx->quiet, dir, &waited, &sig);
        if (sig) {
            ctx->signo = sig; /* interrupted while waiting: nothing started */
            return 0;
        }
    }
    int rc = prepare_attempt(ctx, rep, ci, blocking, wl, dir, sizeof(dir), &index, &port, &att_id);
    if (rc < 0)
        return rc;
    char label[128];
    snprintf(label, sizeof(label), "%s %zu/%zu%s", c->cand.name, ci + 1, rep->n,
             blocking ? " blocking" : "");
    if (index > 1) {
        size_t l = strlen(label);
        snprintf(label + l, sizeof(label) - l, " attempt %d", index);
    }
    struct mp_eta est;
    estimate(ctx, rep, &est);
    /* what is left after this attempt: a first attempt is one of est's
     * attempts, a later one part of its diagnosis */
    double after = est.remaining_s - (c->nattempts == 0 ? est.attempt_s : est.diagnosis_s);
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
        .score = blocking || mp_cand_primary(c) ? NULL : ctx->score, /* primary attempts only */
        .store = ctx->store,
        .store_attempt = att_id,
        .attach_url = ctx->attach_url,
        .attach_log = ctx->attach_log,
        .progress_lines = ctx->progress_lines,
        .resolve_only = ctx->resolve_only && !blocking,
        .eta_after_s = est.known ? MP_MAX(0.0, after) : -1,
        .expect_s = est.known ? est.attempt_s : -1,
        .cwd = ctx->cwd,
        .no_coredump = ctx->no_coredump,
        .keep_coredumps = ctx->keep_coredumps,
        .run_dir = ctx->run_dir,
    };
    struct same_ctx sc = {ctx, rep, ci};
    if (ctx->dedupe && !blocking && !mp_cand_primary(c) && !ctx->attach_url) {
        o.same_config = same_config;
        o.same_ud = &sc;
    }
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    int signo = 0;
    rc = mp_attempt_run(&o, &r, &signo);
    if (signo)
        ctx->signo = signo;
    mp_verdict_classify(&r); /* its failure, judged from what it recorded */
    if (!ctx->quiet && rc != MP_ECOMMAND)
        say_attempt(label, &r);
    say_failure(rc, label, &r);
    if (ctx->store && rc != MP_EDB && mp_store_attempt_finish(ctx->store, att_id, &r) < 0) {
        mp_error("cannot write the evidence store: %s", mp_store_errmsg(ctx->store));
        rc = MP_EDB;
    }
    const struct mp_attempt_result *added = mp_report_add_attempt(rep, ci, &r);
    if (rc != MP_ECOMMAND && !ctx->attach_url) {
        measure_attempt(ctx, added);
        if (!ctx->quiet && !ctx->signo)
            say_estimate(ctx, rep, ci);
    }
    if (out)
        *out = added;
    return rc;
}

static int top_level(const struct mp_workload *wl)
{
    int top = 1;
    for (size_t i = 0; i < wl->nphases; i++)
        top = MP_MAX(top, wl->phases[i].level);
    return top;
}

/* The diagnosis of candidate ci: the mechanics (which attempts to start)
 * live here; what they mean is verdict/diagnose.h's (mp_verdict_diagnosis
 * derives c->diag from the attempts afterwards). */
int mp_diagnose(struct mp_runctx *ctx, struct mp_report *rep, size_t ci)
{
    struct mp_cand_report *c = &rep->c[ci];
    char *note = NULL;
    bool go = mp_verdict_diagnosable(mp_cand_primary(c), &note);
    free(note); /* the note is the derived diagnosis' */
    if (!go)
        return 0;
    /* evidence from normal mode, sharpened while that pays */
    struct mp_diag_plan plan;
    struct mp_stats_async est;
    struct mp_diag_policy pol;
    mp_run_diag_policy(ctx, true, false, true, &pol);
    for (int extra = mp_verdict_reruns_done(c);; extra++) { /* a resume continues the budget */
        mp_verdict_diag_estimate(c, &pol, &est, &plan); /* the engine's times (#27) */
        if (!mp_verdict_rerun_first(&plan, extra))
            break;
        if (!ctx->quiet)
            fprintf(stderr, "moeprobe: %s: one more normal run first: it should cost about %.0f s "
                            "and save about %.0f s of the blocked run (%s)\n",
                    c->cand.name, plan.sharpen_cost_s, plan.sharpen_saves_s, plan.why);
        const struct mp_attempt_result *again = NULL;
        int rc = mp_run_attempt(ctx, rep, ci, false, NULL, &again);
        if (rc < 0 || ctx->signo)
            return rc;
    }
    unsigned long need = plan.need ? plan.need : est.required_n;
    if (!ctx->quiet) {
        fprintf(stderr, "moeprobe: %s: %s\n", c->cand.name, est.why);
        fprintf(stderr, "moeprobe: %s: %s%s\n", c->cand.name, plan.why,
                plan.over_budget ? "; running to the budget" : "");
    }

    /* the blocked run: warm-up and a few sequential requests (for the
     * speed ratio), then only the highest concurrency step, extended to the
     * required count (verdict/diagnose.h) */
    struct mp_workload wl;
    mp_verdict_blocked_workload(ctx->wl, need, ctx->diag_budget_s, &wl);
    const struct mp_attempt_result *b = NULL;
    return mp_run_attempt(ctx, rep, ci, true, &wl, &b);
}

void mp_run_diag_policy(const struct mp_runctx *ctx, bool diagnose, bool skipped, bool notes,
                        struct mp_diag_policy *pol)
{
    memset(pol, 0, sizeof(*pol));
    pol->recorded = true;
    pol->diagnose = diagnose;
    pol->skipped = skipped;
    pol->notes = notes;
    pol->cap = ctx->diag_max_requests;
    pol->budget_s = ctx->diag_budget_s;
    pol->concurrency = ctx->wl ? top_level(ctx->wl) : 1;
    pol->lead = ctx->wl ? mp_verdict_workload_lead(ctx->wl) : 0;
    pol->blocked_lead = ctx->wl ? mp_verdict_blocked_lead(ctx->wl) : 0;
}

void mp_run_candidate_diagnosis(struct mp_report *rep, size_t ci, const struct mp_diag_policy *pol)
{
    rep->c[ci].policy = *pol;
    mp_verdict_diagnosis(&rep->c[ci], pol, &rep->c[ci].diag);
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
    int k = mp_run_end_seen_procs(st); /* what escaped group and marker, as recorded */
    if (k < 0)
        return MP_EDB;
    *killed += k;
    return mp_store_mark_interrupted(st);
}
