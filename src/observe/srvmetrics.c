/* srvmetrics.c - see srvmetrics.h. */
#include "compat.h"

#include "observe/srvmetrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "http/loadgen.h"
#include "loop.h"
#include "xalloc.h"

#define EDGE_TIMEOUT_MS 2000L /* a phase's first and last scrape */
#define TICK_TIMEOUT_MS 3000L /* one during a phase (it never blocks) */
#define TICK_INTERVAL_NS 1000000000LL
#define TICK_FIRST_NS 250000000LL     /* the first one during a phase: short phases get one too */

/* ---------- reading one body ---------- */

/* The first of names that has a sample; "" and NAN when none. */
static double pick(const struct mp_prom *p, const char *const *names, size_t n, bool max,
                   char *used, size_t usedn)
{
    for (size_t i = 0; i < n; i++) {
        double v;
        if ((max ? mp_prom_max(p, names[i], &v) : mp_prom_sum(p, names[i], &v)) > 0) {
            if (used)
                snprintf(used, usedn, "%s", names[i]);
            return v;
        }
    }
    if (used && usedn)
        used[0] = '\0';
    return NAN;
}

int mp_srvm_snap_read(struct mp_srvm_snap *sn, const char *body, size_t len, char *why,
                      size_t whyn)
{
    memset(sn, 0, sizeof(*sn));
    struct mp_prom p;
    mp_prom_parse(&p, body, len);
    /* counters: prometheus_client writes a Counter named X as X_total; the
     * un-suffixed names are accepted for engines that name samples so */
    static const char *const gen[] = {"vllm:generation_tokens_total", "vllm:generation_tokens"};
    static const char *const prompt[] = {"vllm:prompt_tokens_total", "vllm:prompt_tokens"};
    static const char *const pre[] = {"vllm:num_preemptions_total", "vllm:num_preemptions"};
    static const char *const kv[] = {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"};
    static const char *const wait[] = {"vllm:num_requests_waiting"};
    static const char *const run[] = {"vllm:num_requests_running"};
    sn->gen = pick(&p, gen, 2, false, NULL, 0);
    sn->prompt = pick(&p, prompt, 2, false, NULL, 0);
    sn->preempt = pick(&p, pre, 2, false, sn->preempt_metric, sizeof(sn->preempt_metric));
    sn->kv = pick(&p, kv, 2, true, sn->kv_metric, sizeof(sn->kv_metric));
    sn->waiting = pick(&p, wait, 1, false, NULL, 0);
    sn->running = pick(&p, run, 1, false, NULL, 0);
    sn->has_ttft = mp_prom_histogram(&p, "vllm:time_to_first_token_seconds", &sn->ttft) > 0 &&
                   sn->ttft.has_count && sn->ttft.has_sum;
    /* inter-token latency: its name from 0.11; time per output token (the
     * same observations) before; both in 0.11.x */
    static const char *const itl[] = {"vllm:inter_token_latency_seconds",
                                      "vllm:time_per_output_token_seconds"};
    for (size_t i = 0; i < MP_ARRAY_SIZE(itl) && !sn->has_itl; i++) {
        sn->has_itl = mp_prom_histogram(&p, itl[i], &sn->itl) > 0 && sn->itl.has_count &&
                      sn->itl.has_sum;
        if (sn->has_itl)
            snprintf(sn->itl_metric, sizeof(sn->itl_metric), "%s", itl[i]);
    }
    bool any = sn->has_ttft || sn->has_itl || !isnan(sn->gen) || !isnan(sn->preempt) ||
               !isnan(sn->kv) || !isnan(sn->waiting);
    int rc = 0;
    if (!any) {
        if (p.n == 0 && p.bad_lines)
            snprintf(why, whyn, "not Prometheus text (line %zu: %s)", p.bad_line, p.bad_why);
        else
            snprintf(why, whyn, "no vllm:* series (%zu other series)", p.n);
        rc = MP_EPARSE;
    }
    mp_prom_free(&p);
    return rc;
}

static void max_in(double *m, double v)
{
    if (!isnan(v) && (*m < 0 || v > *m))
        *m = v;
}

void mp_srvm_observe(struct mp_server_metrics *m, const struct mp_srvm_snap *sn)
{
    if (m->scrapes++ == 0)
        m->kv_usage_max = m->waiting_max = m->running_max = -1;
    m->waiting_counted = true;
    if (!isnan(sn->waiting) && sn->waiting > 0)
        m->waiting_scrapes++;
    max_in(&m->kv_usage_max, sn->kv);
    max_in(&m->waiting_max, sn->waiting);
    max_in(&m->running_max, sn->running);
}

static double cdelta(double a, double b)
{
    double d = b - a;
    /* went back (the engine restarted), or NaN/Inf counters: no delta */
    return isfinite(d) && d >= 0 ? d : -1;
}

/* the same bounds in both scrapes: a delta per bucket */
static void lat(struct mp_srvm_lat *l, bool ha, const struct mp_prom_hist *a, bool hb,
                const struct mp_prom_hist *b)
{
    memset(l, 0, sizeof(*l));
    if (!ha || !hb || a->n != b->n)
        return;
    for (size_t i = 0; i < a->n; i++)
        if (a->le[i] != b->le[i])
            return;
    mp_srvm_lat_delta(l, b->le, a->cum, b->cum, b->n, a->sum, b->sum, a->count, b->count);
}

void mp_srvm_delta(struct mp_server_metrics *m, const struct mp_srvm_snap *a,
                   const struct mp_srvm_snap *b)
{
    m->state = MP_SRVM_OK;
    m->reason[0] = '\0';
    lat(&m->ttft, a->has_ttft, &a->ttft, b->has_ttft, &b->ttft);
    lat(&m->itl, a->has_itl && !strcmp(a->itl_metric, b->itl_metric), &a->itl, b->has_itl,
        &b->itl);
    m->gen_tokens = cdelta(a->gen, b->gen);
    m->prompt_tokens = cdelta(a->prompt, b->prompt);
    m->preemptions = cdelta(a->preempt, b->preempt);
    snprintf(m->itl_metric, sizeof(m->itl_metric), "%s", b->itl_metric);
    snprintf(m->kv_metric, sizeof(m->kv_metric), "%s", b->kv_metric);
    snprintf(m->preempt_metric, sizeof(m->preempt_metric), "%s", b->preempt_metric);
    mp_srvm_set_flags(m);
}

/* ---------- scraping ---------- */

struct mp_srvm {
    struct mp_lg *lg;           /* borrowed: the attempt's load generator */
    struct mp_loop_timer tick;  /* the next scrape of the phase's middle */
    bool in_phase;
    long edge_id;               /* the first or last scrape in flight, 0 = none */
    long tick_id;               /* a scrape of the middle in flight, 0 = none */
    int64_t last_ns;            /* start of the last scrape of the middle (or of the first) */
    struct mp_server_metrics cur;
    struct mp_srvm_snap first;
    bool have_first;
    char first_why[160];
    struct mp_server_metrics out; /* the phase's result, once its last scrape is in */
};

static void on_tick(struct mp_loop *l, struct mp_loop_timer *t, void *ud);

struct mp_srvm *mp_srvm_new(struct mp_lg *lg)
{
    struct mp_srvm *s = xcalloc(1, sizeof(*s));
    s->lg = lg;
    mp_loop_timer_init(&s->tick, on_tick, s);
    return s;
}

void mp_srvm_free(struct mp_srvm *s)
{
    if (!s)
        return;
    mp_loop_timer_stop(mp_lg_loop(s->lg), &s->tick);
    free(s);
}

static long scrape(struct mp_srvm *s, long timeout_ms)
{
    long id = mp_lg_get_max(s->lg, "/metrics", (double)timeout_ms / 1000.0, MP_PROM_MAX_INPUT,
                            MP_SRVM_TAG);
    return id > 0 ? id : 0;
}

/* A scrape's result: 0 and *sn, or <0 with why. */
static int finish(const struct mp_lg_result *res, struct mp_srvm_snap *sn, char *why, size_t whyn)
{
    int rc = MP_EHTTP;
    if (res->text_cut)
        snprintf(why, whyn, "/metrics is larger than %zu bytes", (size_t)MP_PROM_MAX_INPUT);
    else if (res->outcome == MP_LG_HTTP_ERROR || (res->outcome == MP_LG_OK && res->http_status != 200))
        snprintf(why, whyn, "/metrics answered HTTP %d", res->http_status);
    else if (res->outcome != MP_LG_OK)
        snprintf(why, whyn, "/metrics could not be read: %.120s", res->error);
    else
        rc = mp_srvm_snap_read(sn, res->text ? res->text : "", res->text_len, why, whyn);
    return rc;
}

static void arm_tick(struct mp_srvm *s, int64_t at)
{
    mp_loop_timer_start(mp_lg_loop(s->lg), &s->tick, MP_MAX(at, mp_now_ns()));
}

static void on_tick(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    struct mp_srvm *s = ud;
    (void)l;
    (void)t;
    if (!s->in_phase || s->tick_id || s->edge_id)
        return;
    s->last_ns = mp_now_ns();
    s->tick_id = scrape(s, TICK_TIMEOUT_MS);
}

void mp_srvm_phase_begin(struct mp_srvm *s)
{
    if (!s)
        return;
    memset(&s->cur, 0, sizeof(s->cur));
    s->in_phase = true;
    s->have_first = false;
    s->first_why[0] = '\0';
    s->last_ns = mp_now_ns();
    s->edge_id = scrape(s, EDGE_TIMEOUT_MS);
    if (!s->edge_id)
        snprintf(s->first_why, sizeof(s->first_why), "/metrics could not be read: no transfer");
}

void mp_srvm_phase_end(struct mp_srvm *s)
{
    if (!s)
        return;
    s->in_phase = false;
    mp_loop_timer_stop(mp_lg_loop(s->lg), &s->tick);
    if (s->tick_id) {
        mp_lg_cancel(s->lg, s->tick_id); /* its result comes back aborted: ignored */
        s->tick_id = 0;
    }
    memset(&s->out, 0, sizeof(s->out));
    if (s->edge_id) { /* stopped before its first scrape came back */
        mp_lg_cancel(s->lg, s->edge_id);
        s->edge_id = 0;
        snprintf(s->first_why, sizeof(s->first_why),
                 "the phase ended before its first /metrics scrape came back");
    }
    if (!s->have_first) {
        s->out.state = MP_SRVM_UNREADABLE;
        snprintf(s->out.reason, sizeof(s->out.reason), "%s", s->first_why);
        return;
    }
    s->edge_id = scrape(s, EDGE_TIMEOUT_MS);
    if (!s->edge_id) {
        s->out.state = MP_SRVM_UNREADABLE;
        snprintf(s->out.reason, sizeof(s->out.reason), "at the phase's end: /metrics could not be read");
    }
}

bool mp_srvm_waiting(const struct mp_srvm *s)
{
    return s && s->edge_id != 0;
}

/* The phase's first scrape is in: its snapshot, and the first scrape of
 * the middle 250 ms after it was sent (short phases get one too). */
static void took_first(struct mp_srvm *s, const struct mp_lg_result *res)
{
    s->have_first = finish(res, &s->first, s->first_why, sizeof(s->first_why)) == 0;
    if (!s->have_first)
        return; /* an engine whose first scrape failed is not asked again */
    mp_srvm_observe(&s->cur, &s->first);
    if (s->in_phase)
        arm_tick(s, s->last_ns + TICK_FIRST_NS);
}

static void took_last(struct mp_srvm *s, const struct mp_lg_result *res)
{
    struct mp_srvm_snap last;
    char why[128];
    if (finish(res, &last, why, sizeof(why)) != 0) {
        s->out.state = MP_SRVM_UNREADABLE;
        snprintf(s->out.reason, sizeof(s->out.reason), "at the phase's end: %s", why);
        return;
    }
    mp_srvm_observe(&s->cur, &last);
    mp_srvm_delta(&s->cur, &s->first, &last);
    s->out = s->cur;
}

bool mp_srvm_take(struct mp_srvm *s, const struct mp_lg_result *res)
{
    if (!s || res->user_tag != MP_SRVM_TAG)
        return false;
    if (res->id == s->edge_id) {
        s->edge_id = 0;
        if (s->in_phase)
            took_first(s, res);
        else
            took_last(s, res);
    } else if (res->id == s->tick_id) {
        s->tick_id = 0;
        struct mp_srvm_snap sn;
        char why[160];
        if (finish(res, &sn, why, sizeof(why)) == 0)
            mp_srvm_observe(&s->cur, &sn);
        /* a failed scrape in the middle costs one sample, not the phase */
        if (s->in_phase)
            arm_tick(s, s->last_ns + TICK_INTERVAL_NS);
    }
    return true; /* ours (a dropped one's result too) */
}

void mp_srvm_result(struct mp_srvm *s, struct mp_server_metrics *out)
{
    if (s)
        *out = s->out;
}
