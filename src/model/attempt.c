/* attempt.c - the attempt record and its release (model/attempt.h). */
#include "model/attempt.h"
#include "model/resolved_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

const char *mp_outcome_name(enum mp_outcome o)
{
    switch (o) {
    case MP_OUT_CLEAN:
        return "clean";
    case MP_OUT_STARTUP_FAILURE:
        return "startup-failure";
    case MP_OUT_CRASH:
        return "crashed";
    case MP_OUT_HANG:
        return "hang";
    case MP_OUT_INTERRUPTED:
        return "interrupted";
    case MP_OUT_ERROR:
        return "error";
    case MP_OUT_SAME_CONFIG:
        return "same-config";
    case MP_OUT_RESOLVED:
        return "resolved";
    }
    return "?";
}

enum mp_outcome mp_outcome_from_name(const char *name)
{
    for (int o = MP_OUT_CLEAN; o <= MP_OUT_RESOLVED; o++) {
        if (name && !strcmp(name, mp_outcome_name((enum mp_outcome)o)))
            return (enum mp_outcome)o;
    }
    return MP_OUT_ERROR;
}

void mp_resolved_release(struct mp_resolved *v)
{
    free(v->moe_backend);
    mp_strv_release(&v->moe_candidates);
    free(v->linear_kernel);
    free(v->attention_backend);
    free(v->engine_version);
    free(v->model);
    free(v->quantization);
    free(v->moe_backend_flag);
    mp_strv_release(&v->unknown_env);
    mp_strv_release(&v->linear_kernels);
    free(v->unquantized_moe_backend);
    mp_resolved_more_release(v);
    memset(v, 0, sizeof(*v));
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

void mp_resolved_copy(struct mp_resolved *dst, const struct mp_resolved *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->moe_backend = dup_or_null(src->moe_backend);
    dst->linear_kernel = dup_or_null(src->linear_kernel);
    dst->attention_backend = dup_or_null(src->attention_backend);
    dst->engine_version = dup_or_null(src->engine_version);
    dst->model = dup_or_null(src->model);
    dst->quantization = dup_or_null(src->quantization);
    dst->moe_backend_flag = dup_or_null(src->moe_backend_flag);
    dst->unquantized_moe_backend = dup_or_null(src->unquantized_moe_backend);
    for (size_t i = 0; i < src->linear_kernels.n; i++)
        mp_strv_push(&dst->linear_kernels, src->linear_kernels.v[i]);
    for (size_t i = 0; i < src->moe_candidates.n; i++)
        mp_strv_push(&dst->moe_candidates, src->moe_candidates.v[i]);
    for (size_t i = 0; i < src->unknown_env.n; i++)
        mp_strv_push(&dst->unknown_env, src->unknown_env.v[i]);
    dst->moe_backend_line = src->moe_backend_line;
    dst->linear_kernel_line = src->linear_kernel_line;
    dst->attention_backend_line = src->attention_backend_line;
    dst->unknown_env_line = src->unknown_env_line;
    mp_resolved_more_copy(dst, src);
}

const char *mp_dlv_status_name(enum mp_dlv_status s)
{
    switch (s) {
    case MP_DLV_VERIFIED:
        return "verified";
    case MP_DLV_MISSING:
        return "missing";
    default:
        return "unverified";
    }
}

bool mp_dlv_unverified_note(const struct mp_attempt_result *p, size_t j)
{
    return p && j < p->ndlv && p->dlv[j].status == MP_DLV_UNVERIFIED &&
           p->outcome != MP_OUT_STARTUP_FAILURE && p->outcome != MP_OUT_ERROR &&
           p->outcome != MP_OUT_INTERRUPTED;
}

enum mp_dlv_status mp_dlv_status_from_name(const char *name)
{
    if (name && !strcmp(name, "verified"))
        return MP_DLV_VERIFIED;
    if (name && !strcmp(name, "missing"))
        return MP_DLV_MISSING;
    return MP_DLV_UNVERIFIED;
}

void mp_attempt_add_dlv(struct mp_attempt_result *r, const char *knob, enum mp_dlv_status st,
                        const char *evidence)
{
    r->dlv = xreallocarray(r->dlv, r->ndlv + 1, sizeof(*r->dlv));
    struct mp_knob_dlv *d = &r->dlv[r->ndlv++];
    d->knob = xstrdup(knob ? knob : "");
    d->status = st;
    d->evidence = xstrdup(evidence ? evidence : "");
}

const struct mp_knob_dlv *mp_attempt_find_dlv(const struct mp_attempt_result *r,
                                              enum mp_dlv_status st)
{
    for (size_t i = 0; r && i < r->ndlv; i++) {
        if (r->dlv[i].status == st)
            return &r->dlv[i];
    }
    return NULL;
}

void mp_phase_metrics_release(struct mp_phase_metrics *m)
{
    mp_hist_free(&m->ttft_ms);
    mp_hist_free(&m->tpot_ms);
    mp_hist_free(&m->itl_ms);
    mp_hist_free(&m->e2e_ms);
    mp_hist_free(&m->req_tok_s);
}

void mp_phase_metrics_merge(struct mp_phase_metrics *dst, const struct mp_phase_metrics *src)
{
    mp_hist_merge(&dst->ttft_ms, &src->ttft_ms);
    mp_hist_merge(&dst->tpot_ms, &src->tpot_ms);
    mp_hist_merge(&dst->itl_ms, &src->itl_ms);
    mp_hist_merge(&dst->e2e_ms, &src->e2e_ms);
    mp_hist_merge(&dst->req_tok_s, &src->req_tok_s);
}

bool mp_attempt_evidence_incomplete(const struct mp_attempt_result *r)
{
    return r && r->outcome == MP_OUT_ERROR && r->fail_class &&
           !strcmp(r->fail_class, MP_FAIL_EVIDENCE);
}

bool mp_phase_is_load(const char *name)
{
    return !strcmp(name, "sequential") || !strncmp(name, "concurrency-", 12) ||
           !strcmp(name, "soak") || !strcmp(name, "extended");
}

void mp_attempt_metrics(const struct mp_attempt_result *r, struct mp_phase_metrics *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; r && i < r->nphases; i++) {
        if (mp_phase_is_load(r->phases[i].name))
            mp_phase_metrics_merge(out, &r->phases[i].m);
    }
}

void mp_attempt_result_release(struct mp_attempt_result *r)
{
    free(r->dir);
    free(r->command);
    mp_resolved_release(&r->res);
    free(r->fail_class);
    free(r->fail_message);
    mp_strv_release(&r->sites);
    free(r->launch_site);
    free(r->same_as);
    free(r->same_why);
    for (size_t i = 0; i < r->ndlv; i++) {
        free(r->dlv[i].knob);
        free(r->dlv[i].evidence);
    }
    free(r->dlv);
    free(r->fail_phase);
    free(r->exit_desc);
    for (size_t i = 0; i < r->nphases; i++)
        mp_phase_metrics_release(&r->phases[i].m);
    for (size_t i = 0; i < r->ntexts; i++)
        free(r->texts[i]);
    free(r->texts);
    for (size_t i = 0; i < r->nquality; i++)
        free(r->quality_texts[i]);
    free(r->quality_texts);
    mp_score_free(r->score);
    mp_evidence_free(r->evidence);
    mp_gpu_fault_release(&r->fault);
    mp_attempt_obs_release(&r->obs);
    memset(r, 0, sizeof(*r));
}

void mp_attempt_obs_release(struct mp_attempt_obs *o)
{
    free(o->seen_message);
    free(o->crash_class);
    free(o->crash_message);
    free(o->crash_launch_site);
    mp_strv_release(&o->crash_sites);
    free(o->startup_error);
    free(o->error_quote);
    memset(o, 0, sizeof(*o));
}

static const char *const seen_names[] = {
    [MP_SEEN_HTTP_ERROR] = "http-error",       [MP_SEEN_STREAM_ERROR] = "stream-error",
    [MP_SEEN_STREAM_CUT] = "stream-cut",       [MP_SEEN_PROTOCOL] = "protocol-error",
    [MP_SEEN_CONNECT] = "connection-refused",  [MP_SEEN_TIMEOUT] = "request-timeout",
    [MP_SEEN_REQUEST_FAILED] = "request-failed", [MP_SEEN_CLIENT_ERROR] = "client-error",
    [MP_SEEN_ENGINE_FATAL] = "engine-fatal",   [MP_SEEN_PROCESS_EXIT] = "process-exit",
    [MP_SEEN_HANG] = "hang",                   [MP_SEEN_READY_TIMEOUT] = "ready-timeout",
    [MP_SEEN_PORT_MISMATCH] = "port-mismatch",
};

const char *mp_seen_name(enum mp_seen s)
{
    return (size_t)s < MP_ARRAY_SIZE(seen_names) ? seen_names[s] : NULL;
}

enum mp_seen mp_seen_from_name(const char *name)
{
    for (size_t i = 1; name && i < MP_ARRAY_SIZE(seen_names); i++)
        if (seen_names[i] && !strcmp(seen_names[i], name))
            return (enum mp_seen)i;
    return MP_SEEN_NONE;
}

void mp_gpu_reasons_str(unsigned long long r, char *out, size_t n)
{
    /* nvmlClocksEventReasons bits (nvml.h) */
    static const struct {
        unsigned long long bit;
        const char *name;
    } names[] = {
        {0x2ULL, "applications_clocks"}, {0x4ULL, "sw_power_cap"},   {0x8ULL, "hw_slowdown"},
        {0x10ULL, "sync_boost"},         {0x20ULL, "sw_thermal"},    {0x40ULL, "hw_thermal"},
        {0x80ULL, "hw_power_brake"},     {0x100ULL, "display_clocks"},
    };
    size_t len = 0;
    if (n)
        out[0] = '\0';
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (!(r & names[i].bit))
            continue;
        int k = snprintf(out + len, n > len ? n - len : 0, "%s%s", len ? ", " : "", names[i].name);
        if (k < 0 || (size_t)k >= (n > len ? n - len : 0))
            return;
        len += (size_t)k;
        r &= ~names[i].bit;
    }
    r &= ~1ULL;
    if (r && len + 24 < n)
        snprintf(out + len, n - len, "%sother 0x%llx", len ? ", " : "", r);
}
