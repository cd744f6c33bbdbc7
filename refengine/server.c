/* server.c - see server.h. Single-threaded: epoll + timerfd + signalfd. */
#include "compat.h"

#include "server.h"

#include "api.h"
#include "buf.h"
#include "clock.h"
#include "gen.h"
#include "http.h"
#include "logprobs.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PY "/usr/local/lib/python3.12/dist-packages/vllm"
#define MAX_OUT (16u << 20) /* a client that stops reading gets cut off here */

struct conn;

struct stream {
    struct conn *c;
    struct re_api_req req;
    struct re_api_ctx ctx;
    char id[160];
    unsigned number;      /* generation request number since engine start */
    unsigned limit;       /* max tokens */
    unsigned emitted;     /* tokens produced (EOS included) */
    struct re_gen gen;
    bool crash, fault, hang;
    bool cuda_fault, cuda_window; /* CUDA mode: this request triggers the fault / opens race windows */
    unsigned event_at;    /* token index of the crash / hang */
    int64_t next_ns, start_ns;
    int64_t last_tok_ns;  /* when the previous token went out (inter-token latency) */
    unsigned ptoks;       /* prompt tokens */
    unsigned long blocks; /* KV-cache blocks held */
    bool queued;          /* in S.queue: waiting for room (new, or preempted) */
    size_t heap_idx;      /* SIZE_MAX when not scheduled */
    struct buf text;      /* non-streaming: the whole text */
    struct re_lp *lp;     /* logprobs / prompt_logprobs / echo asked for (logprobs.h), or NULL */
};

struct conn {
    int fd;
    char peer[64];
    struct buf in;
    struct buf out;
    size_t out_off;
    bool want_out;
    bool close_after;
    bool keep_alive;
    struct stream *s;
    char line[1100]; /* "POST /v1/completions HTTP/1.1" for the access log */
    struct conn *prev, *next;
};

/* start-up after the selection lines (printed by main.c at select_seconds):
 * WEIGHTS (weights load) -> LOADING (profile, KV cache, CUDA graphs) -> READY */
enum misc_state { MISC_WEIGHTS, MISC_LOADING, MISC_READY, MISC_SHUTDOWN };

static struct {
    const struct re_server_cfg *cfg;
    const struct world_backend_cfg *be;
    struct re_api_shape shape;
    int ep, tfd, mfd, sfd;
    enum misc_state misc;
    bool ready, dead, hung, stopping;
    struct conn *conns;
    struct conn *graveyard;
    struct stream **heap;
    size_t nheap, capheap;
    unsigned nactive;     /* generating (not hung) */
    unsigned nwaiting;    /* admitted while hung */
    /* the scheduler (vLLM v1, FCFS; world kv_cache_tokens, max_num_seqs) */
    struct stream **queue; /* waiting for room, in order (preempted ones in front) */
    size_t nqueue, capqueue;
    struct stream **run;   /* holding KV blocks, in admission order */
    size_t nrun, caprun;
    unsigned long blocks_total, blocks_used;
    unsigned long long preemptions;
    unsigned long long itl_bucket[19], itl_count;
    double itl_sum;
    unsigned gen_count;
    uint64_t race_state, id_state;
    uint64_t jitter_state; /* CUDA mode: GPU timing is not reproducible, neither are its draws */
    /* metrics */
    unsigned long long prompt_tokens_total, gen_tokens_total;
    unsigned long long success[4]; /* stop, length, abort, error */
    unsigned long long ttft_bucket[22], ttft_count;
    double ttft_sum;
    int exit_code;
} S;

/* vLLM's bucket bounds (vllm/v1/metrics/loggers.py) */
static const double ttft_bounds[22] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06,  0.08,  0.1,
                                       0.25,  0.5,   0.75, 1.0,  2.5,  5.0,   7.5,   10.0,
                                       20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
static const double itl_bounds[19] = {0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,
                                      0.3,  0.4,   0.5,  0.75,  1.0,  2.5,  5.0,
                                      7.5,  10.0,  20.0, 40.0,  80.0};
#define KV_BLOCK 16 /* vLLM's default block size on CUDA */
static const char *const finish_names[4] = {"stop", "length", "abort", "error"};

static char tag_listen, tag_tok, tag_misc, tag_sig; /* epoll cookies */

/* ------------------------------------------------------------------ */
/* heap of scheduled streams, ordered by next_ns                        */

static void heap_swap(size_t a, size_t b)
{
    struct stream *t = S.heap[a];
    S.heap[a] = S.heap[b];
    S.heap[b] = t;
    S.heap[a]->heap_idx = a;
    S.heap[b]->heap_idx = b;
}

static void heap_up(size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (S.heap[p]->next_ns <= S.heap[i]->next_ns)
            break;
        heap_swap(p, i);
        i = p;
    }
}

static void heap_down(size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < S.nheap && S.heap[l]->next_ns < S.heap[m]->next_ns)
            m = l;
        if (r < S.nheap && S.heap[r]->next_ns < S.heap[m]->next_ns)
            m = r;
        if (m == i)
            break;
        heap_swap(i, m);
        i = m;
    }
}

static void heap_push(struct stream *s)
{
    if (S.nheap == S.capheap) {
        S.capheap = S.capheap ? S.capheap * 2 : 64;
        S.heap = xreallocarray(S.heap, S.capheap, sizeof(*S.heap));
    }
    S.heap[S.nheap] = s;
    s->heap_idx = S.nheap++;
    heap_up(s->heap_idx);
}

static void heap_remove(struct stream *s)
{
    size_t i = s->heap_idx;
    if (i == SIZE_MAX)
        return;
    S.nheap--;
    if (i != S.nheap) {
        S.heap[i] = S.heap[S.nheap];
        S.heap[i]->heap_idx = i;
        heap_down(i);
        heap_up(i);
    }
    s->heap_idx = SIZE_MAX;
}

static void arm_at(int fd, int64_t ns)
{
    struct itimerspec its;
    memset(&its, 0, sizeof(its));
    if (ns > 0) {
        its.it_value.tv_sec = ns / 1000000000;
        its.it_value.tv_nsec = ns % 1000000000;
    }
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void rearm_tokens(void)
{
    arm_at(S.tfd, S.nheap ? MP_MAX(S.heap[0]->next_ns, 1) : 0);
}

/* ------------------------------------------------------------------ */
/* output                                                               */

static void ep_mod(struct conn *c)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | (c->want_out ? EPOLLOUT : 0),
                             .data.ptr = c};
    epoll_ctl(S.ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void conn_close(struct conn *c);

static void flush(struct conn *c)
{
    while (c->out_off < c->out.len) {
        ssize_t n = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            c->close_after = true;
            c->out_off = c->out.len;
            break;
        }
        c->out_off += (size_t)n;
    }
    if (c->out_off == c->out.len) {
        buf_reset(&c->out);
        c->out_off = 0;
    } else if (c->out.len - c->out_off > MAX_OUT) {
        c->close_after = true;
        buf_reset(&c->out);
        c->out_off = 0;
    }
    bool want = c->out.len > 0;
    if (want != c->want_out) {
        c->want_out = want;
        ep_mod(c);
    }
}

static void http_date(char *out, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void access_log(struct conn *c, int status)
{
    re_log_uvicorn(S.cfg->log, true, "INFO", "%s - \"%s\" %d %s", c->peer, c->line, status,
                   re_http_reason(status));
}

static void respond(struct conn *c, int status, const char *ctype, const char *body, size_t n)
{
    char date[64];
    http_date(date, sizeof(date));
    buf_printf(&c->out, "HTTP/1.1 %d %s\r\ndate: %s\r\nserver: uvicorn\r\ncontent-length: %zu\r\n",
               status, re_http_reason(status), date, n);
    if (ctype)
        buf_printf(&c->out, "content-type: %s\r\n", ctype);
    if (!c->keep_alive)
        buf_adds(&c->out, "connection: close\r\n");
    buf_adds(&c->out, "\r\n");
    buf_add(&c->out, body, n);
    access_log(c, status);
    if (!c->keep_alive)
        c->close_after = true;
}

static void respond_json(struct conn *c, int status, const struct buf *b)
{
    respond(c, status, "application/json", b->data, b->len);
}

static void respond_error(struct conn *c, int status, const char *type, const char *msg,
                          const char *param)
{
    struct buf b = BUF_INIT;
    re_api_error(&b, &S.shape, status, type, msg, param);
    respond_json(c, status, &b);
    buf_release(&b);
}

static void respond_dead(struct conn *c)
{
    if (S.shape.dead_json)
        respond_error(c, 500, "InternalServerError",
                      "EngineCore encountered an issue. See stack trace (above) for the root "
                      "cause.",
                      NULL);
    else
        respond(c, 500, NULL, "", 0);
}

static void sse_begin(struct conn *c)
{
    char date[64];
    http_date(date, sizeof(date));
    buf_printf(&c->out,
               "HTTP/1.1 200 OK\r\ndate: %s\r\nserver: uvicorn\r\ncontent-type: text/event-stream; "
               "charset=utf-8\r\ntransfer-encoding: chunked\r\n%s\r\n",
               date, c->keep_alive ? "" : "connection: close\r\n");
    access_log(c, 200);
}

static void sse_event(struct conn *c, const char *json, size_t n)
{
    buf_printf(&c->out, "%zx\r\ndata: ", n + 8);
    buf_add(&c->out, json, n);
    buf_adds(&c->out, "\n\n\r\n");
}

static void sse_end(struct conn *c)
{
    sse_event(c, "[DONE]", 6);
    buf_adds(&c->out, "0\r\n\r\n");
}

/* ------------------------------------------------------------------ */
/* streams                                                              */

static void process_input(struct conn *c);

static void stream_free(struct stream *s)
{
    re_lp_free(s->lp);
    heap_remove(s);
    re_api_req_free(&s->req);
    buf_release(&s->text);
    free(s);
}

/* the request is over (normally or not); the connection may go on */
static void schedule(int64_t now);

static void ptr_remove(struct stream **v, size_t *n, struct stream *s)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i] == s) {
            memmove(&v[i], &v[i + 1], (*n - i - 1) * sizeof(*v));
            (*n)--;
            return;
        }
}

static void ptr_insert(struct stream ***v, size_t *n, size_t *cap, size_t at, struct stream *s)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *v = xreallocarray(*v, *cap, sizeof(**v));
    }
    memmove(&(*v)[at + 1], &(*v)[at], (*n - at) * sizeof(**v));
    (*v)[at] = s;
    (*n)++;
}

static void release_blocks(struct stream *s)
{
    S.blocks_used -= MP_MIN(s->blocks, S.blocks_used);
    s->blocks = 0;
    ptr_remove(S.run, &S.nrun, s);
}

static void stream_done(struct stream *s, int finish_idx)
{
    struct conn *c = s->c;
    if (finish_idx >= 0)
        S.success[finish_idx]++;
    if (s->queued) {
        ptr_remove(S.queue, &S.nqueue, s);
    } else if (s->heap_idx != SIZE_MAX || !S.hung) {
        if (S.nactive)
            S.nactive--;
    } else if (S.nwaiting) {
        S.nwaiting--;
    }
    release_blocks(s);
    c->s = NULL;
    stream_free(s);
    schedule(mp_now_ns()); /* its room goes to the first waiting request */
}

static unsigned cur_contention(void)
{
    return S.nactive ? S.nactive : 1;
}

static int64_t token_interval_ns(void)
{
    double rate = S.be->tokens_per_second;
    if (S.cfg->blocking && !S.cfg->cuda)
        rate *= S.be->blocking_slowdown; /* CUDA mode: the real launches cost what they cost */
    rate /= 1.0 + S.be->contention * (double)(cur_contention() - 1);
    double ns = 1e9 / rate;
    return ns < 1000 ? 1000 : (int64_t)ns;
}

/* ------------------------------------------------------------------ */
/* the scheduler: like vLLM v1's (FCFS). A request runs when fewer than
 * max_num_seqs run and the KV cache has the blocks of its tokens; else it
 * waits in S.queue. A running request that needs one more block when none
 * is free preempts the newest running request (itself if it is the
 * newest): its blocks are freed, it goes to the front of the queue and,
 * when resumed, recomputes its prompt and the tokens it already sent (a
 * pause in its stream, nothing sent twice). A lone request never waits or
 * preempts (vLLM refuses to start with a max_model_len above the cache). */

static unsigned long blocks_for(unsigned long tokens)
{
    return (tokens + KV_BLOCK - 1) / KV_BLOCK;
}

static unsigned long blocks_free(void)
{
    return S.blocks_total > S.blocks_used ? S.blocks_total - S.blocks_used : 0;
}

static void schedule(int64_t now)
{
    bool any = false;
    while (!S.hung && !S.dead && S.nqueue && S.nrun < S.cfg->w->max_num_seqs) {
        struct stream *s = S.queue[0];
        unsigned long need = blocks_for((unsigned long)s->ptoks + s->emitted + 1);
        if (need > blocks_free() && S.nrun > 0)
            break; /* first come, first served: nobody overtakes it */
        ptr_remove(S.queue, &S.nqueue, s);
        s->queued = false;
        s->blocks = need;
        S.blocks_used += need;
        ptr_insert(&S.run, &S.nrun, &S.caprun, S.nrun, s);
        S.nactive++;
        int64_t prefill = ((int64_t)s->ptoks + s->emitted) * 20000;
        s->next_ns = now + MP_MIN(prefill, 2000000000) + token_interval_ns();
        heap_push(s);
        any = true;
    }
    if (any)
        rearm_tokens();
}

static void preempt(struct stream *v)
{
    heap_remove(v);
    release_blocks(v);
    if (S.nactive)
        S.nactive--;
    ptr_insert(&S.queue, &S.nqueue, &S.capqueue, 0, v);
    v->queued = true;
    S.preemptions++;
}

/* Room for s's next token. false: s itself was preempted. */
static bool kv_grow(struct stream *s)
{
    unsigned long need = blocks_for((unsigned long)s->ptoks + s->emitted + 1);
    if (need <= s->blocks)
        return true;
    while (blocks_free() < need - s->blocks && S.nrun > 1) {
        struct stream *v = S.run[S.nrun - 1];
        preempt(v);
        if (v == s)
            return false;
    }
    S.blocks_used += need - s->blocks;
    s->blocks = need;
    return true;
}

static void engine_die(const char *site, const char *why);
static void engine_die_err(const char *site, const char *text, const char *en);
static const char *cuda_site(enum moe_cuda_site site);

static void emit_chunk(struct stream *s, const char *text, const char *finish, bool last)
{
    struct buf b = BUF_INIT;
    bool cont = s->req.continuous_usage;
    if (s->req.chat && s->emitted == 1) {
        re_api_chat_role_chunk(&b, &s->ctx, cont);
        sse_event(s->c, b.data, b.len);
        buf_reset(&b);
    }
    struct buf lpj = BUF_INIT, t = BUF_INIT; /* logprobs.h: logprobs, echo */
    if (s->lp) {
        re_lp_delta_json(&lpj, s->lp, &s->gen, s->req.prompt, s->req.prompt_len);
        s->ctx.logprobs_json = lpj.data;
        if (re_lp_echo(s->lp) && s->emitted == 1)
            buf_add(&t, s->req.prompt, s->req.prompt_len);
    }
    buf_adds(&t, text);
    re_api_chunk(&b, &s->ctx, t.data, t.len, finish, cont, s->emitted,
                 last && !s->req.include_usage);
    s->ctx.logprobs_json = NULL;
    sse_event(s->c, b.data, b.len);
    buf_release(&b);
    buf_release(&lpj);
    buf_release(&t);
}

/* produce token s->emitted; returns false when the stream ended */
static bool stream_tick(struct stream *s, int64_t now)
{
    unsigned i = s->emitted;
    if (s->queued)
        return false; /* preempted by a request of the same batch */
    if ((s->crash || s->fault) && i == s->event_at) {
        engine_die(s->fault ? S.be->sites[0] : NULL, s->fault ? "fault" : "race");
        return false;
    }
    if (s->hang && i == s->event_at) {
        S.hung = true;
        /* every generating stream stops where it is */
        while (S.nheap) {
            struct stream *x = S.heap[0];
            heap_remove(x);
        }
        S.nwaiting += S.nactive;
        S.nactive = 0;
        return false;
    }
    if (!kv_grow(s))
        return false; /* preempted: back in the queue */
    if (i == 0) {
        double ttft = (double)(now - s->start_ns) / 1e9;
        S.ttft_sum += ttft;
        S.ttft_count++;
        for (size_t k = 0; k < MP_ARRAY_SIZE(ttft_bounds); k++)
            if (ttft <= ttft_bounds[k])
                S.ttft_bucket[k]++;
    } else {
        double itl = (double)(now - s->last_tok_ns) / 1e9;
        S.itl_sum += itl;
        S.itl_count++;
        for (size_t k = 0; k < MP_ARRAY_SIZE(itl_bounds); k++)
            if (itl <= itl_bounds[k])
                S.itl_bucket[k]++;
    }
    s->last_tok_ns = now;
    bool eos = !s->req.ignore_eos && i >= s->req.min_tokens && re_gen_is_eos(&s->gen, i);
    const char *tok = eos ? "" : re_gen_token(&s->gen, i);
    if (!eos)
        re_lp_token(s->lp, &s->gen); /* logprobs.h */
    s->emitted++;
    S.gen_tokens_total++;
    const char *finish = eos ? "stop" : (s->emitted >= s->limit ? "length" : NULL);
    struct conn *c = s->c;
    if (s->req.stream) {
        emit_chunk(s, tok, finish, finish != NULL);
        if (finish) {
            if (s->req.include_usage) {
                struct buf b = BUF_INIT;
                re_api_usage_chunk(&b, &s->ctx, s->emitted);
                sse_event(c, b.data, b.len);
                buf_release(&b);
            }
            sse_end(c);
            if (!c->keep_alive)
                c->close_after = true;
        }
    } else {
        buf_adds(&s->text, tok);
        if (finish) {
            struct buf b = BUF_INIT, lpj = BUF_INIT, plpj = BUF_INIT;
            if (s->lp) { /* logprobs.h */
                re_lp_logprobs_json(&lpj, s->lp, &s->gen, s->req.prompt, s->req.prompt_len, 0);
                re_lp_prompt_json(&plpj, s->lp, &s->gen, s->req.prompt, s->req.prompt_len);
                s->ctx.logprobs_json = lpj.data;
                s->ctx.prompt_logprobs_json = plpj.data;
            }
            re_api_response(&b, &s->ctx, s->text.data, s->text.len, finish, s->emitted);
            buf_release(&lpj);
            buf_release(&plpj);
            /* the access line of a non-streaming request is written when it starts
             * responding, i.e. now */
            respond_json(c, 200, &b);
            buf_release(&b);
        }
    }
    if (finish) {
        stream_done(s, eos ? 0 : 1);
        flush(c);
        if (c->close_after && !c->out.len) {
            conn_close(c);
            return false;
        }
        process_input(c);
        return false;
    }
    flush(c);
    return true;
}

/* CUDA mode: every due stream's next token is one row of a real GPU step
 * (one batch per step, like a scheduler tick); a CUDA error kills the engine */
static void cuda_tokens(int64_t now)
{
    const struct world *w = S.cfg->w;
    double p = S.be->race_probability >= 0 ? S.be->race_probability : w->cuda_route_jitter;
    for (int round = 0; round < 64 && S.nheap && S.heap[0]->next_ns <= now && !S.dead && !S.hung;
         round++) {
        struct stream *batch[MOE_CUDA_MAX_TOKENS];
        int n = 0;
        bool fault = false, window = false;
        while (n < MOE_CUDA_MAX_TOKENS && S.nheap && S.heap[0]->next_ns <= now) {
            struct stream *s = S.heap[0];
            heap_remove(s);
            batch[n++] = s;
            fault = fault || (s->cuda_fault && s->emitted == s->event_at);
            window = window || (s->cuda_window && s->emitted >= s->event_at);
        }
        double u = (double)(re_gen_mix(&S.jitter_state) >> 11) / 9007199254740992.0;
        struct moe_cuda_step st = {
            .ntok = n,
            .route_delay_ns = window || u < p ? 200000u : 0u,
            .fault = fault,
            .input_seed = re_gen_mix(&S.jitter_state),
        };
        struct moe_cuda_err err;
        if (moe_cuda_step(S.cfg->cuda, S.cfg->cuda_path, &st, &err) != 0) {
            re_log(S.cfg->log, RE_PROC_ENGINE, RE_DEBUG, "refengine_cuda.py", 1,
                   "%s returned %s (%s) at site %s", err.call, err.name, err.text,
                   moe_cuda_site_name(err.site));
            engine_die_err(cuda_site(err.site), err.text, err.name);
            return;
        }
        int64_t after = mp_now_ns();
        for (int i = 0; i < n && !S.dead && !S.hung; i++) {
            struct stream *s = batch[i];
            if (s->heap_idx != SIZE_MAX)
                continue; /* preempted by one of this batch and already resumed */
            if (stream_tick(s, after)) {
                s->next_ns = after + token_interval_ns();
                heap_push(s);
            }
        }
        now = mp_now_ns();
    }
}

static void on_tokens(void)
{
    uint64_t exp;
    if (read(S.tfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN)
        return;
    int64_t now = mp_now_ns();
    if (S.cfg->cuda) {
        cuda_tokens(now);
        if (S.dead || S.hung)
            arm_at(S.tfd, 0);
        else
            rearm_tokens();
        return;
    }
    /* bounded batch per wake-up so the loop stays responsive */
    for (int n = 0; n < 4096 && S.nheap && S.heap[0]->next_ns <= now && !S.dead && !S.hung; n++) {
        struct stream *s = S.heap[0];
        heap_remove(s);
        if (stream_tick(s, now)) {
            s->next_ns = now + token_interval_ns();
            heap_push(s);
        }
    }
    if (S.dead || S.hung)
        arm_at(S.tfd, 0);
    else
        rearm_tokens();
}

static void make_id(char *out, size_t cap, const char *prefix, const char *given)
{
    if (given && *given) {
        snprintf(out, cap, "%s%s", prefix, given);
        return;
    }
    bool short_ids = re_ver_ge(S.cfg->w, 0, 12, 0);
    uint64_t a = re_gen_mix(&S.id_state), b = re_gen_mix(&S.id_state);
    if (short_ids)
        snprintf(out, cap, "%s%016llx", prefix, (unsigned long long)a);
    else
        snprintf(out, cap, "%s%016llx%016llx", prefix, (unsigned long long)a,
                 (unsigned long long)b);
}

static void start_generation(struct conn *c, const struct re_http_req *hr, bool chat)
{
    char msg[512], type[64], param[64];
    if (strncasecmp(hr->content_type, "application/json", 16) != 0) {
        respond_error(c, 400, "Bad Request",
                      "Unsupported Media Type: Only 'application/json' is allowed", NULL);
        return;
    }
    if (S.dead) {
        respond_dead(c);
        return;
    }
    struct stream *s = xcalloc(1, sizeof(*s));
    s->heap_idx = SIZE_MAX;
    s->text = (struct buf)BUF_INIT;
    int st = re_api_parse(chat, hr->body, hr->body_len, &s->req, msg, sizeof(msg), type,
                          sizeof(type), param, sizeof(param));
    if (st) {
        respond_error(c, st, type, msg, param);
        free(s);
        return;
    }
    if (s->req.model && strcmp(s->req.model, S.cfg->served_model) != 0) {
        char m[600];
        snprintf(m, sizeof(m), "The model `%.500s` does not exist.", s->req.model);
        respond_error(c, 404, "NotFoundError", m, re_ver_ge(S.cfg->w, 0, 20, 0) ? "model" : NULL);
        stream_free(s);
        return;
    }
    const struct world *w = S.cfg->w;
    int lst; /* logprobs.h: what vLLM refuses */
    s->lp = re_lp_new(hr->body, hr->body_len, chat, s->req.stream, w, S.cfg->max_logprobs, &lst,
                      msg, sizeof(msg), type, sizeof(type), param, sizeof(param));
    if (lst) {
        respond_error(c, lst, type, msg, param);
        stream_free(s);
        return;
    }
    s->c = c;
    c->s = s;
    s->number = ++S.gen_count;
    s->start_ns = mp_now_ns();
    unsigned ptoks = re_gen_count_tokens(s->req.prompt, s->req.prompt_len);
    s->ptoks = ptoks;
    S.prompt_tokens_total += ptoks;
    long def = chat ? MP_MIN(S.cfg->max_model_len - (long)ptoks, 4096) : 16;
    long lim = s->req.max_tokens > 0 ? s->req.max_tokens : def;
    s->limit = (unsigned)MP_MAX(lim, 1);
    make_id(s->id, sizeof(s->id), chat ? "chatcmpl-" : "cmpl-",
            hr->request_id[0] ? hr->request_id : s->req.request_id);
    s->ctx = (struct re_api_ctx){.shape = &S.shape, .chat = chat, .id = s->id,
                                 .created = (long)time(NULL), .model = S.cfg->served_model,
                                 .prompt_tokens = ptoks};
    uint64_t seed = S.cfg->seed;
    if (!s->req.greedy)
        seed ^= s->req.has_seed ? (uint64_t)s->req.seed * 0x9e3779b97f4a7c15ULL
                                : re_gen_mix(&S.id_state);
    struct re_gen_backend gbe = {
        .salt = 0x6261636b656e64ULL * (uint64_t)(S.cfg->res->backend + 2),
        .noise = S.be->logit_noise,
        .error = S.be->logit_error,
        .accuracy = S.be->accuracy,
    };
    re_gen_init_be(&s->gen, s->req.prompt, s->req.prompt_len, seed, S.be->failure == WF_GARBAGE,
                   &gbe);
    if (re_lp_echo(s->lp) && !s->req.stream)
        buf_add(&s->text, s->req.prompt, s->req.prompt_len);

    /* failure modes (request numbers count from engine start, warm-up included) */
    const struct world_backend_cfg *b = S.be;
    s->event_at = s->limit > 2 ? 2 : s->limit - 1;
    if (S.cfg->cuda && (b->failure == WF_ASYNC_RACE || b->failure == WF_KERNEL_FAULT)) {
        /* no simulated crash: the request only opens race windows / runs the
         * faulty step; whether and where it fails is up to the GPU */
        s->cuda_window = b->failure == WF_ASYNC_RACE && b->crash_after_requests &&
                         s->number == b->crash_after_requests;
        s->cuda_fault = b->failure == WF_KERNEL_FAULT && s->number == b->fault_after_requests;
    } else if (b->failure == WF_ASYNC_RACE) {
        bool hit = b->crash_after_requests && s->number == b->crash_after_requests;
        if (b->race_probability >= 0) {
            double u = (double)(re_gen_mix(&S.jitter_state) >> 11) / 9007199254740992.0;
            hit = hit || u < b->race_probability;
        }
        s->crash = hit && !S.cfg->blocking;
    } else if (b->failure == WF_KERNEL_FAULT) {
        s->fault = s->number == b->fault_after_requests;
    } else if (b->failure == WF_HANG) {
        s->hang = s->number == b->hang_after_requests;
    }
    MP_UNUSED(w);

    if (s->req.stream)
        sse_begin(c);
    if (S.hung) {
        S.nwaiting++;
    } else {
        ptr_insert(&S.queue, &S.nqueue, &S.capqueue, S.nqueue, s);
        s->queued = true;
        schedule(s->start_ns);
    }
    flush(c);
}

/* ------------------------------------------------------------------ */
/* GET endpoints                                                        */

/* Python's repr of a float, as prometheus_client writes values and bounds:
 * the shortest text that reads back the same, "1.0" for an integer. */
static void py_float(char *out, size_t n, double v)
{
    if (isinf(v)) {
        snprintf(out, n, "%s", v > 0 ? "+Inf" : "-Inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
    if (!strpbrk(out, ".en"))
        snprintf(out + strlen(out), n - strlen(out), ".0");
}

static void metric(struct buf *b, const char *name, const char *type, const char *help,
                   const char *labels, double v)
{
    char num[64];
    py_float(num, sizeof(num), v);
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s{%sengine=\"0\",model_name=\"%s\"} %s\n", name,
               help, name, type, name, labels, S.cfg->served_model, num);
}

static void histogram(struct buf *b, const char *name, const char *help, const double *bounds,
                      const unsigned long long *bucket, size_t nb, unsigned long long count,
                      double sum)
{
    const char *m = S.cfg->served_model;
    char num[64];
    buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    py_float(num, sizeof(num), sum);
    buf_printf(b, "%s_sum{engine=\"0\",model_name=\"%s\"} %s\n", name, m, num);
    for (size_t i = 0; i < nb; i++) {
        py_float(num, sizeof(num), bounds[i]);
        buf_printf(b, "%s_bucket{engine=\"0\",le=\"%s\",model_name=\"%s\"} %llu.0\n", name, num, m,
                   bucket[i]);
    }
    buf_printf(b,
               "%s_bucket{engine=\"0\",le=\"+Inf\",model_name=\"%s\"} %llu.0\n"
               "%s_count{engine=\"0\",model_name=\"%s\"} %llu.0\n",
               name, m, count, name, m, count);
}

/* GET /metrics. The vllm:* series per era (docs/refengine.md, from
 * reference/vllm-api.md section 5.4): the inter-token histogram is
 * vllm:time_per_output_token_seconds before 0.11, both names in 0.11.x
 * (the old one deprecated, PR #24110), only
 * vllm:inter_token_latency_seconds from 0.12 (the old one hidden, removed
 * by PR #32661). The KV-cache gauge is vllm:kv_cache_usage_perc from 0.10;
 * its old name vllm:gpu_cache_usage_perc is beside it as a deprecated alias
 * in 0.10.x, hidden in 0.11 (PR #24245) and removed by PR #29330, and is the
 * only one before 0.10 (kv_cache_usage_perc is the name that replaced it).
 * --show-hidden-metrics-for-version is not modelled: hidden series stay
 * hidden. The prefix-cache counters (vllm:prefix_cache_*, and their
 * vllm:gpu_prefix_cache_* aliases) are not served: refengine has no prefix
 * cache. With --disable-log-stats vLLM registers no vllm:* metric: /metrics
 * serves only the process collectors. */
static void metrics(struct conn *c)
{
    struct buf b = BUF_INIT;
    const struct world *w = S.cfg->w;
    if (S.cfg->disable_log_stats) {
        buf_adds(&b, "# HELP python_info Python platform information\n# TYPE python_info gauge\n"
                     "python_info{implementation=\"CPython\",major=\"3\",minor=\"12\",patchlevel=\"3\","
                     "version=\"3.12.3\"} 1.0\n");
        respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
        buf_release(&b);
        return;
    }
    double kv = MP_MIN((double)S.blocks_used / (double)S.blocks_total, 1.0);
    metric(&b, "vllm:num_requests_running", "gauge",
           "Number of requests in model execution batches.", "", S.nactive);
    metric(&b, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
           "", (double)S.nwaiting + (double)S.nqueue);
    if (!re_ver_ge(w, 0, 11, 0))
        metric(&b, "vllm:gpu_cache_usage_perc", "gauge",
               re_ver_ge(w, 0, 10, 0) ? "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: "
                                        "Use vllm:kv_cache_usage_perc instead."
                                      : "GPU KV-cache usage. 1 means 100 percent usage.",
               "", kv);
    if (re_ver_ge(w, 0, 10, 0))
        metric(&b, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
               "", kv);
    metric(&b, "vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.",
           "", (double)S.preemptions);
    metric(&b, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", "",
           (double)S.prompt_tokens_total);
    metric(&b, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
           "", (double)S.gen_tokens_total);
    buf_adds(&b, "# HELP vllm:request_success_total Count of successfully processed requests.\n"
                 "# TYPE vllm:request_success_total counter\n");
    for (int i = 0; i < 4; i++)
        buf_printf(&b,
                   "vllm:request_success_total{engine=\"0\",finished_reason=\"%s\",model_name=\"%s\"} "
                   "%llu.0\n",
                   finish_names[i], S.cfg->served_model, S.success[i]);
    histogram(&b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              ttft_bounds, S.ttft_bucket, MP_ARRAY_SIZE(ttft_bounds), S.ttft_count, S.ttft_sum);
    if (!re_ver_ge(w, 0, 12, 0))
        histogram(&b, "vllm:time_per_output_token_seconds",
                  re_ver_ge(w, 0, 11, 0)
                      ? "Histogram of time per output token in seconds.DEPRECATED: Use "
                        "vllm:inter_token_latency_seconds instead."
                      : "Histogram of time per output token in seconds.",
                  itl_bounds, S.itl_bucket, MP_ARRAY_SIZE(itl_bounds), S.itl_count, S.itl_sum);
    if (re_ver_ge(w, 0, 11, 0))
        histogram(&b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                  itl_bounds, S.itl_bucket, MP_ARRAY_SIZE(itl_bounds), S.itl_count, S.itl_sum);
    respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
    buf_release(&b);
}

static void models(struct conn *c)
{
    struct buf b = BUF_INIT;
    long now = (long)time(NULL);
    const char *m = S.cfg->served_model;
    buf_adds(&b, "{\"object\":\"list\",\"data\":[{\"id\":");
    buf_add_json_str(&b, m, strlen(m));
    buf_printf(&b, ",\"object\":\"model\",\"created\":%ld,\"owned_by\":\"vllm\",\"root\":", now);
    buf_add_json_str(&b, S.cfg->w->model, strlen(S.cfg->w->model));
    buf_printf(&b,
               ",\"parent\":null,\"max_model_len\":%ld,\"permission\":[{\"id\":\"modelperm-%016llx\","
               "\"object\":\"model_permission\",\"created\":%ld,\"allow_create_engine\":false,"
               "\"allow_sampling\":true,\"allow_logprobs\":true,\"allow_search_indices\":false,"
               "\"allow_view\":true,\"allow_fine_tuning\":false,\"organization\":\"*\",\"group\":"
               "null,\"is_blocking\":false}]}]}",
               S.cfg->max_model_len, (unsigned long long)re_gen_mix(&S.id_state), now);
    respond_json(c, 200, &b);
    buf_release(&b);
}

static void handle(struct conn *c, const struct re_http_req *hr)
{
    snprintf(c->line, sizeof(c->line), "%s %s HTTP/1.%d", hr->method, hr->path, hr->minor);
    c->keep_alive = hr->keep_alive;
    bool get = !strcmp(hr->method, "GET"), post = !strcmp(hr->method, "POST");
    const char *p = hr->path;
    if (!strcmp(p, "/health") || !strcmp(p, "/ping")) {
        if (!get && !(post && p[1] == 'p'))
            goto not_allowed;
        respond(c, S.dead ? 503 : 200, NULL, "", 0);
    } else if (!strcmp(p, "/v1/models")) {
        if (!get)
            goto not_allowed;
        models(c);
    } else if (!strcmp(p, "/version")) {
        if (!get)
            goto not_allowed;
        struct buf b = BUF_INIT;
        buf_adds(&b, "{\"version\":");
        buf_add_json_str(&b, S.cfg->w->version, strlen(S.cfg->w->version));
        buf_addc(&b, '}');
        respond_json(c, 200, &b);
        buf_release(&b);
    } else if (!strcmp(p, "/metrics")) {
        if (!get)
            goto not_allowed;
        metrics(c);
    } else if (!strcmp(p, "/v1/completions") || !strcmp(p, "/v1/chat/completions")) {
        if (!post)
            goto not_allowed;
        start_generation(c, hr, p[4] == 'c' && p[5] == 'h');
    } else {
        const char *nf = "{\"detail\":\"Not Found\"}";
        respond(c, 404, "application/json", nf, strlen(nf));
    }
    return;
not_allowed:;
    const char *na = "{\"detail\":\"Method Not Allowed\"}";
    respond(c, 405, "application/json", na, strlen(na));
}

/* parse and serve complete requests while no stream is active */
static void process_input(struct conn *c)
{
    while (!c->s && !c->close_after && c->in.len) {
        struct re_http_req hr;
        long n = re_http_parse(c->in.data, c->in.len, RE_API_MAX_BODY, &hr);
        if (n == 0)
            break;
        if (n < 0) {
            int st = (int)-n;
            snprintf(c->line, sizeof(c->line), "- - HTTP/1.1");
            c->keep_alive = false;
            const char *body = "{\"detail\":\"Bad Request\"}";
            if (st == 413)
                body = "{\"detail\":\"Request Entity Too Large\"}";
            respond(c, st, "application/json", body, strlen(body));
            buf_reset(&c->in);
            break;
        }
        handle(c, &hr);
        /* consume the request bytes (the stream copied what it needs) */
        memmove(c->in.data, c->in.data + n, c->in.len - (size_t)n);
        c->in.len -= (size_t)n;
        c->in.data[c->in.len] = 0;
    }
    flush(c);
    if (c->close_after && !c->out.len && !c->s)
        conn_close(c);
}

static void conn_close(struct conn *c)
{
    if (c->s) {
        struct stream *s = c->s;
        stream_done(s, 2); /* client went away: abort */
    }
    epoll_ctl(S.ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    if (c->prev)
        c->prev->next = c->next;
    else
        S.conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    buf_release(&c->in);
    buf_release(&c->out);
    /* freed after the current epoll batch: later events may still name it */
    c->prev = NULL;
    c->next = S.graveyard;
    S.graveyard = c;
}

static void free_graveyard(void)
{
    while (S.graveyard) {
        struct conn *c = S.graveyard;
        S.graveyard = c->next;
        free(c);
    }
}

static void on_readable(struct conn *c)
{
    char tmp[16384];
    for (;;) {
        ssize_t n = recv(c->fd, tmp, sizeof(tmp), 0);
        if (n > 0) {
            if (c->in.len + (size_t)n > RE_API_MAX_BODY + RE_HTTP_MAX_HEAD + 1024) {
                conn_close(c);
                return;
            }
            buf_add(&c->in, tmp, (size_t)n);
            continue;
        }
        if (n == 0) {
            conn_close(c);
            return;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            break;
        conn_close(c);
        return;
    }
    process_input(c);
}

static void on_accept(void)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(S.cfg->listen_fd, (struct sockaddr *)&ss, &sl,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return; /* EAGAIN, or EMFILE: retry on the next wake-up */
        }
        /* tokens are small writes: without TCP_NODELAY, Nagle + delayed ACK
         * holds them back ~40 ms, which no real server does */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = xcalloc(1, sizeof(*c));
        c->fd = fd;
        c->in = (struct buf)BUF_INIT;
        c->out = (struct buf)BUF_INIT;
        c->keep_alive = true;
        char host[INET6_ADDRSTRLEN] = "?";
        int port = 0;
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
            port = ntohs(a->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
            port = ntohs(a->sin6_port);
        }
        snprintf(c->peer, sizeof(c->peer), "%s:%d", host, port);
        c->next = S.conns;
        if (S.conns)
            S.conns->prev = c;
        S.conns = c;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        epoll_ctl(S.ep, EPOLL_CTL_ADD, fd, &ev);
    }
}

/* ------------------------------------------------------------------ */
/* lifecycle                                                            */

static void arm_misc(double seconds)
{
    struct itimerspec its;
    memset(&its, 0, sizeof(its));
    long long ns = (long long)(seconds * 1e9);
    if (ns < 1)
        ns = 1;
    its.it_value.tv_sec = ns / 1000000000;
    its.it_value.tv_nsec = ns % 1000000000;
    timerfd_settime(S.mfd, 0, &its, NULL);
}

static const char *cuda_enum(const char *err)
{
    if (strstr(err, "illegal memory access"))
        return "cudaErrorIllegalAddress";
    if (strstr(err, "misaligned address"))
        return "cudaErrorMisalignedAddress";
    if (strstr(err, "illegal instruction"))
        return "cudaErrorIllegalInstruction";
    if (strstr(err, "unspecified launch failure"))
        return "cudaErrorLaunchFailure";
    return NULL;
}

void re_server_site_frames(struct buf *b, const char *site)
{
    static const struct {
        const char *site, *frames;
    } known[] = {
        {"flashinfer_prefill",
         "  File \"" PY "/v1/attention/backends/flashinfer.py\", line 1925, in forward\n"
         "    prefill_wrapper.run(\n"
         "  File \"/usr/local/lib/python3.12/dist-packages/flashinfer/prefill.py\", line 2563, in run\n"
         "    self._cached_module.paged_run(*run_args)\n"},
        {"scaled_fp8_quant",
         "  File \"" PY "/_custom_ops.py\", line 1719, in scaled_fp8_quant\n"
         "    torch.ops._C.dynamic_scaled_fp8_quant(output, input, scale)\n"},
        {"FlashInferFP8ScaledMMLinearKernel",
         "  File \"" PY "/model_executor/layers/quantization/kernels/scaled_mm/flashinfer.py\", line 98, in apply_weights\n"
         "    return flashinfer_scaled_fp8_mm(\n"},
        {"get_output",
         "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 313, in get_output\n"
         "    self.async_copy_ready_event.synchronize()\n"},
        {"item",
         "  File \"" PY "/v1/sample/sampler.py\", line 112, in forward\n"
         "    num_logprobs = int(max_num_logprobs.item())\n"},
        {"synchronize",
         "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 2981, in execute_model\n"
         "    torch.cuda.synchronize()\n"},
        {"flashinfer_cutlass_fused_moe",
         "  File \"" PY "/model_executor/layers/fused_moe/experts/flashinfer_cutlass_moe.py\", line 301, in apply\n"
         "    flashinfer_cutlass_fused_moe(\n"},
        {"cutlass_moe_fp4",
         "  File \"" PY "/model_executor/layers/fused_moe/experts/cutlass_moe.py\", line 877, in apply\n"
         "    run_cutlass_moe_fp4(\n"},
        {"prepare_inputs",
         "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 1432, in _prepare_inputs\n"
         "    self.input_ids.copy_to_gpu(total_num_scheduled_tokens)\n"},
        {"fused_topk",
         "  File \"" PY "/model_executor/layers/fused_moe/router/fused_topk_router.py\", line 92, in fused_topk\n"
         "    ops.topk_softmax(\n"},
        {"moe_wait_stream",
         "  File \"" PY "/model_executor/layers/fused_moe/layer.py\", line 1711, in forward_impl\n"
         "    torch.cuda.current_stream().wait_stream(self.routing_stream)\n"},
        {"expert_load",
         "  File \"" PY "/model_executor/layers/fused_moe/layer.py\", line 1893, in forward_impl\n"
         "    expert_load = topk_ids.flatten().bincount(minlength=self.global_num_experts).cpu()\n"},
        {"moe_sum",
         "  File \"" PY "/model_executor/layers/fused_moe/fused_moe.py\", line 1630, in fused_experts_impl\n"
         "    ops.moe_sum(\n"},
        {"async_copy",
         "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 278, in __init__\n"
         "    self.sampled_token_ids_cpu = self._sampled_token_ids.to(\n"},
        {"nvfp4_moe_apply",
         "  File \"" PY "/model_executor/layers/fused_moe/experts/nvfp4_moe.py\", line 212, in apply\n"
         "    torch.ops._C.nvfp4_moe_apply(\n"},
        {"fused_marlin_moe",
         "  File \"" PY "/model_executor/layers/fused_moe/fused_marlin_moe.py\", line 244, in fused_marlin_moe\n"
         "    ops.moe_wna16_marlin_gemm(\n"},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(known); i++)
        if (!strcmp(site, known[i].site)) {
            buf_adds(b, known[i].frames);
            return;
        }
    buf_printf(b,
               "  File \"" PY "/model_executor/layers/utils.py\", line 214, in %s\n"
               "    torch.ops._C.%s(out, x)\n",
               site, site);
}

enum moe_cuda_path re_server_cuda_path(enum world_backend b, const struct world_backend_cfg *cfg)
{
    if (cfg->failure == WF_ASYNC_RACE)
        return MOE_CUDA_RACY;
    if (cfg->failure == WF_KERNEL_FAULT)
        return MOE_CUDA_FAULTY;
    return b == WB_MARLIN ? MOE_CUDA_MARLIN : MOE_CUDA_TWO_STREAM;
}

/* rotate the site between attempts: a per-world counter in $TMPDIR */
static unsigned next_site(unsigned nsites)
{
    uint64_t st = S.cfg->seed ^ 0x5173u;
    unsigned base = (unsigned)(re_gen_mix(&st) % nsites);
    const char *tmp = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof(path), "%s/refengine-sites-%u-%016llx", tmp && *tmp ? tmp : "/tmp",
             (unsigned)getuid(),
             (unsigned long long)re_gen_hash(S.cfg->site_key, strlen(S.cfg->site_key), 0));
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    unsigned k;
    if (fd >= 0) {
        struct stat sb;
        if (write(fd, "x", 1) == 1 && fstat(fd, &sb) == 0)
            k = (unsigned)((sb.st_size - 1) % 1000000);
        else
            k = (unsigned)getpid();
        close(fd);
    } else {
        k = (unsigned)getpid();
    }
    return (base + k) % nsites;
}

static void start_shutdown_timer(double seconds)
{
    S.misc = MISC_SHUTDOWN;
    arm_misc(seconds);
}

static void stop_child(void)
{
    const struct re_server_cfg *cfg = S.cfg;
    if (cfg->child <= 0 || cfg->child_hostile)
        return;
    kill(cfg->child, SIGTERM);
}

/* the engine dies: site NULL = pick one of the world's sites */
static void engine_die(const char *site, const char *why)
{
    const struct world_backend_cfg *b = S.be;
    if (!site)
        site = b->sites[next_site(b->nsites)];
    MP_UNUSED(why);
    engine_die_err(site, b->error, cuda_enum(b->error));
}

/* CUDA mode: where the host noticed the error, as a vLLM call site */
static const char *cuda_site(enum moe_cuda_site site)
{
    switch (site) {
    case MOE_SITE_INPUT:
        return "prepare_inputs";
    case MOE_SITE_ROUTE:
        return "fused_topk";
    case MOE_SITE_EVENT:
        return "moe_wait_stream";
    case MOE_SITE_DEQUANT:
        return "fused_marlin_moe";
    case MOE_SITE_EXPERTS:
        switch (S.cfg->res->backend) {
        case WB_MARLIN:
            return "fused_marlin_moe";
        case WB_FLASHINFER_CUTLASS:
            return "flashinfer_cutlass_fused_moe";
        case WB_VLLM_CUTLASS:
            return "cutlass_moe_fp4";
        default:
            return "nvfp4_moe_apply";
        }
    case MOE_SITE_COMBINE:
        return "moe_sum";
    case MOE_SITE_OUTPUT:
        return "async_copy";
    case MOE_SITE_STATS:
        return "expert_load";
    case MOE_SITE_SYNC:
    default:
        return "get_output";
    }
}

/* After engine death: every in-flight stream gets vLLM's in-band error event
 * and ends, every non-streaming request a 500; nothing is scheduled any
 * more. lg (or NULL) logs the per-stream "Error in ... stream generator". */
static void fail_in_flight(struct re_log *lg)
{
    for (struct conn *c = S.conns, *nx; c; c = nx) {
        nx = c->next;
        struct stream *s = c->s;
        if (!s)
            continue;
        if (s->req.stream) {
            if (lg)
                re_log(lg, RE_PROC_API, RE_ERROR, s->req.chat ? "serving_chat.py" : "serving_completion.py",
                       s->req.chat ? 1223 : 386, "Error in %s stream generator.",
                       s->req.chat ? "chat completion" : "completion");
            struct buf e = BUF_INIT;
            re_api_stream_error(&e, &S.shape,
                                "EngineCore encountered an issue. See stack trace (above) for the "
                                "root cause.");
            sse_event(c, e.data, e.len);
            buf_release(&e);
            sse_end(c);
        } else {
            respond_dead(c);
        }
        stream_done(s, 3);
        flush(c);
    }
    S.nactive = S.nwaiting = 0;
    arm_at(S.tfd, 0);
}

/* the engine dies of a CUDA error with the runtime's text and enum name (may be NULL) */
static void engine_die_err(const char *site, const char *text, const char *en)
{
    const struct re_server_cfg *cfg = S.cfg;
    struct re_log *lg = cfg->log;
    S.dead = true;
    struct buf t = BUF_INIT;
    buf_adds(&t, "EngineCore encountered a fatal error.\nTraceback (most recent call last):\n"
                 "  File \"" PY "/v1/engine/core.py\", line 937, in run_engine_core\n"
                 "    engine_core.run_busy_loop()\n"
                 "  File \"" PY "/v1/engine/core.py\", line 964, in run_busy_loop\n"
                 "    self._process_engine_step()\n"
                 "  File \"" PY "/v1/engine/core.py\", line 993, in _process_engine_step\n"
                 "    outputs, model_executed = self.step_fn()\n"
                 "  File \"" PY "/v1/engine/core.py\", line 388, in step\n"
                 "    model_output = self.model_executor.execute_model(scheduler_output)\n"
                 "  File \"" PY "/v1/worker/gpu_worker.py\", line 612, in execute_model\n"
                 "    output = self.model_runner.execute_model(scheduler_output, intermediate_tensors)\n");
    re_server_site_frames(&t, site);
    buf_printf(&t, "torch.AcceleratorError: CUDA error: %s\n", text);
    if (en)
        buf_printf(&t,
                   "Search for `%s' in "
                   "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for "
                   "more information.\n",
                   en);
    buf_adds(&t, "CUDA kernel errors might be asynchronously reported at some other API call, so "
                 "the stacktrace below might be incorrect.\n"
                 "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
                 "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.");
    re_log(lg, RE_PROC_ENGINE, RE_ERROR, "core.py", 946, "%s", t.data);
    buf_release(&t);
    re_log(lg, RE_PROC_API, RE_ERROR, "async_llm.py", 708,
           "AsyncLLM output_handler failed.\nTraceback (most recent call last):\n"
           "  File \"" PY "/v1/engine/async_llm.py\", line 664, in output_handler\n"
           "    outputs = await engine_core.get_output_async()\n"
           "  File \"" PY "/v1/engine/core_client.py\", line 914, in get_output_async\n"
           "    raise self._format_exception(outputs) from None\n"
           "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
           "trace (above) for the root cause.");
    fail_in_flight(lg);
    stop_child();
    start_shutdown_timer(1.0); /* vLLM's watchdog then stops the server */
}

/* The start-up timeline a world implies (seconds from start): the selection
 * lines at select_seconds (model construction), weights loaded at
 * weights_done, ready at load_seconds; a startup-crash during the profile
 * run, a quarter into the init-engine phase. */
static double weights_done(const struct world *w)
{
    return w->select_seconds + 0.45 * (w->load_seconds - w->select_seconds);
}

static void print_weights_loaded(void)
{
    const struct world *w = S.cfg->w;
    double tw = weights_done(w);
    re_log(S.cfg->log, RE_PROC_ENGINE, RE_INFO, "default_loader.py", 291,
           "Loading weights took %.2f seconds", tw - w->select_seconds);
    re_log(S.cfg->log, RE_PROC_ENGINE, RE_INFO, "gpu_model_runner.py", 3659,
           "Model loading took 61.3264 GiB memory and %.6f seconds", tw);
}

static void print_ready(void)
{
    const struct re_server_cfg *cfg = S.cfg;
    struct re_log *lg = cfg->log;
    const struct world *w = cfg->w;
    double ld = w->load_seconds;
    /* the KV cache the world gives (843,392 tokens in 38.61 GiB by default) */
    unsigned long kvt = S.blocks_total * KV_BLOCK;
    char kvs[32];
    snprintf(kvs, sizeof(kvs), "%lu", kvt);
    char grouped[48];
    size_t gl = 0, kl = strlen(kvs);
    for (size_t i = 0; i < kl && gl + 2 < sizeof(grouped); i++) {
        if (i && (kl - i) % 3 == 0)
            grouped[gl++] = ',';
        grouped[gl++] = kvs[i];
    }
    grouped[gl] = '\0';
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "gpu_worker.py", 375, "Available KV cache memory: %.2f GiB",
           38.61 * (double)kvt / 843392.0);
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "kv_cache_utils.py", 1291, "GPU KV cache size: %s tokens",
           grouped);
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "kv_cache_utils.py", 1296,
           "Maximum concurrency for %ld tokens per request: %.2fx", cfg->max_model_len,
           (double)kvt / (double)cfg->max_model_len);
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "core.py", 259,
           "init engine (profile, create kv cache, warmup model) took %.2f seconds",
           ld - weights_done(w));
    re_log(lg, RE_PROC_API, RE_INFO, "api_server.py", 1102, "Supported tasks: ['generate']");
    char addr[300];
    snprintf(addr, sizeof(addr), "http://%s:%d", cfg->host, cfg->port);
    if (re_ver_ge(w, 0, 18, 0))
        re_log(lg, RE_PROC_API, RE_INFO, "api_server.py", 2086, "Starting vLLM server on %s", addr);
    else
        re_log(lg, RE_PROC_API, RE_INFO, "api_server.py", 1428, "Starting vLLM API server 0 on %s",
               addr);
    static const char *const routes[][2] = {
        {"/openapi.json", "GET, HEAD"}, {"/docs", "GET, HEAD"}, {"/health", "GET"},
        {"/ping", "GET, POST"},         {"/version", "GET"},    {"/v1/models", "GET"},
        {"/v1/chat/completions", "POST"}, {"/v1/completions", "POST"}, {"/metrics", "GET"},
    };
    re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 46, "Available routes are:");
    for (size_t i = 0; i < MP_ARRAY_SIZE(routes); i++)
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 54, "Route: %s, Methods: %s", routes[i][0],
               routes[i][1]);
    re_log_uvicorn(lg, false, "INFO", "Started server process [%d]", (int)getpid());
    re_log_uvicorn(lg, false, "INFO", "Waiting for application startup.");
    re_log_uvicorn(lg, false, "INFO", "Application startup complete.");
}

static void startup_crash(void)
{
    struct re_log *lg = S.cfg->log;
    const char *e = S.be->startup_error[0] ? S.be->startup_error
                                           : "RuntimeError: Error: Failed to initialize the TMA descriptor 1";
    /* "Foo.BarError: msg" already names its class; otherwise RuntimeError */
    const char *colon = strstr(e, ": ");
    bool named = false;
    if (colon) {
        const char *k = colon;
        while (k > e && (k[-1] == '.' || k[-1] == '_' || (k[-1] >= 'A' && k[-1] <= 'Z') ||
                         (k[-1] >= 'a' && k[-1] <= 'z') || (k[-1] >= '0' && k[-1] <= '9')))
            k--;
        named = k == e && colon - e > 5 &&
                (!strncmp(colon - 5, "Error", 5) || !strncmp(colon - 5, "ption", 5));
    }
    re_log(lg, RE_PROC_ENGINE, RE_ERROR, "core.py", 1100,
           "EngineCore failed to start.\nTraceback (most recent call last):\n"
           "  File \"" PY "/v1/engine/core.py\", line 1090, in run_engine_core\n"
           "    engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)\n"
           "  File \"" PY "/v1/engine/core.py\", line 124, in __init__\n"
           "    num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(\n"
           "  File \"" PY "/v1/engine/core.py\", line 243, in _initialize_kv_caches\n"
           "    available_gpu_memory = self.model_executor.determine_available_memory()\n"
           "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 4188, in profile_run\n"
           "    hidden_states, last_hidden_states = self._dummy_run(\n"
           "  File \"/usr/local/lib/python3.12/dist-packages/flashinfer/autotuner.py\", line 598, in __call__\n"
           "    return self._run_tactic(inputs, tactic)\n"
           "%s%s",
           named ? "" : "RuntimeError: ", e);
}

static void print_startup_failed(void)
{
    const char *tag = re_proc_tag(S.cfg->w, RE_PROC_ENGINE);
    re_log_raw(S.cfg->log, RE_PROC_API,
               "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
               "proc(s): {'%s': 1}",
               tag ? tag : "EngineCore_DP0");
}

static void shutdown_lines(bool after_signal)
{
    struct re_log *lg = S.cfg->log;
    const struct world *w = S.cfg->w;
    if (after_signal && re_ver_ge(w, 0, 22, 0)) {
        re_log(lg, RE_PROC_ENGINE, RE_INFO, "core.py", 1150,
               "[shutdown] EngineCore: trigger received signal=SIGTERM");
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 100, "[shutdown] API server: shutdown triggered");
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 116,
               "[shutdown] API server: stopping engine client mode=abort timeout=0s");
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 125, "[shutdown] API server: engine client stopped");
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 149,
               "[shutdown] API server: shutting down FastAPI HTTP server");
    } else if (after_signal) {
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 110, "Shutting down FastAPI HTTP server.");
    }
    re_log_uvicorn(lg, false, "INFO", "Shutting down");
    re_log_uvicorn(lg, false, "INFO", "Waiting for application shutdown.");
    re_log_uvicorn(lg, false, "INFO", "Application shutdown complete.");
    if (re_ver_ge(w, 0, 22, 0))
        re_log_uvicorn(lg, false, "INFO", "Finished server process [%d]", (int)getpid());
}

static void on_misc(void)
{
    uint64_t exp;
    if (read(S.mfd, &exp, sizeof(exp)) < 0)
        return;
    if (S.misc == MISC_WEIGHTS) {
        const struct world *w = S.cfg->w;
        print_weights_loaded();
        S.misc = MISC_LOADING;
        double rest = w->load_seconds - weights_done(w);
        arm_misc(S.be->failure == WF_STARTUP_CRASH ? rest * 0.25 : rest);
    } else if (S.misc == MISC_LOADING) {
        if (S.be->failure == WF_STARTUP_CRASH) {
            startup_crash();
            print_startup_failed();
            S.exit_code = 1;
            S.stopping = true;
            return;
        }
        print_ready();
        if (listen(S.cfg->listen_fd, 4096) != 0) {
            re_log_raw(S.cfg->log, RE_PROC_API, "OSError: [Errno %d] %s", errno, strerror(errno));
            S.exit_code = 1;
            S.stopping = true;
            return;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_listen};
        epoll_ctl(S.ep, EPOLL_CTL_ADD, S.cfg->listen_fd, &ev);
        S.ready = true;
        S.misc = MISC_READY;
    } else if (S.misc == MISC_SHUTDOWN) {
        shutdown_lines(false);
        S.exit_code = 0;
        S.stopping = true;
    }
}

static void on_signal(void)
{
    struct signalfd_siginfo si;
    while (read(S.sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
            int st;
            pid_t p;
            while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
                if (p != S.cfg->child || S.dead || S.stopping)
                    continue;
                const char *tag = re_proc_tag(S.cfg->w, RE_PROC_ENGINE);
                re_log(S.cfg->log, RE_PROC_API, RE_ERROR, "core_client.py", 585,
                       "Engine core proc %s died unexpectedly, shutting down client.",
                       tag ? tag : "EngineCore_DP0");
                if (!S.ready) {
                    print_startup_failed();
                    S.exit_code = 1;
                    S.stopping = true;
                    return;
                }
                /* like engine death, without a CUDA traceback */
                S.dead = true;
                fail_in_flight(NULL);
                start_shutdown_timer(1.0);
            }
        } else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            if (S.stopping)
                continue;
            shutdown_lines(true);
            S.exit_code = 0;
            S.stopping = true;
        }
    }
}

static void teardown(void)
{
    while (S.conns) {
        struct conn *c = S.conns;
        flush(c);
        conn_close(c);
    }
    free(S.heap);
    S.heap = NULL;
    close(S.cfg->child_pipe); /* the child sees EOF: a non-hostile one exits */
    if (S.cfg->child > 0 && !S.cfg->child_hostile) {
        kill(S.cfg->child, SIGTERM);
        /* a non-hostile child dies on SIGTERM; reap it */
        while (waitpid(S.cfg->child, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    close(S.tfd);
    close(S.mfd);
    close(S.sfd);
    close(S.ep);
    close(S.cfg->listen_fd);
}

int re_server_run(const struct re_server_cfg *cfg)
{
    memset(&S, 0, sizeof(S));
    S.cfg = cfg;
    S.blocks_total = MP_MAX(cfg->w->kv_cache_tokens / KV_BLOCK, 1);
    S.be = &cfg->w->backends[cfg->res->backend];
    /* a failure that only a knob of the environment brings about (a kernel
     * option that changes behaviour, not the selection) */
    static struct world_backend_cfg be_quiet;
    if (S.be->failure_when[0]) {
        const char *eq = strchr(S.be->failure_when, '=');
        char name[WORLD_STR];
        snprintf(name, sizeof(name), "%.*s", (int)(eq - S.be->failure_when), S.be->failure_when);
        const char *val = getenv(name);
        if (!val || strcmp(val, eq + 1) != 0) {
            be_quiet = *S.be;
            be_quiet.failure = WF_NONE;
            S.be = &be_quiet;
        }
    }
    const struct world *w = cfg->w;
    S.shape = (struct re_api_shape){
        .nested_errors = re_ver_ge(w, 0, 10, 1),
        .token_fields = re_ver_ge(w, 0, 10, 2),
        .usage_key = !re_ver_ge(w, 0, 20, 0),
        .fingerprint = re_ver_ge(w, 0, 20, 0),
        .dead_json = re_ver_ge(w, 0, 20, 0),
        .version = w->version,
    };
    S.race_state = cfg->seed ^ 0xa5a5a5a5u;
    S.id_state = (uint64_t)mp_wall_ns() ^ ((uint64_t)getpid() << 32);
    S.jitter_state = S.id_state ^ 0x6a09e667f3bcc909ULL;

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    S.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    S.ep = epoll_create1(EPOLL_CLOEXEC);
    S.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    S.mfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (S.sfd < 0 || S.ep < 0 || S.tfd < 0 || S.mfd < 0) {
        fprintf(stderr, "refengine: cannot set up the event loop: %s\n", strerror(errno));
        return 3;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_sig};
    epoll_ctl(S.ep, EPOLL_CTL_ADD, S.sfd, &ev);
    ev.data.ptr = &tag_tok;
    epoll_ctl(S.ep, EPOLL_CTL_ADD, S.tfd, &ev);
    ev.data.ptr = &tag_misc;
    epoll_ctl(S.ep, EPOLL_CTL_ADD, S.mfd, &ev);
    fcntl(cfg->listen_fd, F_SETFL, fcntl(cfg->listen_fd, F_GETFL) | O_NONBLOCK);

    S.misc = MISC_WEIGHTS; /* main.c printed the selection lines at select_seconds */
    arm_misc(weights_done(w) - w->select_seconds);

    struct epoll_event evs[256];
    while (!S.stopping) {
        int n = epoll_wait(S.ep, evs, (int)MP_ARRAY_SIZE(evs), -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < n && !S.stopping; i++) {
            void *p = evs[i].data.ptr;
            if (p == &tag_sig) {
                on_signal();
            } else if (p == &tag_tok) {
                on_tokens();
            } else if (p == &tag_misc) {
                on_misc();
            } else if (p == &tag_listen) {
                on_accept();
            } else {
                struct conn *c = p;
                if (c->fd < 0)
                    continue; /* closed earlier in this batch */
                if (evs[i].events & EPOLLOUT) {
                    flush(c);
                    if (c->close_after && !c->out.len) {
                        conn_close(c);
                        continue;
                    }
                }
                if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                    on_readable(c);
            }
        }
        free_graveyard();
    }
    int rc = S.exit_code;
    teardown();
    free_graveyard();
    return rc;
}
