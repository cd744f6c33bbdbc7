/* lgstats.h - the one definition of each latency and rate metric of a load-generator result, the
 * way `vllm bench serve` defines them; used by the product (run/ fills each phase's histograms
 * with mp_lg_metrics_add), the tests and the bench.
 *
 * Only requests with outcome MP_LG_OK and at least one token event enter the latency and
 * throughput figures (vLLM counts only successful requests); the others are counted in failed.
 * Definitions (docs/metrics.md has the mapping to vLLM's names):
 *   TTFT  = t_first_token - t_start
 *   E2EL  = t_last_token - t_start          (vLLM's "latency": ends at the last token event,
 *                                            not at [DONE] or the end of the body)
 *   ITL   = every gap between consecutive token events, pooled over requests
 *   TPOT  = (E2EL - TTFT) / (output_tokens - 1), per request with output_tokens > 1
 *   per-request decode tok/s = (output_tokens - 1) / (t_last_token - t_first_token) = 1 / TPOT,
 *                              per request with output_tokens > 1 and a decode time > 0
 *   aggregate tok/s = sum of output_tokens of OK requests / phase wall time
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

struct mp_lg_dist { /* all in ms (rates: tok/s); 0 when n == 0 */
    size_t n;
    double mean, std, p50, p90, p99, min, max;
};
/* The summary of one histogram. */
void mp_lg_dist_of(const struct mp_hist *h, struct mp_lg_dist *d);

struct mp_lg_summary {
    size_t requests, ok, failed;
    long long output_tokens;       /* sum over OK requests */
    double wall_s;                 /* as given */
    double agg_tok_s;              /* output_tokens / wall_s (0 when wall_s <= 0) */
    double req_tok_s_median, req_tok_s_mean; /* per-request decode rate, requests with >1 token */
    struct mp_lg_dist ttft, itl, tpot, e2el;
};

/* Summarise n results (GET results are ignored) through mp_lg_metrics_add. wall_ns: the
 * phase's wall time, from the first start to the last end as the caller measured it. */
void mp_lg_summarize(const struct mp_lg_result *res, size_t n, int64_t wall_ns,
                     struct mp_lg_summary *out);

#endif
