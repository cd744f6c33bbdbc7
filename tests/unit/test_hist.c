/* test_hist.c - log-linear histogram percentiles against exact sorted values, numpy-style
 * percentiles, and the vllm-bench-compatible result summary. */
#include "compat.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hist.h"
#include "http/lgstats.h"
#include "xalloc.h"

static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* nearest-rank percentile of sorted v */
static double exact_rank(const double *v, size_t n, double p)
{
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    return v[rank - 1];
}

static void check_dist(double (*gen)(void), size_t n)
{
    struct mp_hist h = MP_HIST_INIT;
    double *v = xcalloc(n, sizeof(double));
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        v[i] = gen();
        sum += v[i];
        mp_hist_add(&h, v[i]);
    }
    mp_hist_sort(v, n);
    assert_int_equal(h.n, n);
    assert_true(fabs(mp_hist_mean(&h) - sum / (double)n) <= 1e-9 * fabs(sum / (double)n) + 1e-12);
    assert_true(mp_hist_percentile(&h, 0) == v[0]);
    assert_true(mp_hist_percentile(&h, 100) == v[n - 1]);
    static const double ps[] = { 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.9 };
    for (size_t i = 0; i < MP_ARRAY_SIZE(ps); i++) {
        double want = exact_rank(v, n, ps[i]);
        double got = mp_hist_percentile(&h, ps[i]);
        double tol = want * 0.01 + 0.00001; /* 1% relative, 10 ns absolute */
        if (fabs(got - want) > tol)
            fail_msg("p%g: got %.9g want %.9g", ps[i], got, want);
    }
    free(v);
    mp_hist_free(&h);
    assert_null(h.blocks);
}

static double g_lognormal(void)
{
    double u1 = urand() + 1e-12, u2 = urand();
    double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
    return exp(2.5 + 1.2 * z); /* ~12 ms median, long tail */
}
static double g_uniform_small(void) { return urand() * 0.01; } /* 0..10 us */
static double g_wide(void) { return pow(10, urand() * 10 - 3); } /* 1 us .. 10^7 ms */

static void t_percentiles(void **state)
{
    (void)state;
    check_dist(g_lognormal, 100000);
    check_dist(g_uniform_small, 5000);
    check_dist(g_wide, 20000);
    check_dist(g_lognormal, 1);
    check_dist(g_lognormal, 3);
}

static void t_edges_and_merge(void **state)
{
    (void)state;
    struct mp_hist a = MP_HIST_INIT, b = MP_HIST_INIT;
    assert_true(mp_hist_percentile(&a, 50) == 0);
    assert_true(mp_hist_mean(&a) == 0);
    mp_hist_add(&a, NAN);
    assert_int_equal(a.n, 0);
    mp_hist_add(&a, -5);
    assert_true(a.min == 0);
    mp_hist_add(&a, 1e30); /* clamps into the top bucket, max stays exact */
    assert_true(mp_hist_percentile(&a, 100) == 1e30);
    for (int i = 1; i <= 100; i++)
        mp_hist_add(&b, i);
    mp_hist_merge(&a, &b);
    assert_int_equal(a.n, 102);
    assert_true(a.max == 1e30 && a.min == 0);
    double p50 = mp_hist_percentile(&a, 50); /* rank 51 -> the value 50 */
    assert_true(fabs(p50 - 50) <= 0.5);
    struct mp_hist e = MP_HIST_INIT;
    mp_hist_merge(&a, &e);
    mp_hist_merge(&e, &b);
    assert_int_equal(e.n, 100);
    mp_hist_free(&a);
    mp_hist_free(&b);
    mp_hist_free(&e);
    mp_hist_free(&e);
}

static void t_numpy(void **state)
{
    (void)state;
    double v[] = { 1, 2, 3, 4 };
    /* numpy.percentile([1,2,3,4], [50, 99, 0, 100, 25]) = 2.5, 3.97, 1, 4, 1.75 */
    assert_true(fabs(mp_hist_percentile_sorted(v, 4, 50) - 2.5) < 1e-12);
    assert_true(fabs(mp_hist_percentile_sorted(v, 4, 99) - 3.97) < 1e-12);
    assert_true(mp_hist_percentile_sorted(v, 4, 0) == 1);
    assert_true(mp_hist_percentile_sorted(v, 4, 100) == 4);
    assert_true(fabs(mp_hist_percentile_sorted(v, 4, 25) - 1.75) < 1e-12);
    assert_true(mp_hist_percentile_sorted(v, 1, 99) == 1);
    assert_true(mp_hist_percentile_sorted(v, 0, 50) == 0);
    double w[] = { 3, 1, 2 };
    mp_hist_sort(w, 3);
    assert_true(w[0] == 1 && w[1] == 2 && w[2] == 3);
}

static void t_summary(void **state)
{
    (void)state;
    const int64_t MS = 1000000;
    struct mp_lg_result r[4];
    memset(r, 0, sizeof(r));
    /* request 0: start 0, first token at 100 ms, 4 tokens 10 ms apart, usage says 4 */
    r[0].kind = MP_LG_GEN;
    r[0].outcome = MP_LG_OK;
    r[0].t_start_ns = 1000 * MS;
    r[0].t_first_token_ns = 1100 * MS;
    r[0].t_last_token_ns = 1130 * MS;
    r[0].output_tokens = 4;
    r[0].chunks = 4;
    r[0].t_end_ns = 1900 * MS; /* [DONE] and the end of the body come much later */
    for (int i = 0; i < 3; i++)
        mp_hist_add(&r[0].itl_ms, 10);
    /* request 1: first token at 50 ms, 2 tokens 20 ms apart */
    r[1].kind = MP_LG_GEN;
    r[1].outcome = MP_LG_OK;
    r[1].t_start_ns = 1000 * MS;
    r[1].t_first_token_ns = 1050 * MS;
    r[1].t_last_token_ns = 1070 * MS;
    r[1].output_tokens = 2;
    r[1].chunks = 2;
    mp_hist_add(&r[1].itl_ms, 20);
    /* a failure and a GET: excluded */
    r[2].kind = MP_LG_GEN;
    r[2].outcome = MP_LG_STREAM_ERROR;
    r[2].output_tokens = 7;
    r[3].kind = MP_LG_GET;
    struct mp_lg_summary s;
    mp_lg_summarize(r, 4, 2000 * MS, &s);
    assert_int_equal(s.requests, 3);
    assert_int_equal(s.ok, 2);
    assert_int_equal(s.failed, 1);
    assert_int_equal(s.output_tokens, 6);
    assert_true(fabs(s.agg_tok_s - 3.0) < 1e-9);
    assert_int_equal(s.ttft.n, 2);
    /* nearest rank within 1 %; mean, std, min, max exact */
    assert_true(fabs(s.ttft.p50 - 50) <= 0.5);
    assert_true(fabs(s.ttft.mean - 75) < 1e-6);
    assert_true(fabs(s.ttft.std - 25) < 1e-6);
    assert_true(fabs(s.ttft.p99 - 100) <= 1);
    assert_int_equal(s.itl.n, 4);
    assert_true(fabs(s.itl.p50 - 10) <= 0.1);
    assert_true(fabs(s.itl.max - 20) < 1e-6);
    assert_true(fabs(s.itl.mean - 12.5) < 1e-6);
    assert_true(fabs(s.e2el.max - 130) < 1e-6); /* to the last token, not the end at 900 ms */
    assert_true(fabs(s.e2el.min - 70) < 1e-6);
    assert_true(fabs(s.tpot.min - 10) < 1e-6 && fabs(s.tpot.max - 20) < 1e-6);
    assert_true(fabs(s.req_tok_s_median - 50) <= 0.5); /* 100 and 50 tok/s */
    assert_true(fabs(s.req_tok_s_mean - 75) < 1e-6);
    struct mp_lg_req_metrics q;
    mp_lg_request_metrics(&r[0], &q);
    assert_true(q.ok);
    assert_true(fabs(q.ttft_ms - 100) < 1e-9 && fabs(q.e2el_ms - 130) < 1e-9);
    assert_true(fabs(q.tpot_ms - 10) < 1e-9 && fabs(q.tok_s - 100) < 1e-9);
    mp_lg_request_metrics(&r[2], &q);
    assert_false(q.ok);
    assert_true(q.tpot_ms < 0 && q.tok_s < 0);
    mp_hist_free(&r[0].itl_ms);
    mp_hist_free(&r[1].itl_ms);
    mp_lg_summarize(r, 0, 0, &s);
    assert_int_equal(s.requests, 0);
    assert_true(s.agg_tok_s == 0);
}

/* One phase, the product's way (mp_lg_phase_add, as run/record.c adds each finished request):
 * the duration is first request sent -> last request ended, never the time at which the loop
 * next looked (its poll wait, a GPU sample, a /metrics scrape); completed (ok) is every
 * MP_LG_OK request, also one without a token event, and request_throughput counts exactly those,
 * while the latency distributions hold only the requests with a token event. mp_lg_summarize
 * (tests, bench) must give the same counts and rates as the phase. */
static void t_phase_duration_and_counts(void **state)
{
    (void)state;
    const int64_t MS = 1000000;
    struct mp_lg_result r[4];
    memset(r, 0, sizeof(r));
    for (int i = 0; i < 4; i++) {
        r[i].kind = MP_LG_GEN;
        r[i].prompt_tokens = -1;
    }
    /* two requests with tokens: sent at 1000 and 1010 ms, ended at 1500 and 1800 ms */
    r[0].outcome = MP_LG_OK;
    r[0].t_start_ns = 1000 * MS;
    r[0].t_first_token_ns = 1100 * MS;
    r[0].t_last_token_ns = 1400 * MS;
    r[0].t_end_ns = 1500 * MS;
    r[0].output_tokens = 4;
    r[0].chunks = 4;
    r[1] = r[0];
    r[1].t_start_ns = 1010 * MS;
    r[1].t_end_ns = 1800 * MS;
    /* a successful stream without any text (vLLM counts it as completed) */
    r[2].outcome = MP_LG_OK;
    r[2].t_start_ns = 1020 * MS;
    r[2].t_end_ns = 1200 * MS;
    r[2].output_tokens = 0;
    /* a failure, the last to end: the duration includes it, the counts do not */
    r[3].outcome = MP_LG_HTTP_ERROR;
    r[3].t_start_ns = 1030 * MS;
    r[3].t_end_ns = 2000 * MS;
    struct mp_phase_result ph;
    memset(&ph, 0, sizeof(ph));
    for (int i = 0; i < 4; i++)
        mp_lg_phase_add(&ph, &r[i]);
    /* the loop looks at the clock 100 ms (a poll wait) after the last end: not in the duration */
    int64_t loop_now = 2100 * MS;
    double d = mp_lg_phase_duration_s(&ph);
    assert_true(fabs(d - 1.0) < 1e-12);
    assert_true(d < (double)(loop_now - r[0].t_start_ns) / 1e9);
    ph.wall_s = d;
    assert_int_equal(ph.ok, 3);
    assert_int_equal(ph.failed, 1);
    assert_int_equal(ph.tokens, 8);
    assert_int_equal(ph.m.ttft_ms.n, 2); /* latencies: only the requests with a token event */
    struct mp_lg_rates rt;
    mp_lg_phase_rates(&ph, &rt);
    assert_true(fabs(rt.req_s - 3.0) < 1e-12);     /* 3 completed in 1 s */
    assert_true(fabs(rt.out_tok_s - 8.0) < 1e-12); /* 8 tokens in 1 s */
    assert_true(rt.total_tok_s < 0 && rt.input_tokens < 0); /* no usage.prompt_tokens */
    /* the summary of the same results: the same counts, duration and rates */
    struct mp_lg_summary s;
    mp_lg_summarize(r, 4, 0, &s);
    assert_int_equal(s.requests, 4);
    assert_int_equal(s.ok, (size_t)ph.ok);
    assert_int_equal(s.failed, (size_t)ph.failed);
    assert_int_equal(s.output_tokens, ph.tokens);
    assert_true(fabs(s.wall_s - d) < 1e-12);
    assert_true(fabs(s.req_s - rt.req_s) < 1e-12);
    assert_true(fabs(s.agg_tok_s - rt.out_tok_s) < 1e-12);
    assert_int_equal(s.ttft.n, 2);
    mp_phase_metrics_release(&ph.m);
    /* nothing ended: no duration, no rates */
    memset(&ph, 0, sizeof(ph));
    assert_true(mp_lg_phase_duration_s(&ph) == 0);
    mp_lg_phase_rates(&ph, &rt);
    assert_true(rt.req_s < 0 && rt.out_tok_s < 0);
}

/* the standard deviation: exact (population), also across merges */
static void t_stddev(void **state)
{
    (void)state;
    struct mp_hist a = MP_HIST_INIT, b = MP_HIST_INIT, all = MP_HIST_INIT;
    assert_true(mp_hist_stddev(&a) == 0);
    mp_hist_add(&a, 5);
    assert_true(mp_hist_stddev(&a) == 0);
    double v[] = { 2, 4, 4, 4, 5, 5, 7, 9 }; /* numpy.std = 2 */
    mp_hist_free(&a);
    for (size_t i = 0; i < 8; i++) {
        mp_hist_add(i < 3 ? &a : &b, v[i]);
        mp_hist_add(&all, v[i]);
    }
    assert_true(fabs(mp_hist_stddev(&all) - 2) < 1e-12);
    mp_hist_merge(&a, &b);
    assert_true(fabs(mp_hist_stddev(&a) - 2) < 1e-12);
    assert_true(fabs(mp_hist_mean(&a) - 5) < 1e-12);
    /* a large offset: Welford keeps the precision that sum-of-squares loses */
    struct mp_hist c = MP_HIST_INIT;
    for (int i = 0; i < 1000; i++)
        mp_hist_add(&c, 1e6 + (i % 2 ? 1 : -1));
    assert_true(fabs(mp_hist_stddev(&c) - 1) < 1e-6);
    mp_hist_free(&a);
    mp_hist_free(&b);
    mp_hist_free(&all);
    mp_hist_free(&c);
}

/* buckets out and in (the store's round trip), sparseness, quantiles */
static void t_buckets(void **state)
{
    (void)state;
    struct mp_hist h = MP_HIST_INIT, back = MP_HIST_INIT;
    for (int i = 0; i < 100000; i++)
        mp_hist_add(&h, g_lognormal());
    unsigned nb = 0, i;
    uint64_t c, total = 0;
    for (i = 0; mp_hist_next_bucket(&h, &i, &c); i++) {
        assert_true(i < MP_HIST_NBUCKETS);
        assert_int_equal(mp_hist_add_bucket(&back, i, c), 0);
        total += c;
        nb++;
    }
    assert_int_equal(total, h.n);
    assert_true(nb > 100 && nb < 1200);
    back.n = h.n;
    back.sum = h.sum;
    back.m2 = h.m2;
    back.min = h.min;
    back.max = h.max;
    for (double p = 1; p < 100; p += 7)
        assert_true(mp_hist_percentile(&back, p) == mp_hist_percentile(&h, p));
    assert_int_equal(mp_hist_add_bucket(&back, MP_HIST_NBUCKETS, 1), -EINVAL);
    /* sparse: a narrow distribution allocates few 64-bucket blocks */
    struct mp_hist n = MP_HIST_INIT;
    for (int k = 0; k < 1000000; k++)
        mp_hist_add(&n, 17 + (k % 100) * 0.01); /* 17 .. 18 ms: one octave */
    size_t blocks = 0;
    for (unsigned k = 0; k < MP_HIST_NBUCKETS / 64; k++)
        blocks += n.blocks[k] != NULL;
    assert_int_equal(blocks, 1);
    /* quantiles: ascending, k of them, the shape of the distribution */
    double q[100];
    assert_int_equal(mp_hist_quantiles(&n, q, 100), 100);
    for (int k = 1; k < 100; k++)
        assert_true(q[k] >= q[k - 1]);
    assert_true(fabs(q[50] - 17.5) < 0.25);
    struct mp_hist e = MP_HIST_INIT;
    assert_int_equal(mp_hist_quantiles(&e, q, 100), 0);
    mp_hist_add(&e, 3);
    assert_int_equal(mp_hist_quantiles(&e, q, 100), 1);
    assert_true(q[0] == 3);
    mp_hist_free(&h);
    mp_hist_free(&back);
    mp_hist_free(&n);
    mp_hist_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_percentiles),
        cmocka_unit_test(t_edges_and_merge),
        cmocka_unit_test(t_numpy),
        cmocka_unit_test(t_summary),
        cmocka_unit_test(t_phase_duration_and_counts),
        cmocka_unit_test(t_stddev),
        cmocka_unit_test(t_buckets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
