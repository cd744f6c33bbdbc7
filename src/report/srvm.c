/* srvm.c - see srvm.h. */
#include "compat.h"

#include "report/srvm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
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
