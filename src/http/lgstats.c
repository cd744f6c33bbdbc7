/* lgstats.c - vllm-bench-compatible summaries of loadgen results (see lgstats.h). */
#include "compat.h"

#include "http/lgstats.h"

#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "xalloc.h"

static void dist(double *v, size_t n, struct mp_lg_dist *d)
{
    memset(d, 0, sizeof(*d));
    if (n == 0)
        return;
    mp_hist_sort(v, n);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    d->n = n;
    d->mean = sum / (double)n;
    d->p50 = mp_hist_percentile_sorted(v, n, 50);
    d->p90 = mp_hist_percentile_sorted(v, n, 90);
    d->p99 = mp_hist_percentile_sorted(v, n, 99);
    d->min = v[0];
    d->max = v[n - 1];
}

void mp_lg_summarize(const struct mp_lg_result *res, size_t n, int64_t wall_ns,
                     struct mp_lg_summary *out)
{
    memset(out, 0, sizeof(*out));
    size_t ngaps = 0;
    for (size_t i = 0; i < n; i++)
        if (res[i].kind == MP_LG_GEN && res[i].outcome == MP_LG_OK)
            ngaps += res[i].ngaps;
    double *ttft = xcalloc(n + 1, sizeof(double));
    double *e2el = xcalloc(n + 1, sizeof(double));
    double *tpot = xcalloc(n + 1, sizeof(double));
    double *rate = xcalloc(n + 1, sizeof(double));
    double *itl = xcalloc(ngaps + 1, sizeof(double));
    size_t nt = 0, ne = 0, np = 0, nr = 0, ni = 0;
    for (size_t i = 0; i < n; i++) {
        const struct mp_lg_result *r = &res[i];
        if (r->kind != MP_LG_GEN)
            continue;
        out->requests++;
        if (r->outcome != MP_LG_OK || r->chunks == 0 || r->t_first_token_ns == 0) {
            out->failed++;
            continue;
        }
        out->ok++;
        out->output_tokens += r->output_tokens;
        double t = (double)(r->t_first_token_ns - r->t_start_ns) / 1e6;
        double e = (double)(r->t_last_token_ns - r->t_start_ns) / 1e6;
        ttft[nt++] = t;
        e2el[ne++] = e;
        if (r->output_tokens > 1) {
            double tp = (e - t) / (double)(r->output_tokens - 1);
            tpot[np++] = tp;
            if (e > t)
                rate[nr++] = (double)(r->output_tokens - 1) / ((e - t) / 1e3);
        }
        for (size_t k = 0; k < r->ngaps; k++)
            itl[ni++] = r->gaps_ms[k];
    }
    out->wall_s = (double)wall_ns / 1e9;
    if (out->wall_s > 0)
        out->agg_tok_s = (double)out->output_tokens / out->wall_s;
    dist(ttft, nt, &out->ttft);
    dist(e2el, ne, &out->e2el);
    dist(tpot, np, &out->tpot);
    dist(itl, ni, &out->itl);
    if (nr) {
        mp_hist_sort(rate, nr);
        double s = 0;
        for (size_t i = 0; i < nr; i++)
            s += rate[i];
        out->req_tok_s_mean = s / (double)nr;
        out->req_tok_s_median = mp_hist_percentile_sorted(rate, nr, 50);
    }
    free(ttft);
    free(e2el);
    free(tpot);
    free(rate);
    free(itl);
}
