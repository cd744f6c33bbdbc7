/* phases.c - an attempt's workload: readiness, the phases, the output
 * check, progress and the failure watch (see att_internal.h). */
#include "run/att_internal.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "escape.h"
#include "http/lgstats.h"
#include "http/loadgen.h"
#include "knowledge/knowledge.h"
#include "logs/announce.h"
#include "logs/logscan.h"
#include "proc/proc.h"
#include "engine/delivery.h"
#include "engine/launch.h"
#include "engine/ports.h"
#include "observe/srvmetrics.h"
#include "observe/telemetry.h"
#include "store/store.h"
#include "verdict/stats.h"
#include "xalloc.h"

void mp_att_draw_progress(struct att *a, const char *what, int done, int total)
{
    if (!a->o->progress)
        return;
    int64_t now = mp_now_ns();
    if (now - a->last_draw < 200000000LL && done != total)
        return;
    a->last_draw = now;
    double el = (double)(now - a->t_spawn) / 1e9;
    double rate = 0;
    if (a->cur_phase >= 0 && a->t_phase) {
        /* live: output tokens so far over the phase's time so far (lgstats' rate) */
        const struct mp_phase_result *ph = &a->r->phases[a->cur_phase];
        rate = MP_MAX(0.0, mp_lg_rate((double)ph->tokens, (double)(now - a->t_phase) / 1e9));
    }
    char eta[48] = "";
    if (a->o->eta_after_s >= 0) {
        double left = a->o->eta_after_s + MP_MAX(0.0, a->o->expect_s - el);
        if (left >= 90)
            snprintf(eta, sizeof(eta), "  run ETA ~%.0f min", left / 60);
        else
            snprintf(eta, sizeof(eta), "  run ETA ~%.0f s", left);
    }
    if (!strcmp(what, "startup"))
        fprintf(stderr, "\r\033[K[%s] startup %.0fs%s | %.60s", a->o->label ? a->o->label : "", el,
                eta, a->last_line);
    else
        fprintf(stderr, "\r\033[K[%s] %s %d/%d  %.1f tok/s  %.0fs%s", a->o->label ? a->o->label : "",
                what, done, total, rate, el, eta);
    fflush(stderr);
}

/* Soak progress: elapsed/remaining, requests, tok/s, 95 % failure-rate bound. */
static void draw_soak(struct att *a, const struct mp_phase_result *ph, double duration_s)
{
    if (!a->o->progress)
        return;
    int64_t now = mp_now_ns();
    if (now - a->last_draw < 1000000000LL)
        return;
    a->last_draw = now;
    double el = (double)(now - a->t_phase) / 1e9;
    double rem = duration_s - el;
    fprintf(stderr, "\r\033[K[%s] soak %.0fs elapsed, %.0fs left, %d ok / %d failed, %.1f tok/s, "
                    "failure rate < %.2g (95%%)",
            a->o->label ? a->o->label : "", el, rem > 0 ? rem : 0, ph->ok, ph->failed,
            MP_MAX(0.0, mp_lg_rate((double)ph->tokens, el)),
            mp_stats_failure_upper95((unsigned long)ph->ok));
    fflush(stderr);
}

void mp_att_clear_progress(struct att *a)
{
    if (a->o->progress) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

static bool stalled(struct att *a)
{
    if (mp_lg_inflight_gen(a->lg) == 0)
        return false;
    int64_t last = mp_lg_last_progress_ns(a->lg);
    return last && (double)(mp_now_ns() - last) / 1e9 > a->o->wl->stall_timeout_s;
}

/* progress_lines: what the engine resolved, once its selections are logged
 * (or at ready). */
void mp_att_say_resolved(struct att *a)
{
    if (a->said_resolved || !a->o->progress_lines)
        return;
    a->said_resolved = true;
    mp_att_copy_resolved(a);
    const struct mp_resolved *rs = &a->r->res;
    mp_att_note(a, "resolved: MoE %s%s%s (%.1f s after start)",
         rs->moe_backend ? rs->moe_backend : "(not logged)",
         rs->attention_backend ? ", attention " : "",
         rs->attention_backend ? rs->attention_backend : "",
         (double)(mp_now_ns() - a->t_spawn) / 1e9);
}

/* Resolve first: once the selections are logged, ask whether this is a
 * configuration tested already. True when it is (the attempt stops). */
static bool check_same(struct att *a)
{
    if (!a->o->same_config || a->same_checked)
        return a->same;
    a->same_checked = true;
    mp_att_copy_resolved(a);
    char *same_as = NULL, *why = NULL;
    if (a->o->same_config(a->o->same_ud, &a->r->res, &same_as, &why)) {
        a->same = true;
        a->r->same_as = same_as;
        a->r->same_why = why;
    } else {
        free(same_as);
        free(why);
    }
    return a->same;
}

/* Wait for /health 200 and a model in /v1/models. Returns true when ready. */
bool mp_att_wait_ready(struct att *a)
{
    const struct mp_workload *wl = a->o->wl;
    int64_t deadline = a->t_spawn + (int64_t)(wl->ready_timeout_s * 1e9);
    int64_t next_probe = mp_now_ns();
    bool probing = false, ready_line_probed = false;
    while (!a->signo && !a->io_err) {
        int64_t now = mp_now_ns();
        if (a->exited || (a->events & MP_LOGEV_FATAL))
            return false;
        if (now > deadline)
            return false;
        if (a->selected)
            mp_att_say_resolved(a);
        if (a->selected && a->o->resolve_only) {
            a->resolve_stop = true;
            return false;
        }
        if (a->selected && check_same(a))
            return false;
        if (a->t_mismatch && now - a->t_mismatch > MISMATCH_GRACE_NS) {
            a->req_fail_class = xstrdup("port-mismatch");
            a->req_fail_msg = xstrdup(a->mismatch_why);
            return false;
        }
        /* the engine logged that it is ready: ask now rather than at the
         * next 250 ms poll (which stays for engines that do not log it) */
        if (!ready_line_probed && (a->events & MP_LOGEV_READY)) {
            ready_line_probed = true;
            next_probe = now;
        }
        if (!probing && now >= next_probe) {
            mp_lg_get(a->lg, "/health", 2.0, TAG_HEALTH);
            probing = true;
        }
        int64_t wait = probing ? 100 : (next_probe - now) / 1000000;
        mp_att_pump(a, (int)MP_MIN(wait, 100));
        mp_att_draw_progress(a, "startup", 0, 1);
        struct mp_lg_result res;
        while (mp_att_next_result(a, &res)) {
            bool ok = res.http_status == 200 && res.outcome == MP_LG_OK;
            if (res.user_tag == TAG_HEALTH && ok) {
                mp_lg_get(a->lg, "/v1/models", 5.0, TAG_MODELS);
            } else if (res.user_tag == TAG_MODELS && ok) {
                cJSON *j = cJSON_ParseWithLength(res.text ? res.text : "", res.text_len);
                cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");
                cJSON *first = cJSON_IsArray(data) ? cJSON_GetArrayItem(data, 0) : NULL;
                cJSON *id = cJSON_GetObjectItemCaseSensitive(first, "id");
                if (cJSON_IsString(id)) {
                    snprintf(a->model, sizeof(a->model), "%s", id->valuestring);
                    cJSON_Delete(j);
                    mp_lg_result_release(&res);
                    if (a->o->resolve_only) {
                        a->resolve_stop = true; /* ready before a selection milestone */
                        return false;
                    }
                    return !check_same(a);
                }
                cJSON_Delete(j);
                probing = false;
                next_probe = mp_now_ns() + 250000000LL;
            } else {
                probing = false;
                next_probe = mp_now_ns() + 250000000LL;
            }
            mp_lg_result_release(&res);
        }
    }
    return false;
}

/* After a failure, keep reading the log until the engine has said what
 * happened: it exits, or its crash is in the log and no request is in
 * flight, or settle_s passes. */
static void settle(struct att *a, double settle_s)
{
    int64_t deadline = mp_now_ns() + (int64_t)(settle_s * 1e9);
    while (!a->signo && mp_now_ns() < deadline) {
        if (a->exited && a->eof)
            break;
        const struct mp_logresult *lr = mp_logscan_result(a->ls);
        if (lr->has_crash && mp_lg_inflight_gen(a->lg) == 0 && lr->crash.engine_dead)
            break;
        mp_att_pump(a, 50);
        struct mp_lg_result res;
        while (mp_att_next_result(a, &res)) {
            if (res.kind == MP_LG_GEN)
                mp_att_handle_result(a, &res);
            mp_lg_result_release(&res);
        }
    }
}

/* The failure watch, after every turn of a phase's loop. MP_OUT_CLEAN: go
 * on; MP_OUT_CRASH: a failure was recorded (the caller settles); any other
 * outcome ends the attempt as it is. */
static enum mp_outcome watch(struct att *a, const char *phase)
{
    if (a->signo)
        return MP_OUT_INTERRUPTED;
    if (a->io_err)
        return MP_OUT_ERROR;
    if (a->events & MP_LOGEV_FATAL)
        mp_att_set_fail(a, "engine-fatal", "the engine logged a fatal error");
    if (a->exited)
        mp_att_set_fail(a, "process-exit", "the engine exited during the workload");
    if (a->failed)
        return MP_OUT_CRASH;
    if (stalled(a)) {
        a->req_fail_class = xstrdup("hang");
        a->req_fail_msg = xasprintf("no token progress for %.0f s with %zu request(s) in flight",
                                    a->o->wl->stall_timeout_s, mp_lg_inflight_gen(a->lg));
        a->r->fail_phase = xstrdup(phase);
        a->r->ok_before_failure = a->r->req_ok;
        return MP_OUT_HANG;
    }
    return MP_OUT_CLEAN;
}

/* Prompt pidx of about ntok tokens (0: the short fixed prompt); owned by
 * the attempt. */
static const char *prompt_for(struct att *a, int pidx, int ntok)
{
    if (ntok <= 0)
        return mp_prompts[pidx];
    if (ntok != a->sized_tokens) {
        for (size_t i = 0; i < PROMPT_COUNT; i++) {
            free(a->sized[i]);
            a->sized[i] = NULL;
        }
        a->sized_tokens = ntok;
    }
    if (!a->sized[pidx])
        a->sized[pidx] = mp_prompt_sized((size_t)pidx, ntok);
    return a->sized[pidx];
}

/* A phase's end: its duration is lgstats' (first request sent to last request ended, never
 * the loop's later look at the clock: the poll's wait, the GPU sample and the /metrics scrape
 * of the turn are not in it); a phase in which no request ended lasted from its start t0 to
 * now (its rates are unknown anyway). Its output throughput and median decode rate. */
static void finish_phase(struct att *a, struct mp_phase_result *ph, int64_t t0)
{
    ph->wall_s = ph->t_last_end_ns ? mp_lg_phase_duration_s(ph) : (double)(mp_now_ns() - t0) / 1e9;
    struct mp_lg_rates rt;
    mp_lg_phase_rates(ph, &rt);
    ph->tok_s = rt.out_tok_s > 0 ? rt.out_tok_s : 0;
    if (ph->m.req_tok_s.n)
        ph->req_tok_s_p50 = mp_hist_percentile(&ph->m.req_tok_s, 50);
    a->t_phase = 0;
    mp_gpu_set_load(a->gpu, false); /* GPU telemetry: load phases only (observe/telemetry.h) */
}

/* A phase's first (begin) or last scrape of the engine's /metrics: sent,
 * then the loop turns until it is back (bounded by its timeout) or a
 * signal came; the last one's result into *out. */
static void scrape_edge(struct att *a, bool begin, struct mp_server_metrics *out)
{
    if (!a->srvm)
        return;
    if (begin)
        mp_srvm_phase_begin(a->srvm);
    else
        mp_srvm_phase_end(a->srvm);
    while (mp_srvm_waiting(a->srvm) && !a->signo) {
        mp_att_pump(a, 100);
        struct mp_lg_result res;
        while (mp_att_next_result(a, &res)) {
            if (res.kind == MP_LG_GEN)
                mp_att_handle_result(a, &res);
            mp_lg_result_release(&res);
        }
    }
    if (!begin)
        mp_srvm_result(a->srvm, out);
}

/* Run the phases. Returns the outcome (CLEAN, CRASH, HANG, INTERRUPTED). */
enum mp_outcome mp_att_run_workload(struct att *a)
{
    const struct mp_workload *wl = a->o->wl;
    struct mp_attempt_result *r = a->r;
    size_t nph = wl->nphases;
    bool extend = wl->min_total_ok > 0;
    int top_level = 1;
    for (size_t i = 0; i < nph; i++)
        top_level = MP_MAX(top_level, wl->phases[i].level);
    for (size_t pi = 0; pi < nph + (extend ? 1 : 0); pi++) {
        struct mp_phase_spec sp;
        if (pi < nph) {
            sp = wl->phases[pi];
        } else {
            if (r->req_ok >= wl->min_total_ok)
                break;
            memset(&sp, 0, sizeof(sp));
            snprintf(sp.name, sizeof(sp.name), "extended");
            sp.level = top_level;
            sp.requests = (int)(wl->min_total_ok - r->req_ok);
            if (wl->extend_budget_s > 0) {
                double left = wl->extend_budget_s - (double)(mp_now_ns() - a->t_spawn) / 1e9;
                if (left <= 0)
                    break;
                sp.duration_s = left;
            }
        }
        struct mp_phase_result *ph = &r->phases[r->nphases++];
        snprintf(ph->name, sizeof(ph->name), "%s", sp.name);
        ph->level = sp.level;
        ph->planned = sp.requests;
        a->cur_phase = (int)(r->nphases - 1);
        scrape_edge(a, true, NULL); /* server metrics: the phase's first scrape */
        int64_t t0 = mp_now_ns();
        a->t_phase = t0;
        mp_gpu_set_load(a->gpu, true);
        int64_t t_end = sp.duration_s > 0 ? t0 + (int64_t)(sp.duration_s * 1e9) : INT64_MAX;
        int started = 0, done = 0;
        while (done < sp.requests) {
            bool expired = mp_now_ns() >= t_end;
            if (expired && done == started)
                break; /* duration over and nothing in flight */
            while (!a->failed && !expired && started < sp.requests &&
                   (int)mp_lg_inflight_gen(a->lg) < sp.level) {
                int pidx = (int)(a->gen_started % PROMPT_COUNT);
                int ntok = sp.input_tokens > 0 ? sp.input_tokens : wl->input_tokens;
                struct mp_lg_gen g = {.prompt = prompt_for(a, pidx, ntok), .model = a->model,
                                      .ignore_eos = -1, .user_tag = pidx};
                if (mp_lg_start_gen(a->lg, &g) < 0) {
                    mp_att_set_fail(a, "client-error", "could not start a request");
                    break;
                }
                a->gen_started++;
                started++;
            }
            mp_att_pump(a, 100);
            struct mp_lg_result res;
            while (mp_att_next_result(a, &res)) {
                if (res.kind == MP_LG_GEN) {
                    mp_att_handle_result(a, &res);
                    done++;
                }
                mp_lg_result_release(&res);
            }
            if (sp.duration_s > 0)
                draw_soak(a, ph, sp.duration_s);
            else
                mp_att_draw_progress(a, ph->name, done, sp.requests);
            enum mp_outcome w = watch(a, ph->name);
            if (w == MP_OUT_CRASH)
                break;
            if (w != MP_OUT_CLEAN) {
                finish_phase(a, ph, t0);
                scrape_edge(a, false, &ph->srv); /* server metrics: what the engine saw */
                return w;
            }
        }
        finish_phase(a, ph, t0);
        scrape_edge(a, false, &ph->srv); /* server metrics: the last scrape, the deltas */
        mp_att_note(a, "phase %s: %d ok, %d failed, %.1f tok/s in %.1f s", ph->name, ph->ok, ph->failed,
             ph->tok_s, ph->wall_s);
        if (a->failed)
            break;
    }
    if (a->failed) {
        settle(a, 10.0);
        return MP_OUT_CRASH;
    }
    return MP_OUT_CLEAN;
}

/* The output check: greedy completions of fixed prompts, one at a time. */
enum mp_outcome mp_att_run_quality(struct att *a)
{
    const struct mp_attempt_opts *o = a->o;
    struct mp_attempt_result *r = a->r;
    r->nquality = o->nquality;
    r->quality_texts = xcalloc(o->nquality + 1, sizeof(*r->quality_texts));
    struct mp_phase_result *ph = &r->phases[r->nphases++];
    snprintf(ph->name, sizeof(ph->name), "quality");
    ph->level = 1;
    ph->planned = (int)o->nquality;
    a->cur_phase = (int)(r->nphases - 1);
    int64_t t0 = mp_now_ns();
    a->t_phase = t0;
    mp_gpu_set_load(a->gpu, true);
    enum mp_outcome out = MP_OUT_CLEAN;
    for (size_t i = 0; i < o->nquality && out == MP_OUT_CLEAN; i++) {
        struct mp_lg_gen g = {
            .prompt = o->quality_prompts[i],
            .model = a->model,
            .max_tokens = o->quality_max_tokens > 0 ? o->quality_max_tokens : MP_QUALITY_MAX_TOKENS,
            .ignore_eos = 0,
            .user_tag = -1 - (int)i,
        };
        if (mp_lg_start_gen(a->lg, &g) < 0) {
            mp_att_set_fail(a, "client-error", "could not start a request");
            break;
        }
        bool done = false;
        while (!done) {
            mp_att_pump(a, 100);
            struct mp_lg_result res;
            while (mp_att_next_result(a, &res)) {
                if (res.kind == MP_LG_GEN) {
                    if (res.outcome == MP_LG_OK)
                        r->quality_texts[i] = xstrndup(res.text ? res.text : "", res.text_len);
                    mp_att_handle_result(a, &res);
                    done = true;
                }
                mp_lg_result_release(&res);
            }
            mp_att_draw_progress(a, "quality", (int)i, (int)o->nquality);
            enum mp_outcome w = watch(a, "quality");
            if (w == MP_OUT_CRASH)
                break;
            if (w != MP_OUT_CLEAN) {
                out = w;
                break;
            }
        }
        if (a->failed) {
            settle(a, 10.0);
            out = MP_OUT_CRASH;
        }
    }
    finish_phase(a, ph, t0);
    return out;
}
