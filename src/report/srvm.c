/* srvm.c - see srvm.h. */
#include "compat.h"

#include "report/srvm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "escape.h"
#include "hist.h"
#include "report/internal.h"
#include "xalloc.h"

static cJSON *num_or_null(double v)
{
    return v < 0 || !isfinite(v) ? cJSON_CreateNull() : cJSON_CreateNumber(round(v * 1000) / 1000);
}

static cJSON *str_or_null(const char *s)
{
    if (!s || !*s)
        return cJSON_CreateNull();
    char *clean = mp_utf8_clean(s, strlen(s));
    cJSON *j = cJSON_CreateString(clean);
    free(clean);
    return j;
}

static cJSON *lat_json(const struct mp_srvm_lat *l)
{
    if (!(l->n > 0))
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "mean", num_or_null(l->mean_ms));
    cJSON_AddItemToObject(o, "p50", num_or_null(l->p50_ms));
    cJSON_AddItemToObject(o, "p99", num_or_null(l->p99_ms));
    cJSON_AddNumberToObject(o, "n", l->n);
    return o;
}

void mp_rep_srvm_json(cJSON *phase, const struct mp_server_metrics *m)
{
    if (m->state != MP_SRVM_OK) {
        cJSON_AddNullToObject(phase, "server_metrics");
        cJSON_AddItemToObject(phase, "server_metrics_reason",
                              str_or_null(m->state == MP_SRVM_UNREADABLE
                                              ? (m->reason[0] ? m->reason : "unreadable")
                                              : "not scraped (not a load phase)"));
        return;
    }
    cJSON *o = cJSON_AddObjectToObject(phase, "server_metrics");
    cJSON_AddNumberToObject(o, "scrapes", m->scrapes);
    cJSON_AddItemToObject(o, "ttft_ms", lat_json(&m->ttft));
    cJSON_AddItemToObject(o, "itl_ms", lat_json(&m->itl));
    cJSON_AddItemToObject(o, "generation_tokens", num_or_null(m->gen_tokens));
    cJSON_AddItemToObject(o, "prompt_tokens", num_or_null(m->prompt_tokens));
    cJSON_AddItemToObject(o, "preemptions", num_or_null(m->preemptions));
    cJSON_AddItemToObject(o, "kv_cache_usage_max", num_or_null(m->kv_usage_max));
    cJSON_AddItemToObject(o, "requests_waiting_max", num_or_null(m->waiting_max));
    cJSON_AddItemToObject(o, "requests_running_max", num_or_null(m->running_max));
    cJSON *names = cJSON_AddObjectToObject(o, "metric_names");
    cJSON_AddItemToObject(names, "itl", str_or_null(m->itl_metric));
    cJSON_AddItemToObject(names, "kv_cache_usage", str_or_null(m->kv_metric));
    cJSON_AddItemToObject(names, "preemptions", str_or_null(m->preempt_metric));
    cJSON_AddBoolToObject(o, "preempted", m->preempted);
    cJSON_AddBoolToObject(o, "queued", m->queued);
}

void mp_rep_srvm_flags(const struct mp_report *rep, struct mp_strv *out)
{
    for (size_t i = 0; i < rep->n; i++) {
        const char *cand = rep->c[i].cand.name;
        const struct mp_attempt_result *a = mp_cand_primary(&rep->c[i]);
        if (!a)
            continue;
        size_t tried = 0, unreadable = 0;
        const char *why = NULL;
        for (size_t k = 0; k < a->nphases; k++) {
            const struct mp_phase_result *ph = &a->phases[k];
            const struct mp_server_metrics *m = &ph->srv;
            tried += m->state != MP_SRVM_NONE;
            if (m->state == MP_SRVM_UNREADABLE) {
                unreadable++;
                why = why ? why : m->reason;
            }
            if (!m->preempted && !m->queued)
                continue;
            struct buf b = BUF_INIT;
            buf_printf(&b, "phase %s of %s: the engine ", ph->name, cand);
            if (m->preempted)
                buf_printf(&b, "preempted %.0f request%s", m->preemptions,
                           m->preemptions == 1 ? "" : "s");
            if (m->preempted && m->queued)
                buf_adds(&b, " and ");
            if (m->queued)
                buf_printf(&b, "kept up to %.0f request%s waiting", m->waiting_max,
                           m->waiting_max == 1 ? "" : "s");
            buf_printf(&b, ": it measured the %s, not the kernel",
                       m->preempted && m->queued ? "KV cache and the scheduler"
                       : m->preempted            ? "KV cache"
                                                 : "scheduler");
            mp_strv_push_owned(out, buf_detach(&b, NULL));
        }
        if (tried && unreadable == tried)
            mp_strv_push_owned(out, xasprintf("%s: the engine's /metrics could not be read (%s): "
                                              "no server-side view of its phases",
                                              cand, why && *why ? why : "unreadable"));
    }
}

/* ---------- the server's-view table ---------- */

/* A latency in a cell: about 3 significant figures, as report.md's tables. */
static void cell_ms(char *c, size_t n, double v, bool known)
{
    if (!known || !isfinite(v) || v < 0)
        snprintf(c, n, "—");
    else
        snprintf(c, n, v < 10 ? "%.2f" : v < 100 ? "%.1f" : "%.0f", v);
}

/* A count (-1: the engine does not export it). */
static void cell_count(char *c, size_t n, double v)
{
    if (v < 0 || !isfinite(v))
        snprintf(c, n, "—");
    else
        snprintf(c, n, "%.0f", v);
}

bool mp_rep_srvm_row(const struct mp_phase_result *ph, struct mp_srvm_row *r)
{
    const struct mp_server_metrics *m = &ph->srv;
    if (m->state != MP_SRVM_OK)
        return false;
    const size_t n = sizeof(r->cell[0]);
    bool t = m->ttft.n > 0, i = m->itl.n > 0;
    cell_ms(r->cell[MP_SRVM_TTFT_MEAN], n, m->ttft.mean_ms, t);
    cell_ms(r->cell[MP_SRVM_TTFT_P50], n, m->ttft.p50_ms, t);
    cell_ms(r->cell[MP_SRVM_TTFT_P99], n, m->ttft.p99_ms, t);
    const struct mp_hist *ct = &ph->m.ttft_ms, *ci = &ph->m.itl_ms;
    cell_ms(r->cell[MP_SRVM_CLIENT_TTFT_P50], n, ct->n ? mp_hist_percentile(ct, 50) : 0, ct->n > 0);
    cell_ms(r->cell[MP_SRVM_ITL_MEAN], n, m->itl.mean_ms, i);
    cell_ms(r->cell[MP_SRVM_CLIENT_ITL_MEAN], n, ci->n ? mp_hist_mean(ci) : 0, ci->n > 0);
    cell_count(r->cell[MP_SRVM_GEN_TOKENS], n, m->gen_tokens);
    cell_count(r->cell[MP_SRVM_CLIENT_TOKENS], n, ph->ok > 0 ? (double)ph->tokens : -1);
    cell_count(r->cell[MP_SRVM_PREEMPTIONS], n, m->preemptions);
    cell_count(r->cell[MP_SRVM_WAITING_MAX], n, m->waiting_max);
    if (m->kv_usage_max < 0 || !isfinite(m->kv_usage_max))
        snprintf(r->cell[MP_SRVM_KV_MAX], n, "—");
    else
        snprintf(r->cell[MP_SRVM_KV_MAX], n, "%.1f", m->kv_usage_max * 100);
    r->flag = m->preempted && m->queued ? "preempted, queued"
              : m->preempted            ? "preempted"
              : m->queued               ? "queued"
                                        : NULL;
    return true;
}

static const char *reason_of(const struct mp_server_metrics *m)
{
    return m->reason[0] ? m->reason : "unreadable";
}

void mp_rep_srvm_unreadable(const char *cand, const struct mp_attempt_result *a,
                            struct mp_strv *out)
{
    for (size_t k = 0; a && k < a->nphases; k++) {
        const struct mp_server_metrics *m = &a->phases[k].srv;
        if (m->state != MP_SRVM_UNREADABLE)
            continue;
        bool said = false; /* this reason was given with an earlier phase */
        for (size_t j = 0; j < k && !said; j++)
            said = a->phases[j].srv.state == MP_SRVM_UNREADABLE &&
                   !strcmp(reason_of(&a->phases[j].srv), reason_of(m));
        if (said)
            continue;
        struct buf names = BUF_INIT;
        size_t nn = 0;
        for (size_t j = k; j < a->nphases; j++) {
            const struct mp_server_metrics *o = &a->phases[j].srv;
            if (o->state != MP_SRVM_UNREADABLE || strcmp(reason_of(o), reason_of(m)))
                continue;
            buf_printf(&names, "%s%s", nn++ ? ", " : "", a->phases[j].name);
        }
        mp_strv_push_owned(out, xasprintf("%s: the engine's /metrics could not be read in phase%s "
                                          "%s (%s)", cand ? cand : "?", nn == 1 ? "" : "s",
                                          names.data, reason_of(m)));
        buf_release(&names);
    }
}

void mp_rep_srvm_markdown(const struct mp_report *rep, struct buf *out)
{
    bool any = false;
    for (size_t i = 0; i < rep->n && !any; i++) {
        const struct mp_attempt_result *a = mp_rep_numbers_attempt(rep, &rep->c[i]);
        for (size_t k = 0; a && k < a->nphases && !any; k++)
            any = a->phases[k].srv.state == MP_SRVM_OK;
    }
    if (!any)
        return;
    buf_adds(out, "## Server's view\n\n"
                  "The engine's own numbers per candidate and phase, from its Prometheus "
                  "`/metrics` (docs/metrics.md, \"The server's view\"), beside the client's from "
                  "the table above; latencies in ms. The engine times a request from its arrival "
                  "at its front end and its percentiles are interpolated in its histogram's "
                  "buckets, so its TTFT is the client's less the network and HTTP handling, at "
                  "the buckets' resolution. A flagged phase measured the KV cache (preempted) or "
                  "the scheduler (queued), not the kernel.\n\n"
                  "| candidate | phase | engine TTFT (mean / p50 / p99) | client TTFT p50 | "
                  "engine ITL mean | client ITL mean | engine output tokens | client output "
                  "tokens | preemptions | max waiting | max KV cache % | flag |\n"
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *a = mp_rep_numbers_attempt(rep, c);
        for (size_t k = 0; a && k < a->nphases; k++) {
            struct mp_srvm_row r;
            if (!mp_rep_srvm_row(&a->phases[k], &r))
                continue;
            buf_adds(out, "| ");
            mp_md_text(out, c->cand.name, 64, 0);
            if (a != mp_cand_primary(c))
                buf_adds(out, " (shared)");
            buf_adds(out, " | ");
            mp_md_text(out, a->phases[k].name, 32, 0);
            buf_printf(out, " | %s / %s / %s |", r.cell[MP_SRVM_TTFT_MEAN],
                       r.cell[MP_SRVM_TTFT_P50], r.cell[MP_SRVM_TTFT_P99]);
            for (int col = MP_SRVM_CLIENT_TTFT_P50; col < MP_SRVM_NCOLS; col++)
                buf_printf(out, " %s |", r.cell[col]);
            if (r.flag)
                buf_printf(out, " **%s** |\n", r.flag);
            else
                buf_adds(out, " — |\n");
        }
    }
    buf_adds(out, "\n");
    struct mp_strv why = MP_STRV_INIT;
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *a = mp_rep_numbers_attempt(rep, &rep->c[i]);
        if (a == mp_cand_primary(&rep->c[i])) /* a shared result's reasons are its owner's */
            mp_rep_srvm_unreadable(rep->c[i].cand.name, a, &why);
    }
    for (size_t i = 0; i < why.n; i++) {
        buf_adds(out, "- ");
        mp_md_text(out, why.v[i], 400, 0);
        buf_adds(out, "\n");
    }
    if (why.n)
        buf_adds(out, "\n");
    mp_strv_release(&why);
}
