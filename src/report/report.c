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
#include "report/internal.h"

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






/* A candidate stopped as the same configuration as one tested already
 * shares that one's verdict (after its output check), stated as shared. */
static void share_same(struct mp_report *rep)
{
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_cand_report *c = &rep->c[i];
        if (!mp_rep_is_same_config(c))
            continue;
        const struct mp_attempt_result *p = mp_cand_primary(c);
        const struct mp_cand_report *r = NULL;
        for (size_t j = 0; j < rep->n && !r; j++) {
            if (j != i && p->same_as && !strcmp(rep->c[j].cand.name, p->same_as) &&
                !mp_rep_is_same_config(&rep->c[j]))
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
        if (!c->verdict || strcmp(c->verdict, "stable") != 0 || mp_rep_is_same_config(c))
            continue; /* a shared result is recommended as its representative */
        if (rep->recommended < 0) {
            rep->recommended = (int)i;
            continue;
        }
        const struct mp_cand_report *b = &rep->c[rep->recommended];
        double s1 = mp_rep_seq_tok_s(mp_cand_primary(c)), s0 = mp_rep_seq_tok_s(mp_cand_primary(b));
        double c1 = mp_rep_best_conc_tok_s(mp_cand_primary(c)), c0 = mp_rep_best_conc_tok_s(mp_cand_primary(b));
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
        double s = mp_rep_seq_tok_s(p), cc = mp_rep_best_conc_tok_s(p);
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
