/* bisect.c - the pure decisions of bisect.h. */
#include "verdict/bisect.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

const char *mp_bisect_by_name(enum mp_bisect_by by)
{
    static const char *const names[] = {"verdict", "resolved", "throughput"};
    return (unsigned)by < MP_ARRAY_SIZE(names) ? names[by] : "verdict";
}

int mp_bisect_parse_by(const char *s, struct mp_bisect_cfg *cfg, char *why, size_t n)
{
    memset(cfg, 0, sizeof(*cfg));
    if (!strcmp(s, "verdict") || !strcmp(s, "resolved")) {
        cfg->by = s[0] == 'v' ? MP_BY_VERDICT : MP_BY_RESOLVED;
        return 0;
    }
    if (!strncmp(s, "throughput:", 11)) {
        char *end;
        double v = strtod(s + 11, &end);
        if (end != s + 11 && *end == '\0' && v > 0 && v < 100) {
            cfg->by = MP_BY_THROUGHPUT;
            cfg->pct = v;
            return 0;
        }
        snprintf(why, n, "--by throughput:PCT needs a percentage between 0 and 100, not '%s'",
                 s + 11);
        return MP_EUSAGE;
    }
    snprintf(why, n, "--by takes verdict, resolved or throughput:PCT, not '%s'", s);
    return MP_EUSAGE;
}

const char *mp_bisect_verdict_class(enum mp_verdict v)
{
    switch (v) {
    case MP_V_STABLE:
        return "serves";
    case MP_V_ASYNC_RACE:
    case MP_V_KERNEL_FAULT:
    case MP_V_CRASHED:
    case MP_V_HANG:
    case MP_V_SERVER_ERROR:
        return "fails-under-load";
    case MP_V_STARTUP_FAILURE:
        return "fails-to-start";
    case MP_V_GARBAGE_OUTPUT:
        return "wrong-output";
    case MP_V_NOT_DELIVERED:
        return "not-delivered";
    default:
        return mp_verdict_name(v) ? "wrong-output" : NULL; /* a later verdict word */
    }
}

const char *mp_probe_outcome_name(enum mp_probe_outcome o)
{
    static const char *const names[] = {"unknown", "good", "bad", "skip"};
    return (unsigned)o < MP_ARRAY_SIZE(names) ? names[o] : "unknown";
}

enum mp_probe_outcome mp_probe_outcome_from_name(const char *s)
{
    for (int o = MP_PROBE_GOOD; o <= MP_PROBE_SKIP; o++)
        if (s && !strcmp(s, mp_probe_outcome_name((enum mp_probe_outcome)o)))
            return (enum mp_probe_outcome)o;
    return MP_PROBE_UNKNOWN;
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static const char *or_none(const char *s)
{
    return s ? s : "none logged";
}

static enum mp_probe_outcome by_verdict(const struct mp_probe_obs *g, const struct mp_probe_obs *o,
                                        char *why, size_t n)
{
    const char *cg = mp_bisect_verdict_class(g->verdict), *co = mp_bisect_verdict_class(o->verdict);
    if (!same_str(cg, co)) {
        snprintf(why, n, "verdict %s (%s), the good build's %s (%s)", mp_verdict_name(o->verdict),
                 co, mp_verdict_name(g->verdict), cg);
        return MP_PROBE_BAD;
    }
    if (!same_str(g->moe_backend, o->moe_backend)) {
        snprintf(why, n, "resolved MoE backend %s, the good build's %s", or_none(o->moe_backend),
                 or_none(g->moe_backend));
        return MP_PROBE_BAD;
    }
    snprintf(why, n, "verdict %s and MoE backend %s, as the good build", mp_verdict_name(o->verdict),
             or_none(o->moe_backend));
    return MP_PROBE_GOOD;
}

static enum mp_probe_outcome by_resolved(const struct mp_probe_obs *g,
                                         const struct mp_probe_obs *o, char *why, size_t n)
{
    if (!same_str(g->moe_backend, o->moe_backend)) {
        snprintf(why, n, "resolved MoE backend %s, the good build's %s", or_none(o->moe_backend),
                 or_none(g->moe_backend));
        return MP_PROBE_BAD;
    }
    if (!same_str(g->linear_kernel, o->linear_kernel)) {
        snprintf(why, n, "resolved dense kernel %s, the good build's %s",
                 or_none(o->linear_kernel), or_none(g->linear_kernel));
        return MP_PROBE_BAD;
    }
    snprintf(why, n, "resolved MoE backend %s and dense kernel %s, as the good build",
             or_none(o->moe_backend), or_none(o->linear_kernel));
    return MP_PROBE_GOOD;
}

static enum mp_probe_outcome by_throughput(const struct mp_bisect_cfg *cfg,
                                           const struct mp_probe_obs *g,
                                           const struct mp_probe_obs *o, char *why, size_t n)
{
    if (!(g->tok_s > 0)) {
        snprintf(why, n, "the good build has no measured sequential rate to compare with");
        return MP_PROBE_SKIP;
    }
    if (!(o->tok_s > 0)) {
        snprintf(why, n, "no sequential rate measured (verdict %s): slower than any rate",
                 o->verdict ? mp_verdict_name(o->verdict) : "none");
        return MP_PROBE_BAD;
    }
    double ratio = o->tok_s / g->tok_s, floor_ = 1.0 - cfg->pct / 100.0;
    snprintf(why, n, "%.1f tok/s, %.2fx the good build's %.1f (%s %.2fx)", o->tok_s, ratio,
             g->tok_s, ratio < floor_ ? "below" : "at or above", floor_);
    return ratio < floor_ ? MP_PROBE_BAD : MP_PROBE_GOOD;
}

enum mp_probe_outcome mp_bisect_judge(const struct mp_bisect_cfg *cfg,
                                      const struct mp_probe_obs *good,
                                      const struct mp_probe_obs *obs, char *why, size_t n)
{
    if (!obs->usable || obs->verdict == MP_V_NONE) {
        snprintf(why, n, "%s", !obs->usable ? "moeprobe could not run this probe"
                                            : "the probe reached no verdict");
        return MP_PROBE_SKIP;
    }
    switch (cfg->by) {
    case MP_BY_RESOLVED:
        return by_resolved(good, obs, why, n);
    case MP_BY_THROUGHPUT:
        return by_throughput(cfg, good, obs, why, n);
    default:
        return by_verdict(good, obs, why, n);
    }
}

void mp_bisect_next(const enum mp_probe_outcome *outcome, size_t m, struct mp_bisect_step *st)
{
    memset(st, 0, sizeof(*st));
    st->last_good = st->first_bad = -1;
    if (outcome[m - 1] == MP_PROBE_UNKNOWN) { /* the bad build first: it sets the bar */
        st->next = m - 1;
        st->probes_left = 2;
        return;
    }
    if (outcome[0] == MP_PROBE_UNKNOWN) {
        st->next = 0;
        st->probes_left = 1;
        return;
    }
    for (size_t i = 0; i < m && st->first_bad < 0; i++)
        if (outcome[i] == MP_PROBE_BAD)
            st->first_bad = (long)i;
    long hi = st->first_bad >= 0 ? st->first_bad : (long)m;
    for (long i = 0; i < hi; i++)
        if (outcome[i] == MP_PROBE_GOOD)
            st->last_good = i;
    for (long i = hi + 1; i < (long)m; i++)
        st->inconsistent |= outcome[i] == MP_PROBE_GOOD;
    if (st->first_bad < 0 || st->last_good < 0) {
        st->done = true; /* the bad build is like the good one, or the good one unusable */
        return;
    }
    double mid = (double)(st->last_good + st->first_bad) / 2.0, best = 1e300;
    bool skipped = false;
    for (long i = st->last_good + 1; i < st->first_bad; i++) {
        if (outcome[i] == MP_PROBE_SKIP) {
            skipped = true;
            continue;
        }
        if (outcome[i] != MP_PROBE_UNKNOWN)
            continue;
        st->left++;
        if (fabs((double)i - mid) < best) {
            best = fabs((double)i - mid);
            st->next = (size_t)i;
        }
    }
    if (!st->left) {
        st->done = true;
        st->ambiguous = skipped;
        return;
    }
    unsigned k = 0;
    while ((1ul << k) < st->left + 1)
        k++;
    st->probes_left = k;
}

unsigned long mp_bisect_required(const struct mp_stats_attempt *bad, size_t nbad,
                                 unsigned long probe_requests, double *p_bad, char *why,
                                 size_t n)
{
    struct mp_stats_async est;
    *p_bad = 0;
    if (mp_stats_async_estimate(bad, nbad, &est) == 0 && est.failures > 0)
        *p_bad = est.p_hat;
    if (probe_requests > 0) {
        snprintf(why, n, "%lu clean requests per probe (--probe-requests)", probe_requests);
        return probe_requests;
    }
    if (*p_bad <= 0) {
        snprintf(why, n, "the bad build failed no request: its difference shows without load, "
                 "so each probe runs the workload as given");
        return 0;
    }
    unsigned long req = mp_stats_required_n(*p_bad);
    snprintf(why, n, "the bad build failed %lu time%s in %lu requests (p = %.3g per request): "
             "(1 - p)^%lu ≤ 0.05, so a probe needs %lu clean requests for a build as bad to "
             "have failed in it with 95 %% probability", est.failures,
             est.failures == 1 ? "" : "s", est.trials, *p_bad, req, req);
    return req;
}

double mp_bisect_confidence(double p_bad, unsigned long clean, char *why, size_t n)
{
    if (!(p_bad > 0)) {
        snprintf(why, n, "the difference shows without load (what the build resolved, whether "
                 "it starts): each probe's own log decides it");
        return 1.0;
    }
    double c = 1.0 - pow(1.0 - p_bad, (double)clean);
    snprintf(why, n, "the last good build served %lu clean requests; a build failing as often "
             "as the bad one (p = %.3g per request) would have failed among them with "
             "probability %.3f", clean, p_bad, c);
    return c;
}
