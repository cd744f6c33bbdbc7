/* lgstats.c - vllm-bench-compatible metrics of loadgen results (see lgstats.h). */
#include "compat.h"

#include "http/lgstats.h"

#include <math.h>
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

void mp_lg_phase_add(struct mp_phase_result *ph, const struct mp_lg_result *r)
{
    if (r->kind != MP_LG_GEN)
        return;
    if (r->t_start_ns && (!ph->t_first_start_ns || r->t_start_ns < ph->t_first_start_ns))
        ph->t_first_start_ns = r->t_start_ns;
    if (r->t_end_ns > ph->t_last_end_ns)
        ph->t_last_end_ns = r->t_end_ns;
    if (r->outcome != MP_LG_OK) {
        ph->failed++;
        return;
    }
    ph->ok++; /* completed, as vLLM counts it: a successful stream, with or without text */
    ph->tokens += r->output_tokens;
    if (r->prompt_tokens >= 0) {
        ph->prompt_tokens += r->prompt_tokens;
        ph->prompt_n++;
    }
    mp_lg_metrics_add(&ph->m, r); /* only requests with a token event enter the distributions */
}

double mp_lg_phase_duration_s(const struct mp_phase_result *ph)
{
    if (!ph->t_first_start_ns || ph->t_last_end_ns <= ph->t_first_start_ns)
        return 0;
    return (double)(ph->t_last_end_ns - ph->t_first_start_ns) / 1e9;
}

double mp_lg_rate(double count, double seconds)
{
    return seconds > 0 ? count / seconds : -1;
}

void mp_lg_phase_rates(const struct mp_phase_result *ph, struct mp_lg_rates *r)
{
    r->req_s = r->out_tok_s = r->total_tok_s = r->input_tokens = -1;
    if (ph->prompt_n > 0 && ph->ok > 0)
        r->input_tokens = ph->prompt_n >= ph->ok
                              ? (double)ph->prompt_tokens
                              : round((double)ph->prompt_tokens * ph->ok / ph->prompt_n);
    if (ph->wall_s <= 0 || ph->ok <= 0)
        return;
    r->req_s = mp_lg_rate(ph->ok, ph->wall_s);
    r->out_tok_s = mp_lg_rate((double)ph->tokens, ph->wall_s);
    if (r->input_tokens >= 0)
        r->total_tok_s = mp_lg_rate(r->input_tokens + (double)ph->tokens, ph->wall_s);
}

void mp_lg_summarize(const struct mp_lg_result *res, size_t n, int64_t wall_ns,
                     struct mp_lg_summary *out)
{
    memset(out, 0, sizeof(*out));
    struct mp_phase_result ph;
    memset(&ph, 0, sizeof(ph));
    for (size_t i = 0; i < n; i++) {
        if (res[i].kind != MP_LG_GEN)
            continue;
        out->requests++;
        mp_lg_phase_add(&ph, &res[i]);
    }
    ph.wall_s = wall_ns > 0 ? (double)wall_ns / 1e9 : mp_lg_phase_duration_s(&ph);
    out->ok = (size_t)ph.ok;
    out->failed = (size_t)ph.failed;
    out->output_tokens = ph.tokens;
    out->wall_s = ph.wall_s;
    struct mp_lg_rates rt;
    mp_lg_phase_rates(&ph, &rt);
    out->agg_tok_s = rt.out_tok_s > 0 ? rt.out_tok_s : 0;
    out->req_s = rt.req_s > 0 ? rt.req_s : 0;
    const struct mp_phase_metrics *m = &ph.m;
    mp_lg_dist_of(&m->ttft_ms, &out->ttft);
    mp_lg_dist_of(&m->e2e_ms, &out->e2el);
    mp_lg_dist_of(&m->tpot_ms, &out->tpot);
    mp_lg_dist_of(&m->itl_ms, &out->itl);
    if (m->req_tok_s.n) {
        out->req_tok_s_mean = mp_hist_mean(&m->req_tok_s);
        out->req_tok_s_median = mp_hist_percentile(&m->req_tok_s, 50);
    }
    mp_phase_metrics_release(&ph.m);
}
