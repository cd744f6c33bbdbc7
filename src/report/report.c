#include "report/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "quality/quality.h"
#include "secret.h"
#include "version.h"
#include "verdict/stats.h"
#include "xalloc.h"

void mp_report_set_checkpoint(struct mp_report *rep, const struct mp_inspect *in)
{
    struct buf b = BUF_INIT;
    mp_inspect_to_json(in, &b);
    mp_report_set_checkpoint_json(rep, b.data);
    buf_release(&b);
}


static bool streq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool same_strv(const struct mp_strv *a, const struct mp_strv *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]))
            return false;
    return true;
}

static bool same_resolved(const struct mp_attempt_result *a, const struct mp_attempt_result *b)
{
    return a->res.moe_backend && b->res.moe_backend && streq(a->res.moe_backend, b->res.moe_backend) &&
           streq(a->res.linear_kernel, b->res.linear_kernel) && same_strv(&a->res.linear_kernels, &b->res.linear_kernels) &&
           streq(a->res.attention_backend, b->res.attention_backend);
}

static double seq_tok_s(const struct mp_attempt_result *a)
{
    for (size_t i = 0; a && i < a->nphases; i++) {
        if (!strcmp(a->phases[i].name, "sequential") && a->phases[i].ok > 0)
            return a->phases[i].tok_s;
    }
    return -1;
}

static double best_conc_tok_s(const struct mp_attempt_result *a)
{
    double best = -1;
    for (size_t i = 0; a && i < a->nphases; i++) {
        if (!strncmp(a->phases[i].name, "concurrency-", 12) && a->phases[i].ok > 0)
            best = MP_MAX(best, a->phases[i].tok_s);
    }
    return best;
}

static double median_req_rate(const struct mp_attempt_result *a)
{
    if (!a || !a->nreq_tok_s)
        return -1;
    double *tmp = xmalloc(a->nreq_tok_s * sizeof(*tmp));
    memcpy(tmp, a->req_tok_s, a->nreq_tok_s * sizeof(*tmp));
    double v = mp_stats_percentile(tmp, a->nreq_tok_s, 50);
    free(tmp);
    return v;
}

static void set_why(struct mp_cand_report *c, char *owned)
{
    free(c->why);
    c->why = owned;
}

static void finalize_candidate(struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    c->verdict = NULL;
    if (p && p->outcome == MP_OUT_ERROR && p->fail_class && !strcmp(p->fail_class, MP_FAIL_EVIDENCE)) {
        /* a cut log proves nothing: no verdict (the run stopped there, so
         * the candidate is also unfinished; this says why) */
        set_why(c, xasprintf("evidence incomplete, no verdict: %s (%lu requests ok, %lu failed "
                             "before it)", p->fail_message ? p->fail_message : "", p->req_ok,
                             p->req_failed));
        return;
    }
    if (c->unfinished) {
        /* whatever its attempts show so far, it has no verdict yet */
        set_why(c, xasprintf("unfinished: the run stopped before this candidate finished (%zu "
                             "attempt%s recorded)",
                             c->nattempts, c->nattempts == 1 ? "" : "s"));
        return;
    }
    if (!p) {
        set_why(c, xstrdup("not run"));
        return;
    }
    const char *msg = p->fail_message ? p->fail_message : "";
    switch (p->outcome) {
    case MP_OUT_SAME_CONFIG:
        break; /* the representative's verdict, once it is known (share_same) */
    case MP_OUT_RESOLVED:
        set_why(c, xstrdup("resolved only (moeprobe resolve): its kernel selections were read "
                           "from the log and the engine was stopped; no load was driven"));
        break;
    case MP_OUT_CLEAN:
        c->verdict = "stable";
        set_why(c, xasprintf("every phase ran with zero failures (%lu requests)", p->req_ok));
        break;
    case MP_OUT_STARTUP_FAILURE:
    case MP_OUT_ERROR:
        c->verdict = "startup-failure";
        set_why(c, xasprintf("never became ready: %s", msg));
        break;
    case MP_OUT_HANG:
        c->verdict = "hang";
        set_why(c, xasprintf("%s (after %lu requests)", msg, p->ok_before_failure));
        break;
    case MP_OUT_CRASH:
        if (!p->cuda_fault && !p->engine_died) {
            /* up and answering, but wrongly: nothing for launch blocking to decide */
            c->verdict = "server-error";
            set_why(c, xasprintf("the engine stayed up but answered wrongly%s%s: %s%s%s",
                                 p->fail_phase ? " in phase " : "",
                                 p->fail_phase ? p->fail_phase : "", msg,
                                 p->fail_class ? "; class " : "",
                                 p->fail_class ? p->fail_class : ""));
        } else if (!p->cuda_fault) {
            c->verdict = "crashed";
            set_why(c, xasprintf("%s: %s; not a CUDA fault: not diagnosed with "
                                 "CUDA_LAUNCH_BLOCKING=1",
                                 p->fail_class ? p->fail_class : "failed", msg));
        } else if (c->diag.done && c->diag.launch_blocking && !strcmp(c->diag.launch_blocking, "crashed")) {
            c->verdict = "kernel-fault";
            set_why(c, xasprintf("failed with CUDA_LAUNCH_BLOCKING=1 too; the fault is pinned at %s%s%s",
                                 c->diag.pinned_site ? c->diag.pinned_site : "an unknown site",
                                 c->diag.launch_site && (!c->diag.pinned_site ||
                                                         strcmp(c->diag.launch_site, c->diag.pinned_site))
                                     ? ", launched from "
                                     : "",
                                 c->diag.launch_site && (!c->diag.pinned_site ||
                                                         strcmp(c->diag.launch_site, c->diag.pinned_site))
                                     ? c->diag.launch_site
                                     : ""));
        } else if (c->diag.done && c->diag.launch_blocking &&
                   !strcmp(c->diag.launch_blocking, "clean") &&
                   c->diag.requests_clean >= c->diag.requests_required) {
            c->verdict = "async-race";
            if (c->diag.throughput_ratio > 0)
                set_why(c, xasprintf("crashed normally (%s) but ran %lu requests clean with "
                                     "CUDA_LAUNCH_BLOCKING=1 (%lu required) at %.2fx speed",
                                     p->fail_class ? p->fail_class : "failure",
                                     c->diag.requests_clean, c->diag.requests_required,
                                     c->diag.throughput_ratio));
            else
                set_why(c, xasprintf("crashed normally but ran %lu requests clean with "
                                     "CUDA_LAUNCH_BLOCKING=1 (%lu required)",
                                     c->diag.requests_clean, c->diag.requests_required));
        } else {
            c->verdict = "crashed";
            if (c->diag.note)
                set_why(c, xasprintf("%s: %s; %s", p->fail_class ? p->fail_class : "failed", msg,
                                     c->diag.note));
            else
                set_why(c, xasprintf("%s: %s", p->fail_class ? p->fail_class : "failed", msg));
        }
        break;
    case MP_OUT_INTERRUPTED:
        c->verdict = NULL;
        set_why(c, xstrdup("interrupted before it finished"));
        break;
    }
}

/* A knob that did not reach the engine: the run tested something else than
 * the candidate names, whatever it measured (also when it was stopped as the
 * same configuration as another candidate, or once resolved by `moeprobe
 * resolve`: the road it shows is not the candidate's). */
static void mark_not_delivered(struct mp_report *rep)
{
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *p = mp_cand_primary(c);
        const struct mp_knob_dlv *miss = mp_attempt_find_dlv(p, MP_DLV_MISSING);
        if (!miss || c->unfinished ||
            (!c->verdict && p->outcome != MP_OUT_SAME_CONFIG && p->outcome != MP_OUT_RESOLVED))
            continue;
        char *w = xasprintf("%s did not reach the engine (%s): this run did not test what the "
                            "candidate names (it ran %s: %s)",
                            miss->knob, miss->evidence,
                            c->verdict                            ? c->verdict
                            : p->outcome == MP_OUT_RESOLVED ? "to its selections only"
                                                            : "as the same configuration as another",
                            c->why ? c->why : "");
        c->verdict = mp_verdict_name(MP_V_NOT_DELIVERED);
        set_why(c, w);
    }
}

static bool not_delivered(const struct mp_cand_report *c)
{
    return c->verdict && !strcmp(c->verdict, mp_verdict_name(MP_V_NOT_DELIVERED));
}

/* same destination, different road */
static void compute_groups(struct mp_report *rep)
{
    bool *used = xcalloc(rep->n + 1, sizeof(*used));
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *a = mp_cand_primary(&rep->c[i]);
        if (used[i] || !a || !a->res.moe_backend || not_delivered(&rep->c[i]))
            continue;
        struct mp_strv names = MP_STRV_INIT;
        mp_strv_push(&names, rep->c[i].cand.name);
        for (size_t k = i + 1; k < rep->n; k++) {
            const struct mp_attempt_result *b = mp_cand_primary(&rep->c[k]);
            if (!used[k] && b && !not_delivered(&rep->c[k]) && same_resolved(a, b)) {
                used[k] = true;
                mp_strv_push(&names, rep->c[k].cand.name);
            }
        }
        if (names.n < 2) {
            mp_strv_release(&names);
            continue;
        }
        rep->groups = xreallocarray(rep->groups, rep->ngroups + 1, sizeof(*rep->groups));
        struct mp_group *g = &rep->groups[rep->ngroups++];
        g->moe_backend = a->res.moe_backend;
        g->linear_kernel = a->res.linear_kernel;
        g->attention_backend = a->res.attention_backend;
        g->candidates = names;
    }
    free(used);
}

static void add_noop(struct mp_report *rep, const struct mp_attempt_result *a, const char *cand,
                     const char *knob, const char *like, const char *warning_var)
{
    rep->noop = xreallocarray(rep->noop, rep->nnoop + 1, sizeof(*rep->noop));
    struct mp_noop *k = &rep->noop[rep->nnoop++];
    k->candidate = xstrdup(cand);
    k->knob = mp_redact_assignment(knob);
    k->resolved_like = xstrdup(like);
    k->engine_warning = warning_var
                            ? xasprintf("Unknown vLLM environment variable detected: %s", warning_var)
                            : NULL;
    k->delivery = NULL;
    k->delivery_evidence = NULL;
    for (size_t i = 0; a && i < a->ndlv; i++) {
        if (strcmp(a->dlv[i].knob, k->knob) != 0)
            continue;
        k->delivery = mp_dlv_status_name(a->dlv[i].status);
        if (a->dlv[i].status != MP_DLV_VERIFIED)
            k->delivery_evidence = xstrdup(a->dlv[i].evidence);
        break;
    }
}

/* knobs whose candidate resolved exactly like the knob-less one */
static void compute_noop(struct mp_report *rep)
{
    const struct mp_cand_report *base = NULL;
    for (size_t i = 0; i < rep->n && !base; i++) {
        if (mp_candidate_nknobs(&rep->c[i].cand) == 0 && mp_cand_primary(&rep->c[i]))
            base = &rep->c[i];
    }
    const struct mp_attempt_result *ba = base ? mp_cand_primary(base) : NULL;
    if (!ba || !ba->res.moe_backend)
        return;
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *a = mp_cand_primary(c);
        if (c == base || !a || mp_candidate_nknobs(&c->cand) == 0 || !same_resolved(a, ba) ||
            not_delivered(c))
            continue;
        for (size_t k = 0; k < c->cand.env.n; k++) {
            const char *w = c->cand.env.v[k];
            size_t nl = (size_t)(strchr(w, '=') - w);
            const char *warn = NULL;
            for (size_t u = 0; u < a->res.unknown_env.n; u++) {
                if (strlen(a->res.unknown_env.v[u]) == nl && !strncmp(a->res.unknown_env.v[u], w, nl))
                    warn = a->res.unknown_env.v[u];
            }
            add_noop(rep, a, c->cand.name, w, base->cand.name, warn);
        }
        /* flags: one entry per flag group ("--moe-backend cutlass") */
        struct buf g = BUF_INIT;
        for (size_t k = 0; k <= c->cand.args.n; k++) {
            const char *w = k < c->cand.args.n ? c->cand.args.v[k] : NULL;
            if ((!w || w[0] == '-') && g.len) {
                add_noop(rep, a, c->cand.name, g.data, base->cand.name, NULL);
                buf_reset(&g);
            }
            if (w) {
                if (g.len)
                    buf_addc(&g, ' ');
                buf_adds(&g, w);
            }
        }
        buf_release(&g);
    }
}

/* The output check: compare the primary attempts' greedy answers; a stable
 * candidate whose answers are garbage becomes garbage-output. */
static void output_check(struct mp_report *rep)
{
    const struct mp_sanity_set *set = mp_sanity_builtin();
    struct mp_qcand_in *in = xcalloc(rep->n + 1, sizeof(*in));
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        in[i].name = rep->c[i].cand.name;
        if (p && p->outcome == MP_OUT_CLEAN && p->nquality && !rep->c[i].unfinished) {
            in[i].texts = (const char *const *)p->quality_texts;
            in[i].ntexts = p->nquality;
        }
    }
    mp_qcheck_release(&rep->qc);
    mp_qcheck_run(set, in, rep->n, &rep->qc);
    free(in);
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_cand_report *c = &rep->c[i];
        const struct mp_qcand_out *q = &rep->qc.c[i];
        if (!c->verdict || strcmp(c->verdict, "stable") != 0 || q->status == MP_QC_NOT_RUN)
            continue;
        if (q->status == MP_QC_GARBAGE) {
            c->verdict = "garbage-output";
            set_why(c, xasprintf("served every request without an error, but its %s", q->why));
        } else {
            char *w = xasprintf("%s; output check passed (%zu of %zu sanity prompts)", c->why,
                                q->passed, rep->qc.nprompts);
            set_why(c, w);
        }
    }
}

static size_t cand_nknobs(const struct mp_cand_report *c)
{
    return mp_candidate_nknobs(&c->cand);
}

void mp_report_fill_fingerprint(struct mp_report *rep)
{
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        if (!p)
            continue;
        if (!rep->fp.engine_version && p->res.engine_version) {
            rep->fp.engine_version = xstrdup(p->res.engine_version);
            free(rep->fp.engine);
            rep->fp.engine = xstrdup("vllm");
        }
        if (!rep->fp.model && p->res.model)
            rep->fp.model = xstrdup(p->res.model);
    }
}

/* What a candidate cost: engine starts, the engines' lifetime (spawn to
 * teardown), the time spent driving load. */
struct cost {
    size_t starts;
    double engine_s, workload_s;
};

static struct cost cand_cost(const struct mp_cand_report *c)
{
    struct cost k = {0, 0, 0};
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->outcome == MP_OUT_ERROR && a->wall_s <= 0)
            continue; /* never started */
        k.starts++;
        k.engine_s += a->wall_s > 0 ? a->wall_s : 0;
        k.workload_s += a->workload_s > 0 ? a->workload_s : 0;
    }
    return k;
}

/* Seconds between two ISO 8601 times of the report, <0 when unknown. */
static double iso_span(const char *a, const char *b)
{
    struct tm ta, tb;
    memset(&ta, 0, sizeof(ta));
    memset(&tb, 0, sizeof(tb));
    if (!a || !b || !strptime(a, "%Y-%m-%dT%H:%M:%S", &ta) || !strptime(b, "%Y-%m-%dT%H:%M:%S", &tb))
        return -1;
    return difftime(timegm(&tb), timegm(&ta));
}

static bool is_same_config(const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    return p && p->outcome == MP_OUT_SAME_CONFIG;
}

/* The attempt whose numbers a candidate shows: its own first normal
 * attempt, or for a shared result its representative's. */
static const struct mp_attempt_result *numbers_attempt(const struct mp_report *rep,
                                                       const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    if (!p || p->outcome != MP_OUT_SAME_CONFIG || !p->same_as)
        return p;
    for (size_t j = 0; j < rep->n; j++) {
        if (&rep->c[j] != c && !strcmp(rep->c[j].cand.name, p->same_as) && !is_same_config(&rep->c[j]))
            return mp_cand_primary(&rep->c[j]) ? mp_cand_primary(&rep->c[j]) : p;
    }
    return p;
}

/* A candidate stopped as the same configuration as one tested already
 * shares that one's verdict (after its output check), stated as shared. */
static void share_same(struct mp_report *rep)
{
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_cand_report *c = &rep->c[i];
        if (!is_same_config(c))
            continue;
        const struct mp_attempt_result *p = mp_cand_primary(c);
        const struct mp_cand_report *r = NULL;
        for (size_t j = 0; j < rep->n && !r; j++) {
            if (j != i && p->same_as && !strcmp(rep->c[j].cand.name, p->same_as) &&
                !is_same_config(&rep->c[j]))
                r = &rep->c[j];
        }
        if (!r || !r->verdict) {
            c->verdict = NULL;
            set_why(c, xasprintf("the same configuration as '%s', whose result is not in this "
                                 "report (%s)",
                                 p->same_as ? p->same_as : "?", p->same_why ? p->same_why : ""));
            continue;
        }
        c->verdict = r->verdict;
        set_why(c, xasprintf("shared with '%s', not tested again: %s; '%s' was %s: %s", r->cand.name,
                             p->same_why ? p->same_why : "the same configuration", r->cand.name,
                             r->verdict, r->why ? r->why : ""));
    }
}

void mp_report_finalize(struct mp_report *rep)
{
    mp_report_derived_release(rep);
    for (size_t i = 0; i < rep->n; i++)
        finalize_candidate(&rep->c[i]);
    output_check(rep);
    share_same(rep);
    mark_not_delivered(rep);
    mp_report_fill_fingerprint(rep);
    compute_groups(rep);
    compute_noop(rep);
    /* recommendation: fastest stable (sequential, then concurrency), ties to fewer knobs */
    rep->recommended = -1;
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_cand_report *c = &rep->c[i];
        if (!c->verdict || strcmp(c->verdict, "stable") != 0 || is_same_config(c))
            continue; /* a shared result is recommended as its representative */
        if (rep->recommended < 0) {
            rep->recommended = (int)i;
            continue;
        }
        const struct mp_cand_report *b = &rep->c[rep->recommended];
        double s1 = seq_tok_s(mp_cand_primary(c)), s0 = seq_tok_s(mp_cand_primary(b));
        double c1 = best_conc_tok_s(mp_cand_primary(c)), c0 = best_conc_tok_s(mp_cand_primary(b));
        /* within 1 %: a tie on that measure */
        bool seq_tie = fabs(s1 - s0) <= 0.01 * MP_MAX(s1, s0);
        bool conc_tie = fabs(c1 - c0) <= 0.01 * MP_MAX(c1, c0);
        bool better = false;
        if (!seq_tie)
            better = s1 > s0;
        else if (!conc_tie)
            better = c1 > c0;
        else
            better = cand_nknobs(c) < cand_nknobs(b);
        if (better)
            rep->recommended = (int)i;
    }
    free(rep->recommendation_why);
    rep->recommendation_why = NULL;
    mp_strv_release(&rep->learned);
    if (rep->recommended >= 0) {
        const struct mp_cand_report *c = &rep->c[rep->recommended];
        const struct mp_attempt_result *p = mp_cand_primary(c);
        double s = seq_tok_s(p), cc = best_conc_tok_s(p);
        size_t nstable = 0;
        for (size_t i = 0; i < rep->n; i++)
            nstable += rep->c[i].verdict && !strcmp(rep->c[i].verdict, "stable");
        struct buf w = BUF_INIT;
        buf_printf(&w, "%s of %zu stable candidate%s", nstable == 1 ? "the only one" : "fastest",
                   nstable, nstable == 1 ? "" : "s");
        if (s >= 0)
            buf_printf(&w, ": %.1f tok/s sequential", s);
        if (cc >= 0)
            buf_printf(&w, "%s%.1f tok/s best concurrency", s >= 0 ? ", " : ": ", cc);
        buf_printf(&w, "; MoE backend %s; 0 failures in %lu requests (95%% upper bound on the "
                       "failure rate %.3f)",
                   p->res.moe_backend ? p->res.moe_backend : "(not logged)", p->req_ok,
                   mp_stats_failure_upper95(p->req_ok));
        rep->recommendation_why = buf_detach(&w, NULL);
    } else {
        for (size_t i = 0; i < rep->n; i++) {
            const struct mp_cand_report *c = &rep->c[i];
            if (c->verdict && !strcmp(c->verdict, "async-race")) {
                char *s;
                if (c->diag.throughput_ratio > 0)
                    s = xasprintf("%s works only with CUDA_LAUNCH_BLOCKING=1 at %.2fx speed",
                                  c->cand.name, c->diag.throughput_ratio);
                else
                    s = xasprintf("%s works only with CUDA_LAUNCH_BLOCKING=1", c->cand.name);
                mp_strv_push_owned(&rep->learned, s);
            }
        }
        for (size_t i = 0; i < rep->n; i++) {
            const struct mp_cand_report *c = &rep->c[i];
            if (c->verdict && !strcmp(c->verdict, "garbage-output"))
                mp_strv_push_owned(&rep->learned,
                                   xasprintf("%s serves without errors but its output is garbage",
                                             c->cand.name));
        }
        for (size_t i = 0; i < rep->n; i++) {
            const struct mp_cand_report *c = &rep->c[i];
            const struct mp_knob_dlv *m = mp_attempt_find_dlv(mp_cand_primary(c), MP_DLV_MISSING);
            if (not_delivered(c) && m)
                mp_strv_push_owned(&rep->learned,
                                   xasprintf("%s was not tested: %s did not reach the engine",
                                             c->cand.name, m->knob));
        }
        if (rep->qc.note)
            mp_strv_push(&rep->learned, rep->qc.note);
        size_t nunf = mp_report_nunfinished(rep);
        if (!rep->learned.n && nunf == 0)
            mp_strv_push(&rep->learned, "no candidate ran every phase without a failure");
        else if (!rep->learned.n && nunf < rep->n)
            mp_strv_push(&rep->learned, "no finished candidate ran every phase without a failure");
        if (nunf)
            mp_strv_push_owned(&rep->learned,
                               xasprintf("%zu of %zu candidate%s unfinished: the run stopped "
                                         "before %s finished",
                                         nunf, rep->n, rep->n == 1 ? " is" : "s are",
                                         nunf == 1 ? "it" : "they"));
    }
}

/* ---------- JSON ---------- */

static cJSON *jstr(const char *s)
{
    if (!s)
        return cJSON_CreateNull();
    char *clean = mp_utf8_clean(s, strlen(s));
    cJSON *j = cJSON_CreateString(clean);
    free(clean);
    return j;
}

static cJSON *jnum_or_null(double v)
{
    return v < 0 || isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(round(v * 1000) / 1000);
}

static cJSON *gpu_stat_json(const struct mp_gpu_stat *s)
{
    if (!s->n)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "min", round(s->min * 10) / 10);
    cJSON_AddNumberToObject(o, "median", round(s->median * 10) / 10);
    cJSON_AddNumberToObject(o, "max", round(s->max * 10) / 10);
    return o;
}

/* An attempt's GPU telemetry, or null when it was not sampled. */
static cJSON *gpu_json(const struct mp_gpu_telemetry *g)
{
    if (!g->samples)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "samples", (double)g->samples);
    cJSON_AddItemToObject(o, "sm_clock_mhz", gpu_stat_json(&g->sm_clock_mhz));
    cJSON_AddItemToObject(o, "temperature_c", gpu_stat_json(&g->temperature_c));
    cJSON_AddItemToObject(o, "power_w", gpu_stat_json(&g->power_w));
    cJSON_AddItemToObject(o, "memory_used_mib", gpu_stat_json(&g->memory_used_mib));
    cJSON *r = cJSON_AddArrayToObject(o, "throttle_reasons");
    char words[256];
    mp_gpu_reasons_str(g->throttle_reasons, words, sizeof(words));
    char *save = NULL;
    for (char *w = strtok_r(words, ", ", &save); w; w = strtok_r(NULL, ", ", &save))
        cJSON_AddItemToArray(r, cJSON_CreateString(w));
    return o;
}

/* What makes the candidates' numbers not comparable: first attempts whose
 * median SM clocks differ by more than 5 %, throttling, or no telemetry at
 * all (sentences into out). */
static void gpu_comparability(const struct mp_report *rep, struct mp_strv *out)
{
    size_t sampled = 0, ran = 0;
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *a = mp_cand_primary(&rep->c[i]);
        if (!a || a->workload_s <= 0)
            continue;
        ran++;
        sampled += a->gpu.samples > 0;
        if (a->gpu.throttle_reasons) {
            char words[256];
            mp_gpu_reasons_str(a->gpu.throttle_reasons, words, sizeof(words));
            mp_strv_push_owned(out, xasprintf("%s: the GPU throttled its clocks (%s) while it ran",
                                              rep->c[i].cand.name, words));
        }
        for (size_t j = 0; j < i; j++) {
            const struct mp_attempt_result *b = mp_cand_primary(&rep->c[j]);
            if (!b || b->workload_s <= 0 || !a->gpu.sm_clock_mhz.n || !b->gpu.sm_clock_mhz.n)
                continue;
            double x = a->gpu.sm_clock_mhz.median, y = b->gpu.sm_clock_mhz.median;
            double d = fabs(x - y) / MP_MAX(x, y);
            if (d > 0.05)
                mp_strv_push_owned(
                    out, xasprintf("%s (%.0f MHz median SM clock) and %s (%.0f MHz) ran at clocks "
                                   "%.0f %% apart: their throughput is not directly comparable",
                                   rep->c[j].cand.name, y, rep->c[i].cand.name, x, d * 100));
        }
    }
    if (ran && !sampled)
        mp_strv_push(out, "GPU clocks were not sampled (no NVML): throughput comparisons assume "
                          "the GPU ran at the same clocks for every candidate");
}

static cJSON *jstrv(const struct mp_strv *s)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < s->n; i++)
        cJSON_AddItemToArray(a, jstr(s->v[i]));
    return a;
}

static double pct(const double *v, size_t n, double q)
{
    if (!n)
        return -1;
    double *tmp = xmalloc(n * sizeof(*tmp));
    memcpy(tmp, v, n * sizeof(*tmp));
    double r = mp_stats_percentile(tmp, n, q);
    free(tmp);
    return r;
}

static void add_evidence(cJSON *ev, const struct mp_report *rep, const struct mp_attempt_result *a,
                         long line)
{
    if (!a || line == 0)
        return;
    const char *dir = a->dir;
    size_t rl = strlen(rep->run_dir);
    if (!strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
        dir += rl + 1;
    /* line < 0: -N is line N of requests.jsonl (the first bad response) */
    char *s = line > 0 ? xasprintf("%s/server.log:%ld", dir, line)
                       : xasprintf("%s/requests.jsonl:%ld", dir, -line);
    for (int i = 0; i < cJSON_GetArraySize(ev); i++) {
        if (!strcmp(cJSON_GetArrayItem(ev, i)->valuestring, s)) {
            free(s);
            return;
        }
    }
    cJSON_AddItemToArray(ev, cJSON_CreateString(s));
    free(s);
}

static cJSON *qcheck_cand_json(const struct mp_report *rep, size_t i)
{
    const struct mp_qcheck *q = &rep->qc;
    if (i >= q->n || q->c[i].status == MP_QC_NOT_RUN)
        return cJSON_CreateNull();
    const struct mp_qcand_out *c = &q->c[i];
    const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
    const struct mp_sanity_set *set = mp_sanity_builtin();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "result", c->status == MP_QC_OK ? "pass" : "garbage");
    cJSON_AddNumberToObject(o, "passed", (double)c->passed);
    cJSON_AddNumberToObject(o, "wrong", (double)c->wrong);
    cJSON_AddNumberToObject(o, "degenerate", (double)c->degenerate);
    cJSON_AddNumberToObject(o, "prompts", (double)q->nprompts);
    cJSON_AddItemToObject(o, "why", jstr(c->why));
    cJSON *arr = cJSON_AddArrayToObject(o, "answers");
    for (size_t k = 0; k < q->nprompts; k++) {
        const char *t = p && k < p->nquality ? p->quality_texts[k] : NULL;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "id", set->p[k].id);
        cJSON_AddStringToObject(e, "prompt", set->p[k].prompt);
        char *quoted = mp_quality_quote(t, 200);
        cJSON_AddItemToObject(e, "output", jstr(quoted));
        free(quoted);
        cJSON_AddStringToObject(e, "result", mp_qres_name(c->res[k]));
        cJSON_AddItemToObject(e, "reason", jstr(c->res_why[k]));
        cJSON_AddItemToArray(arr, e);
    }
    if (c->ref >= 0) {
        cJSON *a = cJSON_AddObjectToObject(o, "agreement");
        cJSON_AddItemToObject(a, "reference", jstr(rep->c[c->ref].cand.name));
        cJSON_AddNumberToObject(a, "identical", (double)c->identical);
        cJSON_AddNumberToObject(a, "compared", (double)c->compared);
        if (c->diff_prompt >= 0) {
            cJSON *d = cJSON_AddObjectToObject(a, "first_difference");
            cJSON_AddStringToObject(d, "prompt", set->p[c->diff_prompt].id);
            cJSON_AddNumberToObject(d, "token", (double)c->diff_token);
            cJSON_AddItemToObject(d, "this", jstr(c->diff_this));
            cJSON_AddItemToObject(d, "reference", jstr(c->diff_ref));
        } else {
            cJSON_AddNullToObject(a, "first_difference");
        }
    } else {
        cJSON_AddNullToObject(o, "agreement");
    }
    return o;
}

static cJSON *cand_json(const struct mp_report *rep, const struct mp_cand_report *c)
{
    cJSON *o = cJSON_CreateObject();
    const struct mp_attempt_result *p = mp_cand_primary(c);
    cJSON_AddItemToObject(o, "name", jstr(c->cand.name));
    cJSON *knobs = cJSON_AddObjectToObject(o, "knobs");
    cJSON *env = cJSON_AddObjectToObject(knobs, "env");
    for (size_t i = 0; i < c->cand.env.n; i++) {
        const char *w = c->cand.env.v[i];
        const char *eq = strchr(w, '=');
        char *name = xstrndup(w, (size_t)(eq - w));
        bool secret = mp_is_secret_name(name, strlen(name));
        cJSON_AddItemToObject(env, name, jstr(secret ? "***" : eq + 1));
        free(name);
    }
    cJSON_AddItemToObject(knobs, "args", jstrv(&c->cand.args));
    cJSON *res = cJSON_AddObjectToObject(o, "resolved");
    cJSON_AddItemToObject(res, "moe_backend", jstr(p ? p->res.moe_backend : NULL));
    cJSON_AddItemToObject(res, "moe_candidates", p ? jstrv(&p->res.moe_candidates) : cJSON_CreateArray());
    cJSON_AddItemToObject(res, "linear_kernel", jstr(p ? p->res.linear_kernel : NULL));
    cJSON *lk = cJSON_AddObjectToObject(res, "linear_kernels");
    for (size_t i = 0; p && i < p->res.linear_kernels.n; i++) {
        const char *kv = p->res.linear_kernels.v[i], *eq = strchr(kv, '=');
        if (!eq)
            continue;
        char *m = xstrndup(kv, (size_t)(eq - kv));
        cJSON_AddItemToObject(lk, m, jstr(eq + 1));
        free(m);
    }
    cJSON_AddItemToObject(res, "unquantized_moe_backend",
                          jstr(p ? p->res.unquantized_moe_backend : NULL));
    cJSON_AddItemToObject(res, "attention_backend", jstr(p ? p->res.attention_backend : NULL));
    cJSON_AddItemToObject(res, "moe_backend_flag", jstr(p ? p->res.moe_backend_flag : NULL));
    if (p && !p->res.moe_backend && mp_candidate_nknobs(&c->cand) > 0)
        cJSON_AddStringToObject(res, "note", "the engine's log did not say which MoE backend it resolved");
    cJSON_AddItemToObject(o, "unknown_env", p ? jstrv(&p->res.unknown_env) : cJSON_CreateArray());
    cJSON_AddItemToObject(o, "verdict", jstr(c->verdict));
    cJSON_AddItemToObject(o, "why", jstr(c->why));
    bool same = p && p->outcome == MP_OUT_SAME_CONFIG;
    cJSON_AddItemToObject(o, "same_as", jstr(same ? p->same_as : NULL));
    cJSON_AddItemToObject(o, "same_why", jstr(same ? p->same_why : NULL));
    unsigned long ok = 0, failed = 0;
    for (size_t j = 0; j < c->nattempts; j++) {
        if (c->attempts[j].launch_blocking)
            continue;
        ok += c->attempts[j].req_ok;
        failed += c->attempts[j].req_failed;
    }
    cJSON *rq = cJSON_AddObjectToObject(o, "requests");
    cJSON_AddNumberToObject(rq, "ok", (double)ok);
    cJSON_AddNumberToObject(rq, "failed", (double)failed);
    struct cost k = cand_cost(c);
    cJSON *ct = cJSON_AddObjectToObject(o, "cost");
    cJSON_AddNumberToObject(ct, "engine_starts", (double)k.starts);
    cJSON_AddNumberToObject(ct, "engine_seconds", round(k.engine_s * 10) / 10);
    cJSON_AddNumberToObject(ct, "workload_seconds", round(k.workload_s * 10) / 10);
    if (p && p->outcome == MP_OUT_CLEAN)
        cJSON_AddNumberToObject(o, "failure_rate_upper_95",
                                round(mp_stats_failure_upper95(p->req_ok) * 1e4) / 1e4);
    else
        cJSON_AddNullToObject(o, "failure_rate_upper_95");
    /* a shared result shows its representative's numbers */
    const struct mp_attempt_result *np = numbers_attempt(rep, c);
    cJSON *tp = cJSON_AddObjectToObject(o, "throughput");
    cJSON_AddItemToObject(tp, "sequential_tok_s", jnum_or_null(seq_tok_s(np)));
    cJSON *conc = cJSON_AddArrayToObject(tp, "concurrency");
    cJSON *phases = cJSON_CreateArray();
    for (size_t i = 0; np && i < np->nphases; i++) {
        const struct mp_phase_result *ph = &np->phases[i];
        if (!strncmp(ph->name, "concurrency-", 12) && ph->ok > 0) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "level", ph->level);
            cJSON_AddItemToObject(e, "tok_s", jnum_or_null(ph->tok_s));
            cJSON_AddItemToArray(conc, e);
        }
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "phase", ph->name);
        cJSON_AddNumberToObject(e, "level", ph->level);
        cJSON_AddNumberToObject(e, "planned", ph->planned);
        cJSON_AddNumberToObject(e, "ok", ph->ok);
        cJSON_AddNumberToObject(e, "failed", ph->failed);
        cJSON_AddItemToObject(e, "wall_s", jnum_or_null(ph->wall_s));
        cJSON_AddItemToObject(e, "tok_s", jnum_or_null(ph->tok_s));
        cJSON_AddItemToObject(e, "request_tok_s_p50", jnum_or_null(ph->req_tok_s_p50 > 0 ? ph->req_tok_s_p50 : -1));
        cJSON_AddItemToArray(phases, e);
    }
    cJSON_AddItemToObject(tp, "phases", phases);
    cJSON *lat = cJSON_AddObjectToObject(o, "latency_ms");
    cJSON_AddItemToObject(lat, "ttft_p50", jnum_or_null(np ? pct(np->ttft_ms, np->nttft, 50) : -1));
    cJSON_AddItemToObject(lat, "ttft_p99", jnum_or_null(np ? pct(np->ttft_ms, np->nttft, 99) : -1));
    cJSON_AddItemToObject(lat, "itl_p50", jnum_or_null(np ? pct(np->itl_ms, np->nitl, 50) : -1));
    cJSON_AddItemToObject(lat, "itl_p99", jnum_or_null(np ? pct(np->itl_ms, np->nitl, 99) : -1));
    cJSON_AddItemToObject(lat, "e2e_p50", jnum_or_null(np ? pct(np->e2e_ms, np->ne2e, 50) : -1));
    cJSON_AddItemToObject(lat, "e2e_p99", jnum_or_null(np ? pct(np->e2e_ms, np->ne2e, 99) : -1));

    /* crash: the first failing normal attempt; sites across all normal attempts */
    const struct mp_attempt_result *f = NULL;
    struct mp_strv sites = MP_STRV_INIT;
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->launch_blocking || (a->outcome != MP_OUT_CRASH && a->outcome != MP_OUT_HANG &&
                                   a->outcome != MP_OUT_STARTUP_FAILURE))
            continue;
        if (!f)
            f = a;
        for (size_t s = 0; s < a->sites.n; s++) {
            bool seen = false;
            for (size_t t = 0; t < sites.n; t++)
                seen = seen || !strcmp(sites.v[t], a->sites.v[s]);
            if (!seen)
                mp_strv_push(&sites, a->sites.v[s]);
        }
    }
    if (f) {
        cJSON *cr = cJSON_AddObjectToObject(o, "crash");
        cJSON_AddItemToObject(cr, "class", jstr(f->fail_class));
        cJSON_AddItemToObject(cr, "message", jstr(f->fail_message));
        cJSON_AddNumberToObject(cr, "after_requests", (double)f->ok_before_failure);
        cJSON_AddItemToObject(cr, "phase", jstr(f->fail_phase));
        cJSON_AddItemToObject(cr, "sites", jstrv(&sites));
        cJSON_AddNumberToObject(cr, "distinct_sites", (double)sites.n);
        cJSON_AddItemToObject(cr, "launch_site", jstr(f->launch_site));
        cJSON_AddBoolToObject(cr, "engine_dead", f->engine_dead);
        cJSON_AddItemToObject(cr, "exit", jstr(f->exit_desc));
    } else {
        cJSON_AddNullToObject(o, "crash");
    }
    mp_strv_release(&sites);
    if (c->diag.done) {
        cJSON *d = cJSON_AddObjectToObject(o, "diagnosis");
        cJSON_AddItemToObject(d, "launch_blocking", jstr(c->diag.launch_blocking));
        cJSON_AddNumberToObject(d, "requests_clean", (double)c->diag.requests_clean);
        cJSON_AddNumberToObject(d, "requests_required", (double)c->diag.requests_required);
        cJSON_AddNumberToObject(d, "confidence", c->diag.confidence);
        cJSON_AddItemToObject(d, "throughput_ratio", jnum_or_null(c->diag.throughput_ratio));
        cJSON_AddItemToObject(d, "pinned_site", jstr(c->diag.pinned_site));
        cJSON_AddItemToObject(d, "launch_site", jstr(c->diag.launch_site));
        cJSON_AddItemToObject(d, "reasoning", jstr(c->diag.reasoning));
        cJSON_AddItemToObject(d, "note", jstr(c->diag.note));
    } else {
        cJSON_AddNullToObject(o, "diagnosis");
    }
    cJSON_AddItemToObject(o, "output_check", qcheck_cand_json(rep, (size_t)(c - rep->c)));
    cJSON_AddBoolToObject(o, "finished", !c->unfinished);
    cJSON *kd = cJSON_AddArrayToObject(o, "knob_delivery");
    for (size_t j = 0; p && j < p->ndlv; j++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "knob", jstr(p->dlv[j].knob));
        cJSON_AddStringToObject(e, "status", mp_dlv_status_name(p->dlv[j].status));
        cJSON_AddItemToObject(e, "evidence", jstr(p->dlv[j].evidence));
        cJSON_AddItemToArray(kd, e);
    }
    cJSON *ev = cJSON_AddArrayToObject(o, "evidence");
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        add_evidence(ev, rep, a, a->res.moe_backend_line);
        add_evidence(ev, rep, a, a->res.unknown_env_line);
        add_evidence(ev, rep, a, a->fail_line);
        if (a->outcome == MP_OUT_CRASH && !a->cuda_fault && a->fail_request_line > 0)
            add_evidence(ev, rep, a, -a->fail_request_line);
    }
    cJSON *atts = cJSON_AddArrayToObject(o, "attempts");
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        cJSON *e = cJSON_CreateObject();
        const char *dir = a->dir;
        size_t rl = strlen(rep->run_dir);
        if (!strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
            dir += rl + 1;
        cJSON_AddItemToObject(e, "dir", jstr(dir));
        cJSON_AddBoolToObject(e, "launch_blocking", a->launch_blocking);
        cJSON_AddStringToObject(e, "outcome", mp_outcome_name(a->outcome));
        cJSON_AddItemToObject(e, "command", jstr(a->command));
        cJSON_AddNumberToObject(e, "requests_ok", (double)a->req_ok);
        cJSON_AddNumberToObject(e, "requests_failed", (double)a->req_failed);
        cJSON_AddItemToObject(e, "ready_s", jnum_or_null(a->ready_s));
        if (a->announced_port > 0)
            cJSON_AddNumberToObject(e, "announced_port", a->announced_port);
        else
            cJSON_AddNullToObject(e, "announced_port");
        cJSON_AddItemToObject(e, "workload_s", jnum_or_null(a->workload_s));
        cJSON_AddItemToObject(e, "teardown_s", jnum_or_null(a->teardown_s));
        cJSON_AddItemToObject(e, "wall_s", jnum_or_null(a->wall_s));
        cJSON_AddItemToObject(e, "request_tok_s_p50", jnum_or_null(median_req_rate(a)));
        cJSON_AddItemToObject(e, "exit", jstr(a->exit_desc));
        cJSON_AddItemToObject(e, "gpu_telemetry", gpu_json(&a->gpu));
        cJSON *td = cJSON_AddObjectToObject(e, "teardown");
        cJSON_AddBoolToObject(td, "killed", a->teardown_killed);
        cJSON_AddNumberToObject(td, "escapees_killed", a->escapees_killed);
        cJSON_AddNumberToObject(td, "leftovers", a->teardown_leftovers);
        cJSON_AddItemToArray(atts, e);
    }
    return o;
}

void mp_report_json(const struct mp_report *rep, struct buf *out)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "moeprobe_version", rep->moeprobe_version);
    cJSON *fp = cJSON_AddObjectToObject(root, "fingerprint");
    cJSON_AddItemToObject(fp, "gpu", jstr(rep->fp.gpu));
    cJSON_AddItemToObject(fp, "compute_capability", jstr(rep->fp.compute_capability));
    cJSON_AddItemToObject(fp, "driver", jstr(rep->fp.driver));
    cJSON_AddItemToObject(fp, "cuda", jstr(rep->fp.cuda));
    cJSON_AddItemToObject(fp, "engine", jstr(rep->fp.engine));
    cJSON_AddItemToObject(fp, "engine_version", jstr(rep->fp.engine_version));
    cJSON_AddItemToObject(fp, "model", jstr(rep->fp.model));
    cJSON_AddItemToObject(fp, "host_arch", jstr(rep->fp.host_arch));
    if (rep->checkpoint_json) {
        cJSON *ck = cJSON_Parse(rep->checkpoint_json);
        if (ck)
            cJSON_AddItemToObject(fp, "checkpoint", ck);
    }
    cJSON_AddItemToObject(root, "started", jstr(rep->started));
    cJSON_AddItemToObject(root, "finished", jstr(rep->finished));
    cJSON_AddItemToObject(root, "wall_seconds", jnum_or_null(iso_span(rep->started, rep->finished)));
    if (rep->interrupted)
        cJSON_AddBoolToObject(root, "interrupted", true);
    if (mp_report_incomplete(rep)) {
        /* the banner's facts: what is unfinished, and how to continue */
        cJSON_AddBoolToObject(root, "incomplete", true);
        cJSON *un = cJSON_AddArrayToObject(root, "unfinished_candidates");
        for (size_t i = 0; i < rep->n; i++)
            if (rep->c[i].unfinished)
                cJSON_AddItemToArray(un, jstr(rep->c[i].cand.name));
        char *rc = mp_report_resume_command(rep);
        cJSON_AddItemToObject(root, "resume_command", jstr(rc));
        free(rc);
    }
    cJSON *cands = cJSON_AddArrayToObject(root, "candidates");
    for (size_t i = 0; i < rep->n; i++)
        cJSON_AddItemToArray(cands, cand_json(rep, &rep->c[i]));

    cJSON *groups = cJSON_AddArrayToObject(root, "same_backend_groups");
    for (size_t i = 0; i < rep->ngroups; i++) {
        const struct mp_group *g = &rep->groups[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "moe_backend", jstr(g->moe_backend));
        cJSON_AddItemToObject(e, "linear_kernel", jstr(g->linear_kernel));
        cJSON_AddItemToObject(e, "attention_backend", jstr(g->attention_backend));
        cJSON_AddItemToObject(e, "candidates", jstrv(&g->candidates));
        cJSON_AddItemToArray(groups, e);
    }
    struct mp_strv cmp = MP_STRV_INIT;
    gpu_comparability(rep, &cmp);
    cJSON_AddItemToObject(root, "comparability", jstrv(&cmp));
    mp_strv_release(&cmp);
    cJSON *noop = cJSON_AddArrayToObject(root, "noop_knobs");
    for (size_t i = 0; i < rep->nnoop; i++) {
        const struct mp_noop *k = &rep->noop[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "candidate", jstr(k->candidate));
        cJSON_AddItemToObject(e, "knob", jstr(k->knob));
        cJSON_AddItemToObject(e, "resolved_like", jstr(k->resolved_like));
        if (k->engine_warning)
            cJSON_AddItemToObject(e, "engine_warning", jstr(k->engine_warning));
        if (k->delivery)
            cJSON_AddStringToObject(e, "delivery", k->delivery);
        if (k->delivery_evidence)
            cJSON_AddItemToObject(e, "delivery_evidence", jstr(k->delivery_evidence));
        cJSON_AddItemToArray(noop, e);
    }
    if (rep->recommended >= 0) {
        cJSON *r = cJSON_AddObjectToObject(root, "recommendation");
        cJSON_AddItemToObject(r, "candidate", jstr(rep->c[rep->recommended].cand.name));
        char *knobs = mp_candidate_knobs_str(&rep->c[rep->recommended].cand);
        cJSON_AddItemToObject(r, "knobs", jstr(knobs));
        free(knobs);
        cJSON_AddItemToObject(r, "why", jstr(rep->recommendation_why));
    } else {
        cJSON_AddNullToObject(root, "recommendation");
    }
    cJSON_AddItemToObject(root, "learned", jstrv(&rep->learned));
    cJSON *qc = cJSON_AddObjectToObject(root, "output_check");
    cJSON_AddStringToObject(qc, "status", rep->qc.status ? rep->qc.status : "not-run");
    cJSON_AddItemToObject(qc, "reference", jstr(rep->qc.ref >= 0 ? rep->c[rep->qc.ref].cand.name : NULL));
    cJSON_AddItemToObject(qc, "note", jstr(rep->qc.note));
    char *txt = cJSON_Print(root);
    buf_adds(out, txt);
    buf_addc(out, '\n');
    free(txt);
    cJSON_Delete(root);
}

/* ---------- Markdown ---------- */

/* Outside text in Markdown (escape.h): table cells, list items, headings;
 * every field from the engine, the checkpoint or the store goes through it. */
static void md_cell(struct buf *b, const char *s, size_t max)
{
    mp_md_text(b, s, max, 0);
}

/* md_cell of each word of v, separated by ", ". */
static void md_list(struct buf *b, const struct mp_strv *v, size_t max)
{
    for (size_t k = 0; k < v->n; k++) {
        buf_adds(b, k ? ", " : "");
        md_cell(b, v->v[k], max);
    }
}

static void md_num(struct buf *b, double v)
{
    if (v < 0)
        buf_adds(b, "—");
    else
        buf_printf(b, "%.1f", v);
}

static const char *rel_dir(const struct mp_report *rep, const char *dir)
{
    size_t rl = strlen(rep->run_dir);
    if (!strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
        return dir + rl + 1;
    return dir;
}

static void md_output_check(const struct mp_report *rep, struct buf *out)
{
    const struct mp_qcheck *q = &rep->qc;
    if (!q->status || !strcmp(q->status, "not-run"))
        return;
    const struct mp_sanity_set *set = mp_sanity_builtin();
    buf_adds(out, "## Output check\n\n");
    buf_printf(out, "Greedy answers to %zu sanity prompts (`data/sanity-prompts.json`), compared "
                    "across candidates", q->nprompts);
    if (q->ref >= 0) {
        buf_adds(out, "; agreement is measured against ");
        md_cell(out, rep->c[q->ref].cand.name, 64);
    }
    buf_adds(out, ".");
    if (q->note) {
        buf_adds(out, " ");
        md_cell(out, q->note, 600);
        buf_adds(out, ".");
    }
    buf_adds(out, "\n\n| candidate | result | passed | identical to reference | first differing token |\n"
                  "|---|---|---:|---:|---|\n");
    for (size_t i = 0; i < q->n; i++) {
        const struct mp_qcand_out *c = &q->c[i];
        if (c->status == MP_QC_NOT_RUN)
            continue;
        buf_adds(out, "| ");
        md_cell(out, rep->c[i].cand.name, 64);
        buf_printf(out, " | %s | %zu/%zu | ", c->status == MP_QC_OK ? "pass" : "**garbage**",
                   c->passed, q->nprompts);
        if (c->ref >= 0)
            buf_printf(out, "%zu/%zu | ", c->identical, c->compared);
        else
            buf_adds(out, "(reference) | ");
        if (c->diff_prompt >= 0) {
            md_cell(out, set->p[c->diff_prompt].id, 40);
            buf_printf(out, " token %ld: ", c->diff_token);
            md_cell(out, c->diff_this, 60);
            buf_adds(out, " vs ");
            md_cell(out, c->diff_ref, 60);
        } else {
            buf_adds(out, "—");
        }
        buf_adds(out, " |\n");
    }
    buf_adds(out, "\n");
    for (size_t i = 0; i < q->n; i++) {
        const struct mp_qcand_out *c = &q->c[i];
        if (c->status != MP_QC_GARBAGE)
            continue;
        buf_adds(out, "- ");
        md_cell(out, rep->c[i].cand.name, 64);
        buf_adds(out, ": ");
        md_cell(out, c->why, 400);
        buf_adds(out, "\n");
    }
    buf_adds(out, "\n");
}

char *mp_report_resume_command(const struct mp_report *rep)
{
    const char *sub = rep->subcommand ? rep->subcommand : "qualify";
    if (strcmp(sub, "qualify") != 0 && strcmp(sub, "diagnose") != 0)
        return NULL;
    char *abs = realpath(rep->run_dir, NULL);
    struct buf b = BUF_INIT;
    buf_printf(&b, "moeprobe %s --resume ", sub);
    buf_add_shell_word(&b, abs ? abs : rep->run_dir);
    free(abs);
    return buf_detach(&b, NULL);
}

/* s as a Markdown code span (escape.h): a fence longer than any run of
 * backticks in it, control characters shown escaped. */
static void md_code(struct buf *b, const char *s)
{
    mp_md_code(b, s, SIZE_MAX, 0);
}

/* The banner of a run that did not finish: how it ended, the unfinished
 * candidates, and the command that continues it. */
static void md_incomplete_banner(const struct mp_report *rep, struct buf *out)
{
    if (!mp_report_incomplete(rep))
        return;
    size_t nunf = mp_report_nunfinished(rep);
    buf_adds(out, rep->interrupted ? "> **This run was interrupted** (by a signal) before it "
                                     "finished"
                                   : "> **This run did not finish** (moeprobe was killed, or "
                                     "the run is still going)");
    if (nunf) {
        buf_printf(out, ": %zu of %zu candidate%s unfinished: ", nunf, rep->n,
                   rep->n == 1 ? " is" : "s are");
        bool first = true;
        for (size_t i = 0; i < rep->n; i++) {
            if (!rep->c[i].unfinished)
                continue;
            buf_adds(out, first ? "" : ", ");
            md_cell(out, rep->c[i].cand.name, 64);
            first = false;
        }
        buf_adds(out, " (no verdict yet; not counted below)");
    }
    buf_adds(out, ".\n>\n");
    char *cmd = mp_report_resume_command(rep);
    if (cmd) {
        buf_adds(out, "> Continue it with ");
        md_code(out, cmd);
        buf_adds(out, " (finished candidates are kept).\n\n");
    } else {
        buf_adds(out, "> A ");
        md_cell(out, rep->subcommand, 32);
        buf_adds(out, " run cannot be resumed: start it again with a new `--out DIR`.\n\n");
    }
    free(cmd);
}

/* " (knob delivery unverified: A, B)" after a verdict, when some knob's
 * delivery could not be checked. */
static void md_unverified_note(struct buf *out, const struct mp_attempt_result *p)
{
    bool any = false;
    for (size_t j = 0; p && j < p->ndlv; j++) {
        if (!mp_dlv_unverified_note(p, j))
            continue;
        buf_adds(out, any ? ", " : " (knob delivery unverified: ");
        md_cell(out, p->dlv[j].knob, 80);
        any = true;
    }
    if (any)
        buf_adds(out, ")");
}

/* The knob delivery lines of a candidate's details. */
static void md_delivery(struct buf *out, const struct mp_attempt_result *p)
{
    if (!p->ndlv)
        return;
    buf_adds(out, "- knob delivery:\n");
    for (size_t j = 0; j < p->ndlv; j++) {
        buf_adds(out, "  - `");
        md_cell(out, p->dlv[j].knob, 200);
        buf_printf(out, "` **%s**: ", mp_dlv_status_name(p->dlv[j].status));
        md_cell(out, p->dlv[j].evidence, 400);
        buf_adds(out, "\n");
    }
}

void mp_report_markdown(const struct mp_report *rep, struct buf *out)
{
    bool resolve_map = mp_report_is_resolve_map(rep);
    buf_adds(out, resolve_map ? "# moeprobe resolve report: which road leads where\n\n"
                              : "# moeprobe qualify report\n\n");
    md_incomplete_banner(rep, out);
    buf_adds(out, "| | |\n|---|---|\n");
    buf_adds(out, "| GPU | ");
    md_cell(out, rep->fp.gpu, 120);
    if (rep->fp.compute_capability) {
        buf_adds(out, " (compute capability ");
        md_cell(out, rep->fp.compute_capability, 16);
        buf_adds(out, ")");
    }
    buf_adds(out, " |\n| engine | ");
    md_cell(out, rep->fp.engine, 40);
    buf_adds(out, " ");
    md_cell(out, rep->fp.engine_version, 60);
    buf_adds(out, " |\n| model | ");
    md_cell(out, rep->fp.model, 200);
    buf_adds(out, " |\n| host | ");
    md_cell(out, rep->fp.host_arch, 120);
    buf_adds(out, " |\n| moeprobe | ");
    md_cell(out, rep->moeprobe_version, 40);
    buf_adds(out, " |\n");
    size_t starts = 0;
    for (size_t i = 0; i < rep->n; i++)
        starts += cand_cost(&rep->c[i]).starts;
    double wall = iso_span(rep->started, rep->finished);
    if (wall >= 0)
        buf_printf(out, "| run | %.0f s wall time, %zu engine start%s |\n", wall, starts,
                   starts == 1 ? "" : "s");
    if (rep->checkpoint_summary) {
        buf_adds(out, "| checkpoint | ");
        md_cell(out, rep->checkpoint_summary, 400);
        buf_adds(out, " |\n");
    }
    buf_adds(out, "\n");
    if (rep->checkpoint_notes.n) {
        buf_adds(out, "What the checkpoint decides (`moeprobe inspect`):\n\n");
        for (size_t i = 0; i < rep->checkpoint_notes.n; i++) {
            buf_adds(out, "- ");
            md_cell(out, rep->checkpoint_notes.v[i], 600);
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }

    buf_adds(out, resolve_map ? "## Resolution only\n\n" : "## Recommendation\n\n");
    if (resolve_map) {
        buf_adds(out, "Each candidate's engine was started and stopped as soon as its kernel "
                      "selections were in the log (`moeprobe resolve`): no load was driven, so "
                      "nothing is recommended. Knob sets that lead to the same kernels are under "
                      "\"Same destination, different road\"; start-up failures are in the table.\n\n");
    } else if (rep->recommended >= 0) {
        const struct mp_cand_report *c = &rep->c[rep->recommended];
        char *knobs = mp_candidate_knobs_str(&c->cand);
        buf_adds(out, "**");
        md_cell(out, c->cand.name, 64);
        buf_adds(out, "**");
        if (knobs[0]) {
            buf_adds(out, " (");
            mp_md_code(out, knobs, 400, 0);
            buf_adds(out, ")");
        }
        buf_adds(out, ": ");
        md_cell(out, rep->recommendation_why, 400);
        buf_adds(out, ".\n\n");
        free(knobs);
    } else {
        buf_adds(out, mp_report_nunfinished(rep) ? "No finished candidate qualified"
                                                 : "No candidate qualified");
        for (size_t i = 0; i < rep->learned.n; i++) {
            buf_adds(out, i ? "; " : ": ");
            md_cell(out, rep->learned.v[i], 300);
        }
        buf_adds(out, ".\n\n");
    }

    buf_adds(out, "## Candidates\n\n");
    buf_adds(out, "| candidate | knobs | resolved MoE backend | verdict | seq tok/s | conc tok/s | "
                  "failures/requests | evidence |\n");
    buf_adds(out, "|---|---|---|---|---:|---|---:|---|\n");
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *p = mp_cand_primary(c);
        char *knobs = mp_candidate_knobs_str(&c->cand);
        buf_adds(out, "| ");
        md_cell(out, c->cand.name, 64);
        buf_adds(out, " | ");
        if (knobs[0]) {
            mp_md_code(out, knobs, 200, MP_MD_TABLE);
        } else {
            buf_adds(out, "(none)");
        }
        buf_adds(out, " | ");
        md_cell(out, p && p->res.moe_backend ? p->res.moe_backend : (p ? "(not logged)" : NULL), 64);
        buf_adds(out, " | ");
        md_cell(out, mp_cand_verdict_label(c), 32);
        md_unverified_note(out, p);
        buf_adds(out, " | ");
        const struct mp_attempt_result *np = numbers_attempt(rep, c);
        md_num(out, seq_tok_s(np));
        if (np && np != p)
            buf_adds(out, " (shared)");
        buf_adds(out, " | ");
        bool any = false;
        for (size_t k = 0; np && k < np->nphases; k++) {
            if (!strncmp(np->phases[k].name, "concurrency-", 12) && np->phases[k].ok > 0) {
                buf_printf(out, "%s%d: %.1f", any ? ", " : "", np->phases[k].level,
                           np->phases[k].tok_s);
                any = true;
            }
        }
        if (!any)
            buf_adds(out, "—");
        unsigned long ok = 0, failed = 0;
        for (size_t j = 0; j < c->nattempts; j++) {
            if (!c->attempts[j].launch_blocking) {
                ok += c->attempts[j].req_ok;
                failed += c->attempts[j].req_failed;
            }
        }
        buf_printf(out, " | %lu/%lu | ", failed, ok + failed);
        const struct mp_attempt_result *ev = p;
        long line = p ? (p->fail_line ? p->fail_line : p->res.moe_backend_line) : 0;
        if (p && !c->verdict && p->fail_class && !strcmp(p->fail_class, MP_FAIL_EVIDENCE)) {
            md_cell(out, rel_dir(rep, ev->dir), 200);
            buf_adds(out, " (incomplete)");
        } else if (ev && line > 0) {
            md_cell(out, rel_dir(rep, ev->dir), 200);
            buf_printf(out, "/server.log:%ld", line);
        } else {
            buf_adds(out, "—");
        }
        buf_adds(out, " |\n");
        free(knobs);
    }
    buf_adds(out, "\n");

    if (rep->ngroups) {
        buf_adds(out, "## Same destination, different road\n\n");
        for (size_t i = 0; i < rep->ngroups; i++) {
            const struct mp_group *g = &rep->groups[i];
            buf_adds(out, "- ");
            md_cell(out, g->moe_backend, 64);
            buf_adds(out, ": ");
            md_list(out, &g->candidates, 64);
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }
    if (rep->nnoop) {
        buf_adds(out, "## Knobs that changed nothing\n\n");
        for (size_t i = 0; i < rep->nnoop; i++) {
            const struct mp_noop *k = &rep->noop[i];
            buf_adds(out, "- ");
            mp_md_code(out, k->knob, 200, 0);
            buf_adds(out, " (candidate ");
            md_cell(out, k->candidate, 64);
            buf_adds(out, ") resolved exactly like ");
            md_cell(out, k->resolved_like, 64);
            if (k->engine_warning) {
                buf_adds(out, "; the engine said: \"");
                md_cell(out, k->engine_warning, 200);
                buf_adds(out, "\"");
            }
            if (k->delivery && strcmp(k->delivery, "verified") != 0) {
                buf_adds(out, "; its delivery to the engine is ");
                md_cell(out, k->delivery, 16);
                if (k->delivery_evidence) {
                    buf_adds(out, " (");
                    md_cell(out, k->delivery_evidence, 300);
                    buf_adds(out, ")");
                }
            }
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }

    md_output_check(rep, out);

    struct mp_strv cmp = MP_STRV_INIT;
    gpu_comparability(rep, &cmp);
    if (cmp.n) {
        buf_adds(out, "## Are the numbers comparable?\n\n");
        for (size_t i = 0; i < cmp.n; i++) {
            buf_adds(out, "- ");
            md_cell(out, cmp.v[i], 400);
            buf_adds(out, "\n");
        }
        buf_adds(out, "\n");
    }
    mp_strv_release(&cmp);

    buf_adds(out, "## Details\n\n");
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        buf_adds(out, "### ");
        md_cell(out, c->cand.name, 64);
        buf_adds(out, ": ");
        md_cell(out, mp_cand_verdict_label(c), 32);
        buf_adds(out, "\n\n");
        mp_md_text(out, c->why, 1000, MP_MD_START);
        buf_adds(out, "\n\n");
        const struct mp_attempt_result *p = mp_cand_primary(c);
        if (p) {
            buf_adds(out, "- resolved: MoE ");
            md_cell(out, p->res.moe_backend, 64);
            if (p->res.moe_candidates.n) {
                buf_adds(out, " out of [");
                md_list(out, &p->res.moe_candidates, 64);
                buf_adds(out, "]");
            }
            buf_adds(out, "; dense NVFP4 ");
            md_cell(out, p->res.linear_kernel, 80);
            if (p->res.linear_kernels.n) {
                buf_adds(out, "; dense kernels [");
                md_list(out, &p->res.linear_kernels, 80);
                buf_adds(out, "]");
            }
            if (p->res.unquantized_moe_backend) {
                buf_adds(out, "; unquantized MoE ");
                md_cell(out, p->res.unquantized_moe_backend, 64);
            }
            buf_adds(out, "; attention ");
            md_cell(out, p->res.attention_backend, 64);
            buf_adds(out, "\n");
            if (p->res.unknown_env.n) {
                buf_adds(out, "- the engine does not know: ");
                md_list(out, &p->res.unknown_env, 80);
                buf_adds(out, "\n");
            }
            md_delivery(out, p);
        }
        for (size_t j = 0; j < c->nattempts; j++) {
            const struct mp_attempt_result *a = &c->attempts[j];
            if (a->outcome == MP_OUT_RESOLVED) {
                buf_adds(out, "- attempt ");
                mp_md_code(out, rel_dir(rep, a->dir), 200, 0);
                buf_printf(out, ": stopped after %.1f s, once resolved (no load)", a->ready_s);
            } else if (a->outcome == MP_OUT_SAME_CONFIG) {
                buf_adds(out, "- attempt ");
                mp_md_code(out, rel_dir(rep, a->dir), 200, 0);
                buf_printf(out, ": stopped after %.1f s, once resolved: the same configuration as ",
                           a->ready_s);
                mp_md_code(out, a->same_as ? a->same_as : "?", 64, 0);
                buf_adds(out, " (shared result)");
            } else {
                buf_adds(out, "- attempt ");
                mp_md_code(out, rel_dir(rep, a->dir), 200, 0);
                buf_printf(out, "%s: %s, %lu ok / %lu failed, ready in %.1f s",
                           a->launch_blocking ? " (CUDA_LAUNCH_BLOCKING=1)" : "",
                           mp_outcome_name(a->outcome), a->req_ok, a->req_failed, a->ready_s);
            }
            if (a->fail_class) {
                buf_adds(out, "; ");
                md_cell(out, a->fail_class, 40);
                if (a->fail_message) {
                    buf_adds(out, ": ");
                    md_cell(out, a->fail_message, 300);
                }
                if (a->fail_line > 0)
                    buf_printf(out, " (`server.log:%ld`)", a->fail_line);
            }
            if (a->sites.n) {
                buf_adds(out, "; sites: ");
                md_list(out, &a->sites, 120);
            }
            buf_adds(out, "\n");
        }
        if (c->diag.done && c->diag.reasoning) {
            buf_adds(out, "- diagnosis: ");
            md_cell(out, c->diag.reasoning, 600);
            buf_adds(out, "\n");
        }
        struct cost k = cand_cost(c);
        buf_printf(out, "- cost: %zu engine start%s, %.1f s of engine time, %.1f s driving load\n",
                   k.starts, k.starts == 1 ? "" : "s", k.engine_s, k.workload_s);
        const struct mp_attempt_result *gp = mp_cand_primary(c);
        if (gp && gp->gpu.samples && gp->gpu.sm_clock_mhz.n) {
            const struct mp_gpu_telemetry *g = &gp->gpu;
            buf_printf(out, "- GPU (first attempt, %zu samples): SM clock median %.0f MHz (%.0f-%.0f)",
                       g->samples, g->sm_clock_mhz.median, g->sm_clock_mhz.min, g->sm_clock_mhz.max);
            if (g->temperature_c.n)
                buf_printf(out, ", %.0f-%.0f °C", g->temperature_c.min, g->temperature_c.max);
            if (g->power_w.n)
                buf_printf(out, ", power median %.0f W", g->power_w.median);
            if (g->throttle_reasons) {
                char words[256];
                mp_gpu_reasons_str(g->throttle_reasons, words, sizeof(words));
                buf_printf(out, "; throttled: %s", words);
            }
            buf_adds(out, "\n");
        } else if (gp && gp->workload_s > 0) {
            buf_adds(out, "- GPU: not sampled (no NVML)\n");
        }
        buf_adds(out, "\n");
    }
}

/* Append s for the terminal (escape.h): controls shown, not sent. */
static void term_add(struct buf *b, const char *s)
{
    if (s)
        mp_term_esc(b, s, strlen(s), 0);
}

/* term_add padded with spaces to width bytes. */
static void term_pad(struct buf *b, const char *s, size_t width)
{
    size_t before = b->len;
    term_add(b, s);
    for (size_t n = b->len - before; n < width; n++)
        buf_addc(b, ' ');
}

void mp_report_summary(const struct mp_report *rep, struct buf *out)
{
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *p = mp_cand_primary(c);
        buf_adds(out, "  ");
        term_pad(out, c->cand.name, 20);
        buf_addc(out, ' ');
        term_pad(out, mp_cand_verdict_label(c), 16);
        buf_addc(out, ' ');
        term_pad(out, p && p->res.moe_backend ? p->res.moe_backend : "-", 20);
        buf_addc(out, ' ');
        double s = seq_tok_s(p);
        if (p && p->outcome == MP_OUT_SAME_CONFIG) {
            buf_adds(out, "shared with ");
            term_add(out, p->same_as ? p->same_as : "?");
        } else if (s >= 0) {
            buf_printf(out, "%8.1f tok/s seq", s);
        }
        buf_adds(out, "\n");
    }
    if (rep->recommended >= 0) {
        char *knobs = mp_candidate_knobs_str(&rep->c[rep->recommended].cand);
        buf_adds(out, "recommendation: ");
        term_add(out, rep->c[rep->recommended].cand.name);
        if (knobs[0]) {
            buf_adds(out, " (");
            term_add(out, knobs);
            buf_adds(out, ")");
        }
        buf_adds(out, "\n");
        free(knobs);
    } else if (mp_report_is_resolve_map(rep)) {
        buf_adds(out, "resolution only: no load was driven, nothing is recommended\n");
    } else {
        buf_adds(out, mp_report_nunfinished(rep) ? "no finished candidate qualified"
                                                 : "no candidate qualified");
        for (size_t i = 0; i < rep->learned.n; i++) {
            buf_adds(out, i ? "; " : ": ");
            term_add(out, rep->learned.v[i]);
        }
        buf_adds(out, "\n");
    }
    if (mp_report_incomplete(rep)) {
        char *cmd = mp_report_resume_command(rep);
        buf_printf(out, "%s; %s %s\n",
                   rep->interrupted ? "the run was interrupted" : "the run did not finish",
                   cmd ? "continue it with:" : "it cannot be resumed:",
                   cmd ? cmd : "start it again with a new --out DIR");
        free(cmd);
    }
}
