/* loadgen.h - streaming HTTP load generator for OpenAI-compatible engines (libcurl multi).
 *
 * One struct mp_lg owns one CURLM and every transfer started on it; it is single-threaded
 * (only mp_lg_wakeup may be called from elsewhere). libcurl's sockets and timeout are handed to
 * an event loop (base/loop.h, through CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION): the
 * loop of whoever drives the load (mp_lg_new_on: an attempt's one loop, shared with the engine's
 * output, signals and teardown), or a loop of its own (mp_lg_new). Standalone use:
 *
 *   struct mp_lg *lg = mp_lg_new(&cfg);
 *   long id = mp_lg_start(lg, "prompt", tag);
 *   while (mp_lg_inflight(lg) > 0) {
 *       mp_lg_poll(lg, 100);
 *       struct mp_lg_result r;
 *       while (mp_lg_next_result(lg, &r) == 1) { ...; mp_lg_result_release(&r); }
 *   }
 *   mp_lg_free(lg);
 *
 * On a shared loop the caller runs the loop itself (mp_loop_run_once) and pops results after
 * each turn (a before-sleep hook does it: results are queued by the loop's callbacks).
 *
 * Requires curl_global_init(CURL_GLOBAL_DEFAULT) to have been called once, before any thread
 * starts (it is not thread-safe): moeprobe's main does it, a test or tool that creates loadgens
 * does it itself. mp_lg_new/mp_lg_free never call it.
 *
 * Timing: every SSE event is stamped with mp_now_ns() in the write callback, as its bytes arrive.
 * A "token event" is an event with a non-empty choices[] (what `vllm bench serve` counts), except
 * a chat role-only announcement (delta.role with no content), which is not a token. One event
 * carrying several tokens counts once for inter-token gaps (docs/metrics.md).
 *
 * Connections: HTTP/1.1 keep-alive, reused across requests. With an IP-literal http:// base URL
 * (no path), requests are spread over up to 32 connection pools (a further pool per 32 requests in
 * flight; libcurl scans a pool linearly per request), addressed by synthetic names pinned to
 * the real address; the Host header and error messages carry the real host. Sequential requests
 * use one connection. Sockets are close-on-exec. Performance: docs/performance.md. */
#ifndef MP_LOADGEN_H
#define MP_LOADGEN_H

#include "compat.h"

#include "hist.h"

struct mp_lg;   /* opaque; owns a CURLM and its transfers */
struct mp_loop; /* base/loop.h */

struct mp_lg_config {
    const char *base_url;     /* "http://127.0.0.1:8000", borrowed (copied by mp_lg_new) */
    const char *model;        /* default model name for requests (NULL: none sent), borrowed
                               * (copied); a request may name another (struct mp_lg_gen) */
    bool chat;                /* false: POST /v1/completions, true: /v1/chat/completions */
    int max_tokens;           /* default per request; <= 0: 256 */
    bool ignore_eos;          /* default per request, sent as given (callers normally set true) */
    const char *api_key;      /* bearer token or NULL; never logged, copied */
    double request_timeout_s; /* whole-request cap, 0 = none (stall detection is the caller's job) */
    size_t text_keep;         /* bytes of generated text kept per request (e.g. 4096) */
};

/* A load generator with a loop of its own (driven by mp_lg_poll). Never NULL (aborts when
 * memory, libcurl or the loop's fds cannot be had). */
struct mp_lg *mp_lg_new(const struct mp_lg_config *cfg);
/* The same on the caller's loop (borrowed: it must outlive lg). */
struct mp_lg *mp_lg_new_on(struct mp_loop *loop, const struct mp_lg_config *cfg);
/* The loop lg runs on (its own or the caller's). */
struct mp_loop *mp_lg_loop(const struct mp_lg *lg);
void mp_lg_free(struct mp_lg *lg); /* aborts in-flight transfers, drops results; accepts NULL */

/* One generation request: what may differ from the config per request. */
struct mp_lg_gen {
    const char *prompt;       /* copied; required */
    const char *model;        /* NULL: the config's model */
    int max_tokens;           /* <= 0: the config's */
    int ignore_eos;           /* -1: the config's; 0 or 1 */
    int user_tag;             /* returned in the result */
};
/* Start one streaming generation request (mp_lg_start's contract with g's fields). Returns an
 * id > 0, or <0 (-EINVAL for a NULL g or prompt, MP_EHTTP if libcurl refused the transfer). */
long mp_lg_start_gen(struct mp_lg *lg, const struct mp_lg_gen *g);

/* Start one streaming generation request with this prompt (copied). user_tag is returned in the
 * result. Temperature 0, stream_options.include_usage, ignore_eos per config. The transfer begins
 * on the next mp_lg_poll; t_start_ns is stamped now. Returns an id > 0, or <0 (-EINVAL for a
 * NULL prompt, MP_EHTTP if libcurl refused the transfer). */
long mp_lg_start(struct mp_lg *lg, const char *prompt, int user_tag);
/* Start one non-streaming generation request ("stream": false; otherwise the body of
 * mp_lg_start) with this prompt (copied): what a request-rate load test of a model server sends.
 * The result has kind MP_LG_COMPLETE, the response body in text (first 1 MiB), output_tokens and
 * usage_seen from usage.completion_tokens, finish_reason, t_first_token_ns = arrival of the first
 * body byte, t_last_token_ns = of the last; chunks 0, no gaps. The body is scanned for those
 * keys, not parsed as JSON (a malformed body is not detected). Returns an id > 0 or <0 like
 * mp_lg_start. */
long mp_lg_complete(struct mp_lg *lg, const char *prompt, int user_tag);
/* Start a non-streaming POST of a caller-built JSON body (copied) to base_url + path (e.g.
 * "/v1/completions", with the config's Authorization header). The result has kind
 * MP_LG_POST, http_status and the response body in text (first 1 MiB; error bodies too); an
 * outcome other than ok for a status >= 400 (error: "HTTP N: the engine's message"), a
 * transport failure or the timeout. timeout_s <= 0: no cap. Returns an id > 0 or <0. */
long mp_lg_post(struct mp_lg *lg, const char *path, const char *body, double timeout_s,
                int user_tag);
/* Start a GET of base_url + path (e.g. "/health"). The result has kind MP_LG_GET, http_status
 * and the body in text (first 1 MiB). timeout_s <= 0: no cap. Returns an id > 0 or <0. */
long mp_lg_get(struct mp_lg *lg, const char *path, double timeout_s, int user_tag);
/* The same keeping the first body_max bytes of the body (0: 1 MiB); the rest is read and
 * dropped, and the result's text_cut says so. */
long mp_lg_get_max(struct mp_lg *lg, const char *path, double timeout_s, size_t body_max,
                   int user_tag);

/* One turn of lg's loop: run transfers for at most timeout_ms (0: do what is ready, never
 * block), also waking when mp_lg_wakeup is called or another watch of the loop fires. Waits at
 * most once per call, so loop on it. Does not block when results are waiting. libcurl's
 * sockets are in the loop's epoll set, so one wakeup costs O(ready sockets), not
 * O(connections). Returns 0 or -errno. */
int mp_lg_poll(struct mp_lg *lg, int timeout_ms);
/* Wake a blocked mp_lg_poll from another thread or a signal handler (mp_loop_wakeup:
 * async-signal-safe). */
void mp_lg_wakeup(struct mp_lg *lg);

/* Requests started and not yet finished (results waiting to be popped are not counted). */
size_t mp_lg_inflight(const struct mp_lg *lg);
/* Of them, generation requests (mp_lg_start*, mp_lg_complete): the load, without probes
 * and scrapes. */
size_t mp_lg_inflight_gen(const struct mp_lg *lg);
/* Monotonic ns of the last SSE event received on any in-flight generation request, or of the
 * oldest in-flight start if none has received one yet; 0 when no generation request is in
 * flight (for stall detection). */
int64_t mp_lg_last_progress_ns(const struct mp_lg *lg);
/* Content-bearing events (tokens) the generation requests in flight have
 * received so far: the live rate of a phase before its first request ends.
 * O(requests in flight). */
long mp_lg_inflight_tokens(const struct mp_lg *lg);

/* Finish one in-flight request now with outcome MP_LG_ABORTED (its result is queued).
 * Returns 0, or -ENOENT when id is not in flight. */
int mp_lg_cancel(struct mp_lg *lg, long id);
/* Cancel every in-flight request (e.g. after a stall); returns how many were cancelled. */
size_t mp_lg_cancel_all(struct mp_lg *lg);

enum mp_lg_kind { MP_LG_GEN = 1, MP_LG_GET = 2, MP_LG_COMPLETE = 3, MP_LG_POST = 4 };
enum mp_lg_outcome {
    MP_LG_OK = 0,
    MP_LG_HTTP_ERROR,   /* status other than 200 (GEN, COMPLETE) or >= 400 (GET) */
    MP_LG_STREAM_ERROR, /* in-band error event */
    MP_LG_CUT,          /* connection closed / stream ended without [DONE] */
    MP_LG_PROTOCOL,     /* malformed SSE/JSON, oversize event */
    MP_LG_CONNECT,      /* could not connect */
    MP_LG_TIMEOUT,      /* request_timeout_s (or the GET timeout) passed */
    MP_LG_ABORTED,      /* mp_lg_cancel */
    MP_LG_LOCAL,        /* moeprobe's own resources ran out opening the connection (EMFILE,
                         * ENFILE, ENOMEM, ENOBUFS, EADDRNOTAVAIL: mp_errno_is_local_resource):
                         * nothing about the engine */
};
/* "ok", "http-error", "stream-error", "cut", "protocol", "connect", "timeout", "aborted",
 * "local" */
const char *mp_lg_outcome_name(enum mp_lg_outcome o);

struct mp_lg_result {
    long id;
    int user_tag;
    enum mp_lg_kind kind;
    enum mp_lg_outcome outcome;
    int http_status;          /* 0 when no response line arrived */
    char error[512];          /* engine's error message, curl error, ... ("" when ok) */
    int64_t t_start_ns, t_first_token_ns /* 0 if none */, t_end_ns; /* monotonic, on arrival */
    int output_tokens;        /* from usage when present, else count of token events */
    int prompt_tokens;        /* usage.prompt_tokens, -1 when the engine did not say */
    bool usage_seen;
    int chunks;               /* token events */
    struct mp_hist itl_ms;    /* inter-token gaps (between consecutive token events), owned;
                               * a bounded histogram (base/hist.h): the result's memory does not
                               * grow with the events the engine sends */
    char *text;               /* generated text (first text_keep bytes) or GET body; owned, */
    size_t text_len;          /*   NUL-terminated, never NULL after a pop */
    bool text_cut;            /* GET: the body was longer than what text keeps */
    char *finish_reason;      /* owned, or NULL */
    int64_t t_last_token_ns;  /* arrival of the last token event, 0 if none (vllm's E2EL end) */
    int protocol_pos;         /* MP_LG_PROTOCOL: byte offset of the error in the event, else -1 */
};
/* Pop one finished request's result into *out (caller owns it; release with
 * mp_lg_result_release). Results come in completion order. Returns 1 when one was popped, 0 when
 * none is ready. */
int mp_lg_next_result(struct mp_lg *lg, struct mp_lg_result *out);
void mp_lg_result_release(struct mp_lg_result *r); /* frees owned fields; accepts zeroed */

#endif
