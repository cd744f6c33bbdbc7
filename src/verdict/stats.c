/* stats.c - failure-rate bounds, required sample sizes, percentiles.
 *
 * The incomplete beta function is evaluated with its continued fraction
 * (modified Lentz method), using the symmetry I_x(a,b) = 1 - I_{1-x}(b,a)
 * to stay in the region where the fraction converges quickly. Quantiles
 * are found by bisection: I_x is monotone in x, so bisection cannot fail,
 * and 60-odd halvings reach double precision; speed is irrelevant here. */
#include "compat.h"
#include "verdict/stats.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALPHA 0.05
#define CF_MAX_ITER 200000
#define CF_EPS 1e-15
#define CF_TINY 1e-300

double mp_stats_failure_upper95(unsigned long n_ok)
{
    if (n_ok == 0)
        return 1.0;
    /* 1 - 0.05^(1/n) without cancellation for large n */
    return -expm1(log(ALPHA) / (double)n_ok);
}

unsigned long mp_stats_required_n(double p)
{
    double l, target = log(ALPHA), est;
    unsigned long n;

    if (isnan(p) || p <= 0)
        return MP_STATS_N_UNBOUNDED;
    if (p >= 1)
        return 1;
    l = log1p(-p); /* < 0 */
    est = ceil(target / l);
    if (!(est < 1.8e19))
        return MP_STATS_N_UNBOUNDED;
    n = est < 1 ? 1 : (unsigned long)est;
    /* settle rounding at the boundary: (1-p)^n <= 0.05 must hold for n,
     * and must fail for n - 1 */
    while (n > 1 && (double)(n - 1) * l <= target)
        n--;
    while ((double)n * l > target && n < MP_STATS_N_UNBOUNDED - 1)
        n++;
    return n;
}

/* Continued fraction for I_x(a,b), without the prefactor. */
static double beta_cf(double x, double a, double b)
{
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0), h;

    if (fabs(d) < CF_TINY)
        d = CF_TINY;
    d = 1.0 / d;
    h = d;
    for (int m = 1; m <= CF_MAX_ITER; m++) {
        double dm = (double)m, coef, delta;
        /* even step: d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)) */
        coef = dm * (b - dm) * x / ((a + 2 * dm - 1.0) * (a + 2 * dm));
        d = 1.0 + coef * d;
        if (fabs(d) < CF_TINY)
            d = CF_TINY;
        c = 1.0 + coef / c;
        if (fabs(c) < CF_TINY)
            c = CF_TINY;
        d = 1.0 / d;
        h *= d * c;
        /* odd step: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)) */
        coef = -(a + dm) * (a + b + dm) * x / ((a + 2 * dm) * (a + 2 * dm + 1.0));
        d = 1.0 + coef * d;
        if (fabs(d) < CF_TINY)
            d = CF_TINY;
        c = 1.0 + coef / c;
        if (fabs(c) < CF_TINY)
            c = CF_TINY;
        d = 1.0 / d;
        delta = d * c;
        h *= delta;
        if (fabs(delta - 1.0) < CF_EPS)
            break;
    }
    return h;
}

/* log Gamma(x) tail of Stirling's series: lgamma(x) - [(x - 1/2) log x - x + log(2 pi)/2] */
static double stirling_tail(double x)
{
    double x2 = x * x;
    return 1.0 / (12.0 * x) - 1.0 / (360.0 * x * x2) + 1.0 / (1260.0 * x * x2 * x2);
}

/* log B(a, b). lgamma(a + b) - lgamma(b) loses digits when b is huge (the
 * terms are ~1e13 for b = 1e12 while their difference is ~50), so for a
 * large argument the ratio is taken from Stirling's series directly:
 * (b - 1/2) log1p(a/b) + a log(a + b) - a + tail(a + b) - tail(b). */
static double log_beta(double a, double b)
{
    double big = a > b ? a : b, small = a > b ? b : a;
    if (big < 100.0)
        return lgamma(a) + lgamma(b) - lgamma(a + b);
    double ratio = (big - 0.5) * log1p(small / big) + small * log(big + small) - small +
                   stirling_tail(big + small) - stirling_tail(big);
    return lgamma(small) - ratio;
}

double mp_stats_betainc(double x, double a, double b)
{
    double lfront;

    if (isnan(x) || isnan(a) || isnan(b) || a <= 0 || b <= 0 || x < 0 || x > 1)
        return NAN;
    if (x == 0)
        return 0.0;
    if (x == 1)
        return 1.0;
    /* x^a (1-x)^b / B(a,b), in logs */
    lfront = a * log(x) + b * log1p(-x) - log_beta(a, b);
    if (x < (a + 1.0) / (a + b + 2.0))
        return exp(lfront) * beta_cf(x, a, b) / a;
    return 1.0 - exp(lfront) * beta_cf(1.0 - x, b, a) / b;
}

double mp_stats_beta_quantile(double q, double a, double b)
{
    double lo = 0.0, hi = 1.0;

    if (isnan(q) || q < 0 || q > 1 || !(a > 0) || !(b > 0))
        return NAN;
    if (q == 0)
        return 0.0;
    if (q == 1)
        return 1.0;
    /* 300 halvings of [0,1] keep full relative precision down to about
     * 1e-75; stop earlier once the midpoint no longer moves */
    for (int i = 0; i < 300; i++) {
        double mid = 0.5 * (lo + hi);
        if (mid <= lo || mid >= hi)
            break;
        if (mp_stats_betainc(mid, a, b) < q)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

double mp_stats_cp_lower95(unsigned long f, unsigned long trials)
{
    if (f > trials)
        return NAN;
    if (f == 0)
        return 0.0;
    if (f == trials)
        return exp(log(ALPHA) / (double)trials); /* Beta(T,1): x^T = 0.05 */
    return mp_stats_beta_quantile(ALPHA, (double)f, (double)(trials - f + 1));
}

/* "2", "2 and 3", "2, 3 and 4", "2, 3, 4, 5, 6, 7 and 9 more" */
static void list_served(char *out, size_t outsz, const struct mp_stats_attempt *a, size_t n, bool failed)
{
    size_t shown = 0, total = 0, len = 0;
    enum { SHOW = 6 };

    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (a[i].failed == failed)
            total++;
    for (size_t i = 0; i < n && len < outsz; i++) {
        const char *sep;
        if (a[i].failed != failed)
            continue;
        if (shown == SHOW && total > SHOW + 1) {
            snprintf(out + len, outsz - len, " and %zu more", total - shown);
            return;
        }
        sep = shown == 0 ? "" : (shown + 1 == total ? " and " : ", ");
        int w = snprintf(out + len, outsz - len, "%s%lu", sep, a[i].served);
        if (w < 0)
            return;
        len += (size_t)w;
        shown++;
    }
}

int mp_stats_async_estimate(const struct mp_stats_attempt *attempts, size_t n, struct mp_stats_async *out)
{
    unsigned long f = 0, trials = 0, censored = 0, censored_req = 0, last_failed_served = 0;
    char failed_list[160], clean_part[96] = "";

    if (!out || (n > 0 && !attempts))
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        unsigned long add = attempts[i].served + (attempts[i].failed ? 1UL : 0UL);
        if (add < attempts[i].served || trials + add < trials)
            return -EINVAL;
        trials += add;
        if (attempts[i].failed) {
            f++;
            last_failed_served = attempts[i].served;
        } else {
            censored++;
            censored_req += attempts[i].served;
        }
    }
    out->failures = f;
    out->trials = trials;
    out->p_hat = trials ? (double)f / (double)trials : 0.0;
    out->p_low = mp_stats_cp_lower95(f, trials);
    out->required_n = mp_stats_required_n(out->p_low);

    if (censored > 0)
        snprintf(clean_part, sizeof(clean_part), ", plus %lu clean attempt%s of %lu request%s", censored,
                 censored == 1 ? "" : "s", censored_req, censored_req == 1 ? "" : "s");
    if (f == 0) {
        snprintf(out->why, sizeof(out->why),
                 "no failure in %lu request%s served → no per-request failure rate to test "
                 "CUDA_LAUNCH_BLOCKING=1 against",
                 trials, trials == 1 ? "" : "s");
        return 0;
    }
    list_served(failed_list, sizeof(failed_list), attempts, n, true);
    snprintf(out->why, sizeof(out->why),
             "%lu failure%s after %s request%s served%s → p̂ = %.2g, 95 %% lower bound p = %.2g; "
             "(1 − p)^%lu ≤ 0.05 → %lu clean request%s needed under CUDA_LAUNCH_BLOCKING=1",
             f, f == 1 ? "" : "s", failed_list, (f == 1 && last_failed_served == 1) ? "" : "s",
             clean_part, out->p_hat, out->p_low, out->required_n, out->required_n,
             out->required_n == 1 ? "" : "s");
    return 0;
}

void mp_stats_fmt_duration(char *out, size_t n, double s)
{
    if (s >= 5400)
        snprintf(out, n, "%.1f h", s / 3600);
    else if (s >= 90)
        snprintf(out, n, "%.0f min", s / 60);
    else
        snprintf(out, n, "%.0f s", s);
}

/* The requests the blocked run serves one at a time (its own lead, else the
 * normal run's). */
static unsigned long blocked_lead(const struct mp_diag_cost_in *in)
{
    return in->blocked_lead ? in->blocked_lead : in->lead;
}

/* Seconds for the first n requests of a run: the first `lead` at r1 each
 * (one at a time), the rest at rt each (the top concurrency). */
static double run_requests_s(double n, double lead, double r1, double rt)
{
    double alone = MP_MIN(n, lead);
    return alone * r1 + MP_MAX(0.0, n - alone) * rt;
}

/* Blocked requests the time `left` pays for. */
static unsigned long affordable_requests(double left, double lead, double r1, double rt)
{
    if (left <= 0 || rt <= 0)
        return 0;
    double alone = lead * r1; /* the requests served one at a time */
    if (r1 > 0 && left <= alone)
        return (unsigned long)(left / r1);
    return (unsigned long)(lead + (left - alone) / rt);
}

/* One more normal run, expected to fail after 1/p̂ requests: what it costs
 * and what its failure saves of the blocked run. */
static void plan_sharpen(const struct mp_diag_cost_in *in, const struct mp_stats_async *est,
                         double r1, double slow, struct mp_diag_plan *out)
{
    double m = est->p_hat > 0 ? 1.0 / est->p_hat : 0;
    if (!(m > 0 && m < 1e9 && in->nobs < 64))
        return;
    struct mp_stats_attempt obs[65];
    memcpy(obs, in->obs, in->nobs * sizeof(*obs));
    obs[in->nobs].served = (unsigned long)(m > 1 ? m - 1 : 0);
    obs[in->nobs].failed = true;
    struct mp_stats_async more;
    if (mp_stats_async_estimate(obs, in->nobs + 1, &more) < 0 || more.required_n >= est->required_n)
        return;
    unsigned long need2 = more.required_n;
    if (in->cap && need2 > in->cap)
        need2 = in->cap;
    need2 = MP_MIN(need2, out->need);
    double blead = (double)blocked_lead(in);
    out->sharpen_known = true;
    out->sharpen_need = need2;
    out->sharpen_cost_s = in->start_s + run_requests_s(m, (double)in->lead, r1, in->req_s);
    out->sharpen_saves_s = run_requests_s((double)out->need, blead, r1 * slow, in->req_s * slow) -
                           run_requests_s((double)need2, blead, r1 * slow, in->req_s * slow);
    out->sharpen = out->sharpen_saves_s > out->sharpen_cost_s;
}

/* The plan's sentence: the blocked run's arithmetic, then the rerun's. */
static void plan_why(const struct mp_diag_cost_in *in, double r1, double slow,
                     struct mp_diag_plan *out)
{
    char total[32], budget[32], cost[32], saves[32];
    mp_stats_fmt_duration(total, sizeof(total), out->blocked_s);
    mp_stats_fmt_duration(budget, sizeof(budget), in->budget_s);
    unsigned long alone = MP_MIN(out->need, blocked_lead(in)), rest = out->need - alone;
    size_t n = sizeof(out->why);
    int k = snprintf(out->why, n,
                     "the CUDA_LAUNCH_BLOCKING=1 run needs %lu clean request%s: about %s = start-up "
                     "%.3g s + (%lu x %.3g s alone + %lu x %.3g s at concurrency %d%s) x %.3g "
                     "assumed blocked",
                     out->need, out->need == 1 ? "" : "s", total, in->start_s, alone, r1, rest,
                     in->req_s, in->concurrency,
                     in->req_projected ? ", projected from one request alone" : "", slow);
    if (k > 0 && (size_t)k < n && out->over_budget)
        k += snprintf(out->why + k, n - (size_t)k, ", over the --diagnose-budget of %s (it pays for %lu)",
                      budget, out->affordable);
    if (k > 0 && (size_t)k < n && out->sharpen_known) {
        mp_stats_fmt_duration(cost, sizeof(cost), out->sharpen_cost_s);
        mp_stats_fmt_duration(saves, sizeof(saves), out->sharpen_saves_s);
        snprintf(out->why + k, n - (size_t)k,
                 "; one more normal run would cost about %s (start-up %.3g s + its requests to the "
                 "expected failure) and save about %s (%lu instead of %lu blocked requests): %s",
                 cost, in->start_s, saves, out->sharpen_need, out->need,
                 out->sharpen ? "worth it" : "not worth it");
    }
}

int mp_stats_diag_plan(const struct mp_diag_cost_in *in, struct mp_diag_plan *out)
{
    if (!in || !out)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    struct mp_stats_async est;
    if (mp_stats_async_estimate(in->obs, in->nobs, &est) < 0)
        return -EINVAL;
    double slow = in->blocked_slowdown > 1 ? in->blocked_slowdown : 2;
    double r1 = in->req1_s > 0 ? in->req1_s : in->req_s;
    out->required_n = est.required_n;
    out->need = est.required_n;
    if (in->cap && out->need > in->cap)
        out->need = in->cap;
    if (est.failures == 0 || out->need == MP_STATS_N_UNBOUNDED) {
        snprintf(out->why, sizeof(out->why), "no failure to diagnose");
        return 0;
    }
    double lead = (double)blocked_lead(in);
    out->blocked_s = in->start_s + run_requests_s((double)out->need, lead, r1 * slow, in->req_s * slow);
    out->over_budget = in->budget_s > 0 && out->blocked_s > in->budget_s;
    if (in->budget_s > 0)
        out->affordable = affordable_requests(in->budget_s - in->start_s, lead, r1 * slow,
                                              in->req_s * slow);
    plan_sharpen(in, &est, r1, slow, out);
    plan_why(in, r1, slow, out);
    return 0;
}

double mp_stats_percentile_sorted(const double *sorted, size_t n, double q)
{
    double h, frac;
    size_t lo;

    if (n == 0 || !sorted || isnan(q))
        return NAN;
    if (q < 0)
        q = 0;
    if (q > 100)
        q = 100;
    h = (double)(n - 1) * q / 100.0;
    lo = (size_t)floor(h);
    if (lo >= n - 1)
        return sorted[n - 1];
    frac = h - (double)lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

double mp_stats_percentile(const double *v, size_t n, double q)
{
    double *copy, r;

    if (n == 0 || !v)
        return NAN;
    copy = xmalloc(n * sizeof(*copy));
    memcpy(copy, v, n * sizeof(*copy));
    qsort(copy, n, sizeof(*copy), cmp_double);
    r = mp_stats_percentile_sorted(copy, n, q);
    free(copy);
    return r;
}

void mp_stats_wilson95(unsigned long right, unsigned long n, double *low, double *high)
{
    if (n == 0 || right > n) {
        *low = 0;
        *high = 1;
        return;
    }
    const double z = 1.959963984540054;
    double nn = (double)n, p = (double)right / nn, z2 = z * z;
    double den = 1 + z2 / nn;
    double mid = (p + z2 / (2 * nn)) / den;
    double half = z * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / den;
    *low = fmax(0.0, mid - half);
    *high = fmin(1.0, mid + half);
}

double mp_stats_two_prop_z(unsigned long ra, unsigned long na, unsigned long rb,
                           unsigned long nb)
{
    if (na == 0 || nb == 0 || ra > na || rb > nb)
        return 0;
    double pa = (double)ra / (double)na, pb = (double)rb / (double)nb;
    double p = (double)(ra + rb) / (double)(na + nb);
    double v = p * (1 - p) * (1.0 / (double)na + 1.0 / (double)nb);
    return v > 0 ? (pa - pb) / sqrt(v) : 0;
}
