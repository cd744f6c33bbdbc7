/* lgstats.h - summarise a set of load-generator results the way `vllm bench serve` does.
 *
 * Only requests with outcome MP_LG_OK and at least one token event enter the latency and
 * throughput figures (vLLM counts only successful requests); the others are counted in failed.
 * Definitions (docs/metrics.md has the mapping to vLLM's names):
 *   TTFT  = t_first_token - t_start
 *   E2EL  = t_last_token - t_start          (vLLM's "latency": ends at the last token event)
 *   ITL   = every gap between consecutive token events, pooled over requests
 *   TPOT  = (E2EL - TTFT) / (output_tokens - 1), per request with output_tokens > 1
 *   per-request decode tok/s = (output_tokens - 1) / (t_last_token - t_first_token) = 1 / TPOT
 *   aggregate tok/s = sum of output_tokens of OK requests / phase wall time
 * Percentiles are exact (numpy linear interpolation, like vLLM) over the given set; memory is
 * temporary and proportional to the number of samples. Use mp_hist for unbounded runs. */
#ifndef MP_LGSTATS_H
#define MP_LGSTATS_H

#include "compat.h"

#include "http/loadgen.h"

struct mp_lg_dist { /* all in ms; 0 when n == 0 */
    size_t n;
    double mean, p50, p90, p99, min, max;
};

struct mp_lg_summary {
    size_t requests, ok, failed;
    long long output_tokens;       /* sum over OK requests */
    double wall_s;                 /* as given */
    double agg_tok_s;              /* output_tokens / wall_s (0 when wall_s <= 0) */
    double req_tok_s_median, req_tok_s_mean; /* per-request decode rate, requests with >1 token */
    struct mp_lg_dist ttft, itl, tpot, e2el;
};

/* Summarise n results (GET results are ignored). wall_ns: the phase's wall time, from the first
 * start to the last end as the caller measured it. */
void mp_lg_summarize(const struct mp_lg_result *res, size_t n, int64_t wall_ns,
                     struct mp_lg_summary *out);

#endif
