/* phases.c - what an attempt sends: the readiness probes, the workload's
 * load phases, the passes after them (the output check), the stall check
 * and the live progress (see att_internal.h; when each runs is attempt.c's
 * table). */
#include "run/att_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "escape.h"
#include "http/lgstats.h"
#include "logs/logscan.h"
#include "observe/telemetry.h"
#include "quality/quality.h"
#include "verdict/stats.h"
#include "xalloc.h"

/* ---------- progress ---------- */

static void eta_text(const struct att *a, double el, char *eta, size_t n)
{
    eta[0] = '\0';
    if (a->o->eta_after_s < 0)
        return;
    double left = a->o->eta_after_s + MP_MAX(0.0, a->o->expect_s - el);
    if (left >= 90)
        snprintf(eta, n, "  run ETA ~%.0f min", left / 60);
    else
        snprintf(eta, n, "  run ETA ~%.0f s", left);
}

/* Soak progress: elapsed/remaining, requests, tok/s, 95 % failure-rate bound. */
static void draw_soak(struct att *a, const struct mp_phase_result *ph, int64_t now)
{
    if (now - a->last_draw < 1000000000LL)
        return;
    a->last_draw = now;
    double el = (double)(now - a->t_phase) / 1e9;
    double rem = a->sp.duration_s - el;
    fprintf(stderr, "\r\033[K[%s] soak %.0fs elapsed, %.0fs left, %d ok / %d failed, %.1f tok/s, "
                    "failure rate < %.2g (95%%)",
            a->o->label ? a->o->label : "", el, rem > 0 ? rem : 0, ph->ok, ph->failed,
            MP_MAX(0.0, mp_lg_rate((double)(ph->tokens + mp_lg_inflight_tokens(a->lg)), el)),
            mp_stats_failure_upper95((unsigned long)ph->ok));
    fflush(stderr);
}

/* Off a terminal: a line at least every HEARTBEAT_NS while nothing else
 * was said (a long start-up, a soak of hours under nohup), with where the
 * attempt is, what it served and the run's ETA. */
#define HEARTBEAT_S 60
static int64_t heartbeat_ns(void)
{
    /* tests shorten it (MOEPROBE_HEARTBEAT_S): a minute is long for a test */
    static int64_t ns;
    if (!ns) {
        const char *v = getenv("MOEPROBE_HEARTBEAT_S");
        double s = v && *v ? strtod(v, NULL) : HEARTBEAT_S;
        ns = (int64_t)((s > 0 ? s : HEARTBEAT_S) * 1e9);
    }
    return ns;
}

static void heartbeat(struct att *a, int64_t now)
{
    if (!a->last_beat)
        a->last_beat = now;
    if (now - a->last_beat < heartbeat_ns() || a->state >= ST_STOPPING)
        return;
    double el = (double)(now - a->t_spawn) / 1e9;
    char eta[48];
    eta_text(a, el, eta, sizeof(eta));
    const struct mp_phase_result *ph = a->cur_phase >= 0 ? &a->r->phases[a->cur_phase] : NULL;
    if (a->state == ST_STARTING || a->state == ST_LAST_WORDS || !ph) {
        mp_att_note(a, "still starting after %.0f s%s; last line: %.120s", el, eta, a->last_line);
        return;
    }
    double pel = a->t_phase ? (double)(now - a->t_phase) / 1e9 : 0;
    double rate = MP_MAX(0.0, mp_lg_rate((double)(ph->tokens + mp_lg_inflight_tokens(a->lg)), pel));
    if (a->state == ST_SERVING && a->sp.duration_s > 0)
        mp_att_note(a, "soak: %.0f s of %.0f s, %d ok / %d failed, %.1f tok/s, failure rate < %.2g "
                       "(95%%)%s",
                    pel, a->sp.duration_s, ph->ok, ph->failed, rate,
                    mp_stats_failure_upper95((unsigned long)ph->ok), eta);
    else
        mp_att_note(a, "phase %s: %d ok, %d failed so far, %.1f tok/s, %.0f s in it%s", ph->name,
                    ph->ok, ph->failed, rate, pel, eta);
}

/* The live line on a terminal (at most every 200 ms; soak every second);
 * off a terminal, the heartbeat. */
void mp_att_draw_progress(struct att *a)
{
    int64_t now = mp_now_ns();
    if (a->o->progress_lines)
        heartbeat(a, now);
    if (!a->o->progress || a->state >= ST_STOPPING)
        return;
    const struct mp_phase_result *ph = a->cur_phase >= 0 ? &a->r->phases[a->cur_phase] : NULL;
    if (a->state == ST_SERVING && a->sp.duration_s > 0) {
        draw_soak(a, ph, now);
        return;
    }
    if (now - a->last_draw < 200000000LL)
        return;
    a->last_draw = now;
    double el = (double)(now - a->t_spawn) / 1e9;
    char eta[48];
    eta_text(a, el, eta, sizeof(eta));
    const char *label = a->o->label ? a->o->label : "";
    if (a->state == ST_STARTING || a->state == ST_LAST_WORDS) {
        fprintf(stderr, "\r\033[K[%s] startup %.0fs%s | %.60s", label, el, eta, a->last_line);
    } else if (a->state == ST_SETTLING) {
        fprintf(stderr, "\r\033[K[%s] settling %.1fs of at most %.0fs%s", label,
                (double)(now - a->t_fail) / 1e9, (double)SETTLE_NS / 1e9, eta);
    } else if (ph) {
        double rate = 0;
        if (a->t_phase) /* live: output tokens so far, those of requests still streaming
                         * included, over the phase's time so far (lgstats' rate) */
            rate = MP_MAX(0.0, mp_lg_rate((double)(ph->tokens + mp_lg_inflight_tokens(a->lg)),
                                          (double)(now - a->t_phase) / 1e9));
        int done = a->state == ST_CHECKING ? (int)a->pass_i : a->done;
        fprintf(stderr, "\r\033[K[%s] %s %d/%d  %.1f tok/s  %.0fs%s", label, ph->name, done,
                ph->planned, rate, el, eta);
    }
    fflush(stderr);
}

void mp_att_clear_progress(struct att *a)
{
    if (a->o->progress) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
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

/* ---------- readiness ---------- */

bool mp_att_check_same(struct att *a)
{
    if (!a->o->same_config || a->same_checked)
        return a->r->same_as != NULL;
    a->same_checked = true;
    mp_att_copy_resolved(a);
    char *same_as = NULL, *why = NULL;
    if (a->o->same_config(a->o->same_ud, &a->r->res, &same_as, &why)) {
        a->r->same_as = same_as;
        a->r->same_why = why;
        return true;
    }
    free(same_as);
    free(why);
    return false;
}

void mp_att_probe(struct att *a)
{
    mp_loop_timer_stop(a->loop, &a->t_probe);
    a->probing = mp_lg_get(a->lg, "/health", 2.0, TAG_HEALTH) > 0;
    if (!a->probing)
        mp_loop_timer_start(a->loop, &a->t_probe, mp_now_ns() + PROBE_INTERVAL_NS);
}

/* The served model's name from a /v1/models body ("" when none). */
static void model_from(struct att *a, const struct mp_lg_result *res)
{
    cJSON *j = cJSON_ParseWithLength(res->text ? res->text : "", res->text_len);
    cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");
    cJSON *first = cJSON_IsArray(data) ? cJSON_GetArrayItem(data, 0) : NULL;
    cJSON *id = cJSON_GetObjectItemCaseSensitive(first, "id");
    a->model[0] = '\0';
    if (cJSON_IsString(id))
        snprintf(a->model, sizeof(a->model), "%s", id->valuestring);
    cJSON_Delete(j);
}

int mp_att_probe_result(struct att *a, const struct mp_lg_result *res)
{
    if (res->user_tag != TAG_HEALTH && res->user_tag != TAG_MODELS)
        return -1;
    bool ok = res->http_status == 200 && res->outcome == MP_LG_OK;
    if (ok && res->user_tag == TAG_HEALTH) {
        if (mp_lg_get(a->lg, "/v1/models", 5.0, TAG_MODELS) > 0)
            return 0;
    } else if (ok) {
        model_from(a, res);
        if (a->model[0]) {
            a->probing = false;
            return 1;
        }
    }
    a->probing = false;
    mp_loop_timer_start(a->loop, &a->t_probe, mp_now_ns() + PROBE_INTERVAL_NS);
    return 0;
}

/* ---------- the load phases ---------- */

static struct mp_phase_result *new_phase(struct att *a, const char *name, int level, int planned)
{
    struct mp_attempt_result *r = a->r;
    if (r->nphases >= MP_ARRAY_SIZE(r->phases))
        return NULL;
    struct mp_phase_result *ph = &r->phases[r->nphases++];
    snprintf(ph->name, sizeof(ph->name), "%s", name);
    ph->level = level;
    ph->planned = planned;
    a->cur_phase = (int)(r->nphases - 1);
    a->started = a->done = 0;
    a->expired = false;
    a->t_phase = mp_now_ns();
    return ph;
}

/* The diagnosis' continuation: the highest level until min_total_ok
 * requests were served (within extend_budget_s of the spawn). */
static bool plan_extension(struct att *a)
{
    const struct mp_workload *wl = a->o->wl;
    if (a->extended || wl->min_total_ok <= 0 || a->r->req_ok >= wl->min_total_ok)
        return false;
    a->extended = true;
    memset(&a->sp, 0, sizeof(a->sp));
    snprintf(a->sp.name, sizeof(a->sp.name), "extended");
    a->sp.level = 1;
    for (size_t i = 0; i < wl->nphases; i++)
        a->sp.level = MP_MAX(a->sp.level, wl->phases[i].level);
    a->sp.requests = (int)(wl->min_total_ok - a->r->req_ok);
    if (wl->extend_budget_s > 0) {
        double left = wl->extend_budget_s - (double)(mp_now_ns() - a->t_spawn) / 1e9;
        if (left <= 0)
            return false;
        a->sp.duration_s = left;
    }
    return true;
}

bool mp_att_next_phase(struct att *a)
{
    const struct mp_workload *wl = a->o->wl;
    if (a->next_phase < wl->nphases)
        a->sp = wl->phases[a->next_phase++];
    else if (!plan_extension(a))
        return false;
    return new_phase(a, a->sp.name, a->sp.level, a->sp.requests) != NULL;
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

void mp_att_fill(struct att *a)
{
    int ntok = a->sp.input_tokens > 0 ? a->sp.input_tokens : a->o->wl->input_tokens;
    while (!a->failed && !a->expired && a->started < a->sp.requests &&
           (int)mp_lg_inflight_gen(a->lg) < a->sp.level) {
        int pidx = (int)(a->gen_started % PROMPT_COUNT);
        struct mp_lg_gen g = {.prompt = prompt_for(a, pidx, ntok), .model = a->model,
                              .ignore_eos = -1, .user_tag = pidx};
        if (mp_lg_start_gen(a->lg, &g) < 0) {
            mp_att_set_fail(a, MP_SEEN_CLIENT_ERROR, "could not start a request");
            break;
        }
        a->gen_started++;
        a->started++;
    }
}

bool mp_att_phase_complete(const struct att *a)
{
    return a->done >= a->sp.requests || (a->expired && a->done == a->started);
}

/* A phase's end: its duration is lgstats' (first request sent to last request ended, never
 * the loop's later look at the clock); a phase in which no request ended lasted from its start
 * to now (its rates are unknown anyway). Its output throughput and median decode rate. */
void mp_att_finish_phase(struct att *a)
{
    if (a->cur_phase < 0 || !a->t_phase)
        return;
    struct mp_phase_result *ph = &a->r->phases[a->cur_phase];
    ph->wall_s = ph->t_last_end_ns ? mp_lg_phase_duration_s(ph)
                                   : (double)(mp_now_ns() - a->t_phase) / 1e9;
    struct mp_lg_rates rt;
    mp_lg_phase_rates(ph, &rt);
    ph->tok_s = rt.out_tok_s > 0 ? rt.out_tok_s : 0;
    if (ph->m.req_tok_s.n)
        ph->req_tok_s_p50 = mp_hist_percentile(&ph->m.req_tok_s, 50);
    a->t_phase = 0;
    mp_gpu_set_load(a->gpu, false);
}

/* ---------- the stall check ---------- */

void mp_att_arm_stall(struct att *a)
{
    int64_t last = mp_lg_last_progress_ns(a->lg);
    int64_t stall = (int64_t)(a->o->wl->stall_timeout_s * 1e9);
    /* nothing in flight: look again in a while (a request may start) */
    int64_t at = last ? last + stall + 1 : mp_now_ns() + MP_MAX(stall, (int64_t)100000000);
    mp_loop_timer_start(a->loop, &a->t_stall, at);
}

bool mp_att_stalled(struct att *a, const char *phase)
{
    if (mp_lg_inflight_gen(a->lg) == 0)
        return false;
    int64_t last = mp_lg_last_progress_ns(a->lg);
    if (!last || (double)(mp_now_ns() - last) / 1e9 <= a->o->wl->stall_timeout_s)
        return false;
    a->hang = true;
    a->seen = MP_SEEN_HANG;
    a->seen_msg = xasprintf("no token progress for %.0f s with %zu request(s) in flight",
                                a->o->wl->stall_timeout_s, mp_lg_inflight_gen(a->lg));
    a->r->fail_phase = xstrdup(phase);
    a->r->ok_before_failure = a->r->req_ok;
    return true;
}

/* ---------- the passes after the load phases ---------- */

static bool quality_wanted(const struct att *a)
{
    return a->o->nquality > 0;
}

static void quality_send(struct att *a)
{
    const struct mp_attempt_opts *o = a->o;
    struct mp_lg_gen g = {
        .prompt = o->quality_prompts[a->pass_i],
        .model = a->model,
        .max_tokens = o->quality_max_tokens > 0 ? o->quality_max_tokens : MP_QUALITY_MAX_TOKENS,
        .ignore_eos = 0,
        .user_tag = -1 - (int)a->pass_i,
    };
    if (mp_lg_start_gen(a->lg, &g) < 0)
        mp_att_set_fail(a, MP_SEEN_CLIENT_ERROR, "could not start a request");
}

/* The output check: greedy completions of fixed prompts, one at a time, as
 * phase "quality". */
static void quality_begin(struct att *a)
{
    struct mp_attempt_result *r = a->r;
    r->nquality = a->o->nquality;
    r->quality_texts = xcalloc(a->o->nquality + 1, sizeof(*r->quality_texts));
    a->pass_i = 0;
    if (!new_phase(a, "quality", 1, (int)a->o->nquality))
        return;
    mp_gpu_set_load(a->gpu, true); /* GPU telemetry: load phases only (observe/telemetry.h) */
    quality_send(a);
}

static void quality_result(struct att *a, struct mp_lg_result *res)
{
    if (res->outcome == MP_LG_OK)
        a->r->quality_texts[a->pass_i] = xstrndup(res->text ? res->text : "", res->text_len);
    mp_att_handle_result(a, res);
    a->pass_i++;
    if (!a->failed && a->pass_i < a->o->nquality)
        quality_send(a);
}

static bool quality_complete(const struct att *a)
{
    return a->pass_i >= a->o->nquality;
}

const struct att_pass mp_att_passes[] = {
    {"quality", quality_wanted, quality_begin, quality_result, quality_complete},
    {"score", mp_score_wanted, mp_score_begin, mp_score_result, mp_score_complete}, /* run/score.h */
};
const size_t mp_att_npasses = MP_ARRAY_SIZE(mp_att_passes);
