/* eta.c - the rest of a run from what it measured (eta.h). */
#include "verdict/eta.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/knowledge.h"
#include "verdict/ddmin.h"
#include "verdict/diagnose.h"
#include "verdict/stats.h"
#include "xalloc.h"

#define BLOCKED_SLOWDOWN 2.0 /* the diagnosis plan's assumption (stats.h) */
/* Until a concurrency level is measured, a round of L requests in flight
 * is assumed to take (1 + CONTENTION * (L - 1)) times a request alone
 * (per-request decode slows as the batch grows; measured levels replace
 * it). */
#define CONTENTION 0.1
#define QUALITY_TOKENS 32.0  /* MP_QUALITY_MAX_TOKENS: the output check's answers */
/* A task reply is about a third of its max_tokens (the built-in few-shot
 * problems answer in ~30 of 96 tokens; stop sequences end them). */
#define TASK_REPLY_SHARE (1.0 / 3.0)

/* What the attempts so far measured. */
struct meas {
    double start_s, teardown_s, req_s, full_s, resolved_s, quality_s;
    double selected_s; /* spawn to the selection lines (the run's own attempts) */
    double round_s[MP_MAX_PHASES]; /* per round of requests at level lv[k] */
    int lv[MP_MAX_PHASES];
    size_t nlv;
};

struct acc {
    double sum;
    size_t n;
};

static void add(struct acc *a, double v)
{
    if (v > 0 && isfinite(v)) {
        a->sum += v;
        a->n++;
    }
}

static double mean(const struct acc *a)
{
    return a->n ? a->sum / (double)a->n : -1;
}

/* Seconds of the rest of the run by kind (struct mp_eta's split). */
struct split {
    double start, req, own;
};

/* n attempts of t seconds each: the start-up and teardown measured, the
 * rest requests. */
static void split_attempts(struct split *sp, double n, double t, double start_s, double teardown_s)
{
    if (n <= 0 || t <= 0)
        return;
    double st = MP_MIN(t, MP_MAX(0.0, start_s)), own = MP_MIN(t - st, MP_MAX(0.0, teardown_s));
    sp->start += n * st;
    sp->own += n * own;
    sp->req += n * (t - st - own);
}

/* Rounds of requests per level: a phase of n requests at level L ran
 * ceil(n / L) rounds in its wall time. */
static void add_round(struct meas *m, struct acc *rounds, int level, const struct mp_phase_result *p)
{
    int done = p->ok + p->failed;
    if (level <= 1 || done < level || p->wall_s <= 0)
        return;
    size_t k = 0;
    while (k < m->nlv && m->lv[k] != level)
        k++;
    if (k == m->nlv) {
        if (m->nlv == MP_MAX_PHASES)
            return;
        m->lv[m->nlv++] = level;
    }
    add(&rounds[k], p->wall_s / ceil((double)done / level));
}

/* The OK requests of a phase at level 1 (warm-up, sequential): each one's
 * own end-to-end time, so that a phase a failure cut short still counts
 * what it served. */
static void add_alone(struct acc *a, const struct mp_phase_result *p)
{
    const struct mp_hist *h = &p->m.e2e_ms;
    if (h->n > 0) {
        a->sum += h->sum / 1000.0;
        a->n += (size_t)h->n;
    } else if (p->ok > 0 && !p->failed) {
        add(a, p->wall_s / p->ok); /* no histogram (an older store) */
    }
}

static void measure_attempt(struct meas *m, struct acc *a, struct acc *rounds,
                            const struct mp_attempt_result *r)
{
    add(&a[0], r->ready_s);
    add(&a[1], r->teardown_s);
    if (!r->launch_blocking && r->outcome == MP_OUT_CLEAN)
        add(&a[3], r->wall_s);
    if (r->outcome == MP_OUT_RESOLVED || r->outcome == MP_OUT_SAME_CONFIG)
        add(&a[4], r->wall_s);
    add(&a[6], r->selected_s);
    for (size_t k = 0; k < r->nphases; k++) {
        const struct mp_phase_result *p = &r->phases[k];
        if (r->launch_blocking)
            continue; /* slowed on purpose: not what a normal attempt takes */
        if (!strcmp(p->name, "quality"))
            add_alone(&a[5], p);
        else if (p->level <= 1 && strncmp(p->name, "prefill-", 8) != 0)
            add_alone(&a[2], p);
        else if (!p->failed) /* a round a failure cut short says nothing */
            add_round(m, rounds, p->level, p);
    }
}

static void measure(const struct mp_report *rep, struct meas *m)
{
    struct acc a[7], rounds[MP_MAX_PHASES];
    memset(a, 0, sizeof(a));
    memset(rounds, 0, sizeof(rounds));
    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i < rep->n; i++)
        for (size_t j = 0; j < rep->c[i].nattempts; j++)
            measure_attempt(m, a, rounds, &rep->c[i].attempts[j]);
    m->start_s = mean(&a[0]);
    m->teardown_s = MP_MAX(0.0, mean(&a[1]));
    m->req_s = mean(&a[2]);
    m->full_s = mean(&a[3]);
    m->resolved_s = mean(&a[4]);
    m->quality_s = mean(&a[5]);
    m->selected_s = mean(&a[6]);
    for (size_t k = 0; k < m->nlv; k++)
        m->round_s[k] = mean(&rounds[k]);
}

/* One round at level: measured, else the contention assumption. */
static double round_s(const struct meas *m, int level)
{
    for (size_t k = 0; k < m->nlv; k++)
        if (m->lv[k] == level && m->round_s[k] > 0)
            return m->round_s[k];
    return m->req_s * (1 + CONTENTION * (level - 1));
}

/* One output-check prompt: measured, else a request cut to the check's
 * answer length. */
static double quality_s(const struct meas *m, const struct mp_workload *wl)
{
    if (m->quality_s > 0)
        return m->quality_s;
    return m->req_s * (wl->max_tokens > 0 ? MP_MIN(1.0, QUALITY_TOKENS / wl->max_tokens) : 1.0);
}

/* The scoring pass (sc) from the parts measured: a request of t output
 * tokens takes t / wl's max_tokens of a workload request (decode-bound),
 * at least one token's worth. */
static double score_pass_s(const struct meas *m, const struct mp_workload *wl,
                           const struct mp_eta_score *sc)
{
    if (!sc)
        return 0;
    double per_tok = 1.0 / MP_MAX(1, wl->max_tokens);
    int level = MP_MAX(1, sc->level);
    double round = round_s(m, level);
    double t = (double)sc->prompts * m->req_s * per_tok; /* one at a time, ~1 token */
    if (sc->repeat)
        t += ceil((double)sc->prompts / level) * round * per_tok;
    t += ceil((double)sc->greedy / level) * round * MP_MAX(1, sc->greedy_tokens) * per_tok;
    double reply = MP_MAX(1.0, sc->task_tokens * TASK_REPLY_SHARE);
    t += ceil((double)sc->tasks / level) * round * reply * per_tok;
    return t;
}

/* The phases of wl plus the output check and the scoring pass (sc, NULL:
 * none), from the parts measured. */
static double model_attempt(const struct meas *m, const struct mp_workload *wl, size_t nquality,
                            const struct mp_eta_score *sc)
{
    bool timed = false;
    for (size_t k = 0; k < wl->nphases; k++)
        timed |= wl->phases[k].duration_s > 0;
    if ((m->req_s <= 0 || m->start_s <= 0) && !timed)
        return -1; /* a timed phase (soak) is most of it: the rest may be unknown */
    struct meas z = *m;
    z.req_s = MP_MAX(0.0, z.req_s);
    m = &z;
    double t = MP_MAX(0.0, m->start_s) + m->teardown_s, reqs = 0;
    int top = 1;
    for (size_t k = 0; k < wl->nphases; k++) {
        const struct mp_phase_spec *p = &wl->phases[k];
        int level = MP_MAX(1, p->level);
        top = MP_MAX(top, level);
        if (p->duration_s > 0) {
            t += p->duration_s;
            continue;
        }
        reqs += p->requests;
        t += ceil((double)p->requests / level) * round_s(m, level);
    }
    /* extended at the top level until enough succeeded (a pass, a diagnosis) */
    if ((double)wl->min_total_ok > reqs)
        t += ceil(((double)wl->min_total_ok - reqs) / top) * round_s(m, top);
    return t + (double)nquality * quality_s(m, wl) + score_pass_s(m, wl, sc);
}

double mp_eta_attempt_s(const struct mp_report *rep, const struct mp_workload *wl, size_t nquality)
{
    struct meas m;
    measure(rep, &m);
    return m.full_s > 0 ? m.full_s : model_attempt(&m, wl, nquality, NULL);
}

/* The highest level of wl, the requests of its phases at level 1 and of
 * its top level's phase(s). */
static int top_level(const struct mp_workload *wl, size_t *seq_requests, size_t *top_requests)
{
    int top = 1;
    *seq_requests = *top_requests = 0;
    for (size_t i = 0; i < wl->nphases; i++)
        top = MP_MAX(top, wl->phases[i].level);
    for (size_t i = 0; i < wl->nphases; i++) {
        size_t r = (size_t)MP_MAX(0, wl->phases[i].requests);
        if (wl->phases[i].level <= 1)
            *seq_requests += r;
        else if (wl->phases[i].level == top)
            *top_requests += r;
    }
    return top;
}

/* The blocked run for need clean requests (runner.c's,
 * mp_verdict_blocked_workload): warm-up and a few sequential requests, the
 * top level's phase, extended to need, the output check; every request
 * BLOCKED_SLOWDOWN slower. */
static double blocked_s(const struct meas *m, const struct mp_workload *normal, size_t nquality,
                        unsigned long need)
{
    struct mp_workload b;
    mp_verdict_blocked_workload(normal, need, 0, &b);
    const struct mp_workload *wl = &b;
    size_t seq = 0, topn = 0;
    int top = top_level(wl, &seq, &topn);
    double rest = MP_MAX((double)topn, need > seq ? (double)(need - seq) : 0);
    double t = m->start_s + m->teardown_s + (double)seq * m->req_s * BLOCKED_SLOWDOWN;
    t += (double)nquality * quality_s(m, wl) * BLOCKED_SLOWDOWN;
    return t + ceil(rest / top) * round_s(m, top) * BLOCKED_SLOWDOWN;
}

/* Candidate c's diagnosis ahead: the plan's extra normal runs, failing
 * like the ones seen (their mean served count), then the blocked run; the
 * plan is the runner's (the engine's times, verdict/diagnose.h). */
static double diagnosis_s(const struct mp_eta_in *in, const struct meas *m,
                          const struct mp_cand_report *c, struct split *sp)
{
    struct mp_stats_attempt *obs = xcalloc(c->nattempts + 8, sizeof(*obs));
    size_t n = mp_verdict_diag_evidence(c, obs);
    size_t nfail = 0;
    double served = 0;
    for (size_t k = 0; k < n; k++)
        if (obs[k].failed) {
            served += (double)obs[k].served;
            nfail++;
        }
    double kbar = nfail ? served / (double)nfail : 0, t = 0;
    struct mp_diag_cost_in ci = {.obs = obs, .budget_s = in->diag_budget_s, .cap = in->diag_cap};
    size_t seq, topn;
    ci.concurrency = top_level(in->wl, &seq, &topn);
    struct mp_diag_meas dm;
    mp_verdict_diag_meas(c, ci.concurrency, &dm);
    ci.start_s = dm.start_s;
    ci.req_s = dm.top_s;
    ci.req1_s = dm.req1_s;
    ci.req_projected = dm.projected;
    ci.lead = seq;
    ci.blocked_lead = mp_verdict_blocked_lead(in->wl);
    struct mp_diag_plan plan;
    int reruns = (int)(n > 0 ? n - 1 : 0);
    for (;; reruns++) {
        ci.nobs = n;
        if (mp_stats_diag_plan(&ci, &plan) < 0 || !mp_verdict_rerun_first(&plan, reruns) ||
            n >= c->nattempts + 7)
            break;
        double rerun = m->start_s + m->teardown_s + (kbar + 1) * m->req_s;
        t += rerun;
        split_attempts(sp, 1, rerun, m->start_s, m->teardown_s);
        obs[n].served = (unsigned long)(kbar + 0.5);
        obs[n++].failed = true;
    }
    unsigned long need = plan.need ? plan.need : plan.required_n;
    double b = need && need != MP_STATS_N_UNBOUNDED ? blocked_s(m, in->wl, in->nquality, need) : 0;
    if (in->diag_budget_s > 0)
        b = MP_MIN(b, in->diag_budget_s + m->start_s + m->teardown_s);
    split_attempts(sp, 1, b, m->start_s, m->teardown_s);
    free(obs);
    return t + b;
}

/* The mean wall time of the normal attempts that failed, <0 when none. */
static double failed_s(const struct mp_report *rep)
{
    struct acc a = {0, 0};
    for (size_t i = 0; i < rep->n; i++)
        for (size_t j = 0; j < rep->c[i].nattempts; j++) {
            const struct mp_attempt_result *r = &rep->c[i].attempts[j];
            if (!r->launch_blocking && r->outcome != MP_OUT_CLEAN &&
                r->outcome != MP_OUT_SAME_CONFIG && r->outcome != MP_OUT_RESOLVED)
                add(&a, r->wall_s);
        }
    return mean(&a);
}

/* One of the caller's extra attempts (minimize's tests): a pass runs
 * extra_wl in full, a failure ends like the failures so far. */
static double extra_attempt_s(const struct mp_eta_in *in, const struct meas *m, double full)
{
    if (in->extra_attempts <= 0)
        return 0;
    /* measured passes are the best guess of the next; else the model */
    double pass = m->full_s > 0 ? m->full_s
                                : in->extra_wl ? model_attempt(m, in->extra_wl, in->nquality, in->score)
                                               : full;
    if (pass <= 0)
        pass = full;
    double fail = failed_s(in->rep);
    double share = MP_MIN(1.0, MP_MAX(0.0, in->extra_fail_share));
    return fail > 0 ? share * fail + (1 - share) * pass : pass;
}

/* Is candidate c's diagnosis still ahead? */
static bool diagnosis_ahead(const struct mp_eta_in *in, const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    if (!in->diagnose || in->resolve_only || !p || c->diag.done)
        return false;
    for (size_t j = 0; j < c->nattempts; j++)
        if (c->attempts[j].launch_blocking)
            return false;
    char *note = NULL;
    bool yes = mp_verdict_diagnosable(p, &note);
    free(note);
    return yes;
}

void mp_eta_estimate(const struct mp_eta_in *in, struct mp_eta *out)
{
    memset(out, 0, sizeof(*out));
    struct meas m;
    measure(in->rep, &m);
    /* a stop at the selection lines: as the stops so far took, else as long
     * as the selections took to come in the attempts so far (#27) */
    double cheap = m.resolved_s > 0   ? m.resolved_s
                   : m.selected_s > 0 ? m.selected_s + m.teardown_s
                                      : m.start_s;
    double full = m.full_s > 0 ? m.full_s : model_attempt(&m, in->wl, in->nquality, in->score);
    if (in->resolve_only)
        full = cheap;
    double extra = extra_attempt_s(in, &m, full);
    if (full <= 0)
        return;
    out->known = true;
    out->attempt_s = full;
    struct split sp = {0, 0, 0};
    for (size_t i = 0; i < in->rep->n; i++) {
        const struct mp_cand_report *c = &in->rep->c[i];
        if ((in->done && in->done[i]) || c->not_applicable)
            continue;
        if (c->nattempts == 0) {
            bool same = in->cheap && in->cheap[i];
            out->cheap_left += same;
            out->full_left += !same;
        } else if (diagnosis_ahead(in, c)) {
            out->diagnosis_s += diagnosis_s(in, &m, c, &sp);
        }
    }
    out->remaining_s = (double)out->full_left * full + (double)out->cheap_left * MP_MAX(0.0, cheap) +
                       out->diagnosis_s + MP_MAX(0.0, in->extra_attempts) * extra;
    double st = in->resolve_only ? cheap : m.start_s; /* a resolve attempt is its start-up */
    split_attempts(&sp, (double)out->full_left, full, st, m.teardown_s);
    split_attempts(&sp, (double)out->cheap_left, MP_MAX(0.0, cheap), cheap, 0);
    split_attempts(&sp, MP_MAX(0.0, in->extra_attempts), extra, m.start_s, m.teardown_s);
    out->startup_s = sp.start;
    out->request_s = sp.req;
    out->overhead_s = sp.own;
}

/* Does every knob of c act only through the selection at version v? */
static bool selection_only(const struct mp_knowledge *kn, const struct mp_kn_ver *v,
                           const struct mp_candidate *c)
{
    struct mp_knobs ks = MP_KNOBS_INIT;
    mp_candidate_knobs(c, &ks);
    bool all = ks.n > 0;
    for (size_t i = 0; i < ks.n && all; i++) {
        const struct mp_kn_knob *k = mp_kn_find_knob(kn, ks.k[i].key);
        const struct mp_kn_era *e = k ? mp_kn_knob_era(k, v) : NULL;
        all = e && e->selection_only;
    }
    mp_knobs_release(&ks);
    return all;
}

/* The MoE backend the knowledge predicts for c at version ver (caller
 * frees), or NULL. */
static char *predicted(const struct mp_knowledge *kn, const char *ver, const struct mp_candidate *c)
{
    struct mp_explain ex;
    if (mp_kn_explain(kn, ver, c->env.v, c->env.n, c->args.v, c->args.n, &ex) < 0)
        return NULL;
    char *b = ex.predicted_moe_backend ? xstrdup(ex.predicted_moe_backend) : NULL;
    mp_kn_explain_release(&ex);
    return b;
}

void mp_eta_predict_cheap(const struct mp_knowledge *kn, const struct mp_report *rep, bool *cheap)
{
    const char *ver = NULL;
    for (size_t i = 0; i < rep->n; i++) {
        cheap[i] = false;
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        if (p && p->res.engine_version)
            ver = p->res.engine_version;
    }
    struct mp_kn_ver v;
    if (!kn || !ver || mp_kn_ver_parse(ver, &v) != 0)
        return;
    for (size_t i = 0; i < rep->n; i++) {
        if (rep->c[i].nattempts || !selection_only(kn, &v, &rep->c[i].cand))
            continue;
        char *b = predicted(kn, ver, &rep->c[i].cand);
        for (size_t j = 0; b && j < rep->n && !cheap[i]; j++) {
            const struct mp_attempt_result *p = mp_cand_primary(&rep->c[j]);
            cheap[i] = p && p->outcome != MP_OUT_SAME_CONFIG && p->res.moe_backend &&
                       !strcmp(p->res.moe_backend, b);
        }
        free(b);
    }
}

/* ddmin's test of a synthetic run: only the subsets holding item want
 * work; the empty set starts no engine and is not counted. */
struct synth {
    size_t want;
    unsigned starts;
};

static int holds(void *ud, const size_t *subset, size_t n)
{
    struct synth *s = ud;
    s->starts += n > 0;
    for (size_t i = 0; i < n; i++)
        if (subset[i] == s->want)
            return 1;
    return 0;
}

double mp_eta_ddmin_tests_left(size_t n, unsigned run)
{
    /* the mean over which difference it is (at most 16 positions tried) */
    size_t tries = MP_MIN(n, (size_t)16);
    double starts = 0;
    for (size_t t = 0; t < tries; t++) {
        struct synth s = {t * n / tries, 0};
        size_t *res = NULL, nres = 0;
        if (mp_ddmin(n, holds, &s, &res, &nres, NULL, NULL) < 0)
            s.starts = (unsigned)n;
        free(res);
        starts += s.starts;
    }
    double total = 2.0 + (tries ? starts / (double)tries : 0);
    return total > run ? total - run : 0;
}
