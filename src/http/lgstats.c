/* lgstats.c - vllm-bench-compatible metrics of loadgen results (see lgstats.h). */
#include "compat.h"

#include "http/lgstats.h"

#include <string.h>

#include "hist.h"

void mp_lg_request_metrics(const struct mp_lg_result *r, struct mp_lg_req_metrics *m)
{
    memset(m, 0, sizeof(*m));
    m->tpot_ms = -1;
    m->tok_s = -1;
    if (r->kind != MP_LG_GEN || r->outcome != MP_LG_OK || r->chunks == 0 ||
        r->t_first_token_ns == 0)
        return;
    m->ok = true;
    m->ttft_ms = (double)(r->t_first_token_ns - r->t_start_ns) / 1e6;
    m->e2el_ms = (double)(r->t_last_token_ns - r->t_start_ns) / 1e6;
    if (r->output_tokens > 1) {
        double decode_ms = m->e2el_ms - m->ttft_ms;
        m->tpot_ms = decode_ms / (double)(r->output_tokens - 1);
        if (decode_ms > 0)
            m->tok_s = (double)(r->output_tokens - 1) / (decode_ms / 1e3);
    }
}

bool mp_lg_metrics_add(struct mp_phase_metrics *m, const struct mp_lg_result *r)
{
    struct mp_lg_req_metrics q;
    mp_lg_request_metrics(r, &q);
    if (!q.ok)
        return false;
    mp_hist_add(&m->ttft_ms, q.ttft_ms);
    mp_hist_add(&m->e2e_ms, q.e2el_ms);
    if (q.tpot_ms >= 0)
        mp_hist_add(&m->tpot_ms, q.tpot_ms);
    if (q.tok_s >= 0)
        mp_hist_add(&m->req_tok_s, q.tok_s);
    mp_hist_merge(&m->itl_ms, &r->itl_ms);
    return true;
}

void mp_lg_dist_of(const struct mp_hist *h, struct mp_lg_dist *d)
{
    memset(d, 0, sizeof(*d));
    if (!h->n)
        return;
    d->n = (size_t)h->n;
    d->mean = mp_hist_mean(h);
    d->std = mp_hist_stddev(h);
    d->p50 = mp_hist_percentile(h, 50);
    d->p90 = mp_hist_percentile(h, 90);
    d->p99 = mp_hist_percentile(h, 99);
    d->min = h->min;
    d->max = h->max;
}

void mp_lg_summarize(const struct mp_lg_result *res, size_t n, int64_t wall_ns,
                     struct mp_lg_summary *out)
{
    memset(out, 0, sizeof(*out));
    struct mp_phase_metrics m;
    memset(&m, 0, sizeof(m));
    for (size_t i = 0; i < n; i++) {
        const struct mp_lg_result *r = &res[i];
        if (r->kind != MP_LG_GEN)
            continue;
        out->requests++;
        if (!mp_lg_metrics_add(&m, r)) {
            out->failed++;
            continue;
        }
        out->ok++;
        out->output_tokens += r->output_tokens;
    }
    out->wall_s = (double)wall_ns / 1e9;
    if (out->wall_s > 0)
        out->agg_tok_s = (double)out->output_tokens / out->wall_s;
    mp_lg_dist_of(&m.ttft_ms, &out->ttft);
    mp_lg_dist_of(&m.e2e_ms, &out->e2el);
    mp_lg_dist_of(&m.tpot_ms, &out->tpot);
    mp_lg_dist_of(&m.itl_ms, &out->itl);
    if (m.req_tok_s.n) {
        out->req_tok_s_mean = mp_hist_mean(&m.req_tok_s);
        out->req_tok_s_median = mp_hist_percentile(&m.req_tok_s, 50);
    }
    mp_phase_metrics_release(&m);
}
