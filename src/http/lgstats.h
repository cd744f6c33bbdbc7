/* lgstats.h - the one definition of each latency and rate metric of a load-generator result, the
 * way `vllm bench serve` defines them; used by the product (run/ fills each phase's histograms
 * with mp_lg_metrics_add), the tests and the bench.
 *
 * Counting rule (docs/metrics.md "Which requests count"): a request is completed (ok) when its
 * outcome is MP_LG_OK, whether or not it produced a token event - vLLM's `completed` counts
 * every successful stream; request_throughput and output_throughput count every completed
 * request. The latency distributions (TTFT, E2EL, ITL, TPOT, decode rate) can only hold the
 * completed requests that produced at least one token event. Every other request is failed.
 * Definitions (docs/metrics.md has the mapping to vLLM's names):
 *   TTFT  = t_first_token - t_start
 *   E2EL  = t_last_token - t_start          (vLLM's "latency": ends at the last token event,
 *                                            not at [DONE] or the end of the body)
 *   ITL   = every gap between consecutive token events, pooled over requests
 *   TPOT  = (E2EL - TTFT) / (output_tokens - 1), per request with output_tokens > 1
 *   per-request decode tok/s = (output_tokens - 1) / (t_last_token - t_first_token) = 1 / TPOT,
 *                              per request with output_tokens > 1 and a decode time > 0
 *   duration (wall_s) = the phase's first request sent -> its last request ended (t_end, any
 *                       outcome): `vllm bench serve`'s benchmark duration, which ends when the
 *                       last request completes, not when moeprobe's loop next looks
 *   output_throughput (aggregate tok/s) = sum of output_tokens of completed requests / duration
 *   request_throughput = completed requests / duration
 *   total_token_throughput = (input + output tokens of completed requests) / duration
 * Distributions are bounded histograms (base/hist.h: nearest-rank percentiles within 1 %, exact
 * count, mean, min, max and standard deviation), so memory never grows with the samples. */
#ifndef MP_LGSTATS_H
#define MP_LGSTATS_H

#include "compat.h"

#include "http/loadgen.h"
#include "model/attempt.h"

/* One request's figures under the definitions above. */
struct mp_lg_req_metrics {
    bool ok;         /* it enters the figures (GEN, MP_LG_OK, at least one token event) */
    double ttft_ms;  /* when ok */
    double e2el_ms;  /* when ok */
    double tpot_ms;  /* < 0: not defined (output_tokens <= 1, or not ok) */
    double tok_s;    /* per-request decode rate; < 0: not defined (also: no decode time) */
};
void mp_lg_request_metrics(const struct mp_lg_result *r, struct mp_lg_req_metrics *m);

/* Add one result to a phase's histograms: TTFT, E2EL, TPOT and decode rate when defined, and
 * the request's ITL gaps (merged bucket-wise). Returns whether the result entered them (ok). */
bool mp_lg_metrics_add(struct mp_phase_metrics *m, const struct mp_lg_result *r);

/* One finished generation request (MP_LG_GEN) into its phase: ok or failed by the counting rule,
 * output and prompt tokens of a completed request, the phase's span (first start, last end)
 * and, for a completed request with a token event, the histograms (mp_lg_metrics_add). The one
 * path by which a request enters a phase's figures (run/record.c, mp_lg_summarize). */
void mp_lg_phase_add(struct mp_phase_result *ph, const struct mp_lg_result *r);

/* The phase's duration, s, by the definition above: last end - first start of the requests
 * added; 0 when none was added. */
double mp_lg_phase_duration_s(const struct mp_phase_result *ph);

/* A phase's throughputs over its duration (ph->wall_s), each < 0 when unknown (no duration or
 * no completed request): request_throughput (completed requests/s), output_throughput (output
 * tok/s), total_token_throughput ((input + output tokens)/s). input_tokens: the completed
 * requests' summed usage.prompt_tokens, scaled up to every completed request when the engine's
 * usage gave it for only some (prompt_tokens x ok / prompt_n); < 0 when it never did. */
struct mp_lg_rates {
    double req_s, out_tok_s, total_tok_s, input_tokens;
};
void mp_lg_phase_rates(const struct mp_phase_result *ph, struct mp_lg_rates *r);

/* count / seconds, the rate every throughput above is; < 0 when seconds <= 0. */
double mp_lg_rate(double count, double seconds);

struct mp_lg_dist { /* all in ms (rates: tok/s); 0 when n == 0 */
    size_t n;
    double mean, std, p50, p90, p99, min, max;
};
/* The summary of one histogram. */
void mp_lg_dist_of(const struct mp_hist *h, struct mp_lg_dist *d);

struct mp_lg_summary {
    size_t requests, ok, failed;   /* ok: completed (MP_LG_OK); failed: the others */
    long long output_tokens;       /* sum over completed requests */
    double wall_s;                 /* as given, else the results' duration */
    double agg_tok_s;              /* output_throughput: output_tokens / wall_s (0 when unknown) */
    double req_s;                  /* request_throughput: ok / wall_s (0 when unknown) */
    double req_tok_s_median, req_tok_s_mean; /* per-request decode rate, requests with >1 token */
    struct mp_lg_dist ttft, itl, tpot, e2el;
};

/* Summarise n results (GET results are ignored) as one phase, through mp_lg_phase_add and
 * mp_lg_phase_rates: the product's figures of those results. wall_ns > 0: the duration to use;
 * <= 0: the results' own (first start to last end, mp_lg_phase_duration_s). */
void mp_lg_summarize(const struct mp_lg_result *res, size_t n, int64_t wall_ns,
                     struct mp_lg_summary *out);

#endif
