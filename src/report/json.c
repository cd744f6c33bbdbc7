/* json.c - report.json (DESIGN.md "report.json"): mp_report_json. */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "quality/quality.h"
#include "report/correct.h"
#include "secret.h"
#include "version.h"
#include "verdict/stats.h"
#include "xalloc.h"

#include "report/crash.h"
#include "report/internal.h"
#include "report/overview.h"
#include "report/resolved.h"
#include "report/srvm.h"

/* ---------- JSON ---------- */

static cJSON *jstr(const char *s)
{
    if (!s)
        return cJSON_CreateNull();
    char *clean = mp_utf8_clean(s, strlen(s));
    cJSON *j = cJSON_CreateString(clean);
    free(clean);
    return j;
}

static cJSON *jnum_or_null(double v)
{
    return v < 0 || isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(round(v * 1000) / 1000);
}

static cJSON *gpu_stat_json(const struct mp_gpu_stat *s)
{
    if (!s->n)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "min", round(s->min * 10) / 10);
    cJSON_AddNumberToObject(o, "median", round(s->median * 10) / 10);
    cJSON_AddNumberToObject(o, "max", round(s->max * 10) / 10);
    return o;
}

/* An attempt's GPU telemetry, or null when it was not sampled. */
static cJSON *gpu_json(const struct mp_gpu_telemetry *g)
{
    if (!g->samples)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "samples", (double)g->samples);
    cJSON_AddItemToObject(o, "sm_clock_mhz", gpu_stat_json(&g->sm_clock_mhz));
    cJSON_AddItemToObject(o, "temperature_c", gpu_stat_json(&g->temperature_c));
    cJSON_AddItemToObject(o, "power_w", gpu_stat_json(&g->power_w));
    cJSON_AddItemToObject(o, "memory_used_mib", gpu_stat_json(&g->memory_used_mib));
    cJSON *r = cJSON_AddArrayToObject(o, "throttle_reasons");
    char words[256];
    mp_gpu_reasons_str(g->throttle_reasons, words, sizeof(words));
    char *save = NULL;
    for (char *w = strtok_r(words, ", ", &save); w; w = strtok_r(NULL, ", ", &save))
        cJSON_AddItemToArray(r, cJSON_CreateString(w));
    return o;
}


static cJSON *jstrv(const struct mp_strv *s)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < s->n; i++)
        cJSON_AddItemToArray(a, jstr(s->v[i]));
    return a;
}

static double pct(const struct mp_hist *h, double q)
{
    return h->n ? mp_hist_percentile(h, q) : -1;
}

static void add_evidence(cJSON *ev, const struct mp_report *rep, const struct mp_attempt_result *a,
                         long line)
{
    if (!a || line == 0)
        return;
    const char *dir = a->dir;
    size_t rl = strlen(rep->run_dir);
    if (!strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
        dir += rl + 1;
    /* line < 0: -N is line N of requests.jsonl (the first bad response) */
    char *s = line > 0 ? xasprintf("%s/server.log:%ld", dir, line)
                       : xasprintf("%s/requests.jsonl:%ld", dir, -line);
    for (int i = 0; i < cJSON_GetArraySize(ev); i++) {
        if (!strcmp(cJSON_GetArrayItem(ev, i)->valuestring, s)) {
            free(s);
            return;
        }
    }
    cJSON_AddItemToArray(ev, cJSON_CreateString(s));
    free(s);
}

static cJSON *qcheck_cand_json(const struct mp_report *rep, size_t i)
{
    const struct mp_qcheck *q = &rep->qc;
    if (i >= q->n || q->c[i].status == MP_QC_NOT_RUN)
        return cJSON_CreateNull();
    const struct mp_qcand_out *c = &q->c[i];
    const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
    const struct mp_sanity_set *set = mp_sanity_builtin();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "result", c->status == MP_QC_OK ? "pass" : "garbage");
    cJSON_AddNumberToObject(o, "passed", (double)c->passed);
    cJSON_AddNumberToObject(o, "wrong", (double)c->wrong);
    cJSON_AddNumberToObject(o, "degenerate", (double)c->degenerate);
    cJSON_AddNumberToObject(o, "prompts", (double)q->nprompts);
    cJSON_AddItemToObject(o, "why", jstr(c->why));
    cJSON *arr = cJSON_AddArrayToObject(o, "answers");
    for (size_t k = 0; k < q->nprompts; k++) {
        const char *t = p && k < p->nquality ? p->quality_texts[k] : NULL;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "id", set->p[k].id);
        cJSON_AddStringToObject(e, "prompt", set->p[k].prompt);
        char *quoted = mp_quality_quote(t, 200);
        cJSON_AddItemToObject(e, "output", jstr(quoted));
        free(quoted);
        cJSON_AddStringToObject(e, "result", mp_qres_name(c->res[k]));
        cJSON_AddItemToObject(e, "reason", jstr(c->res_why[k]));
        cJSON_AddItemToArray(arr, e);
    }
    if (c->ref >= 0) {
        cJSON *a = cJSON_AddObjectToObject(o, "agreement");
        cJSON_AddItemToObject(a, "reference", jstr(rep->c[c->ref].cand.name));
        cJSON_AddNumberToObject(a, "identical", (double)c->identical);
        cJSON_AddNumberToObject(a, "compared", (double)c->compared);
        if (c->diff_prompt >= 0) {
            cJSON *d = cJSON_AddObjectToObject(a, "first_difference");
            cJSON_AddStringToObject(d, "prompt", set->p[c->diff_prompt].id);
            cJSON_AddNumberToObject(d, "token", (double)c->diff_token);
            cJSON_AddItemToObject(d, "this", jstr(c->diff_this));
            cJSON_AddItemToObject(d, "reference", jstr(c->diff_ref));
        } else {
            cJSON_AddNullToObject(a, "first_difference");
        }
    } else {
        cJSON_AddNullToObject(o, "agreement");
    }
    return o;
}

/* A distribution of a phase as `vllm bench serve` names it: mean_K, median_K,
 * std_K and pNN_K for key stem K (docs/metrics.md); null when it has no
 * samples. */
static void dist_json(cJSON *e, const struct mp_report *rep, const struct mp_hist *h, const char *stem)
{
    struct mp_rep_dist d;
    mp_rep_dist(rep, h, &d);
    const double *p;
    size_t np = mp_rep_percentiles(rep, &p);
    char key[64], w[24];
    snprintf(key, sizeof(key), "mean_%s", stem);
    cJSON_AddItemToObject(e, key, jnum_or_null(d.n ? d.mean : -1));
    snprintf(key, sizeof(key), "median_%s", stem);
    cJSON_AddItemToObject(e, key, jnum_or_null(d.n ? d.median : -1));
    snprintf(key, sizeof(key), "std_%s", stem);
    cJSON_AddItemToObject(e, key, jnum_or_null(d.n ? d.std : -1));
    for (size_t i = 0; i < np; i++) {
        mp_rep_pct_word(p[i], w, sizeof(w));
        snprintf(key, sizeof(key), "%s_%s", w, stem);
        cJSON_AddItemToObject(e, key, jnum_or_null(d.n ? d.pct[i] : -1));
    }
}

/* The client metrics of a phase (docs/metrics.md), into its object e. */
static void phase_metrics_json(cJSON *e, const struct mp_report *rep, const struct mp_phase_result *ph)
{
    struct mp_rep_rates r;
    mp_rep_phase_rates(ph, &r);
    cJSON_AddItemToObject(e, "total_input_tokens", jnum_or_null(r.input_tokens));
    cJSON_AddItemToObject(e, "total_output_tokens", jnum_or_null(ph->ok > 0 ? (double)ph->tokens : -1));
    cJSON_AddItemToObject(e, "request_throughput", jnum_or_null(r.req_s));
    cJSON_AddItemToObject(e, "output_throughput", jnum_or_null(r.out_tok_s));
    cJSON_AddItemToObject(e, "total_token_throughput", jnum_or_null(r.total_tok_s));
    for (int m = 0; m < MP_REP_NMETRICS; m++)
        dist_json(e, rep, mp_rep_metric_hist(ph, (enum mp_rep_metric)m), mp_rep_metrics[m].key);
}

/* What every attempt sent (top-level "workload"), null when the store does
 * not say. */
static cJSON *workload_json(const struct mp_report *rep)
{
    if (!rep->has_workload)
        return cJSON_CreateNull();
    const struct mp_workload *w = &rep->workload;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "api", w->chat ? "chat" : "completions");
    cJSON_AddStringToObject(o, "endpoint", w->chat ? "/v1/chat/completions" : "/v1/completions");
    cJSON_AddNumberToObject(o, "max_tokens", w->max_tokens);
    cJSON_AddItemToObject(o, "input_tokens", w->input_tokens > 0 ? cJSON_CreateNumber(w->input_tokens)
                                                                 : cJSON_CreateNull());
    cJSON *sm = cJSON_AddObjectToObject(o, "sampling");
    cJSON_AddNumberToObject(sm, "temperature", w->temperature);
    cJSON_AddBoolToObject(sm, "ignore_eos", w->ignore_eos);
    cJSON *ph = cJSON_AddArrayToObject(o, "phases");
    /* every phase an attempt ran: the workload's, the diagnosis' continuation, the output check */
    struct mp_rep_wphase wp[MP_MAX_PHASES + 2];
    size_t nwp = mp_rep_workload_phases(rep, wp, MP_ARRAY_SIZE(wp));
    for (size_t i = 0; i < nwp; i++) {
        const struct mp_rep_wphase *s = &wp[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "name", jstr(s->name));
        cJSON_AddNumberToObject(e, "concurrency", s->level);
        /* a soak's timed phase has no count: it runs until its duration; the diagnosis'
         * continuation until enough requests succeeded */
        cJSON_AddItemToObject(e, "requests", s->requests >= 0 && s->requests < INT_MAX
                                                 ? cJSON_CreateNumber(s->requests)
                                                 : cJSON_CreateNull());
        cJSON_AddItemToObject(e, "duration_s", jnum_or_null(s->duration_s > 0 ? s->duration_s : -1));
        cJSON_AddItemToObject(e, "input_tokens", s->input_tokens > 0 ? cJSON_CreateNumber(s->input_tokens)
                                                                     : cJSON_CreateNull());
        cJSON_AddNumberToObject(e, "max_tokens", s->max_tokens);
        cJSON_AddBoolToObject(e, "ignore_eos", s->ignore_eos);
        cJSON_AddBoolToObject(e, "diagnosis_only", s->diagnosis_only);
        cJSON_AddItemToArray(ph, e);
    }
    char dg[512];
    mp_rep_diagnosis_phases(rep, dg, sizeof(dg));
    if (dg[0]) {
        cJSON *d = cJSON_AddArrayToObject(o, "diagnosis_phases");
        char *save = NULL;
        for (char *t = strtok_r(dg, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
            cJSON_AddItemToArray(d, cJSON_CreateString(t));
    } else {
        cJSON_AddNullToObject(o, "diagnosis_phases");
    }
    return o;
}

/* One entry of a candidate's "attempts". */
static cJSON *attempt_json(const struct mp_report *rep, const struct mp_attempt_result *a)
{
    cJSON *e = cJSON_CreateObject();
    const char *dir = a->dir;
    size_t rl = strlen(rep->run_dir);
    if (!strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
        dir += rl + 1;
    cJSON_AddItemToObject(e, "dir", jstr(dir));
    cJSON_AddBoolToObject(e, "launch_blocking", a->launch_blocking);
    cJSON_AddStringToObject(e, "outcome", mp_outcome_name(a->outcome));
    cJSON_AddItemToObject(e, "command", jstr(a->command));
    cJSON_AddNumberToObject(e, "requests_ok", (double)a->req_ok);
    cJSON_AddNumberToObject(e, "requests_failed", (double)a->req_failed);
    cJSON_AddItemToObject(e, "ready_s", jnum_or_null(a->ready_s));
    if (a->announced_port > 0)
        cJSON_AddNumberToObject(e, "announced_port", a->announced_port);
    else
        cJSON_AddNullToObject(e, "announced_port");
    cJSON_AddItemToObject(e, "workload_s", jnum_or_null(a->workload_s));
    cJSON_AddItemToObject(e, "teardown_s", jnum_or_null(a->teardown_s));
    cJSON_AddItemToObject(e, "wall_s", jnum_or_null(a->wall_s));
    cJSON_AddItemToObject(e, "request_tok_s_p50", jnum_or_null(mp_rep_median_req_rate(a)));
    cJSON_AddItemToObject(e, "exit", jstr(a->exit_desc));
    cJSON_AddItemToObject(e, "gpu_telemetry", gpu_json(&a->gpu));
    cJSON_AddItemToObject(e, "gpu_fault", mp_rep_attempt_fault_json(rep, a));
    cJSON *td = cJSON_AddObjectToObject(e, "teardown");
    cJSON_AddBoolToObject(td, "killed", a->teardown_killed);
    cJSON_AddNumberToObject(td, "escapees_killed", a->escapees_killed);
    cJSON_AddNumberToObject(td, "leftovers", a->teardown_leftovers);
    return e;
}

/* "crash": the first failing normal attempt; sites across all normal attempts. */
static void crash_json(cJSON *o, const struct mp_report *rep, const struct mp_cand_report *c)
{
    const struct mp_attempt_result *f = NULL;
    struct mp_strv sites = MP_STRV_INIT;
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->launch_blocking || (a->outcome != MP_OUT_CRASH && a->outcome != MP_OUT_HANG &&
                                   a->outcome != MP_OUT_STARTUP_FAILURE))
            continue;
        if (!f)
            f = a;
        for (size_t s = 0; s < a->sites.n; s++) {
            bool seen = false;
            for (size_t t = 0; t < sites.n; t++)
                seen = seen || !strcmp(sites.v[t], a->sites.v[s]);
            if (!seen)
                mp_strv_push(&sites, a->sites.v[s]);
        }
    }
    if (f) {
        cJSON *cr = cJSON_AddObjectToObject(o, "crash");
        cJSON_AddItemToObject(cr, "class", jstr(f->fail_class));
        cJSON_AddItemToObject(cr, "message", jstr(f->fail_message));
        cJSON_AddNumberToObject(cr, "after_requests", (double)f->ok_before_failure);
        cJSON_AddItemToObject(cr, "phase", jstr(f->fail_phase));
        cJSON_AddItemToObject(cr, "sites", jstrv(&sites));
        cJSON_AddNumberToObject(cr, "distinct_sites", (double)sites.n);
        cJSON_AddItemToObject(cr, "launch_site", jstr(f->launch_site));
        cJSON_AddBoolToObject(cr, "engine_dead", f->engine_dead);
        cJSON_AddItemToObject(cr, "exit", jstr(f->exit_desc));
        mp_rep_crash_json(cr, rep, c); /* kernel, xid (report/crash.h) */
    } else {
        cJSON_AddNullToObject(o, "crash");
    }
    mp_strv_release(&sites);
}

/* "diagnosis": the CUDA_LAUNCH_BLOCKING=1 run's result, or null. */
static void diagnosis_json(cJSON *o, const struct mp_cand_report *c)
{
    if (c->diag.done) {
        cJSON *d = cJSON_AddObjectToObject(o, "diagnosis");
        cJSON_AddItemToObject(d, "launch_blocking", jstr(mp_lb_name(c->diag.launch_blocking)));
        cJSON_AddNumberToObject(d, "requests_clean", (double)c->diag.requests_clean);
        cJSON_AddNumberToObject(d, "requests_required", (double)c->diag.requests_required);
        cJSON_AddNumberToObject(d, "confidence", c->diag.confidence);
        cJSON_AddItemToObject(d, "throughput_ratio", jnum_or_null(c->diag.throughput_ratio));
        cJSON_AddItemToObject(d, "pinned_site", jstr(c->diag.pinned_site));
        cJSON_AddItemToObject(d, "launch_site", jstr(c->diag.launch_site));
        cJSON_AddItemToObject(d, "reasoning", jstr(c->diag.reasoning));
        cJSON_AddItemToObject(d, "note", jstr(c->diag.note));
    } else {
        cJSON_AddNullToObject(o, "diagnosis");
    }
}

static cJSON *cand_json(const struct mp_report *rep, const struct mp_cand_report *c)
{
    cJSON *o = cJSON_CreateObject();
    const struct mp_attempt_result *p = mp_cand_primary(c);
    cJSON_AddItemToObject(o, "name", jstr(c->cand.name));
    cJSON *knobs = cJSON_AddObjectToObject(o, "knobs");
    cJSON *env = cJSON_AddObjectToObject(knobs, "env");
    for (size_t i = 0; i < c->cand.env.n; i++) {
        const char *w = c->cand.env.v[i];
        const char *eq = strchr(w, '=');
        char *name = xstrndup(w, (size_t)(eq - w));
        bool secret = mp_is_secret_name(name, strlen(name));
        cJSON_AddItemToObject(env, name, jstr(secret ? "***" : eq + 1));
        free(name);
    }
    cJSON_AddItemToObject(knobs, "args", jstrv(&c->cand.args));
    cJSON_AddItemToObject(o, "resolved", mp_rep_resolved_json(rep, c)); /* report/resolved.c */
    cJSON_AddItemToObject(o, "unknown_env", p ? jstrv(&p->res.unknown_env) : cJSON_CreateArray());
    cJSON_AddItemToObject(o, "verdict", jstr(mp_verdict_name(c->verdict)));
    cJSON_AddItemToObject(o, "why", jstr(c->why));
    bool same = p && p->outcome == MP_OUT_SAME_CONFIG;
    cJSON_AddItemToObject(o, "same_as", jstr(same ? p->same_as : NULL));
    cJSON_AddItemToObject(o, "same_why", jstr(same ? p->same_why : NULL));
    unsigned long ok = 0, failed = 0;
    for (size_t j = 0; j < c->nattempts; j++) {
        if (c->attempts[j].launch_blocking)
            continue;
        ok += c->attempts[j].req_ok;
        failed += c->attempts[j].req_failed;
    }
    cJSON *rq = cJSON_AddObjectToObject(o, "requests");
    cJSON_AddNumberToObject(rq, "ok", (double)ok);
    cJSON_AddNumberToObject(rq, "failed", (double)failed);
    struct mp_rep_cost k = mp_rep_cand_cost(c);
    cJSON *ct = cJSON_AddObjectToObject(o, "cost");
    cJSON_AddNumberToObject(ct, "engine_starts", (double)k.starts);
    cJSON_AddNumberToObject(ct, "engine_seconds", round(k.engine_s * 10) / 10);
    cJSON_AddNumberToObject(ct, "workload_seconds", round(k.workload_s * 10) / 10);
    cJSON_AddNumberToObject(ct, "selection_stops", (double)k.stops);
    cJSON_AddNumberToObject(ct, "startup_seconds", round(k.startup_s * 1000) / 1000);
    cJSON_AddNumberToObject(ct, "request_seconds", round(k.request_s * 1000) / 1000);
    cJSON_AddNumberToObject(ct, "overhead_seconds", round(k.overhead_s * 1000) / 1000);
    if (k.cut) /* engines an interruption cut short (their starts are in engine_starts) */
        cJSON_AddNumberToObject(ct, "interrupted_starts", (double)k.cut);
    if (p && p->outcome == MP_OUT_CLEAN)
        cJSON_AddNumberToObject(o, "failure_rate_upper_95",
                                round(mp_stats_failure_upper95(p->req_ok) * 1e4) / 1e4);
    else
        cJSON_AddNullToObject(o, "failure_rate_upper_95");
    /* a shared result shows its representative's numbers */
    const struct mp_attempt_result *np = mp_rep_numbers_attempt(rep, c);
    cJSON *tp = cJSON_AddObjectToObject(o, "throughput");
    cJSON_AddItemToObject(tp, "sequential_tok_s", jnum_or_null(mp_rep_seq_tok_s(np)));
    cJSON *conc = cJSON_AddArrayToObject(tp, "concurrency");
    cJSON *phases = cJSON_CreateArray();
    for (size_t i = 0; np && i < np->nphases; i++) {
        const struct mp_phase_result *ph = &np->phases[i];
        if (!strncmp(ph->name, "concurrency-", 12) && ph->ok > 0) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "level", ph->level);
            cJSON_AddItemToObject(e, "tok_s", jnum_or_null(ph->tok_s));
            cJSON_AddItemToArray(conc, e);
        }
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "phase", ph->name);
        cJSON_AddNumberToObject(e, "level", ph->level);
        cJSON_AddNumberToObject(e, "planned", ph->planned);
        cJSON_AddNumberToObject(e, "ok", ph->ok);
        cJSON_AddNumberToObject(e, "failed", ph->failed);
        cJSON_AddItemToObject(e, "wall_s", jnum_or_null(ph->wall_s));
        cJSON_AddItemToObject(e, "tok_s", jnum_or_null(ph->tok_s));
        cJSON_AddItemToObject(e, "request_tok_s_p50", jnum_or_null(ph->req_tok_s_p50 > 0 ? ph->req_tok_s_p50 : -1));
        mp_rep_srvm_json(e, &ph->srv); /* the engine's own view (report/srvm.c) */
        phase_metrics_json(e, rep, ph);
        cJSON_AddItemToArray(phases, e);
    }
    cJSON_AddItemToObject(tp, "phases", phases);
    cJSON *lat = cJSON_AddObjectToObject(o, "latency_ms");
    struct mp_phase_metrics npm; /* the primary attempt's phases, merged */
    mp_attempt_metrics(np, &npm);
    cJSON_AddItemToObject(lat, "ttft_p50", jnum_or_null(pct(&npm.ttft_ms, 50)));
    cJSON_AddItemToObject(lat, "ttft_p99", jnum_or_null(pct(&npm.ttft_ms, 99)));
    cJSON_AddItemToObject(lat, "itl_p50", jnum_or_null(pct(&npm.itl_ms, 50)));
    cJSON_AddItemToObject(lat, "itl_p99", jnum_or_null(pct(&npm.itl_ms, 99)));
    cJSON_AddItemToObject(lat, "e2e_p50", jnum_or_null(pct(&npm.e2e_ms, 50)));
    cJSON_AddItemToObject(lat, "e2e_p99", jnum_or_null(pct(&npm.e2e_ms, 99)));
    mp_phase_metrics_release(&npm);

    crash_json(o, rep, c);
    diagnosis_json(o, c);
    cJSON_AddItemToObject(o, "known_issues", mp_rep_known_issues_json(rep, c));
    cJSON_AddItemToObject(o, "output_check", qcheck_cand_json(rep, (size_t)(c - rep->c)));
    cJSON_AddItemToObject(o, "correctness", mp_rep_correct_json(rep, (size_t)(c - rep->c)));
    cJSON_AddBoolToObject(o, "finished", !c->unfinished);
    cJSON *kd = cJSON_AddArrayToObject(o, "knob_delivery");
    for (size_t j = 0; p && j < p->ndlv; j++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "knob", jstr(p->dlv[j].knob));
        cJSON_AddStringToObject(e, "status", mp_dlv_status_name(p->dlv[j].status));
        cJSON_AddItemToObject(e, "evidence", jstr(p->dlv[j].evidence));
        cJSON_AddItemToArray(kd, e);
    }
    cJSON *ev = cJSON_AddArrayToObject(o, "evidence");
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        add_evidence(ev, rep, a, a->res.moe_backend_line);
        add_evidence(ev, rep, a, a->res.drafter.line);
        add_evidence(ev, rep, a, a->res.unknown_env_line);
        add_evidence(ev, rep, a, a->fail_line);
        if (a->outcome == MP_OUT_CRASH && !a->cuda_fault && a->fail_request_line > 0)
            add_evidence(ev, rep, a, -a->fail_request_line);
    }
    cJSON *atts = cJSON_AddArrayToObject(o, "attempts");
    for (size_t j = 0; j < c->nattempts; j++)
        cJSON_AddItemToArray(atts, attempt_json(rep, &c->attempts[j]));
    return o;
}

void mp_report_json(const struct mp_report *rep, struct buf *out)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "moeprobe_version", rep->moeprobe_version);
    cJSON *fp = cJSON_AddObjectToObject(root, "fingerprint");
    cJSON_AddItemToObject(fp, "gpu", jstr(rep->fp.gpu));
    cJSON_AddItemToObject(fp, "compute_capability", jstr(rep->fp.compute_capability));
    cJSON_AddItemToObject(fp, "driver", jstr(rep->fp.driver));
    cJSON_AddItemToObject(fp, "cuda", jstr(rep->fp.cuda));
    cJSON_AddItemToObject(fp, "engine", jstr(rep->fp.engine));
    cJSON_AddItemToObject(fp, "engine_version", jstr(rep->fp.engine_version));
    cJSON_AddItemToObject(fp, "model", jstr(rep->fp.model));
    cJSON_AddItemToObject(fp, "host_arch", jstr(rep->fp.host_arch));
    if (rep->checkpoint_json) {
        cJSON *ck = cJSON_Parse(rep->checkpoint_json);
        if (ck)
            cJSON_AddItemToObject(fp, "checkpoint", ck);
    }
    if (rep->engine_kernels_json) { /* docs/inspect.md: the kernel coverage check */
        cJSON *ek = cJSON_Parse(rep->engine_kernels_json);
        if (ek)
            cJSON_AddItemToObject(fp, "engine_kernels", ek);
    }
    mp_rep_inherited_json(rep, fp);
    /* the vLLM version the preset's candidates were expressed for (cli/spec.h) */
    cJSON_AddItemToObject(root, "preset_version", jstr(rep->preset_version));
    /* why the run stopped before its candidates were done (the command is broken) */
    cJSON_AddItemToObject(root, "stop_reason", jstr(rep->stop_reason));
    cJSON_AddItemToObject(root, "started", jstr(rep->started));
    cJSON_AddItemToObject(root, "finished", jstr(rep->finished));
    cJSON_AddItemToObject(root, "wall_seconds", jnum_or_null(mp_rep_iso_span(rep->started, rep->finished)));
    struct mp_rep_cost all;
    memset(&all, 0, sizeof(all));
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_rep_cost k = mp_rep_cand_cost(&rep->c[i]);
        mp_rep_cost_add(&all, &k);
    }
    cJSON *rcost = cJSON_AddObjectToObject(root, "cost"); /* the candidates' costs, summed */
    cJSON_AddNumberToObject(rcost, "engine_starts", (double)all.starts);
    cJSON_AddNumberToObject(rcost, "selection_stops", (double)all.stops);
    cJSON_AddNumberToObject(rcost, "startup_seconds", round(all.startup_s * 1000) / 1000);
    cJSON_AddNumberToObject(rcost, "request_seconds", round(all.request_s * 1000) / 1000);
    cJSON_AddNumberToObject(rcost, "overhead_seconds", round(all.overhead_s * 1000) / 1000);
    if (rep->interrupted)
        cJSON_AddBoolToObject(root, "interrupted", true);
    if (rep->interrupted && rep->stopped_by) /* not a signal: the store could not be written */
        cJSON_AddStringToObject(root, "interrupted_by", rep->stopped_by);
    if (rep->resumes > 0) /* the run was interrupted and continued with --resume */
        cJSON_AddNumberToObject(root, "resumes", rep->resumes);
    if (mp_report_incomplete(rep)) {
        /* the banner's facts: what is unfinished, and how to continue */
        cJSON_AddBoolToObject(root, "incomplete", true);
        cJSON *un = cJSON_AddArrayToObject(root, "unfinished_candidates");
        for (size_t i = 0; i < rep->n; i++)
            if (rep->c[i].unfinished)
                cJSON_AddItemToArray(un, jstr(rep->c[i].cand.name));
        char *rc = mp_report_resume_command(rep);
        cJSON_AddItemToObject(root, "resume_command", jstr(rc));
        free(rc);
    }
    cJSON_AddItemToObject(root, "workload", workload_json(rep));
    const double *pc;
    size_t npc = mp_rep_percentiles(rep, &pc);
    cJSON_AddItemToObject(root, "percentiles", cJSON_CreateDoubleArray(pc, (int)npc));
    cJSON *cands = cJSON_AddArrayToObject(root, "candidates");
    for (size_t i = 0; i < rep->n; i++)
        cJSON_AddItemToArray(cands, cand_json(rep, &rep->c[i]));

    cJSON *groups = cJSON_AddArrayToObject(root, "same_backend_groups");
    for (size_t i = 0; i < rep->ngroups; i++) {
        const struct mp_group *g = &rep->groups[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "moe_backend", jstr(g->moe_backend));
        cJSON_AddItemToObject(e, "linear_kernel", jstr(g->linear_kernel));
        cJSON_AddItemToObject(e, "attention_backend", jstr(g->attention_backend));
        cJSON_AddItemToObject(e, "candidates", jstrv(&g->candidates));
        cJSON_AddItemToArray(groups, e);
    }
    struct mp_strv cmp = MP_STRV_INIT;
    mp_rep_comparability(rep, &cmp); /* the same list as report.md's and report.html's */
    cJSON_AddItemToObject(root, "comparability", jstrv(&cmp));
    mp_strv_release(&cmp);
    cJSON *noop = cJSON_AddArrayToObject(root, "noop_knobs");
    for (size_t i = 0; i < rep->nnoop; i++) {
        const struct mp_noop *k = &rep->noop[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "candidate", jstr(k->candidate));
        cJSON_AddItemToObject(e, "knob", jstr(k->knob));
        cJSON_AddItemToObject(e, "resolved_like", jstr(k->resolved_like));
        if (k->engine_warning)
            cJSON_AddItemToObject(e, "engine_warning", jstr(k->engine_warning));
        if (k->delivery)
            cJSON_AddStringToObject(e, "delivery", k->delivery);
        if (k->delivery_evidence)
            cJSON_AddItemToObject(e, "delivery_evidence", jstr(k->delivery_evidence));
        cJSON_AddItemToArray(noop, e);
    }
    if (rep->recommended >= 0) {
        cJSON *r = cJSON_AddObjectToObject(root, "recommendation");
        cJSON_AddItemToObject(r, "candidate", jstr(rep->c[rep->recommended].cand.name));
        char *knobs = mp_candidate_knobs_str(&rep->c[rep->recommended].cand);
        cJSON_AddItemToObject(r, "knobs", jstr(knobs));
        free(knobs);
        cJSON_AddItemToObject(r, "why", jstr(rep->recommendation_why));
        cJSON_AddStringToObject(r, "objective", mp_objective_name(rep->objective));
    } else {
        cJSON_AddNullToObject(root, "recommendation");
    }
    cJSON_AddItemToObject(root, "learned", jstrv(&rep->learned));
    cJSON *qc = cJSON_AddObjectToObject(root, "output_check");
    cJSON_AddStringToObject(qc, "status", rep->qc.status ? rep->qc.status : "not-run");
    cJSON_AddItemToObject(qc, "reference", jstr(rep->qc.ref >= 0 ? rep->c[rep->qc.ref].cand.name : NULL));
    cJSON_AddItemToObject(qc, "note", jstr(rep->qc.note));
    cJSON_AddItemToObject(root, "correctness", mp_rep_correct_summary_json(rep));
    char *txt = cJSON_Print(root);
    buf_adds(out, txt);
    buf_addc(out, '\n');
    free(txt);
    cJSON_Delete(root);
}
