/* srvmetrics.h - the engine's own view of one load phase, from its
 * Prometheus /metrics (vLLM's vllm:* series) scraped at the phase's start,
 * about once a second during it and at its end: the deltas of its
 * counters and histograms over the phase and the maxima of its gauges.
 * Plain data (no owned memory) written by run/srvmetrics.c, stored by
 * store/srvmetrics.c, reported by report/srvm.c. Meaning of every field:
 * docs/metrics.md ("server_metrics"). */
#ifndef MP_MODEL_SRVMETRICS_H
#define MP_MODEL_SRVMETRICS_H

#include "compat.h"

#include <stddef.h>

enum mp_srvm_state {
    MP_SRVM_NONE = 0,   /* not scraped (not a load phase, or a run before this existed) */
    MP_SRVM_OK,         /* both ends read: the numbers below hold */
    MP_SRVM_UNREADABLE, /* tried, and /metrics gave no usable vllm:* series: see reason */
};

/* A latency over the phase from a histogram's delta: mean = delta sum /
 * delta count (exact); p50/p99 estimated from the bucket deltas by linear
 * interpolation inside the bucket (Prometheus' histogram_quantile), so
 * only as fine as the engine's buckets. n = 0: no observation in the phase
 * (or the engine does not export it); the numbers are then 0. */
struct mp_srvm_lat {
    double mean_ms, p50_ms, p99_ms;
    double n;
};

/* -1 in a count / maximum: the engine does not export that series. */
struct mp_server_metrics {
    enum mp_srvm_state state;
    char reason[160];        /* UNREADABLE: why ("HTTP 404", "no vllm:* series", ...) */
    int scrapes;             /* successful scrapes in the phase (both ends included) */
    struct mp_srvm_lat ttft; /* vllm:time_to_first_token_seconds */
    struct mp_srvm_lat itl;  /* itl_metric: inter-token latency (time per output token before 0.11) */
    double gen_tokens;       /* vllm:generation_tokens_total delta */
    double prompt_tokens;    /* vllm:prompt_tokens_total delta */
    double preemptions;      /* preempt_metric delta */
    double kv_usage_max;     /* kv_metric (fraction 0..1), maximum over the scrapes */
    double waiting_max;      /* vllm:num_requests_waiting, maximum over the scrapes */
    double running_max;      /* vllm:num_requests_running, maximum over the scrapes */
    /* the names the engine used (its era), "" when absent */
    char itl_metric[48];     /* vllm:inter_token_latency_seconds | vllm:time_per_output_token_seconds */
    char kv_metric[40];      /* vllm:kv_cache_usage_perc | vllm:gpu_cache_usage_perc */
    char preempt_metric[40]; /* vllm:num_preemptions_total | vllm:num_preemptions */
    /* scrapes of the phase that saw vllm:num_requests_waiting > 0; counted
     * only when waiting_counted (false for a collector that does not count
     * them and for phases stored without the count) */
    int waiting_scrapes;
    bool waiting_counted;
    /* the phase measured the KV cache or the scheduler, not the kernel */
    bool preempted;          /* preemptions > 0 */
    bool queued;             /* requests waited (mp_srvm_queued_rule) */
};

/* Prometheus' histogram_quantile: q in [0, 1] over n cumulative bucket
 * counts cum[] by ascending upper bound le[] (the last may be +Inf).
 * Linear interpolation inside the bucket that holds rank q * total (its
 * lower bound is the previous le, or 0); in the +Inf bucket the answer is
 * the highest finite bound. Returns 0 when total is 0 or n is 0. */
double mp_srvm_quantile(const double *le, const double *cum, size_t n, double q);

/* Fill a latency from the delta of one histogram between two scrapes:
 * le[] bounds shared by both, cum_a / cum_b their cumulative counts,
 * sums and counts. Returns false (l zeroed) when a count went back (the
 * engine restarted: no delta). Values are seconds in, milliseconds out. */
bool mp_srvm_lat_delta(struct mp_srvm_lat *l, const double *le, const double *cum_a,
                       const double *cum_b, size_t n, double sum_a, double sum_b,
                       double count_a, double count_b);

/* The queued rule (docs/metrics.md "server_metrics"): requests waiting in
 * one scrape is no evidence that the phase measured the scheduler - a burst
 * of arrivals at high concurrency waits for the next engine step, and a
 * scrape about once a second can catch it. A phase is queued when requests
 * waited in at least MP_SRVM_QUEUED_MIN_SCRAPES of its scrapes and in at
 * least 1/MP_SRVM_QUEUED_SHARE_DIV of them (exactly a quarter counts):
 * waiting >= 2 && 4 * waiting >= scrapes. */
#define MP_SRVM_QUEUED_MIN_SCRAPES 2
#define MP_SRVM_QUEUED_SHARE_DIV 4
bool mp_srvm_queued_rule(int scrapes, int waiting_scrapes);

/* Set preempted (preemptions > 0) and queued from the numbers: queued by
 * mp_srvm_queued_rule when waiting_counted, else (no count: a phase stored
 * before it) when any scrape saw requests waiting (waiting_max > 0). */
void mp_srvm_set_flags(struct mp_server_metrics *m);

/* "ok", "unreadable", "not scraped" */
const char *mp_srvm_state_name(enum mp_srvm_state s);

#endif
