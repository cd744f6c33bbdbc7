/* diagnose.c - what the CUDA_LAUNCH_BLOCKING=1 diagnosis decides
 * (diagnose.h). */
#include "verdict/diagnose.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "xalloc.h"

bool mp_verdict_diagnosable(const struct mp_attempt_result *p, char **note)
{
    *note = NULL;
    if (!p)
        return false;
    if (p->outcome != MP_OUT_CRASH) {
        if (p->outcome == MP_OUT_STARTUP_FAILURE || p->outcome == MP_OUT_HANG)
            *note = xasprintf("a %s is not diagnosed with CUDA_LAUNCH_BLOCKING=1: it is not an "
                              "asynchronously reported kernel fault",
                              p->outcome == MP_OUT_HANG ? "hang" : "startup failure");
        return false;
    }
    const struct mp_knob_dlv *miss = mp_attempt_find_dlv(p, MP_DLV_MISSING);
    if (miss) {
        /* the run did not test the candidate: nothing of it to diagnose */
        *note = xasprintf("not diagnosed: %s did not reach the engine", miss->knob);
        return false;
    }
    if (!p->cuda_fault) {
        /* launch blocking discriminates CUDA faults only: a cut stream, an
         * HTTP 500 or a Python error is the same with it */
        *note = xstrdup("not a CUDA fault: not diagnosed with CUDA_LAUNCH_BLOCKING=1");
        return false;
    }
    return true;
}

size_t mp_verdict_diag_evidence(const struct mp_cand_report *c, struct mp_stats_attempt *obs)
{
    size_t n = 0;
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->launch_blocking)
            continue;
        if (a->outcome == MP_OUT_CRASH) {
            obs[n].served = a->ok_before_failure;
            obs[n].failed = true;
            n++;
        } else if (a->outcome == MP_OUT_CLEAN) {
            obs[n].served = a->req_ok;
            obs[n].failed = false;
            n++;
        }
    }
    return n;
}

void mp_verdict_blocked_workload(const struct mp_workload *wl, unsigned long need, double budget_s,
                                 struct mp_workload *out)
{
    *out = *wl;
    int top = 1;
    for (size_t k = 0; k < wl->nphases; k++)
        top = MP_MAX(top, wl->phases[k].level);
    out->nphases = 0;
    for (size_t k = 0; k < wl->nphases; k++) {
        const struct mp_phase_spec *ph = &wl->phases[k];
        if (ph->level > 1 && ph->level != top)
            continue;
        out->phases[out->nphases] = *ph;
        if (!strcmp(ph->name, "sequential") && ph->requests > MP_DIAG_BLOCKED_SEQ)
            out->phases[out->nphases].requests = MP_DIAG_BLOCKED_SEQ;
        out->nphases++;
    }
    out->min_total_ok = need;
    out->extend_budget_s = budget_s > 0 ? budget_s : 0;
}

unsigned long mp_verdict_workload_lead(const struct mp_workload *wl)
{
    unsigned long n = 0;
    for (size_t i = 0; i < wl->nphases; i++)
        if (wl->phases[i].level <= 1 && wl->phases[i].requests > 0)
            n += (unsigned long)wl->phases[i].requests;
    return n;
}

unsigned long mp_verdict_blocked_lead(const struct mp_workload *wl)
{
    struct mp_workload b;
    mp_verdict_blocked_workload(wl, 0, 0, &b);
    return mp_verdict_workload_lead(&b);
}

/* Did attempt a start up as a whole engine (a start-up the rule can count on)? */
static bool full_start(const struct mp_attempt_result *a)
{
    return !a->launch_blocking && a->ready_s > 0 && a->outcome != MP_OUT_STARTUP_FAILURE &&
           a->outcome != MP_OUT_SAME_CONFIG && a->outcome != MP_OUT_RESOLVED &&
           a->outcome != MP_OUT_ERROR && a->outcome != MP_OUT_INTERRUPTED;
}

void mp_verdict_diag_meas(const struct mp_cand_report *c, int level, struct mp_diag_meas *m)
{
    memset(m, 0, sizeof(*m));
    m->level = level < 1 ? 1 : level;
    struct mp_hist e2e = MP_HIST_INIT;
    double sum = 0, top_wall = 0;
    int n = 0, top_ok = 0;
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (!full_start(a))
            continue;
        sum += a->ready_s;
        n++;
        for (size_t k = 0; k < a->nphases; k++) {
            const struct mp_phase_result *ph = &a->phases[k];
            if (ph->level <= 1 && ph->ok > 0 && strcmp(ph->name, "quality") != 0)
                mp_hist_merge(&e2e, &ph->m.e2e_ms);
            /* a phase cut by the failure: its wall time holds the wait for it */
            if (ph->level == m->level && ph->ok > 0 && ph->failed == 0 && ph->wall_s > 0) {
                top_wall += ph->wall_s;
                top_ok += ph->ok;
            }
        }
    }
    m->start_s = n ? sum / n : 0;
    m->req1_s = e2e.n ? mp_hist_percentile(&e2e, 50) / 1000 : 0;
    mp_hist_free(&e2e);
    if (top_ok > 0) {
        m->top_s = top_wall / top_ok;
    } else if (m->req1_s > 0) {
        m->top_s = m->req1_s * (1 + MP_DIAG_CONTENTION * (m->level - 1)) / m->level;
        m->projected = m->level > 1;
    }
}

bool mp_verdict_rerun_first(const struct mp_diag_plan *plan, int reruns)
{
    return plan->sharpen && reruns < MP_VERDICT_MAX_RERUNS;
}

int mp_verdict_reruns_done(const struct mp_cand_report *c)
{
    int normal = 0;
    for (size_t j = 0; j < c->nattempts; j++)
        normal += !c->attempts[j].launch_blocking;
    return (normal > 1 ? normal - 1 : 0) + (int)c->cut_reruns;
}

/* Median per-request decode rate of a phase in the given mode, the best
 * attempt's; <0 when unknown. */
/* The best req_tok_s_p50 of phase `phase` over c's attempts of one kind,
 * and the index of the attempt it came from (*att). */
static double phase_rate(const struct mp_cand_report *c, bool blocking, const char *phase, int *att)
{
    double best = -1;
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->launch_blocking != blocking)
            continue;
        for (size_t k = 0; k < a->nphases; k++) {
            if (!strcmp(a->phases[k].name, phase) && a->phases[k].req_tok_s_p50 > best &&
                a->phases[k].req_tok_s_p50 > 0) {
                best = a->phases[k].req_tok_s_p50;
                *att = a->index;
            }
        }
    }
    return best;
}

bool mp_verdict_diag_rates(const struct mp_cand_report *c, struct mp_diag_rates *out)
{
    static const char *const phases[] = {"sequential", "warmup"};
    for (size_t i = 0; i < MP_ARRAY_SIZE(phases); i++) {
        out->normal = phase_rate(c, false, phases[i], &out->normal_attempt);
        out->blocked = phase_rate(c, true, phases[i], &out->blocked_attempt);
        if (out->normal > 0 && out->blocked > 0) {
            out->phase = phases[i];
            return true;
        }
    }
    return false;
}

double mp_verdict_throughput_ratio(const struct mp_cand_report *c)
{
    struct mp_diag_rates r;
    return mp_verdict_diag_rates(c, &r) ? r.blocked / r.normal : -1;
}

void mp_verdict_read_blocked(const struct mp_attempt_result *b, unsigned long required, bool capped,
                             bool over_budget, struct mp_diagnosis *dg)
{
    dg->requests_clean = b->req_ok;
    free(dg->note);
    dg->note = NULL;
    const struct mp_knob_dlv *bmiss = mp_attempt_find_dlv(b, MP_DLV_MISSING);
    if (bmiss) {
        /* the "blocked" run ran without launch blocking (or without a knob):
         * whatever it did says nothing about synchronous launches */
        dg->launch_blocking = MP_LB_NONE;
        dg->confidence = 0;
        dg->note = xasprintf("the blocked run is no evidence: %s did not reach the engine (%s)",
                             bmiss->knob, bmiss->evidence);
        return;
    }
    if (b->outcome == MP_OUT_CLEAN) {
        dg->launch_blocking = MP_LB_CLEAN;
        if (b->req_ok >= required) {
            dg->confidence = 0.95;
            return;
        }
        dg->confidence = 0;
        unsigned long more = required - b->req_ok;
        double per = b->workload_s > 0 && b->req_ok ? b->workload_s / (double)b->req_ok : 0;
        char when[96] = "";
        if (per > 0)
            snprintf(when, sizeof(when), ", about %.0f s more at the blocked run's rate",
                     (double)more * per);
        dg->note = xasprintf("the blocked run served %lu requests clean, %lu short of the %lu "
                             "required%s; %lu more clean requests%s would decide it",
                             b->req_ok, more, required,
                             capped        ? " (capped by --diagnose-max-requests)"
                             : over_budget ? " (stopped at --diagnose-budget)"
                                           : "",
                             more, when);
    } else if (b->outcome == MP_OUT_CRASH) {
        dg->launch_blocking = MP_LB_CRASHED;
        dg->confidence = 0.95;
        free(dg->pinned_site);
        dg->pinned_site = b->sites.n ? xstrdup(b->sites.v[0]) : NULL;
        if (!dg->pinned_site && b->fail_message)
            dg->pinned_site = xstrdup(b->fail_message);
        free(dg->launch_site);
        dg->launch_site = b->launch_site ? xstrdup(b->launch_site) : NULL;
    } else {
        dg->launch_blocking = MP_LB_NONE;
        dg->confidence = 0;
        dg->note = xasprintf("the CUDA_LAUNCH_BLOCKING=1 run ended as %s%s%s, so the diagnosis "
                             "is inconclusive",
                             mp_outcome_name(b->outcome), b->fail_message ? ": " : "",
                             b->fail_message ? b->fail_message : "");
    }
}

void mp_verdict_diag_estimate(const struct mp_cand_report *c, const struct mp_diag_policy *pol,
                              struct mp_stats_async *est, struct mp_diag_plan *plan)
{
    struct mp_stats_attempt *obs = xcalloc(c->nattempts + 1, sizeof(*obs));
    size_t n = mp_verdict_diag_evidence(c, obs);
    struct mp_diag_cost_in in = {
        .obs = obs,
        .nobs = n,
        .concurrency = pol->concurrency > 0 ? pol->concurrency : 1,
        .budget_s = pol->budget_s,
        .cap = pol->cap,
        .lead = pol->lead,
        .blocked_lead = pol->blocked_lead,
    };
    struct mp_diag_meas dm; /* the engine's times, net of moeprobe's (#27) */
    mp_verdict_diag_meas(c, in.concurrency, &dm);
    in.start_s = dm.start_s;
    in.req_s = dm.top_s;
    in.req1_s = dm.req1_s;
    in.req_projected = dm.projected;
    memset(est, 0, sizeof(*est));
    memset(plan, 0, sizeof(*plan));
    mp_stats_async_estimate(obs, n, est);
    (void)mp_stats_diag_plan(&in, plan);
    free(obs);
}

/* A crash that is diagnosed: the required count, the reasoning, and what
 * the last blocked run showed. */
static void crash_diagnosis(const struct mp_cand_report *c, const struct mp_diag_policy *pol,
                            struct mp_diagnosis *dg)
{
    char *note = NULL;
    if (!mp_verdict_diagnosable(mp_cand_primary(c), &note)) {
        dg->note = note;
        return;
    }
    struct mp_stats_async est;
    struct mp_diag_plan plan;
    mp_verdict_diag_estimate(c, pol, &est, &plan);
    dg->done = true;
    dg->requests_required = est.required_n;
    dg->reasoning = xasprintf("%s; %s", est.why, plan.why);
    const struct mp_attempt_result *b = NULL;
    for (size_t i = 0; i < c->nattempts; i++)
        if (c->attempts[i].launch_blocking)
            b = &c->attempts[i];
    if (!b)
        return; /* stopped before its blocked run */
    bool capped = pol->cap && est.required_n > pol->cap;
    dg->throughput_ratio = mp_verdict_throughput_ratio(c);
    mp_verdict_read_blocked(b, est.required_n, capped, plan.over_budget, dg);
}

void mp_verdict_diagnosis(const struct mp_cand_report *c, const struct mp_diag_policy *pol,
                          struct mp_diagnosis *dg)
{
    mp_diagnosis_reset(dg);
    const struct mp_attempt_result *p = mp_cand_primary(c);
    if (!p)
        return;
    if (p->outcome == MP_OUT_CRASH) {
        if (pol->diagnose)
            crash_diagnosis(c, pol, dg);
        else if (pol->skipped)
            dg->note = xstrdup("diagnosis skipped (--no-diagnose)");
    } else if (pol->notes && p->outcome == MP_OUT_SAME_CONFIG) {
        dg->note = xasprintf("not tested again: the same configuration as '%s'",
                             p->same_as ? p->same_as : "?");
    } else if (pol->notes) {
        char *note = NULL;
        mp_verdict_diagnosable(p, &note);
        dg->note = note;
    }
}
