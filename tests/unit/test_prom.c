/* test_prom.c - the Prometheus text parser (http/prom.h), the histogram
 * quantile and deltas (model/srvmetrics.h) and the reading of a vLLM
 * /metrics body into a phase's server metrics (observe/srvmetrics.h). */
#include "compat.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "err.h"
#include "http/prom.h"
#include "model/srvmetrics.h"
#include "observe/srvmetrics.h"

static int parse(struct mp_prom *p, const char *s)
{
    return mp_prom_parse(p, s, strlen(s));
}

static void t_basic(void **st)
{
    MP_UNUSED(st);
    struct mp_prom p;
    const char *in = "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
                     "# TYPE vllm:num_requests_running gauge\n"
                     "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
                     "# a comment\n"
                     "\n"
                     "plain 1e-3 1700000000000\n"
                     "  tabbed\t{a=\"x\",}\t+Inf\r\n"
                     "nan_metric NaN\n"
                     "neg -Inf\n";
    assert_int_equal(parse(&p, in), 0);
    assert_int_equal(p.n, 5);
    assert_int_equal(p.bad_lines, 0);
    assert_false(p.partial);
    assert_string_equal(p.s[0].name, "vllm:num_requests_running");
    assert_int_equal(p.s[0].nlabels, 2);
    assert_string_equal(mp_prom_label(&p.s[0], "model_name"), "m");
    assert_null(mp_prom_label(&p.s[0], "le"));
    assert_true(p.s[0].value == 3.0);
    assert_true(p.s[1].value == 1e-3 && p.s[1].has_ts && p.s[1].ts_ms == 1700000000000LL);
    assert_string_equal(p.s[2].name, "tabbed");
    assert_true(isinf(p.s[2].value) && p.s[2].value > 0);
    assert_true(isnan(p.s[3].value));
    assert_true(isinf(p.s[4].value) && p.s[4].value < 0);
    const struct mp_prom_family *f = mp_prom_family(&p, "vllm:num_requests_running");
    assert_non_null(f);
    assert_int_equal(f->type, MP_PROM_GAUGE);
    assert_string_equal(f->help, "Number of requests in model execution batches.");
    mp_prom_free(&p);
}

static void t_escapes(void **st)
{
    MP_UNUSED(st);
    struct mp_prom p;
    const char *in = "m{path=\"C:\\\\dir\",q=\"say \\\"hi\\\"\",nl=\"a\\nb\",brace=\"}{,=\"} 2\n"
                     "# HELP m back\\\\slash\\nnewline\n";
    assert_int_equal(parse(&p, in), 0);
    assert_int_equal(p.n, 1);
    assert_string_equal(mp_prom_label(&p.s[0], "path"), "C:\\dir");
    assert_string_equal(mp_prom_label(&p.s[0], "q"), "say \"hi\"");
    assert_string_equal(mp_prom_label(&p.s[0], "nl"), "a\nb");
    assert_string_equal(mp_prom_label(&p.s[0], "brace"), "}{,=");
    assert_string_equal(mp_prom_family(&p, "m")->help, "back\\slash\nnewline");
    mp_prom_free(&p);
}

/* every malformed line is skipped and counted; the good ones survive */
static void t_bad_lines(void **st)
{
    MP_UNUSED(st);
    static const char *const bad[] = {
        "m{a=\"x\\q\"} 1\n",  /* bad escape */
        "m{a=\"x} 1\n",       /* unterminated value */
        "m{a=x} 1\n",         /* unquoted */
        "m{a=\"1\",a=\"2\"} 1\n", /* label twice */
        "m{1a=\"x\"} 1\n",    /* bad label name */
        "m 1 2 3\n",          /* text after the timestamp */
        "m one\n",            /* bad value */
        "m 0x10\n",           /* hex is no Prometheus float */
        "m 1 1.5\n",          /* a timestamp is an integer */
        "m\n",                /* no value */
        "9m 1\n",             /* bad name */
        "m{a=\"x\"}1\n",      /* no blank before the value */
        "# TYPE m flavour\n", /* unknown type */
        "m 1 \x01\n",         /* garbage after */
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(bad); i++) {
        struct buf b = BUF_INIT;
        buf_printf(&b, "good 1\n%sgood2 2\n", bad[i]);
        struct mp_prom p;
        assert_int_equal(mp_prom_parse(&p, b.data, b.len), 0);
        if (p.n != 2 || p.bad_lines != 1 || p.bad_line != 2)
            fail_msg("case %zu (%s): n=%zu bad=%zu line=%zu", i, bad[i], p.n, p.bad_lines,
                     p.bad_line);
        assert_non_null(p.bad_why);
        mp_prom_free(&p);
        buf_release(&b);
    }
    /* a NUL byte inside a line */
    struct mp_prom p;
    assert_int_equal(mp_prom_parse(&p, "a 1\nb\0 2\nc 3\n", 13), 0);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.bad_lines, 1);
    mp_prom_free(&p);
    /* a second TYPE for a family */
    assert_int_equal(parse(&p, "# TYPE m gauge\n# TYPE m counter\nm 1\n"), 0);
    assert_int_equal(p.bad_lines, 1);
    assert_int_equal(mp_prom_family(&p, "m")->type, MP_PROM_GAUGE);
    mp_prom_free(&p);
}

/* a body cut anywhere never yields a wrong number: the cut line is dropped */
static void t_partial(void **st)
{
    MP_UNUSED(st);
    const char *in = "alpha 12345\nbeta{x=\"y\"} 6789\n";
    size_t n = strlen(in);
    for (size_t cut = 0; cut <= n; cut++) {
        struct mp_prom p;
        assert_int_equal(mp_prom_parse(&p, in, cut), 0);
        size_t want = cut >= n ? 2 : cut >= 12 ? 1 : 0;
        assert_int_equal(p.n, want);
        assert_int_equal(p.partial, cut != 0 && cut != 12 && cut != n);
        if (want >= 1)
            assert_true(p.s[0].value == 12345);
        if (want == 2)
            assert_true(p.s[1].value == 6789);
        mp_prom_free(&p);
    }
}

static void t_bounds(void **st)
{
    MP_UNUSED(st);
    struct buf b = BUF_INIT;
    for (int i = 0; i < MP_PROM_MAX_SERIES + 10; i++)
        buf_printf(&b, "s%d 1\n", i);
    struct mp_prom p;
    assert_int_equal(mp_prom_parse(&p, b.data, b.len), MP_ELIMIT);
    assert_int_equal(p.n, MP_PROM_MAX_SERIES);
    assert_true(p.limited);
    mp_prom_free(&p);
    buf_reset(&b);
    buf_adds(&b, "m{");
    for (int i = 0; i < MP_PROM_MAX_LABELS + 1; i++)
        buf_printf(&b, "l%d=\"v\",", i);
    buf_adds(&b, "} 1\nok 2\n");
    assert_int_equal(mp_prom_parse(&p, b.data, b.len), MP_ELIMIT);
    assert_int_equal(p.n, 1); /* the line with too many labels is dropped, the rest read */
    assert_string_equal(p.s[0].name, "ok");
    mp_prom_free(&p);
    /* the input bound: only the first MP_PROM_MAX_INPUT bytes are read */
    buf_reset(&b);
    while (b.len <= MP_PROM_MAX_INPUT)
        buf_adds(&b, "# padding padding padding padding padding padding padding padding\n");
    buf_adds(&b, "late 1\n");
    assert_int_equal(mp_prom_parse(&p, b.data, b.len), MP_ELIMIT);
    assert_true(p.partial);
    assert_int_equal(p.n, 0);
    mp_prom_free(&p);
    buf_release(&b);
}

static const char hist_text[] =
    "# TYPE h histogram\n"
    "h_bucket{engine=\"0\",le=\"0.01\"} 1.0\n"
    "h_bucket{engine=\"0\",le=\"0.1\"} 3.0\n"
    "h_bucket{engine=\"0\",le=\"1.0\"} 4.0\n"
    "h_bucket{engine=\"0\",le=\"+Inf\"} 4.0\n"
    "h_count{engine=\"0\"} 4.0\n"
    "h_sum{engine=\"0\"} 0.5\n"
    "h_bucket{engine=\"1\",le=\"0.01\"} 1.0\n"
    "h_bucket{engine=\"1\",le=\"0.1\"} 1.0\n"
    "h_bucket{engine=\"1\",le=\"1.0\"} 1.0\n"
    "h_bucket{engine=\"1\",le=\"+Inf\"} 2.0\n"
    "h_count{engine=\"1\"} 2.0\n"
    "h_sum{engine=\"1\"} 9.5\n";

static void t_histogram(void **st)
{
    MP_UNUSED(st);
    struct mp_prom p;
    assert_int_equal(parse(&p, hist_text), 0);
    struct mp_prom_hist h;
    assert_int_equal(mp_prom_histogram(&p, "h", &h), 8);
    assert_int_equal(h.n, 4);
    assert_true(h.le[0] == 0.01 && h.le[2] == 1.0 && isinf(h.le[3]));
    assert_true(h.cum[0] == 2 && h.cum[1] == 4 && h.cum[2] == 5 && h.cum[3] == 6);
    assert_true(h.count == 6 && h.sum == 10 && h.has_sum && h.has_count);
    assert_int_equal(mp_prom_histogram(&p, "nope", &h), 0);
    mp_prom_free(&p);
}

static void t_quantile(void **st)
{
    MP_UNUSED(st);
    const double le[] = {0.01, 0.1, 1.0, INFINITY};
    const double cum[] = {2, 4, 5, 6};
    /* rank 3 of 6: in (0.01, 0.1], half way through its 2 -> 0.055 */
    assert_true(fabs(mp_srvm_quantile(le, cum, 4, 0.5) - 0.055) < 1e-12);
    /* rank 1 in the first bucket: from 0 */
    assert_true(fabs(mp_srvm_quantile(le, cum, 4, 1.0 / 6) - 0.005) < 1e-12);
    /* in the +Inf bucket: the highest finite bound */
    assert_true(mp_srvm_quantile(le, cum, 4, 0.99) == 1.0);
    const double zero[] = {0, 0, 0, 0};
    assert_true(mp_srvm_quantile(le, zero, 4, 0.5) == 0);
    assert_true(mp_srvm_quantile(le, cum, 0, 0.5) == 0);

    struct mp_srvm_lat l;
    const double a[] = {1, 2, 2, 2}, b[] = {1, 12, 12, 12};
    /* ten new observations, all in (0.01, 0.1]: p50 at their middle */
    assert_true(mp_srvm_lat_delta(&l, le, a, b, 4, 0.1, 0.6, 2, 12));
    assert_true(l.n == 10);
    assert_true(fabs(l.mean_ms - 50) < 1e-9);
    assert_true(fabs(l.p50_ms - 55) < 1e-9);
    assert_true(fabs(l.p99_ms - 99.1) < 1e-9);
    /* counts going back: the engine restarted, no delta */
    assert_false(mp_srvm_lat_delta(&l, le, b, a, 4, 0.6, 0.1, 12, 2));
    assert_true(l.n == 0);
}

/* a body as refengine (and vLLM >= 0.12) serves it */
static const char vllm_a[] =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0.0\n"
    "# TYPE vllm:num_requests_waiting gauge\n"
    "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 0.0\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.0\n"
    "# TYPE vllm:generation_tokens_total counter\n"
    "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 100.0\n"
    "# TYPE vllm:prompt_tokens_total counter\n"
    "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 40.0\n"
    "# TYPE vllm:num_preemptions_total counter\n"
    "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 1.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.02\",model_name=\"m\"} 2.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.04\",model_name=\"m\"} 2.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 2.0\n"
    "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 2.0\n"
    "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 0.03\n"
    "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"0.01\",model_name=\"m\"} 0.0\n"
    "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"0.025\",model_name=\"m\"} 98.0\n"
    "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 98.0\n"
    "vllm:inter_token_latency_seconds_count{engine=\"0\",model_name=\"m\"} 98.0\n"
    "vllm:inter_token_latency_seconds_sum{engine=\"0\",model_name=\"m\"} 1.96\n";

static void t_snap_delta(void **st)
{
    MP_UNUSED(st);
    struct mp_srvm_snap a, b;
    char why[160];
    assert_int_equal(mp_srvm_snap_read(&a, vllm_a, strlen(vllm_a), why, sizeof(why)), 0);
    assert_string_equal(a.itl_metric, "vllm:inter_token_latency_seconds");
    assert_string_equal(a.kv_metric, "vllm:kv_cache_usage_perc");
    assert_string_equal(a.preempt_metric, "vllm:num_preemptions_total");
    /* the end of the phase: 4 more TTFTs of 30 ms, 20 more ITLs of 20 ms,
     * 3 more preemptions, 2 waiting */
    struct buf t = BUF_INIT;
    buf_adds(&t, vllm_a);
    const char *const from[] = {"waiting{engine=\"0\",model_name=\"m\"} 0.0",
                                "generation_tokens_total{engine=\"0\",model_name=\"m\"} 100.0",
                                "num_preemptions_total{engine=\"0\",model_name=\"m\"} 1.0",
                                "le=\"0.04\",model_name=\"m\"} 2.0", "le=\"+Inf\",model_name=\"m\"} 2.0",
                                "first_token_seconds_count{engine=\"0\",model_name=\"m\"} 2.0",
                                "first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 0.03",
                                "le=\"0.025\",model_name=\"m\"} 98.0", "le=\"+Inf\",model_name=\"m\"} 98.0",
                                "latency_seconds_count{engine=\"0\",model_name=\"m\"} 98.0",
                                "latency_seconds_sum{engine=\"0\",model_name=\"m\"} 1.96"};
    const char *const to[] = {"waiting{engine=\"0\",model_name=\"m\"} 2.0",
                              "generation_tokens_total{engine=\"0\",model_name=\"m\"} 124.0",
                              "num_preemptions_total{engine=\"0\",model_name=\"m\"} 4.0",
                              "le=\"0.04\",model_name=\"m\"} 6.0", "le=\"+Inf\",model_name=\"m\"} 6.0",
                              "first_token_seconds_count{engine=\"0\",model_name=\"m\"} 6.0",
                              "first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 0.15",
                              "le=\"0.025\",model_name=\"m\"} 118.0", "le=\"+Inf\",model_name=\"m\"} 118.0",
                              "latency_seconds_count{engine=\"0\",model_name=\"m\"} 118.0",
                              "latency_seconds_sum{engine=\"0\",model_name=\"m\"} 2.36"};
    for (size_t i = 0; i < MP_ARRAY_SIZE(from); i++) {
        char *at = strstr(t.data, from[i]);
        assert_non_null(at);
        struct buf u = BUF_INIT;
        buf_add(&u, t.data, (size_t)(at - t.data));
        buf_adds(&u, to[i]);
        buf_adds(&u, at + strlen(from[i]));
        buf_release(&t);
        t = u;
    }
    assert_int_equal(mp_srvm_snap_read(&b, t.data, t.len, why, sizeof(why)), 0);
    struct mp_server_metrics m;
    memset(&m, 0, sizeof(m));
    mp_srvm_observe(&m, &a);
    mp_srvm_observe(&m, &b);
    mp_srvm_delta(&m, &a, &b);
    assert_int_equal(m.state, MP_SRVM_OK);
    assert_int_equal(m.scrapes, 2);
    assert_true(m.ttft.n == 4 && fabs(m.ttft.mean_ms - 30) < 1e-9);
    assert_true(m.ttft.p50_ms > 20 && m.ttft.p50_ms <= 40); /* inside its bucket */
    assert_true(m.itl.n == 20 && fabs(m.itl.mean_ms - 20) < 1e-9);
    assert_true(m.itl.p50_ms > 10 && m.itl.p50_ms <= 25);
    assert_true(m.gen_tokens == 24 && m.prompt_tokens == 0 && m.preemptions == 3);
    assert_true(m.waiting_max == 2 && m.kv_usage_max == 0 && m.running_max == 0);
    /* requests waited in one of the two scrapes: a single scrape is no queue */
    assert_true(m.preempted && !m.queued);
    assert_int_equal(m.waiting_scrapes, 1);
    mp_srvm_observe(&m, &b); /* a second scrape that saw them waiting: 2 of 3 */
    mp_srvm_set_flags(&m);
    assert_true(m.queued);
    buf_release(&t);

    /* an older era: time per output token and gpu_cache_usage_perc */
    const char *old = "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n"
                      "vllm:time_per_output_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 3.0\n"
                      "vllm:time_per_output_token_seconds_count{model_name=\"m\"} 3.0\n"
                      "vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 0.3\n";
    assert_int_equal(mp_srvm_snap_read(&a, old, strlen(old), why, sizeof(why)), 0);
    assert_string_equal(a.itl_metric, "vllm:time_per_output_token_seconds");
    assert_string_equal(a.kv_metric, "vllm:gpu_cache_usage_perc");
    assert_true(isnan(a.gen) && isnan(a.preempt));
    /* no preemption series: -1, not a flag */
    memset(&m, 0, sizeof(m));
    mp_srvm_observe(&m, &a);
    mp_srvm_delta(&m, &a, &a);
    assert_true(m.preemptions == -1 && !m.preempted && !m.queued && m.waiting_max == -1);

    /* no vllm:* series, and not Prometheus at all */
    const char *other = "python_info{version=\"3.12\"} 1.0\nhttp_requests_total 5\n";
    assert_int_equal(mp_srvm_snap_read(&a, other, strlen(other), why, sizeof(why)), MP_EPARSE);
    assert_string_equal(why, "no vllm:* series (2 other series)");
    const char *html = "<html><body>Not Found</body></html>\n";
    assert_int_equal(mp_srvm_snap_read(&a, html, strlen(html), why, sizeof(why)), MP_EPARSE);
    assert_non_null(strstr(why, "not Prometheus text"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_basic),     cmocka_unit_test(t_escapes),   cmocka_unit_test(t_bad_lines),
        cmocka_unit_test(t_partial),   cmocka_unit_test(t_bounds),    cmocka_unit_test(t_histogram),
        cmocka_unit_test(t_quantile),  cmocka_unit_test(t_snap_delta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
