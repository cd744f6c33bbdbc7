/* srv_metrics.c - refengine's GET /metrics (srv_int.h): vLLM's vllm:*
 * series per era in prometheus_client's text format, and the TTFT and
 * inter-token histograms the token ticks feed. */
#include "srv_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* vLLM's bucket bounds (vllm/v1/metrics/loggers.py) */
static const double ttft_bounds[22] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06,  0.08,  0.1,
                                       0.25,  0.5,   0.75, 1.0,  2.5,  5.0,   7.5,   10.0,
                                       20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
static const double itl_bounds[19] = {0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,
                                      0.3,  0.4,   0.5,  0.75,  1.0,  2.5,  5.0,
                                      7.5,  10.0,  20.0, 40.0,  80.0};
static const char *const finish_names[4] = {"stop", "length", "abort", "error"};

void re_srv_observe_ttft(double ttft)
{
    srv.ttft_sum += ttft;
    srv.ttft_count++;
    for (size_t k = 0; k < MP_ARRAY_SIZE(ttft_bounds); k++)
        if (ttft <= ttft_bounds[k])
            srv.ttft_bucket[k]++;
}

void re_srv_observe_itl(double itl)
{
    srv.itl_sum += itl;
    srv.itl_count++;
    for (size_t k = 0; k < MP_ARRAY_SIZE(itl_bounds); k++)
        if (itl <= itl_bounds[k])
            srv.itl_bucket[k]++;
}

/* Python's repr of a float, as prometheus_client writes values and bounds:
 * the shortest text that reads back the same, "1.0" for an integer. */
static void py_float(char *out, size_t n, double v)
{
    if (isinf(v)) {
        snprintf(out, n, "%s", v > 0 ? "+Inf" : "-Inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
    if (!strpbrk(out, ".en"))
        snprintf(out + strlen(out), n - strlen(out), ".0");
}

static void metric(struct buf *b, const char *name, const char *type, const char *help,
                   const char *labels, double v)
{
    char num[64];
    py_float(num, sizeof(num), v);
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s{%sengine=\"0\",model_name=\"%s\"} %s\n", name,
               help, name, type, name, labels, srv.cfg->served_model, num);
}

static void histogram(struct buf *b, const char *name, const char *help, const double *bounds,
                      const unsigned long long *bucket, size_t nb, unsigned long long count,
                      double sum)
{
    const char *m = srv.cfg->served_model;
    char num[64];
    buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    py_float(num, sizeof(num), sum);
    buf_printf(b, "%s_sum{engine=\"0\",model_name=\"%s\"} %s\n", name, m, num);
    for (size_t i = 0; i < nb; i++) {
        py_float(num, sizeof(num), bounds[i]);
        buf_printf(b, "%s_bucket{engine=\"0\",le=\"%s\",model_name=\"%s\"} %llu.0\n", name, num, m,
                   bucket[i]);
    }
    buf_printf(b,
               "%s_bucket{engine=\"0\",le=\"+Inf\",model_name=\"%s\"} %llu.0\n"
               "%s_count{engine=\"0\",model_name=\"%s\"} %llu.0\n",
               name, m, count, name, m, count);
}

/* GET /metrics. The vllm:* series per era (docs/refengine.md, from
 * reference/vllm-api.md section 5.4): the inter-token histogram is
 * vllm:time_per_output_token_seconds before 0.11, both names in 0.11.x
 * (the old one deprecated, PR #24110), only
 * vllm:inter_token_latency_seconds from 0.12 (the old one hidden, removed
 * by PR #32661). The KV-cache gauge is vllm:kv_cache_usage_perc from 0.10;
 * its old name vllm:gpu_cache_usage_perc is beside it as a deprecated alias
 * in 0.10.x, hidden in 0.11 (PR #24245) and removed by PR #29330, and is the
 * only one before 0.10 (kv_cache_usage_perc is the name that replaced it).
 * --show-hidden-metrics-for-version is not modelled: hidden series stay
 * hidden. The prefix-cache counters (vllm:prefix_cache_*, and their
 * vllm:gpu_prefix_cache_* aliases) are not served: refengine has no prefix
 * cache. With --disable-log-stats vLLM registers no vllm:* metric: /metrics
 * serves only the process collectors. */
void re_srv_metrics(struct conn *c)
{
    struct buf b = BUF_INIT;
    const struct world *w = srv.cfg->w;
    if (srv.cfg->disable_log_stats) {
        buf_adds(&b, "# HELP python_info Python platform information\n# TYPE python_info gauge\n"
                     "python_info{implementation=\"CPython\",major=\"3\",minor=\"12\",patchlevel=\"3\","
                     "version=\"3.12.3\"} 1.0\n");
        re_srv_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
        buf_release(&b);
        return;
    }
    double kv = MP_MIN((double)srv.blocks_used / (double)srv.blocks_total, 1.0);
    metric(&b, "vllm:num_requests_running", "gauge",
           "Number of requests in model execution batches.", "", srv.nactive);
    metric(&b, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
           "", (double)srv.nwaiting + (double)srv.nqueue);
    if (!re_ver_ge(w, 0, 11, 0))
        metric(&b, "vllm:gpu_cache_usage_perc", "gauge",
               re_ver_ge(w, 0, 10, 0) ? "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: "
                                        "Use vllm:kv_cache_usage_perc instead."
                                      : "GPU KV-cache usage. 1 means 100 percent usage.",
               "", kv);
    if (re_ver_ge(w, 0, 10, 0))
        metric(&b, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
               "", kv);
    metric(&b, "vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.",
           "", (double)srv.preemptions);
    metric(&b, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", "",
           (double)srv.prompt_tokens_total);
    metric(&b, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
           "", (double)srv.gen_tokens_total);
    buf_adds(&b, "# HELP vllm:request_success_total Count of successfully processed requests.\n"
                 "# TYPE vllm:request_success_total counter\n");
    for (int i = 0; i < 4; i++)
        buf_printf(&b,
                   "vllm:request_success_total{engine=\"0\",finished_reason=\"%s\",model_name=\"%s\"} "
                   "%llu.0\n",
                   finish_names[i], srv.cfg->served_model, srv.success[i]);
    histogram(&b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              ttft_bounds, srv.ttft_bucket, MP_ARRAY_SIZE(ttft_bounds), srv.ttft_count, srv.ttft_sum);
    if (!re_ver_ge(w, 0, 12, 0))
        histogram(&b, "vllm:time_per_output_token_seconds",
                  re_ver_ge(w, 0, 11, 0)
                      ? "Histogram of time per output token in seconds.DEPRECATED: Use "
                        "vllm:inter_token_latency_seconds instead."
                      : "Histogram of time per output token in seconds.",
                  itl_bounds, srv.itl_bucket, MP_ARRAY_SIZE(itl_bounds), srv.itl_count, srv.itl_sum);
    if (re_ver_ge(w, 0, 11, 0))
        histogram(&b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                  itl_bounds, srv.itl_bucket, MP_ARRAY_SIZE(itl_bounds), srv.itl_count, srv.itl_sum);
    re_srv_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
    buf_release(&b);
}
