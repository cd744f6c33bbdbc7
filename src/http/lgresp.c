/* lgresp.c - the load generator's response side: SSE events and bodies as they arrive, the
  * outcome of a finished request (see lg_internal.h). */
#include "compat.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "xalloc.h"
#include "http/lg_internal.h"

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
    if (!s || n == 0 || !r->lg->cfg.text_keep)
        return;
    buf_add_some(&r->text, s, n); /* capped at text_keep (req_new) */
}

static void add_gap(struct lg_req *r, double ms)
{
    mp_hist_add(&r->res.itl_ms, ms); /* bounded, whatever the number of events */
}

/* ---- requests past [DONE] whose body has not ended ---- */

static void dw_append(struct lg_req *r)
{
    struct mp_lg *lg = r->lg;
    r->done_by = r->now + LG_DONE_GRACE_NS;
    r->dw_next = NULL;
    r->dw_prev = lg->dw_tail;
    if (lg->dw_tail)
        lg->dw_tail->dw_next = r;
    else
        lg->dw_head = r;
    lg->dw_tail = r;
}

static void dw_remove(struct lg_req *r)
{
    struct mp_lg *lg = r->lg;
    if (!r->done_seen)
        return; /* never on the list */
    if (r->dw_prev)
        r->dw_prev->dw_next = r->dw_next;
    else if (lg->dw_head == r)
        lg->dw_head = r->dw_next;
    else
        return; /* already removed */
    if (r->dw_next)
        r->dw_next->dw_prev = r->dw_prev;
    else
        lg->dw_tail = r->dw_prev;
    r->dw_prev = r->dw_next = NULL;
}

void lg_finish_held(struct mp_lg *lg, int64_t now)
{
    /* done_by grows along the list (arrival order, constant grace) */
    while (lg->dw_head && lg->dw_head->done_by <= now)
        lg_finalize(lg, lg->dw_head, CURLE_OK, false);
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
        set_error(r, "malformed JSON in SSE event %llu at byte %zu (%s): %s",
                  (unsigned long long)r->sse.events, c.err_pos, c.err_why ? c.err_why : "?", snip);
        mp_sse_chunk_release(&c);
        return 1; /* stop: the transfer is aborted */
    }
    switch (c.kind) {
    case MP_SSE_CHUNK_DONE:
        r->done_seen = true;
        r->res.t_end_ns = r->now;
        dw_append(r);
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
            if (c.prompt_tokens >= 0)
                r->res.prompt_tokens = (int)MP_MIN(c.prompt_tokens, (long)INT32_MAX);
        }
        break;
    case MP_SSE_CHUNK_MALFORMED:
        break;
    }
    mp_sse_chunk_release(&c);
    return 0;
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

static void note_status(struct lg_req *r)
{
    if (r->status_seen)
        return;
    long code = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    r->res.http_status = (int)code;
    r->status_seen = true;
}

size_t lg_gen_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct lg_req *r = ud;
    size_t n = size * nmemb;
    r->now = mp_now_ns();
    note_status(r);
    if (r->res.http_status != 200) {
        buf_add_some(&r->errbody, ptr, n); /* capped at LG_ERR_BODY_MAX (req_new) */
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

size_t lg_get_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct lg_req *r = ud;
    size_t n = size * nmemb;
    r->now = mp_now_ns();
    note_status(r);
    if (!r->res.t_first_token_ns)
        r->res.t_first_token_ns = r->now; /* first body byte (MP_LG_COMPLETE) */
    r->last_event_ns = r->now;
    buf_add_some(&r->text, ptr, n); /* capped (req_new, mp_lg_get_max) */
    return n;
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
    if (r->res.kind != MP_LG_GET)
        lg->ngen--;
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

/* The errno of moeprobe's own resources behind a failed transfer, or 0:
 * our socket() failing (lgsock.c), connect() failing with a local cause
 * (CURLINFO_OS_ERRNO: EADDRNOTAVAIL when the local ports are exhausted), or
 * libcurl out of memory. */
static int local_cause(struct lg_req *r, CURLcode cc)
{
    if (cc == CURLE_OUT_OF_MEMORY)
        return ENOMEM;
    if (cc != CURLE_COULDNT_CONNECT)
        return 0;
    long oe = 0;
    if (curl_easy_getinfo(r->easy, CURLINFO_OS_ERRNO, &oe) == CURLE_OK &&
        mp_errno_is_local_resource((int)oe))
        return (int)oe;
    return r->lg->local_errno;
}

static void curl_failure(struct lg_req *r, CURLcode cc)
{
    char msg[CURL_ERROR_SIZE + 64];
    unshard_message(r->lg, r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc), msg, sizeof(msg));
    int local = local_cause(r, cc);
    if (local) {
        r->res.outcome = MP_LG_LOCAL;
        set_error(r, "moeprobe's own limit: it cannot open a connection: %s (%s)", strerror(local),
                  msg);
        return;
    }
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

void lg_easy_recycle(struct mp_lg *lg, CURL *e)
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

void lg_finalize(struct mp_lg *lg, struct lg_req *r, CURLcode cc, bool aborted)
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
    } else if (res->kind == MP_LG_GET || res->kind == MP_LG_POST) {
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
            r->now = now;
            if (mp_sse_finish(&r->sse, on_event, r) == MP_ELIMIT) {
                r->protocol_error = true;
                set_error(r, "SSE event larger than %zu bytes", (size_t)MP_SSE_DEFAULT_MAX_EVENT);
            } else if (r->sse.unterminated) {
                /* the body ended inside an event: a cut (SSE discards it), not bad JSON */
                set_error(r, "stream cut inside SSE event %llu: the body ended after %llu bytes of "
                             "it, before the blank line that ends an event",
                          (unsigned long long)r->sse.events + 1,
                          (unsigned long long)r->sse.unterminated);
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
    res->text_cut = r->text.toobig && res->kind != MP_LG_GEN;
    res->text = buf_detach(&r->text, &tl);
    res->text_len = tl;
    if (r->easy) {
        curl_multi_remove_handle(lg->multi, r->easy);
        lg_easy_recycle(lg, r->easy);
        r->easy = NULL;
    }
    mp_sse_free(&r->sse);
    buf_release(&r->errbody);
    free(r->body);
    r->body = NULL;
    dw_remove(r);
    unlink_inflight(lg, r);
    if (lg->done_tail)
        lg->done_tail->next = r;
    else
        lg->done_head = r;
    lg->done_tail = r;
    lg->nqueued++;
}

/* A request that failed on a connection it reused, before a byte of the
 * answer came back, was sent as the server closed that idle keep-alive
 * connection (uvicorn closes one after 5 s idle; the close and the request
 * cross on the wire and the server's kernel answers with a reset): it never
 * reached the server's application, so it is no evidence against the
 * engine. It is sent again, once, on a new connection; a failure then, or
 * on a connection made for it, counts. True when it was sent again. */
static bool resend_on_new_connection(struct mp_lg *lg, struct lg_req *r, CURLcode cc)
{
    if (r->retried || !r->easy || r->status_seen ||
        (cc != CURLE_RECV_ERROR && cc != CURLE_SEND_ERROR && cc != CURLE_GOT_NOTHING))
        return false;
    long conns = -1, hdr = -1;
    if (curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &conns) != CURLE_OK || conns != 0 ||
        curl_easy_getinfo(r->easy, CURLINFO_HEADER_SIZE, &hdr) != CURLE_OK || hdr != 0)
        return false;
    curl_multi_remove_handle(lg->multi, r->easy);
    curl_easy_setopt(r->easy, CURLOPT_FRESH_CONNECT, 1L);
    r->errbuf[0] = '\0';
    if (curl_multi_add_handle(lg->multi, r->easy) != CURLM_OK)
        return false; /* lg_finalize's remove of a handle not added is harmless */
    r->retried = true;
    return true;
}

void lg_drain(struct mp_lg *lg)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(lg->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct lg_req *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        CURLcode cc = m->data.result; /* m is invalid after remove_handle */
        if (r && !resend_on_new_connection(lg, r, cc))
            lg_finalize(lg, r, cc, false);
    }
}
