/* loadgen.c - libcurl multi load generator (see loadgen.h). */
#include "compat.h"

#include "http/loadgen.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "http/sse.h"
#include "xalloc.h"

#define LG_GET_BODY_MAX ((size_t)1 << 20)  /* GET bodies kept up to 1 MiB */
#define LG_ERR_BODY_MAX ((size_t)64 << 10) /* error bodies of generation requests */
#define LG_GAPS_MAX ((size_t)1 << 22)      /* inter-token gaps kept per request */
#define LG_POOL_MAX 8192                   /* idle easy handles kept for reuse */
#define LG_SPARE_MAX 1024
#define LG_SHARDS 32      /* connection-cache shards (see shard_setup) */
#define LG_SHARD_SIZE 32  /* in-flight requests per shard before the next one is used */                  /* finished request records kept for reuse */

struct lg_req {
    struct mp_lg *lg;
    CURL *easy;
    struct lg_req *prev, *next; /* in-flight list, then the done FIFO (next only) */
    struct mp_lg_result res;
    struct mp_sse sse;
    struct buf text;   /* generated text (GEN) or body (GET) */
    struct buf errbody;
    size_t gaps_cap;
    char *body;        /* POST body (owned) */
    int64_t now;       /* arrival stamp of the bytes being parsed */
    int64_t last_event_ns;
    int usage_tokens;
    bool status_seen, done_seen, stream_error, protocol_error;
    bool body_checked; /* the first bytes of a 200 body were checked for SSE */
    long timeout_ms;   /* CURLOPT_TIMEOUT_MS, 0 = none */
    int shard;
    char errbuf[CURL_ERROR_SIZE];
};

struct mp_lg {
    CURLM *multi;
    char *url_gen;
    char *base_url;
    /* connection-cache shards: shard i sends to http://mp-sNN.invalid:PORT, pinned to the real
     * address with CURLOPT_RESOLVE, with the real Host header; nshard 1 = base_url as is */
    int nshard;
    char *shard_base[LG_SHARDS];
    char *shard_gen[LG_SHARDS];
    int shard_inflight[LG_SHARDS];
    struct curl_slist *resolve;
    char *real_host; /* host part of base_url, for error messages */
    char *model;
    char *auth_hdr;
    struct curl_slist *post_hdrs, *json_hdrs, *get_hdrs;
    struct mp_lg_config cfg;
    long next_id;
    size_t ninflight;
    struct lg_req *inflight;              /* doubly linked */
    struct lg_req *done_head, *done_tail; /* FIFO of finished requests */
    CURL **pool;
    size_t npool;
    struct lg_req *spare; /* free list of request records (next), saves a large calloc/free */
    size_t nspare;
    /* curl_multi_socket_action driver: libcurl's sockets live in an epoll set, so a wakeup
     * costs O(ready sockets), not O(connections) as curl_multi_poll does */
    int epfd;
    int wakefd;        /* eventfd for mp_lg_wakeup */
    uint8_t *fdst;     /* per-fd LGFD_* bits, indexed by fd */
    size_t fdcap;
    int64_t timer_ns;  /* libcurl's timeout deadline, -1 = none */
};

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
    }
    return "unknown";
}

/* Per-fd state. libcurl asks for CURL_POLL_REMOVE whenever a transfer ends and for IN/OUT again
 * when the next transfer reuses the connection: a DEL + ADD pair of epoll_ctl calls per request.
 * For the connection sockets libcurl opens through our opensocket callback (LGFD_OWNED) the
 * registration is kept while the connection idles in libcurl's cache (LGFD_ACTIVE cleared); an
 * event on an idle socket (the server closed it) drops the registration then, and libcurl finds
 * the connection dead when it next looks. The closesocket callback forgets the fd, so a reused fd
 * number is never mistaken for a registered one. Other sockets (resolver) are added and removed
 * as libcurl says. */
#define LGFD_OWNED 0x01u  /* opened by lg_opensocket, not yet closed */
#define LGFD_REG 0x02u    /* in the epoll set */
#define LGFD_ACTIVE 0x04u /* libcurl wants events on it */
#define LGFD_IN 0x08u     /* registered events */
#define LGFD_OUT 0x10u

static uint8_t *fd_state(struct mp_lg *lg, curl_socket_t fd)
{
    size_t i = (size_t)fd;
    if (i >= lg->fdcap) {
        size_t cap = lg->fdcap ? lg->fdcap : 256;
        while (cap <= i)
            cap *= 2;
        lg->fdst = xrealloc(lg->fdst, cap);
        memset(lg->fdst + lg->fdcap, 0, cap - lg->fdcap);
        lg->fdcap = cap;
    }
    return &lg->fdst[i];
}

static curl_socket_t lg_opensocket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct mp_lg *lg = clientp;
    (void)purpose;
    curl_socket_t fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    if (fd == CURL_SOCKET_BAD)
        return fd;
    *fd_state(lg, fd) = LGFD_OWNED;
    return fd;
}

static int lg_closesocket(void *clientp, curl_socket_t fd)
{
    struct mp_lg *lg = clientp;
    if (fd >= 0 && (size_t)fd < lg->fdcap)
        lg->fdst[fd] = 0; /* close() removes it from the epoll set */
    return close(fd);
}

static int sock_cb(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct mp_lg *lg = userp;
    (void)e;
    (void)socketp;
    uint8_t *st = fd_state(lg, fd);
    if (what == CURL_POLL_REMOVE) {
        if ((*st & (LGFD_OWNED | LGFD_REG)) == (LGFD_OWNED | LGFD_REG)) {
            *st &= (uint8_t)~LGFD_ACTIVE; /* keep it registered while it idles */
        } else {
            epoll_ctl(lg->epfd, EPOLL_CTL_DEL, fd, NULL); /* may already be gone with a close */
            *st &= LGFD_OWNED;
        }
        return 0;
    }
    uint8_t want = (uint8_t)(((what & CURL_POLL_IN) ? LGFD_IN : 0u) | ((what & CURL_POLL_OUT) ? LGFD_OUT : 0u));
    if ((*st & LGFD_REG) && (*st & (LGFD_IN | LGFD_OUT)) == want) {
        *st |= LGFD_ACTIVE;
        return 0;
    }
    struct epoll_event ev = { 0 };
    ev.events = ((want & LGFD_IN) ? EPOLLIN : 0u) | ((want & LGFD_OUT) ? EPOLLOUT : 0u);
    ev.data.fd = fd;
    if (epoll_ctl(lg->epfd, (*st & LGFD_REG) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0) {
        if (errno == EEXIST)
            epoll_ctl(lg->epfd, EPOLL_CTL_MOD, fd, &ev);
        else if (errno == ENOENT)
            epoll_ctl(lg->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    *st = (uint8_t)((*st & LGFD_OWNED) | LGFD_REG | LGFD_ACTIVE | want);
    return 0;
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    struct mp_lg *lg = userp;
    (void)m;
    lg->timer_ns = timeout_ms < 0 ? -1 : mp_now_ns() + (int64_t)timeout_ms * 1000000;
    return 0;
}

/* libcurl 7.x keeps a host's connections in one list and scans it linearly for an idle one at
 * every request start: ~20 ns per connection, +10-20 us per request at 256-1,000 connections.
 * With an IP-literal http:// base URL without a path, requests are spread over LG_SHARDS
 * synthetic host names (RFC 6761 .invalid, never resolved: CURLOPT_RESOLVE pins them to the
 * real address), each its own list; the Host header is the real one, so the server sees no
 * difference. A request goes to the lowest shard with fewer than LG_SHARD_SIZE in flight, so
 * sequential requests all use shard 0 and one connection. Returns the number of shards. */
static int shard_setup(struct mp_lg *lg, const char *gen_path, struct curl_slist **hosthdr)
{
    int n = 1;
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *user = NULL, *query = NULL;
    CURLU *u = curl_url();
    if (!u || curl_url_set(u, CURLUPART_URL, lg->base_url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        goto out;
    curl_url_get(u, CURLUPART_USER, &user, 0);
    curl_url_get(u, CURLUPART_QUERY, &query, 0);
    unsigned char addr[16];
    size_t hl = strlen(host);
    bool v6 = hl > 2 && host[0] == '[' && host[hl - 1] == ']';
    char inner[64] = "";
    if (v6 && hl - 2 < sizeof(inner))
        memcpy(inner, host + 1, hl - 2);
    bool literal = v6 ? inet_pton(AF_INET6, inner, addr) == 1 : inet_pton(AF_INET, host, addr) == 1;
    if (strcmp(scheme, "http") != 0 || !literal || user || query || strcmp(path, "/") != 0)
        goto out;
    char *explicit_port = NULL;
    curl_url_get(u, CURLUPART_PORT, &explicit_port, 0);
    char *h = explicit_port ? xasprintf("Host: %s:%s", host, explicit_port) : xasprintf("Host: %s", host);
    *hosthdr = curl_slist_append(NULL, h);
    free(h);
    curl_free(explicit_port);
    n = LG_SHARDS;
    for (int i = 0; i < n; i++) {
        char *r = xasprintf("mp-s%02d.invalid:%s:%s", i, port, host);
        lg->resolve = curl_slist_append(lg->resolve, r);
        free(r);
        lg->shard_base[i] = xasprintf("http://mp-s%02d.invalid:%s", i, port);
        lg->shard_gen[i] = xasprintf("%s%s", lg->shard_base[i], gen_path);
    }
    lg->real_host = xstrdup(host);
out:
    if (n == 1) {
        lg->shard_base[0] = xstrdup(lg->base_url);
        lg->shard_gen[0] = xasprintf("%s%s", lg->base_url, gen_path);
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(user);
    curl_free(query);
    curl_url_cleanup(u);
    return n;
}

static int shard_pick(struct mp_lg *lg)
{
    int best = 0;
    for (int i = 0; i < lg->nshard; i++) {
        if (lg->shard_inflight[i] < LG_SHARD_SIZE)
            return i;
        if (lg->shard_inflight[i] < lg->shard_inflight[best])
            best = i;
    }
    return best;
}

static void append_all(struct curl_slist **to, const struct curl_slist *from)
{
    for (; from; from = from->next)
        *to = curl_slist_append(*to, from->data);
}

struct mp_lg *mp_lg_new(const struct mp_lg_config *cfg)
{
    curl_global_init(CURL_GLOBAL_DEFAULT); /* reference counted; balanced in mp_lg_free */
    struct mp_lg *lg = xcalloc(1, sizeof(*lg));
    lg->cfg = *cfg;
    const char *base = cfg->base_url ? cfg->base_url : "http://127.0.0.1:8000";
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        bl--;
    lg->base_url = xstrndup(base, bl);
    lg->url_gen = xasprintf("%s%s", lg->base_url, cfg->chat ? "/v1/chat/completions" : "/v1/completions");
    struct curl_slist *hosthdr = NULL;
    lg->nshard = shard_setup(lg, cfg->chat ? "/v1/chat/completions" : "/v1/completions", &hosthdr);
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
    lg->epfd = epoll_create1(EPOLL_CLOEXEC);
    lg->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (lg->epfd < 0 || lg->wakefd < 0) {
        fputs("fatal: cannot create epoll/eventfd\n", stderr);
        abort();
    }
    lg->timer_ns = -1;
    curl_multi_setopt(lg->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
    curl_multi_setopt(lg->multi, CURLMOPT_SOCKETDATA, lg);
    curl_multi_setopt(lg->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
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

static void easy_recycle(struct mp_lg *lg, CURL *e)
{
    if (!e)
        return;
    if (lg->npool < LG_POOL_MAX) {
        /* no curl_easy_reset: the constant options stay, the per-request ones are set again */
        if (!lg->pool)
            lg->pool = xcalloc(LG_POOL_MAX, sizeof(*lg->pool));
        lg->pool[lg->npool++] = e;
    } else {
        curl_easy_cleanup(e);
    }
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
    curl_multi_cleanup(lg->multi);
    close(lg->epfd);
    close(lg->wakefd);
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
    curl_global_cleanup();
}

/* ---- per-event handling (runs inside the write callback) ---- */

static void set_error(struct lg_req *r, const char *fmt, ...) MP_PRINTF(2, 3);
static void set_error(struct lg_req *r, const char *fmt, ...)
{
    if (r->res.error[0])
        return; /* keep the first error */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->res.error, sizeof(r->res.error), fmt, ap);
    va_end(ap);
}

static void keep_text(struct lg_req *r, const char *s, size_t n)
{
    size_t keep = r->lg->cfg.text_keep;
    if (!s || n == 0 || r->text.len >= keep)
        return;
    buf_add(&r->text, s, MP_MIN(n, keep - r->text.len));
}

static void add_gap(struct lg_req *r, double ms)
{
    if (r->res.ngaps >= LG_GAPS_MAX)
        return;
    if (r->res.ngaps == r->gaps_cap) {
        r->gaps_cap = r->gaps_cap ? r->gaps_cap * 2 : 64;
        r->res.gaps_ms = xreallocarray(r->res.gaps_ms, r->gaps_cap, sizeof(double));
    }
    r->res.gaps_ms[r->res.ngaps++] = ms;
}

static int on_event(void *ud, const struct mp_sse_event *ev)
{
    struct lg_req *r = ud;
    if (r->done_seen)
        return 0; /* nothing is expected after [DONE]; ignore it */
    r->last_event_ns = r->now;
    struct mp_sse_chunk c;
    int rc = mp_sse_chunk_parse(ev->data, ev->data_len, &c);
    if (rc < 0) {
        char snip[64];
        size_t n = MP_MIN(ev->data_len, sizeof(snip) - 1);
        for (size_t i = 0; i < n; i++)
            snip[i] = ((unsigned char)ev->data[i] < 0x20) ? ' ' : ev->data[i];
        snip[n] = '\0';
        r->protocol_error = true;
        r->res.protocol_pos = (int)MP_MIN(c.err_pos, (size_t)INT32_MAX);
        set_error(r, "malformed JSON in SSE event %llu at byte %zu: %s",
                  (unsigned long long)r->sse.events, c.err_pos, snip);
        mp_sse_chunk_release(&c);
        return 1; /* stop: the transfer is aborted */
    }
    switch (c.kind) {
    case MP_SSE_CHUNK_DONE:
        r->done_seen = true;
        r->res.t_end_ns = r->now;
        break;
    case MP_SSE_CHUNK_ERROR:
        r->stream_error = true;
        if (c.err_code >= 0)
            set_error(r, "%s (type=%s, code=%ld)", c.err_message, c.err_type, c.err_code);
        else
            set_error(r, "%s (type=%s)", c.err_message, c.err_type);
        break;
    case MP_SSE_CHUNK_DATA:
        /* a token event carries generated text: an event with empty
         * choices text is no token, however many the engine sends */
        if (c.has_choice && !c.role_only && (c.text_len > 0 || c.reasoning_len > 0)) {
            if (r->res.chunks == 0)
                r->res.t_first_token_ns = r->now;
            else
                add_gap(r, (double)(r->now - r->res.t_last_token_ns) / 1e6);
            r->res.t_last_token_ns = r->now;
            r->res.chunks++;
            keep_text(r, c.reasoning, c.reasoning_len);
            keep_text(r, c.text, c.text_len);
        }
        if (c.finish_reason) {
            free(r->res.finish_reason);
            r->res.finish_reason = xstrdup(c.finish_reason);
        }
        if (c.has_usage) {
            r->res.usage_seen = true;
            r->usage_tokens = (int)MP_MIN(c.completion_tokens, (long)INT32_MAX);
        }
        break;
    case MP_SSE_CHUNK_MALFORMED:
        break;
    }
    mp_sse_chunk_release(&c);
    return 0;
}

static void note_status(struct lg_req *r)
{
    if (r->status_seen)
        return;
    long code = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    r->res.http_status = (int)code;
    r->status_seen = true;
}

/* The first bytes of a 200 answer to a streaming request: an event stream
 * (Content-Type text/event-stream, or none and a body that starts like SSE:
 * a field name or a comment), not a JSON object or an HTML page. */
static bool looks_like_sse(struct lg_req *r, const char *p, size_t n)
{
    const char *ct = NULL;
    if (curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
        return strncasecmp(ct, "text/event-stream", 17) == 0;
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\r' || p[i] == '\n' || p[i] == '\t'))
        i++;
    return i == n || p[i] == ':' || p[i] == 'd' || p[i] == 'e' || p[i] == 'i' || p[i] == 'r';
}

static size_t gen_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct lg_req *r = ud;
    size_t n = size * nmemb;
    r->now = mp_now_ns();
    note_status(r);
    if (r->res.http_status != 200) {
        if (r->errbody.len < LG_ERR_BODY_MAX)
            buf_add(&r->errbody, ptr, MP_MIN(n, LG_ERR_BODY_MAX - r->errbody.len));
        return n;
    }
    if (!r->body_checked) {
        r->body_checked = true;
        if (!looks_like_sse(r, ptr, n)) {
            char snip[81];
            size_t k = MP_MIN(n, sizeof(snip) - 1);
            for (size_t i = 0; i < k; i++)
                snip[i] = ((unsigned char)ptr[i] < 0x20) ? ' ' : ptr[i];
            snip[k] = '\0';
            const char *ct = NULL;
            curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
            r->protocol_error = true;
            r->res.protocol_pos = 0;
            set_error(r, "HTTP 200 without an event stream (Content-Type: %s): %s",
                      ct ? ct : "none", snip);
            return 0;
        }
    }
    int rc = mp_sse_feed(&r->sse, ptr, n, on_event, r);
    if (rc == MP_ELIMIT) {
        r->protocol_error = true;
        set_error(r, "SSE event larger than %zu bytes", (size_t)MP_SSE_DEFAULT_MAX_EVENT);
        return 0;
    }
    return rc == 0 ? n : 0;
}

static size_t get_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct lg_req *r = ud;
    size_t n = size * nmemb;
    r->now = mp_now_ns();
    note_status(r);
    if (!r->res.t_first_token_ns)
        r->res.t_first_token_ns = r->now; /* first body byte (MP_LG_COMPLETE) */
    r->last_event_ns = r->now;
    if (r->text.len < LG_GET_BODY_MAX)
        buf_add(&r->text, ptr, MP_MIN(n, LG_GET_BODY_MAX - r->text.len));
    return n;
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
    r->res.id = lg->next_id++;
    r->res.t_start_ns = mp_now_ns();
    r->res.protocol_pos = -1;
    if (curl_multi_add_handle(lg->multi, e) != CURLM_OK) {
        lg->shard_inflight[r->shard]--;
        curl_easy_cleanup(e);
        req_free(r);
        return MP_EHTTP;
    }
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
    mp_sse_init(&r->sse, 0);
    r->easy = easy_get(lg);
    r->shard = shard_pick(lg);
    lg->shard_inflight[r->shard]++; /* until unlink_inflight (or a failed submit) */
    return r;
}

static char *gen_body(const struct mp_lg *lg, const char *prompt, bool stream, size_t *len)
{
    struct buf b = BUF_INIT;
    buf_adds(&b, "{");
    if (lg->model) {
        buf_adds(&b, "\"model\":");
        buf_add_json_str(&b, lg->model, strlen(lg->model));
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
    buf_printf(&b, ",\"max_tokens\":%d,\"temperature\":0,%s\"ignore_eos\":%s}", lg->cfg.max_tokens,
               stream ? "\"stream\":true,\"stream_options\":{\"include_usage\":true}," : "\"stream\":false,",
               lg->cfg.ignore_eos ? "true" : "false");
    return buf_detach(&b, len);
}

long mp_lg_start(struct mp_lg *lg, const char *prompt, int user_tag)
{
    if (!lg || !prompt)
        return -EINVAL;
    struct lg_req *r = req_new(lg, MP_LG_GEN, user_tag);
    size_t blen = 0;
    r->body = gen_body(lg, prompt, true, &blen);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, lg->shard_gen[r->shard]);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, lg->post_hdrs);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, gen_write);
    if (lg->cfg.request_timeout_s > 0)
        r->timeout_ms = (long)(lg->cfg.request_timeout_s * 1000.0);
    return submit(lg, r);
}

long mp_lg_complete(struct mp_lg *lg, const char *prompt, int user_tag)
{
    if (!lg || !prompt)
        return -EINVAL;
    struct lg_req *r = req_new(lg, MP_LG_COMPLETE, user_tag);
    size_t blen = 0;
    r->body = gen_body(lg, prompt, false, &blen);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, lg->shard_gen[r->shard]);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, lg->json_hdrs);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, get_write);
    if (lg->cfg.request_timeout_s > 0)
        r->timeout_ms = (long)(lg->cfg.request_timeout_s * 1000.0);
    return submit(lg, r);
}

long mp_lg_get(struct mp_lg *lg, const char *path, double timeout_s, int user_tag)
{
    if (!lg || !path)
        return -EINVAL;
    struct lg_req *r = req_new(lg, MP_LG_GET, user_tag);
    char *url = xasprintf("%s%s%s", lg->shard_base[r->shard], path[0] == '/' ? "" : "/", path);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_URL, url); /* libcurl copies strings */
    free(url);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, NULL); /* a pooled handle may have posted */
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, lg->get_hdrs); /* NULL: none */
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, get_write);
    if (timeout_s > 0)
        r->timeout_ms = (long)(timeout_s * 1000.0) + (timeout_s * 1000.0 < 1);
    return submit(lg, r);
}

/* ---- finishing ---- */

static void unlink_inflight(struct mp_lg *lg, struct lg_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        lg->inflight = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
    lg->ninflight--;
    lg->shard_inflight[r->shard]--;
}

/* libcurl's message names the shard host (mp-sNN.invalid); say the real one */
static void unshard_message(const struct mp_lg *lg, const char *msg, char *out, size_t cap)
{
    const char *p = lg->real_host ? strstr(msg, "mp-s") : NULL;
    const char *q = p ? strstr(p, ".invalid") : NULL;
    if (!q || q - p != 6) {
        snprintf(out, cap, "%s", msg);
        return;
    }
    snprintf(out, cap, "%.*s%s%s", (int)(p - msg), msg, lg->real_host, q + 8);
}

static void curl_failure(struct lg_req *r, CURLcode cc)
{
    char msg[CURL_ERROR_SIZE + 64];
    unshard_message(r->lg, r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc), msg, sizeof(msg));
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        r->res.outcome = MP_LG_CONNECT;
        break;
    case CURLE_OPERATION_TIMEDOUT:
        r->res.outcome = MP_LG_TIMEOUT;
        break;
    default:
        r->res.outcome = MP_LG_CUT;
        break;
    }
    set_error(r, "%s", msg);
}

/* Non-streaming response body: pick usage.completion_tokens and the first finish_reason with a
 * plain scan (no JSON tree: this is the hot path of the request-rate benchmark). The keys are
 * unique in an OpenAI completion object; a body without usage keeps usage_seen false. */
static void complete_fields(struct lg_req *r)
{
    const char *b = r->text.data ? r->text.data : "";
    size_t n = r->text.len;
    static const char ct[] = "\"completion_tokens\":", fr[] = "\"finish_reason\":\"";
    const char *p = memmem(b, n, ct, sizeof(ct) - 1);
    if (p) {
        p += sizeof(ct) - 1;
        while (p < b + n && (*p == ' ' || *p == '\t'))
            p++;
        long v = 0;
        bool digits = false;
        while (p < b + n && *p >= '0' && *p <= '9' && v < INT32_MAX / 10) {
            v = v * 10 + (*p++ - '0');
            digits = true;
        }
        if (digits) {
            r->res.usage_seen = true;
            r->usage_tokens = (int)v;
        }
    }
    p = memmem(b, n, fr, sizeof(fr) - 1);
    if (p) {
        p += sizeof(fr) - 1;
        const char *q = memchr(p, '"', (size_t)(b + n - p));
        if (q && q - p < 64)
            r->res.finish_reason = xstrndup(p, (size_t)(q - p));
    }
    r->res.t_last_token_ns = r->last_event_ns;
    r->res.outcome = MP_LG_OK;
}

static void finalize(struct mp_lg *lg, struct lg_req *r, CURLcode cc, bool aborted)
{
    int64_t now = mp_now_ns();
    struct mp_lg_result *res = &r->res;
    if (r->easy)
        note_status(r);
    if (aborted) {
        res->outcome = MP_LG_ABORTED;
        set_error(r, "aborted by the caller");
    } else if (res->kind == MP_LG_COMPLETE) {
        if (cc != CURLE_OK) {
            curl_failure(r, cc);
        } else if (res->http_status != 200) {
            char m[400];
            mp_sse_error_body_message(r->text.data, r->text.len, m, sizeof(m));
            res->outcome = MP_LG_HTTP_ERROR;
            set_error(r, "HTTP %d%s%s", res->http_status, m[0] ? ": " : "", m);
        } else {
            complete_fields(r);
        }
    } else if (res->kind == MP_LG_GET) {
        if (cc != CURLE_OK) {
            curl_failure(r, cc);
        } else if (res->http_status >= 400) {
            char m[400];
            mp_sse_error_body_message(r->text.data, r->text.len, m, sizeof(m));
            res->outcome = MP_LG_HTTP_ERROR;
            set_error(r, "HTTP %d%s%s", res->http_status, m[0] ? ": " : "", m);
        }
    } else {
        if (cc == CURLE_OK && res->http_status == 200 && !r->done_seen && !r->protocol_error) {
            r->now = now; /* a last event without its blank line */
            if (mp_sse_finish(&r->sse, on_event, r) == MP_ELIMIT) {
                r->protocol_error = true;
                set_error(r, "SSE event larger than %zu bytes", (size_t)MP_SSE_DEFAULT_MAX_EVENT);
            }
        }
        if (res->http_status != 200 && res->http_status != 0) {
            char m[400];
            mp_sse_error_body_message(r->errbody.data, r->errbody.len, m, sizeof(m));
            res->outcome = MP_LG_HTTP_ERROR;
            set_error(r, "HTTP %d%s%s", res->http_status, m[0] ? ": " : "", m);
        } else if (r->protocol_error) {
            res->outcome = MP_LG_PROTOCOL;
        } else if (r->stream_error) {
            res->outcome = MP_LG_STREAM_ERROR;
        } else if (r->done_seen) {
            res->outcome = MP_LG_OK;
        } else if (cc != CURLE_OK) {
            curl_failure(r, cc);
        } else {
            res->outcome = MP_LG_CUT;
            set_error(r, "stream ended without [DONE]");
        }
    }
    if (res->kind == MP_LG_GEN) {
        /* usage is trusted only where the events agree: every token event
         * holds at least one token, and usage without any is a claim the
         * stream does not back */
        bool usage_ok = res->usage_seen && res->chunks > 0 && r->usage_tokens >= res->chunks;
        res->output_tokens = usage_ok ? r->usage_tokens : res->chunks;
    }
    else if (res->kind == MP_LG_COMPLETE)
        res->output_tokens = res->usage_seen ? r->usage_tokens : 0;
    if (res->t_end_ns == 0)
        res->t_end_ns = now;
    size_t tl = 0;
    res->text = buf_detach(&r->text, &tl);
    res->text_len = tl;
    if (r->easy) {
        curl_multi_remove_handle(lg->multi, r->easy);
        easy_recycle(lg, r->easy);
        r->easy = NULL;
    }
    mp_sse_free(&r->sse);
    buf_release(&r->errbody);
    free(r->body);
    r->body = NULL;
    unlink_inflight(lg, r);
    if (lg->done_tail)
        lg->done_tail->next = r;
    else
        lg->done_head = r;
    lg->done_tail = r;
}

static void drain(struct mp_lg *lg)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(lg->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct lg_req *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        CURLcode cc = m->data.result; /* m is invalid after remove_handle */
        if (r)
            finalize(lg, r, cc, false);
    }
}

static short to_poll(short curl_events)
{
    return (short)(((curl_events & CURL_WAIT_POLLIN) ? POLLIN : 0) |
                   ((curl_events & CURL_WAIT_POLLPRI) ? POLLPRI : 0) |
                   ((curl_events & CURL_WAIT_POLLOUT) ? POLLOUT : 0));
}

static short from_poll(short revents)
{
    return (short)(((revents & (POLLIN | POLLHUP | POLLERR)) ? CURL_WAIT_POLLIN : 0) |
                   ((revents & POLLPRI) ? CURL_WAIT_POLLPRI : 0) |
                   ((revents & POLLOUT) ? CURL_WAIT_POLLOUT : 0));
}

static int run_sockets(struct mp_lg *lg)
{
    struct epoll_event evs[256];
    int running = 0, n;
    do {
        n = epoll_wait(lg->epfd, evs, (int)MP_ARRAY_SIZE(evs), 0);
        if (n < 0)
            return errno == EINTR ? 0 : MP_EHTTP;
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            uint8_t *st = fd_state(lg, fd);
            if (!(*st & LGFD_ACTIVE)) { /* idle in libcurl's cache and the peer closed it, or stale */
                epoll_ctl(lg->epfd, EPOLL_CTL_DEL, fd, NULL);
                *st &= LGFD_OWNED;
                continue;
            }
            int flags = 0;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP))
                flags |= CURL_CSELECT_IN;
            if (evs[i].events & EPOLLOUT)
                flags |= CURL_CSELECT_OUT;
            if (evs[i].events & EPOLLERR)
                flags |= CURL_CSELECT_ERR;
            if (curl_multi_socket_action(lg->multi, fd, flags, &running) != CURLM_OK)
                return MP_EHTTP;
        }
    } while (n == (int)MP_ARRAY_SIZE(evs));
    return 0;
}

int mp_lg_poll(struct mp_lg *lg, struct curl_waitfd *extra, unsigned nextra, int timeout_ms)
{
    struct pollfd stackfds[8], *pf = stackfds;
    unsigned npf = 2 + nextra;
    if (npf > MP_ARRAY_SIZE(stackfds))
        pf = xcalloc(npf, sizeof(*pf));
    int rc = 0, running = 0;
    if (lg->done_head || timeout_ms < 0)
        timeout_ms = 0;
    int64_t now = mp_now_ns();
    if (lg->timer_ns >= 0) {
        int64_t t = lg->timer_ns <= now ? 0 : (lg->timer_ns - now + 999999) / 1000000;
        if (t < timeout_ms)
            timeout_ms = (int)t;
    }
    pf[0] = (struct pollfd){ lg->epfd, POLLIN, 0 };
    pf[1] = (struct pollfd){ lg->wakefd, POLLIN, 0 };
    for (unsigned i = 0; i < nextra; i++)
        pf[2 + i] = (struct pollfd){ extra[i].fd, to_poll(extra[i].events), 0 };
    int n = poll(pf, npf, timeout_ms);
    if (n < 0 && errno != EINTR) {
        rc = -errno;
        goto out;
    }
    for (unsigned i = 0; i < nextra; i++)
        extra[i].revents = n > 0 ? from_poll(pf[2 + i].revents) : 0;
    if (n > 0 && pf[1].revents) {
        uint64_t v;
        if (read(lg->wakefd, &v, sizeof(v)) < 0) {
            /* EAGAIN: another reader got it; nothing to do */
        }
    }
    if ((rc = run_sockets(lg)) < 0) /* also after a timer wakeup: cheap, and catches late readiness */
        goto out;
    if (lg->timer_ns >= 0 && mp_now_ns() >= lg->timer_ns) {
        lg->timer_ns = -1;
        if (curl_multi_socket_action(lg->multi, CURL_SOCKET_TIMEOUT, 0, &running) != CURLM_OK) {
            rc = MP_EHTTP;
            goto out;
        }
    }
    drain(lg);
out:
    if (pf != stackfds)
        free(pf);
    return rc;
}

void mp_lg_wakeup(struct mp_lg *lg)
{
    if (lg) {
        uint64_t one = 1;
        ssize_t w = write(lg->wakefd, &one, sizeof(one)); /* async-signal-safe */
        (void)w;
    }
}

size_t mp_lg_inflight(const struct mp_lg *lg)
{
    return lg ? lg->ninflight : 0;
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
            finalize(lg, r, CURLE_OK, true);
            return 0;
        }
    }
    return -ENOENT;
}

size_t mp_lg_cancel_all(struct mp_lg *lg)
{
    size_t n = 0;
    while (lg->inflight) {
        finalize(lg, lg->inflight, CURLE_OK, true);
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
    free(r->gaps_ms);
    free(r->text);
    free(r->finish_reason);
    r->gaps_ms = NULL;
    r->text = NULL;
    r->finish_reason = NULL;
    r->ngaps = 0;
    r->text_len = 0;
}
