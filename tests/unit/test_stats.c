/* test_stats.c - failure-rate bounds, Clopper-Pearson, required n,
 * percentiles. Reference values were computed independently with exact
 * binomial tail sums (I_x(f, T-f+1) = P(Bin(T, x) >= f)) in 60-digit decimal
 * arithmetic and bisection. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "verdict/stats.h"

static void assert_rel(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want))) {
        fprintf(stderr, "got %.17g want %.17g (rel %.3g)\n", got, want, rel);
        fail();
    }
}

static void test_upper95(void **state)
{
    MP_UNUSED(state);
    assert_true(mp_stats_failure_upper95(0) == 1.0);
    assert_rel(mp_stats_failure_upper95(1), 0.95, 1e-14);
    assert_rel(mp_stats_failure_upper95(58), 1 - pow(0.05, 1.0 / 58), 1e-12);
    assert_rel(mp_stats_failure_upper95(58), 0.050335, 1e-4); /* DESIGN.md example: 0.0504 */
    /* about 3/n for large n, no cancellation */
    assert_rel(mp_stats_failure_upper95(1000000000UL), 2.995732273553991e-09, 1e-8);
}

static void test_required_n(void **state)
{
    MP_UNUSED(state);
    assert_int_equal(mp_stats_required_n(0.5), 5);
    assert_int_equal(mp_stats_required_n(0.1), 29);
    assert_int_equal(mp_stats_required_n(0.01), 299);
    assert_int_equal(mp_stats_required_n(0.05), 59);
    assert_int_equal(mp_stats_required_n(1.0), 1);
    assert_int_equal(mp_stats_required_n(2.0), 1);
    assert_int_equal(mp_stats_required_n(0.96), 1);   /* 0.04^1 <= 0.05 */
    assert_int_equal(mp_stats_required_n(0.9), 2);    /* 0.1 > 0.05, 0.01 <= 0.05 */
    assert_true(mp_stats_required_n(0.0) == MP_STATS_N_UNBOUNDED);
    assert_true(mp_stats_required_n(-1.0) == MP_STATS_N_UNBOUNDED);
    assert_true(mp_stats_required_n(NAN) == MP_STATS_N_UNBOUNDED);
    assert_true(mp_stats_required_n(1e-300) == MP_STATS_N_UNBOUNDED);
    /* definition holds for a sweep of p: minimal n */
    for (double p = 0.0007; p < 1; p *= 1.37) {
        unsigned long n = mp_stats_required_n(p);
        assert_true(pow(1 - p, (double)n) <= 0.05 + 1e-12);
        if (n > 1)
            assert_true(pow(1 - p, (double)(n - 1)) > 0.05 - 1e-12);
    }
}

static void test_betainc(void **state)
{
    MP_UNUSED(state);
    /* closed forms */
    assert_rel(mp_stats_betainc(0.1, 0.5, 0.5), 2 / M_PI * asin(sqrt(0.1)), 1e-12);
    assert_rel(mp_stats_betainc(0.3, 1, 3), 1 - pow(0.7, 3), 1e-13);
    assert_rel(mp_stats_betainc(0.3, 2, 1), 0.09, 1e-13);
    /* binomial tail: I_0.3(10, 21) = P(Bin(30, 0.3) >= 10) */
    assert_rel(mp_stats_betainc(0.3, 10, 21), 4.111913147592779e-01, 1e-12);
    /* symmetry I_x(a,b) = 1 - I_{1-x}(b,a) */
    assert_rel(mp_stats_betainc(0.8, 3, 7), 1 - mp_stats_betainc(0.2, 7, 3), 1e-13);
    assert_true(mp_stats_betainc(0, 2, 3) == 0.0);
    assert_true(mp_stats_betainc(1, 2, 3) == 1.0);
    assert_true(isnan(mp_stats_betainc(-0.1, 2, 3)));
    assert_true(isnan(mp_stats_betainc(0.5, 0, 3)));
    assert_true(isnan(mp_stats_beta_quantile(1.5, 2, 3)));
}

static void test_cp_lower(void **state)
{
    MP_UNUSED(state);
    /* f = 1, T = 3: 1 - 0.95^(1/3) */
    assert_rel(mp_stats_cp_lower95(1, 3), 1 - pow(0.95, 1.0 / 3), 1e-10);
    assert_rel(mp_stats_cp_lower95(1, 3), 1.695242750844150e-02, 1e-10);
    assert_rel(mp_stats_cp_lower95(2, 6), 6.284989170835438e-02, 1e-10);
    assert_rel(mp_stats_cp_lower95(3, 10), 8.726443391415030e-02, 1e-10);
    assert_rel(mp_stats_cp_lower95(10, 50), 1.127216134140759e-01, 1e-10);
    /* large f and T (Stirling path of log B for both arguments) */
    assert_rel(mp_stats_cp_lower95(1000, 10000), 9.510201345758411e-02, 1e-9);
    assert_rel(mp_stats_cp_lower95(150, 300), 4.510087547087935e-01, 1e-9);
    /* huge T */
    assert_rel(mp_stats_cp_lower95(5, 1000000), 1.970151567618015e-06, 1e-8);
    assert_rel(mp_stats_cp_lower95(2, 1000000000000UL), 3.553615106987766e-13, 1e-9);
    /* edges */
    assert_true(mp_stats_cp_lower95(0, 0) == 0.0);
    assert_true(mp_stats_cp_lower95(0, 100) == 0.0);
    assert_rel(mp_stats_cp_lower95(1, 1), 0.05, 1e-14);
    assert_rel(mp_stats_cp_lower95(4, 4), pow(0.05, 0.25), 1e-14);
    assert_true(isnan(mp_stats_cp_lower95(3, 2)));
    /* a lower bound below the MLE, and growing with evidence at fixed rate */
    assert_true(mp_stats_cp_lower95(10, 100) < 0.1);
    assert_true(mp_stats_cp_lower95(10, 100) < mp_stats_cp_lower95(100, 1000));
}

static void test_async_estimate(void **state)
{
    struct mp_stats_async r;
    MP_UNUSED(state);

    /* two crashes after 2 requests each: f = 2, T = 6 */
    struct mp_stats_attempt a[] = { { 2, true }, { 2, true } };
    assert_int_equal(mp_stats_async_estimate(a, 2, &r), 0);
    assert_int_equal(r.failures, 2);
    assert_int_equal(r.trials, 6);
    assert_rel(r.p_hat, 1.0 / 3, 1e-15);
    assert_rel(r.p_low, 6.284989170835438e-02, 1e-10);
    assert_int_equal(r.required_n, mp_stats_required_n(r.p_low));
    assert_int_equal(r.required_n, 47);
    assert_string_equal(r.why, "2 failures after 2 and 2 requests served → p̂ = 0.33, 95 % lower bound "
                               "p = 0.063; (1 − p)^47 ≤ 0.05 → 47 clean requests needed under "
                               "CUDA_LAUNCH_BLOCKING=1");

    /* censoring: a clean attempt of 4 requests adds 4 trials, no failure */
    struct mp_stats_attempt b[] = { { 2, true }, { 4, false }, { 2, true } };
    assert_int_equal(mp_stats_async_estimate(b, 3, &r), 0);
    assert_int_equal(r.failures, 2);
    assert_int_equal(r.trials, 10);
    assert_rel(r.p_hat, 0.2, 1e-15);
    assert_rel(r.p_low, mp_stats_cp_lower95(2, 10), 1e-15);
    assert_true(r.required_n > 47); /* less evidence of a high rate: more clean requests */
    assert_non_null(strstr(r.why, "plus 1 clean attempt of 4 requests"));

    /* a crash on the very first request */
    struct mp_stats_attempt c[] = { { 0, true } };
    assert_int_equal(mp_stats_async_estimate(c, 1, &r), 0);
    assert_int_equal(r.trials, 1);
    assert_rel(r.p_low, 0.05, 1e-14);
    assert_int_equal(r.required_n, 59);
    assert_non_null(strstr(r.why, "1 failure after 0 requests served"));

    /* many attempts are summarised */
    struct mp_stats_attempt m[9];
    for (size_t i = 0; i < 9; i++) {
        m[i].served = i + 1;
        m[i].failed = true;
    }
    assert_int_equal(mp_stats_async_estimate(m, 9, &r), 0);
    assert_int_equal(r.trials, 45 + 9);
    assert_non_null(strstr(r.why, "9 failures after 1, 2, 3, 4, 5, 6 and 3 more requests served"));

    /* no failure at all: nothing to bound */
    struct mp_stats_attempt z[] = { { 30, false } };
    assert_int_equal(mp_stats_async_estimate(z, 1, &r), 0);
    assert_int_equal(r.failures, 0);
    assert_true(r.p_low == 0.0);
    assert_true(r.required_n == MP_STATS_N_UNBOUNDED);
    assert_non_null(strstr(r.why, "no failure in 30 requests"));
    assert_int_equal(mp_stats_async_estimate(NULL, 0, &r), 0);
    assert_int_equal(r.trials, 0);
    assert_true(r.p_hat == 0.0);

    /* errors */
    assert_int_equal(mp_stats_async_estimate(a, 2, NULL), -22);
    struct mp_stats_attempt o[] = { { ULONG_MAX, true } };
    assert_int_equal(mp_stats_async_estimate(o, 1, &r), -22);
}

static void test_diag_plan(void **state)
{
    (void)state;
    struct mp_stats_attempt one[] = {{2, true}};
    struct mp_diag_cost_in in = {.obs = one, .nobs = 1, .start_s = 1, .req_s = 0.1,
                                 .concurrency = 8, .budget_s = 3600, .cap = 0};
    struct mp_diag_plan p;
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    struct mp_stats_async est;
    assert_int_equal(mp_stats_async_estimate(one, 1, &est), 0);
    assert_int_equal(p.required_n, est.required_n);
    assert_int_equal(p.need, est.required_n);
    /* a cheap start: one more failure is cheaper than the blocked requests it saves */
    assert_true(p.sharpen);
    assert_true(p.sharpen_saves_s > p.sharpen_cost_s);
    assert_true(fabs(p.sharpen_cost_s - (1 + 3 * 0.1)) < 1e-9); /* start + 1/p̂ requests */
    assert_false(p.over_budget);
    assert_true(fabs(p.blocked_s - (1 + (double)p.need * 0.2)) < 1e-9); /* assumed 2x */
    assert_non_null(strstr(p.why, "concurrency 8"));
    /* a DGX Spark start: ten minutes buy fewer blocked seconds than they cost */
    in.start_s = 600;
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    assert_false(p.sharpen);
    /* over the budget: said, with what the budget pays for */
    in.start_s = 10;
    in.req_s = 1;
    in.budget_s = 100;
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    assert_true(p.over_budget);
    assert_int_equal(p.affordable, 45); /* (100 - 10) / (1 s x 2) */
    assert_non_null(strstr(p.why, "over the --diagnose-budget"));
    /* no budget */
    in.budget_s = 0;
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    assert_false(p.over_budget);
    /* the cap bounds what is asked, not what is required */
    in.cap = 50;
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    assert_int_equal(p.need, 50);
    assert_int_equal(p.required_n, est.required_n);
    /* a measured slowdown replaces the assumption */
    in.cap = 0;
    in.blocked_slowdown = 3;
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    assert_true(fabs(p.blocked_s - (10 + (double)p.need * 3)) < 1e-9);
    /* nothing failed: nothing to plan */
    struct mp_stats_attempt clean[] = {{40, false}};
    in.obs = clean;
    assert_int_equal(mp_stats_diag_plan(&in, &p), 0);
    assert_false(p.sharpen);
    assert_false(p.over_budget);
    assert_non_null(strstr(p.why, "no failure"));
    assert_int_equal(mp_stats_diag_plan(NULL, &p), -EINVAL);
    assert_int_equal(mp_stats_diag_plan(&in, NULL), -EINVAL);
}

static void test_percentile(void **state)
{
    const double v[] = { 3, 1, 4, 1, 5, 9, 2, 6 };
    const double one[] = { 7 };
    MP_UNUSED(state);
    /* numpy.percentile(v, q) with the default "linear" method */
    assert_rel(mp_stats_percentile(v, 8, 0), 1.0, 1e-15);
    assert_rel(mp_stats_percentile(v, 8, 25), 1.75, 1e-15);
    assert_rel(mp_stats_percentile(v, 8, 50), 3.5, 1e-15);
    assert_rel(mp_stats_percentile(v, 8, 90), 6.9, 1e-14);
    assert_rel(mp_stats_percentile(v, 8, 99), 8.79, 1e-14);
    assert_rel(mp_stats_percentile(v, 8, 100), 9.0, 1e-15);
    assert_rel(mp_stats_percentile(v, 8, 150), 9.0, 1e-15); /* clamped */
    assert_rel(mp_stats_percentile(v, 8, -5), 1.0, 1e-15);
    assert_rel(mp_stats_percentile(one, 1, 50), 7.0, 1e-15);
    assert_true(isnan(mp_stats_percentile(v, 0, 50)));
    assert_true(isnan(mp_stats_percentile(NULL, 0, 50)));
    /* input left untouched */
    assert_true(v[0] == 3 && v[7] == 6);
    const double s[] = { 10, 20, 30, 40 };
    assert_rel(mp_stats_percentile_sorted(s, 4, 50), 25.0, 1e-15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upper95),
        cmocka_unit_test(test_required_n),
        cmocka_unit_test(test_betainc),
        cmocka_unit_test(test_cp_lower),
        cmocka_unit_test(test_async_estimate),
        cmocka_unit_test(test_percentile),
        cmocka_unit_test(test_diag_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
