/* stats.h - the numbers behind verdicts. Pure: no I/O, no global state
 * (mp_stats_percentile allocates a scratch copy and frees it).
 *
 * Model for asynchronous failures (DESIGN.md, verdict rules): each request
 * fails independently with the same probability p, so the number of requests
 * served before a failure is geometric. An attempt that ended in a failure
 * after k good requests contributes k + 1 trials and 1 failure; an attempt
 * that ended without failure after k requests (censored) contributes k
 * trials and 0 failures. With f failures in T trials:
 *   p_hat = f / T                           maximum-likelihood estimate
 *   p_low = 0.05 quantile of Beta(f, T-f+1)  one-sided 95 % Clopper-Pearson
 *                                           lower bound (conservative: low)
 *   required n = smallest n with (1 - p_low)^n <= 0.05: that many clean
 *   requests under CUDA_LAUNCH_BLOCKING=1 make "the failure still happens,
 *   we were just lucky" less than 5 % likely. */
#ifndef MP_STATS_H
#define MP_STATS_H

#include "compat.h"

#include <limits.h>

/* mp_stats_required_n for p <= 0 (or NaN): no finite n can show anything
 * (also returned when n would not fit in an unsigned long). */
#define MP_STATS_N_UNBOUNDED ULONG_MAX

/* 95 % upper bound on the per-request failure rate after n_ok requests
 * without failure: 1 - 0.05^(1/n) (about 3/n). n_ok = 0 -> 1.0. */
double mp_stats_failure_upper95(unsigned long n_ok);

/* Smallest n >= 1 with (1 - p)^n <= 0.05. p >= 1 -> 1;
 * p <= 0 or NaN -> MP_STATS_N_UNBOUNDED. Examples: 0.5 -> 5, 0.1 -> 29,
 * 0.05 -> 59, 0.01 -> 299. */
unsigned long mp_stats_required_n(double p);

/* Regularized incomplete beta function I_x(a, b) for a, b > 0 and
 * 0 <= x <= 1 (continued fraction, relative accuracy about 1e-13).
 * NaN for arguments outside that domain. */
double mp_stats_betainc(double x, double a, double b);

/* q-quantile of Beta(a, b) by bisection on mp_stats_betainc (to the last
 * bit of a double). a, b > 0, 0 <= q <= 1; NaN otherwise. */
double mp_stats_beta_quantile(double q, double a, double b);

/* One-sided 95 % Clopper-Pearson lower bound on p for f failures in T
 * trials: 0 when f == 0; the 0.05 quantile of Beta(f, T - f + 1) otherwise
 * (f == T gives 0.05^(1/T)). NaN when f > T. */
double mp_stats_cp_lower95(unsigned long f, unsigned long trials);

/* One attempt of a candidate in normal (non-blocking) mode. */
struct mp_stats_attempt {
    unsigned long served;     /* requests served successfully in this attempt */
    bool failed;              /* the attempt ended in a failure (after `served`) */
};

/* Result of mp_stats_async_estimate. */
struct mp_stats_async {
    unsigned long failures;   /* f */
    unsigned long trials;     /* T = sum over attempts (served + failed) */
    double p_hat;             /* f / T; 0 when T == 0 */
    double p_low;             /* one-sided 95 % lower bound; 0 when f == 0 */
    unsigned long required_n; /* clean blocking-mode requests needed; MP_STATS_N_UNBOUNDED when f == 0 */
    char why[512];            /* the reasoning in one sentence (UTF-8), e.g.
                               * "2 failures after 2 and 2 requests served → p̂ = 0.33,
                               *  95 % lower bound p = 0.063; (1 − p)^47 ≤ 0.05 → 47 clean
                               *  requests needed under CUDA_LAUNCH_BLOCKING=1" */
};

/* Estimate p and the required clean-request count from n attempts
 * (borrowed; may be NULL when n == 0). Returns 0, or -EINVAL when
 * out is NULL or the trial count overflows. */
int mp_stats_async_estimate(const struct mp_stats_attempt *attempts, size_t n, struct mp_stats_async *out);

/* What the CUDA_LAUNCH_BLOCKING=1 run will cost, and whether one more
 * normal run pays for itself first. Measured inputs, one assumption
 * (blocked_slowdown: blocked requests take that many times as long; the
 * blocked run measures the real ratio afterwards).
 *
 * A normal run serves its first `lead` requests one at a time, the blocked
 * run its first `blocked_lead` (its sequential phase is cut short)
 * (warm-up, sequential: req1_s each), the rest at the top concurrency
 * (req_s each). Both times are the engine's, net of moeprobe's own time
 * (verdict/diagnose.h mp_verdict_diag_meas), so the rule decides the same
 * on a world scaled down 100x as on the real machine: an extra normal run
 * costs start_s + its requests to the expected failure (1/p̂); it saves
 * the blocked requests its extra failure is expected to remove; it is
 * bought when it saves more than it costs. */
struct mp_diag_cost_in {
    const struct mp_stats_attempt *obs; /* the normal attempts so far (borrowed) */
    size_t nobs;
    double start_s;          /* measured start-up, spawn to ready (mean) */
    double req_s;            /* seconds per request at the blocked run's concurrency, the
                              * engine's time (measured there, or projected: req_projected) */
    int concurrency;         /* that concurrency, for the message */
    double blocked_slowdown; /* assumed, >= 1 (2 when <= 0) */
    double budget_s;         /* --diagnose-budget; <= 0: none */
    unsigned long cap;       /* --diagnose-max-requests; 0: none */
    double req1_s;           /* one request served alone (level 1), the engine's time;
                              * <= 0: req_s stands for it */
    unsigned long lead;      /* requests a run serves at level 1 before the top level
                              * (warm-up, sequential); 0: all at req_s */
    unsigned long blocked_lead; /* the same for the blocked run; 0: lead */
    bool req_projected;      /* req_s was projected from req1_s (the message says so) */
};

struct mp_diag_plan {
    unsigned long required_n; /* clean blocked requests a decision needs (estimate) */
    unsigned long need;       /* what the blocked run is asked for (cap applied) */
    double blocked_s;         /* estimated wall time of the blocked run for need */
    bool over_budget;         /* blocked_s exceeds the budget */
    unsigned long affordable; /* clean blocked requests the budget pays for */
    bool sharpen;             /* one more normal run first: it is expected to save more
                               * blocked time than it costs */
    double sharpen_cost_s;    /* a normal run to the next failure: start + 1/p̂ requests */
    double sharpen_saves_s;   /* blocked time saved if it fails as p̂ predicts */
    unsigned long sharpen_need; /* the blocked requests asked for after that failure */
    bool sharpen_known;       /* the three above were computed (a failure rate > 0) */
    char why[1024];           /* the estimate and the rerun decision, with their arithmetic */
};

/* A duration for people: "42 s", "12 min", "1.5 h". */
void mp_stats_fmt_duration(char *out, size_t n, double s);

/* Plan the diagnosis from in. Returns 0, or -EINVAL for NULL arguments or
 * inputs mp_stats_async_estimate rejects. */
int mp_stats_diag_plan(const struct mp_diag_cost_in *in, struct mp_diag_plan *out);

/* q-th percentile (0 <= q <= 100, clamped) of n values, with linear
 * interpolation between closest ranks exactly like numpy's default
 * ("linear"): h = (n - 1) * q / 100, v[floor h] + (h - floor h) *
 * (v[floor h + 1] - v[floor h]) over the sorted values. NaN when n == 0.
 * Values must not be NaN. mp_stats_percentile sorts a private copy;
 * the _sorted variant expects ascending input and does not allocate. */
double mp_stats_percentile(const double *v, size_t n, double q);
double mp_stats_percentile_sorted(const double *sorted, size_t n, double q);

/* The task gate (docs/verdicts.md "wrong-output"). Wilson score interval
 * at 95 % (z = 1.96) for `right` of n: [*low, *high]; n = 0 gives [0, 1]. */
void mp_stats_wilson95(unsigned long right, unsigned long n, double *low, double *high);
/* Two-proportion z statistic (pooled) of a = ra/na against b = rb/nb:
 * (pa - pb) / sqrt(p(1 - p)(1/na + 1/nb)) with p = (ra + rb)/(na + nb);
 * 0 when a side is empty or p is 0 or 1 (no spread: no difference shown). */
double mp_stats_two_prop_z(unsigned long ra, unsigned long na, unsigned long rb,
                           unsigned long nb);
/* One-sided 95 %: b is significantly below a when z > this. */
#define MP_STATS_Z95_ONE_SIDED 1.6448536269514722

#endif
