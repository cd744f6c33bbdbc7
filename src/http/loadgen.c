/* loadgen.c - libcurl multi load generator: lifecycle, starting requests, a turn of its loop,
 * results (see loadgen.h; sockets and timers on the loop in lgsock.c, responses in lgresp.c). */
#include "compat.h"

#include "http/loadgen.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "http/lg_internal.h"
#include "http/sse.h"
#include "loop.h"
#include "xalloc.h"

const char *mp_lg_outcome_name(enum mp_lg_outcome o)
{
    switch (o) {
    case MP_LG_OK: return "ok";
    case MP_LG_HTTP_ERROR: return "http-error";
    case MP_LG_STREAM_ERROR: return "stream-error";
    case MP_LG_CUT: return "cut";
    case MP_LG_PROTOCOL: return "protocol";
    case MP_LG_CONNECT: return "connect";
    case MP_LG_TIMEOUT: return "timeout";
    case MP_LG_ABORTED: return "aborted";
    case MP_LG_LOCAL: return "local";
    }
    return "unknown";
}

static void append_all(struct curl_slist **to, const struct curl_slist *from)
{
    for (; from; from = from->next)
        *to = curl_slist_append(*to, from->data);
}

struct mp_lg *mp_lg_new(const struct mp_lg_config *cfg)
{
    return mp_lg_new_on(NULL, cfg);
}

struct mp_loop *mp_lg_loop(const struct mp_lg *lg)
{
    return lg->loop;
}

struct mp_lg *mp_lg_new_on(struct mp_loop *loop, const struct mp_lg_config *cfg)
{
    struct mp_lg *lg = xcalloc(1, sizeof(*lg));
    lg->cfg = *cfg;
    const char *base = cfg->base_url ? cfg->base_url : "http://127.0.0.1:8000";
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        bl--;
    lg->base_url = xstrndup(base, bl);
    lg->url_gen = xasprintf("%s%s", lg->base_url, cfg->chat ? "/v1/chat/completions" : "/v1/completions");
    struct curl_slist *hosthdr = NULL;
    lg->nshard = lg_shard_setup(lg, cfg->chat ? "/v1/chat/completions" : "/v1/completions", &hosthdr);
    lg->model = cfg->model ? xstrdup(cfg->model) : NULL;
    lg->cfg.base_url = lg->base_url;
    lg->cfg.model = lg->model;
    lg->cfg.api_key = NULL; /* only the header copy is kept */
    if (lg->cfg.max_tokens <= 0)
        lg->cfg.max_tokens = 256;
    lg->post_hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    lg->post_hdrs = curl_slist_append(lg->post_hdrs, "Accept: text/event-stream");
    lg->post_hdrs = curl_slist_append(lg->post_hdrs, "Expect:");
    lg->json_hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    lg->json_hdrs = curl_slist_append(lg->json_hdrs, "Expect:");
    if (cfg->api_key && *cfg->api_key) {
        lg->auth_hdr = xasprintf("Authorization: Bearer %s", cfg->api_key);
        lg->post_hdrs = curl_slist_append(lg->post_hdrs, lg->auth_hdr);
        lg->json_hdrs = curl_slist_append(lg->json_hdrs, lg->auth_hdr);
        lg->get_hdrs = curl_slist_append(NULL, lg->auth_hdr);
    }
    append_all(&lg->post_hdrs, hosthdr);
    append_all(&lg->json_hdrs, hosthdr);
    append_all(&lg->get_hdrs, hosthdr);
    curl_slist_free_all(hosthdr);
    lg->multi = curl_multi_init();
    if (!lg->multi || !lg->post_hdrs || !lg->json_hdrs || (lg->auth_hdr && !lg->get_hdrs)) {
        fputs("fatal: out of memory (libcurl)\n", stderr);
        abort();
    }
    curl_multi_setopt(lg->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
    curl_multi_setopt(lg->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
    curl_multi_setopt(lg->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
    lg->loop = loop;
    if (!lg->loop) {
        lg->loop = mp_loop_new();
        lg->own_loop = true;
        if (!lg->loop) {
            fputs("fatal: cannot create epoll/eventfd\n", stderr);
            abort();
        }
    }
    mp_loop_timer_init(&lg->curl_timer, lg_on_curl_timer, lg);
    mp_loop_timer_init(&lg->held_timer, lg_on_held_timer, lg);
    if (mp_loop_hook_add(lg->loop, lg_turn, lg) < 0) {
        fputs("fatal: too many load generators on one loop\n", stderr);
        abort();
    }
    curl_multi_setopt(lg->multi, CURLMOPT_SOCKETFUNCTION, lg_sock_cb);
    curl_multi_setopt(lg->multi, CURLMOPT_SOCKETDATA, lg);
    curl_multi_setopt(lg->multi, CURLMOPT_TIMERFUNCTION, lg_timer_cb);
    curl_multi_setopt(lg->multi, CURLMOPT_TIMERDATA, lg);
    lg->next_id = 1;
    return lg;
}

static void req_free(struct lg_req *r)
{
    mp_lg_result_release(&r->res);
    mp_sse_free(&r->sse);
    buf_release(&r->text);
    buf_release(&r->errbody);
    free(r->body);
    free(r);
}

/* a popped request's record: keep it for the next request, or free it */
static void req_put(struct mp_lg *lg, struct lg_req *r)
{
    if (lg->nspare >= LG_SPARE_MAX) {
        req_free(r);
        return;
    }
    mp_lg_result_release(&r->res);
    mp_sse_free(&r->sse);
    buf_release(&r->text);
    buf_release(&r->errbody);
    free(r->body);
    r->next = lg->spare;
    lg->spare = r;
    lg->nspare++;
}

void mp_lg_free(struct mp_lg *lg)
{
    if (!lg)
        return;
    struct lg_req *r = lg->inflight;
    while (r) {
        struct lg_req *nx = r->next;
        curl_multi_remove_handle(lg->multi, r->easy);
        curl_easy_cleanup(r->easy);
        req_free(r);
        r = nx;
    }
    r = lg->done_head;
    while (r) {
        struct lg_req *nx = r->next;
        req_free(r);
        r = nx;
    }
    while (lg->spare) {
        r = lg->spare;
        lg->spare = r->next;
        free(r); /* contents were released by req_put */
    }
    for (size_t i = 0; i < lg->npool; i++)
        curl_easy_cleanup(lg->pool[i]);
    free(lg->pool);
    curl_multi_cleanup(lg->multi); /* closes the idle connections (lg_closesocket) */
    mp_loop_timer_stop(lg->loop, &lg->curl_timer);
    mp_loop_timer_stop(lg->loop, &lg->held_timer);
    mp_loop_hook_del(lg->loop, lg_turn, lg);
    for (size_t fd = 0; fd < lg->fdcap; fd++) /* sockets libcurl did not open through us */
        if (lg->fdst[fd] & LGFD_REG)
            mp_loop_fd_del(lg->loop, (int)fd);
    if (lg->own_loop)
        mp_loop_free(lg->loop);
    free(lg->fdst);
    curl_slist_free_all(lg->post_hdrs);
    curl_slist_free_all(lg->json_hdrs);
    curl_slist_free_all(lg->get_hdrs);
    if (lg->auth_hdr) {
        memset(lg->auth_hdr, 0, strlen(lg->auth_hdr));
        free(lg->auth_hdr);
    }
    free(lg->url_gen);
    free(lg->base_url);
    for (int i = 0; i < LG_SHARDS; i++) {
        free(lg->shard_base[i]);
        free(lg->shard_gen[i]);
    }
    curl_slist_free_all(lg->resolve);
    free(lg->real_host);
    free(lg->model);
    free(lg);
}

/* ---- starting ---- */

static CURL *easy_get(struct mp_lg *lg)
{
    if (lg->npool)
        return lg->pool[--lg->npool];
    CURL *e = curl_easy_init();
    if (!e) {
        fputs("fatal: out of memory (libcurl)\n", stderr);
        abort();
    }
    /* options every request shares, set once per handle (handles are pooled without reset) */
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    if (lg->resolve)
        curl_easy_setopt(e, CURLOPT_RESOLVE, lg->resolve);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, lg_opensocket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, lg);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, lg_closesocket);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, lg);
    return e;
}

static long submit(struct mp_lg *lg, struct lg_req *r)
{
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, r->timeout_ms); /* 0: none */
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 0L); /* a pooled handle may have retried */
    r->res.id = lg->next_id++;
    r->res.t_start_ns = mp_now_ns();
    r->res.protocol_pos = -1;
    r->res.prompt_tokens = -1;
    if (curl_multi_add_handle(lg->multi, e) != CURLM_OK) {
        lg->shard_inflight[r->shard]--;
        curl_easy_cleanup(e);
        req_free(r);
        return MP_EHTTP;
    }
    if (r->res.kind != MP_LG_GET)
        lg->ngen++;
    r->prev = NULL;
    r->next = lg->inflight;
    if (lg->inflight)
        lg->inflight->prev = r;
    lg->inflight = r;
    lg->ninflight++;
    return r->res.id;
}

static struct lg_req *req_new(struct mp_lg *lg, enum mp_lg_kind kind, int user_tag)
{
    struct lg_req *r = lg->spare;
    if (r) {
        lg->spare = r->next;
        lg->nspare--;
        memset(r, 0, sizeof(*r));
    } else {
        r = xcalloc(1, sizeof(*r));
    }
    r->lg = lg;
    r->res.kind = kind;
    r->res.user_tag = user_tag;
    buf_init(&r->text);
    buf_init(&r->errbody);
    /* the bytes kept: generated text, or a whole (GET, completion) body */
    buf_set_max(&r->text, kind == MP_LG_GEN ? lg->cfg.text_keep : LG_GET_BODY_MAX);
    buf_set_max(&r->errbody, LG_ERR_BODY_MAX);
    mp_sse_init(&r->sse, 0);
    r->easy = easy_get(lg);
    r->shard = lg_shard_pick(lg);
    lg->shard_inflight[r->shard]++; /* until unlink_inflight (or a failed submit) */
    return r;
}

static char *gen_body(const struct mp_lg *lg, const struct mp_lg_gen *g, bool stream, size_t *len)
{
    struct buf b = BUF_INIT;
    const char *prompt = g->prompt, *model = g->model ? g->model : lg->model;
    int max_tokens = g->max_tokens > 0 ? g->max_tokens : lg->cfg.max_tokens;
    bool ignore_eos = g->ignore_eos < 0 ? lg->cfg.ignore_eos : g->ignore_eos != 0;
    buf_adds(&b, "{");
    if (model) {
        buf_adds(&b, "\"model\":");
        buf_add_json_str(&b, model, strlen(model));
        buf_adds(&b, ",");
    }
    if (lg->cfg.chat) {
        buf_adds(&b, "\"messages\":[{\"role\":\"user\",\"content\":");
        buf_add_json_str(&b, prompt, strlen(prompt));
        buf_adds(&b, "}]");
    } else {
        buf_adds(&b, "\"prompt\":");
        buf_add_json_str(&b, prompt, strlen(prompt));
    }
    buf_printf(&b, ",\"max_tokens\":%d,\"temperature\":0,%s\"ignore_eos\":%s}", max_tokens,
               stream ? "\"stream\":true,\"stream_options\":{\"include_usage\":true}," : "\"stream\":false,",
               ignore_eos ? "true" : "false");
    return buf_detach(&b, len);
}

long mp_lg_start(struct mp_lg *lg, const char *prompt, int user_tag)
{
    struct mp_lg_gen g = {.prompt = prompt, .ignore_eos = -1, .user_tag = user_tag};
    return mp_lg_start_gen(lg, &g);
}

long mp_lg_start_gen(struct mp_lg *lg, const struct mp_lg_gen *g)
{
    if (!lg || !g || !g->prompt)
        return -EINVAL;
    struct lg_req *r = req_new(lg, MP_LG_GEN, g->user_tag);
    size_t blen = 0;
    r->body = gen_body(lg, g, true, &blen);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, lg->shard_gen[r->shard]);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, lg->post_hdrs);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, lg_gen_write);
    if (lg->cfg.request_timeout_s > 0)
        r->timeout_ms = (long)(lg->cfg.request_timeout_s * 1000.0);
    return submit(lg, r);
}

long mp_lg_complete(struct mp_lg *lg, const char *prompt, int user_tag)
{
    if (!lg || !prompt)
        return -EINVAL;
    struct lg_req *r = req_new(lg, MP_LG_COMPLETE, user_tag);
    struct mp_lg_gen g = {.prompt = prompt, .ignore_eos = -1, .user_tag = user_tag};
    size_t blen = 0;
    r->body = gen_body(lg, &g, false, &blen);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, lg->shard_gen[r->shard]);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, lg->json_hdrs);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, lg_get_write);
    if (lg->cfg.request_timeout_s > 0)
        r->timeout_ms = (long)(lg->cfg.request_timeout_s * 1000.0);
    return submit(lg, r);
}

long mp_lg_post(struct mp_lg *lg, const char *path, const char *body, double timeout_s,
                int user_tag)
{
    if (!lg || !path || !body)
        return -EINVAL;
    struct lg_req *r = req_new(lg, MP_LG_POST, user_tag);
    char *url = xasprintf("%s%s%s", lg->shard_base[r->shard], path[0] == '/' ? "" : "/", path);
    r->body = xstrdup(body);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, url);
    free(url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, lg->json_hdrs);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(r->body));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, lg_get_write);
    if (timeout_s > 0)
        r->timeout_ms = (long)(timeout_s * 1000.0) + (timeout_s * 1000.0 < 1);
    return submit(lg, r);
}

long mp_lg_get(struct mp_lg *lg, const char *path, double timeout_s, int user_tag)
{
    return mp_lg_get_max(lg, path, timeout_s, 0, user_tag);
}

long mp_lg_get_max(struct mp_lg *lg, const char *path, double timeout_s, size_t body_max,
                   int user_tag)
{
    if (!lg || !path)
        return -EINVAL;
    struct lg_req *r = req_new(lg, MP_LG_GET, user_tag);
    if (body_max)
        buf_set_max(&r->text, body_max);
    char *url = xasprintf("%s%s%s", lg->shard_base[r->shard], path[0] == '/' ? "" : "/", path);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, url); /* libcurl copies strings */
    free(url);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, NULL); /* a pooled handle may have posted */
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, lg->get_hdrs); /* NULL: none */
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, lg_get_write);
    if (timeout_s > 0)
        r->timeout_ms = (long)(timeout_s * 1000.0) + (timeout_s * 1000.0 < 1);
    return submit(lg, r);
}

int mp_lg_poll(struct mp_lg *lg, int timeout_ms)
{
    int64_t deadline = lg->done_head || timeout_ms <= 0 ? 0 : mp_now_ns() + (int64_t)timeout_ms * 1000000;
    int rc = mp_loop_run_once(lg->loop, deadline);
    lg_turn(lg->loop, lg); /* what the turn finished is popped at once */
    return rc < 0 ? rc : 0;
}

void mp_lg_wakeup(struct mp_lg *lg)
{
    if (lg)
        mp_loop_wakeup(lg->loop); /* async-signal-safe */
}

size_t mp_lg_inflight(const struct mp_lg *lg)
{
    return lg ? lg->ninflight : 0;
}

size_t mp_lg_inflight_gen(const struct mp_lg *lg)
{
    return lg ? lg->ngen : 0;
}

long mp_lg_inflight_tokens(const struct mp_lg *lg)
{
    long n = 0;
    for (const struct lg_req *r = lg ? lg->inflight : NULL; r; r = r->next)
        if (r->res.kind == MP_LG_GEN)
            n += (long)r->res.chunks;
    return n;
}

int64_t mp_lg_last_progress_ns(const struct mp_lg *lg)
{
    int64_t last_event = 0, oldest_start = 0;
    for (const struct lg_req *r = lg ? lg->inflight : NULL; r; r = r->next) {
        if (r->res.kind != MP_LG_GEN)
            continue;
        if (r->last_event_ns > last_event)
            last_event = r->last_event_ns;
        if (oldest_start == 0 || r->res.t_start_ns < oldest_start)
            oldest_start = r->res.t_start_ns;
    }
    return last_event ? last_event : oldest_start;
}

int mp_lg_cancel(struct mp_lg *lg, long id)
{
    for (struct lg_req *r = lg->inflight; r; r = r->next) {
        if (r->res.id == id) {
            lg_finalize(lg, r, CURLE_OK, true);
            return 0;
        }
    }
    return -ENOENT;
}

size_t mp_lg_cancel_all(struct mp_lg *lg)
{
    size_t n = 0;
    while (lg->inflight) {
        lg_finalize(lg, lg->inflight, CURLE_OK, true);
        n++;
    }
    return n;
}

int mp_lg_next_result(struct mp_lg *lg, struct mp_lg_result *out)
{
    struct lg_req *r = lg->done_head;
    if (!r)
        return 0;
    lg->done_head = r->next;
    if (!lg->done_head)
        lg->done_tail = NULL;
    *out = r->res;
    memset(&r->res, 0, sizeof(r->res));
    req_put(lg, r);
    return 1;
}

void mp_lg_result_release(struct mp_lg_result *r)
{
    if (!r)
        return;
    mp_hist_free(&r->itl_ms);
    free(r->text);
    free(r->finish_reason);
    r->text = NULL;
    r->finish_reason = NULL;
    r->text_len = 0;
}
