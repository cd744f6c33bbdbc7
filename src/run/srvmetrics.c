/* srvmetrics.c - see srvmetrics.h. */
#include "compat.h"

#include "run/srvmetrics.h"

#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
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
    CURL *easy;
    CURLM *multi;           /* the scrape during a phase */
    struct curl_slist *hdrs;
    struct buf body;        /* capped at MP_PROM_MAX_INPUT; toobig: it passed that */
    bool running;           /* a transfer is in the multi handle */
    bool in_phase;
    int64_t last_ns;        /* start of the last scrape */
    struct mp_server_metrics cur;
    struct mp_srvm_snap first;
    bool have_first;
    char first_why[160];
};

static size_t on_body(char *d, size_t sz, size_t nm, void *ud)
{
    struct mp_srvm *s = ud;
    size_t n = sz * nm;
    if (!buf_add(&s->body, d, n))
        return 0; /* past MP_PROM_MAX_INPUT (body.toobig): aborts the transfer */
    return n;
}

struct mp_srvm *mp_srvm_open(const char *base_url, const char *api_key)
{
    CURL *e = curl_easy_init();
    CURLM *m = curl_multi_init();
    if (!e || !m) {
        if (e)
            curl_easy_cleanup(e);
        if (m)
            curl_multi_cleanup(m);
        return NULL;
    }
    struct mp_srvm *s = xcalloc(1, sizeof(*s));
    s->easy = e;
    s->multi = m;
    s->body = (struct buf)BUF_INIT;
    buf_set_max(&s->body, MP_PROM_MAX_INPUT);
    char *url = xasprintf("%s/metrics", base_url);
    curl_easy_setopt(e, CURLOPT_URL, url); /* libcurl copies strings */
    free(url);
    if (api_key && *api_key) {
        char *h = xasprintf("Authorization: Bearer %s", api_key);
        s->hdrs = curl_slist_append(NULL, h);
        explicit_bzero(h, strlen(h));
        free(h);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, s->hdrs);
    }
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
    /* prometheus_client compresses only when asked */
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, NULL);
    return s;
}

/* After a transfer: 0 and *sn, or <0 with why. */
static int finish(struct mp_srvm *s, CURLcode cc, struct mp_srvm_snap *sn, char *why, size_t whyn)
{
    long code = 0;
    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code);
    int rc = MP_EHTTP;
    if (s->body.toobig)
        snprintf(why, whyn, "/metrics is larger than %zu bytes", (size_t)MP_PROM_MAX_INPUT);
    else if (cc != CURLE_OK)
        snprintf(why, whyn, "/metrics could not be read: %s", curl_easy_strerror(cc));
    else if (code != 200)
        snprintf(why, whyn, "/metrics answered HTTP %ld", code);
    else
        rc = mp_srvm_snap_read(sn, s->body.data, s->body.len, why, whyn);
    buf_reset(&s->body); /* and its toobig */
    return rc;
}

static void stop_running(struct mp_srvm *s)
{
    if (s->running) {
        curl_multi_remove_handle(s->multi, s->easy);
        s->running = false;
        buf_reset(&s->body); /* and its toobig */
    }
}

static int scrape_now(struct mp_srvm *s, struct mp_srvm_snap *sn, char *why, size_t whyn)
{
    stop_running(s);
    curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, EDGE_TIMEOUT_MS);
    s->last_ns = mp_now_ns();
    CURLcode cc = curl_easy_perform(s->easy);
    return finish(s, cc, sn, why, whyn);
}

void mp_srvm_phase_begin(struct mp_srvm *s)
{
    if (!s)
        return;
    memset(&s->cur, 0, sizeof(s->cur));
    s->in_phase = true;
    s->have_first = scrape_now(s, &s->first, s->first_why, sizeof(s->first_why)) == 0;
    s->last_ns -= TICK_INTERVAL_NS - TICK_FIRST_NS;
    if (s->have_first)
        mp_srvm_observe(&s->cur, &s->first);
}

void mp_srvm_tick(struct mp_srvm *s)
{
    if (!s || !s->in_phase || !s->have_first)
        return; /* an engine whose first scrape failed is not asked again */
    if (!s->running) {
        if (mp_now_ns() - s->last_ns < TICK_INTERVAL_NS)
            return;
        curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, TICK_TIMEOUT_MS);
        if (curl_multi_add_handle(s->multi, s->easy) != CURLM_OK)
            return;
        s->running = true;
        s->last_ns = mp_now_ns();
    }
    int still = 0;
    curl_multi_perform(s->multi, &still); /* never waits */
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(s->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURLcode cc = msg->data.result;
        curl_multi_remove_handle(s->multi, s->easy);
        s->running = false;
        struct mp_srvm_snap sn;
        char why[160];
        if (finish(s, cc, &sn, why, sizeof(why)) == 0)
            mp_srvm_observe(&s->cur, &sn);
        /* a failed scrape in the middle costs one sample, not the phase */
        break;
    }
}

void mp_srvm_phase_end(struct mp_srvm *s, struct mp_server_metrics *out)
{
    if (!s)
        return;
    s->in_phase = false;
    if (!s->have_first) {
        memset(out, 0, sizeof(*out));
        out->state = MP_SRVM_UNREADABLE;
        snprintf(out->reason, sizeof(out->reason), "%s", s->first_why);
        return;
    }
    struct mp_srvm_snap last;
    char why[128];
    if (scrape_now(s, &last, why, sizeof(why)) != 0) {
        memset(out, 0, sizeof(*out));
        out->state = MP_SRVM_UNREADABLE;
        snprintf(out->reason, sizeof(out->reason), "at the phase's end: %s", why);
        return;
    }
    mp_srvm_observe(&s->cur, &last);
    mp_srvm_delta(&s->cur, &s->first, &last);
    *out = s->cur;
}

void mp_srvm_close(struct mp_srvm *s)
{
    if (!s)
        return;
    stop_running(s);
    curl_multi_cleanup(s->multi);
    curl_easy_cleanup(s->easy);
    curl_slist_free_all(s->hdrs);
    buf_release(&s->body);
    free(s);
}
