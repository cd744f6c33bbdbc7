/* srv_gen.c - refengine's generation (srv_int.h): a completion or chat
 * request becomes a stream (its id, token limit, text and the world's
 * failure mode for it), and each tick of the token timer produces the due
 * streams' next tokens (in CUDA mode as rows of a real GPU step). */
#include "srv_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static void emit_chunk(struct stream *s, const char *text, const char *finish, bool last)
{
    struct buf b = BUF_INIT;
    bool cont = s->req.continuous_usage;
    if (s->req.chat && s->emitted == 1) {
        re_api_chat_role_chunk(&b, &s->ctx, cont);
        re_srv_sse_event(s->c, b.data, b.len);
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
    re_srv_sse_event(s->c, b.data, b.len);
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
        re_srv_engine_die(s->fault ? srv.be->sites[0] : NULL, s->fault ? "fault" : "race");
        return false;
    }
    if (s->hang && i == s->event_at) {
        srv.hung = true;
        re_srv_cd_hang();
        /* every generating stream stops where it is */
        while (srv.nheap) {
            struct stream *x = srv.heap[0];
            re_srv_heap_remove(x);
        }
        srv.nwaiting += srv.nactive;
        srv.nactive = 0;
        return false;
    }
    if (!re_srv_kv_grow(s))
        return false; /* preempted: back in the queue */
    if (i == 0)
        re_srv_observe_ttft((double)(now - s->start_ns) / 1e9);
    else
        re_srv_observe_itl((double)(now - s->last_tok_ns) / 1e9);
    s->last_tok_ns = now;
    bool eos = !s->req.ignore_eos && i >= s->req.min_tokens && re_gen_is_eos(&s->gen, i);
    const char *tok = eos ? "" : re_gen_token(&s->gen, i);
    if (!eos)
        re_lp_token(s->lp, &s->gen); /* logprobs.h */
    s->emitted++;
    srv.gen_tokens_total++;
    const char *finish = eos ? "stop" : (s->emitted >= s->limit ? "length" : NULL);
    struct conn *c = s->c;
    if (s->req.stream) {
        emit_chunk(s, tok, finish, finish != NULL);
        if (finish) {
            if (s->req.include_usage) {
                struct buf b = BUF_INIT;
                re_api_usage_chunk(&b, &s->ctx, s->emitted);
                re_srv_sse_event(c, b.data, b.len);
                buf_release(&b);
            }
            re_srv_sse_end(c);
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
            re_srv_respond_json(c, 200, &b);
            buf_release(&b);
        }
    }
    if (finish) {
        re_srv_stream_done(s, eos ? 0 : 1);
        re_srv_flush(c);
        if (c->close_after && !c->out.len) {
            re_srv_conn_close(c);
            return false;
        }
        re_srv_process_input(c);
        return false;
    }
    re_srv_flush(c);
    return true;
}

/* CUDA mode: every due stream's next token is one row of a real GPU step
 * (one batch per step, like a scheduler tick); a CUDA error kills the engine */
static void cuda_tokens(int64_t now)
{
    const struct world *w = srv.cfg->w;
    double p = srv.be->race_probability >= 0 ? srv.be->race_probability : w->cuda_route_jitter;
    for (int round = 0; round < 64 && srv.nheap && srv.heap[0]->next_ns <= now && !srv.dead && !srv.hung;
         round++) {
        struct stream *batch[MOE_CUDA_MAX_TOKENS];
        int n = 0;
        bool fault = false, window = false;
        while (n < MOE_CUDA_MAX_TOKENS && srv.nheap && srv.heap[0]->next_ns <= now) {
            struct stream *s = srv.heap[0];
            re_srv_heap_remove(s);
            batch[n++] = s;
            fault = fault || (s->cuda_fault && s->emitted == s->event_at);
            window = window || (s->cuda_window && s->emitted >= s->event_at);
        }
        double u = (double)(re_gen_mix(&srv.jitter_state) >> 11) / 9007199254740992.0;
        struct moe_cuda_step st = {
            .ntok = n,
            .route_delay_ns = window || u < p ? 200000u : 0u,
            .fault = fault,
            .input_seed = re_gen_mix(&srv.jitter_state),
        };
        struct moe_cuda_err err;
        if (moe_cuda_step(srv.cfg->cuda, srv.cfg->cuda_path, &st, &err) != 0) {
            re_log(srv.cfg->log, RE_PROC_ENGINE, RE_DEBUG, "refengine_cuda.py", 1,
                   "%s returned %s (%s) at site %s", err.call, err.name, err.text,
                   moe_cuda_site_name(err.site));
            re_srv_engine_die_err(re_srv_cuda_site(err.site), err.text, err.name);
            return;
        }
        int64_t after = mp_now_ns();
        for (int i = 0; i < n && !srv.dead && !srv.hung; i++) {
            struct stream *s = batch[i];
            if (s->heap_idx != SIZE_MAX)
                continue; /* preempted by one of this batch and already resumed */
            if (stream_tick(s, after)) {
                s->next_ns = after + re_srv_token_interval_ns();
                re_srv_heap_push(s);
            }
        }
        now = mp_now_ns();
    }
}

void re_srv_on_tokens(void)
{
    uint64_t exp;
    if (read(srv.tfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN)
        return;
    int64_t now = mp_now_ns();
    if (srv.cfg->cuda) {
        cuda_tokens(now);
        if (srv.dead || srv.hung)
            re_srv_arm_at(srv.tfd, 0);
        else
            re_srv_rearm_tokens();
        return;
    }
    /* bounded batch per wake-up so the loop stays responsive */
    for (int n = 0; n < 4096 && srv.nheap && srv.heap[0]->next_ns <= now && !srv.dead && !srv.hung; n++) {
        struct stream *s = srv.heap[0];
        re_srv_heap_remove(s);
        if (stream_tick(s, now)) {
            s->next_ns = now + re_srv_token_interval_ns();
            re_srv_heap_push(s);
        }
    }
    if (srv.dead || srv.hung)
        re_srv_arm_at(srv.tfd, 0);
    else
        re_srv_rearm_tokens();
}

static void make_id(char *out, size_t cap, const char *prefix, const char *given)
{
    if (given && *given) {
        snprintf(out, cap, "%s%s", prefix, given);
        return;
    }
    bool short_ids = re_ver_ge(srv.cfg->w, 0, 12, 0);
    uint64_t a = re_gen_mix(&srv.id_state), b = re_gen_mix(&srv.id_state);
    if (short_ids)
        snprintf(out, cap, "%s%016llx", prefix, (unsigned long long)a);
    else
        snprintf(out, cap, "%s%016llx%016llx", prefix, (unsigned long long)a,
                 (unsigned long long)b);
}

/* The world's failure mode for request s: whether it crashes, faults or
 * hangs, and at which token (request numbers count from engine start,
 * warm-up included). */
static void draw_failure(struct stream *s)
{
    const struct world_backend_cfg *b = srv.be;
    s->event_at = s->limit > 2 ? 2 : s->limit - 1;
    if (srv.cfg->cuda && (b->failure == WF_ASYNC_RACE || b->failure == WF_KERNEL_FAULT)) {
        /* no simulated crash: the request only opens race windows / runs the
         * faulty step; whether and where it fails is up to the GPU */
        s->cuda_window = b->failure == WF_ASYNC_RACE && b->crash_after_requests &&
                         s->number == b->crash_after_requests;
        s->cuda_fault = b->failure == WF_KERNEL_FAULT && s->number == b->fault_after_requests;
    } else if (b->failure == WF_ASYNC_RACE) {
        bool hit = b->crash_after_requests && s->number == b->crash_after_requests;
        if (b->race_probability >= 0) {
            double u = (double)(re_gen_mix(&srv.jitter_state) >> 11) / 9007199254740992.0;
            hit = hit || u < b->race_probability;
        }
        s->crash = hit && !srv.cfg->blocking;
    } else if (b->failure == WF_KERNEL_FAULT) {
        s->fault = s->number == b->fault_after_requests;
    } else if (b->failure == WF_HANG) {
        s->hang = s->number == b->hang_after_requests;
    }
}

void re_srv_start_generation(struct conn *c, const struct re_http_req *hr, bool chat)
{
    char msg[512], type[64], param[64];
    if (strncasecmp(hr->content_type, "application/json", 16) != 0) {
        re_srv_respond_error(c, 400, "Bad Request",
                             "Unsupported Media Type: Only 'application/json' is allowed", NULL);
        return;
    }
    if (srv.dead) {
        re_srv_respond_dead(c);
        return;
    }
    struct stream *s = xcalloc(1, sizeof(*s));
    s->heap_idx = SIZE_MAX;
    s->text = (struct buf)BUF_INIT;
    int st = re_api_parse(chat, hr->body, hr->body_len, &s->req, msg, sizeof(msg), type,
                          sizeof(type), param, sizeof(param));
    if (st) {
        re_srv_respond_error(c, st, type, msg, param);
        free(s);
        return;
    }
    if (s->req.model && strcmp(s->req.model, srv.cfg->served_model) != 0) {
        char m[600];
        snprintf(m, sizeof(m), "The model `%.500s` does not exist.", s->req.model);
        re_srv_respond_error(c, 404, "NotFoundError", m, re_ver_ge(srv.cfg->w, 0, 20, 0) ? "model" : NULL);
        re_srv_stream_free(s);
        return;
    }
    int lst; /* logprobs.h: what vLLM refuses */
    s->lp = re_lp_new(hr->body, hr->body_len, chat, s->req.stream, srv.cfg->w,
                      srv.cfg->max_logprobs, &lst, msg, sizeof(msg), type, sizeof(type), param,
                      sizeof(param));
    if (lst) {
        re_srv_respond_error(c, lst, type, msg, param);
        re_srv_stream_free(s);
        return;
    }
    s->c = c;
    c->s = s;
    s->number = ++srv.gen_count;
    s->start_ns = mp_now_ns();
    unsigned ptoks = re_gen_count_tokens(s->req.prompt, s->req.prompt_len);
    s->ptoks = ptoks;
    srv.prompt_tokens_total += ptoks;
    long def = chat ? MP_MIN(srv.cfg->max_model_len - (long)ptoks, 4096) : 16;
    long lim = s->req.max_tokens > 0 ? s->req.max_tokens : def;
    s->limit = (unsigned)MP_MAX(lim, 1);
    make_id(s->id, sizeof(s->id), chat ? "chatcmpl-" : "cmpl-",
            hr->request_id[0] ? hr->request_id : s->req.request_id);
    s->ctx = (struct re_api_ctx){.shape = &srv.shape, .chat = chat, .id = s->id,
                                 .created = (long)time(NULL), .model = srv.cfg->served_model,
                                 .prompt_tokens = ptoks};
    uint64_t seed = srv.cfg->seed;
    if (!s->req.greedy)
        seed ^= s->req.has_seed ? (uint64_t)s->req.seed * 0x9e3779b97f4a7c15ULL
                                : re_gen_mix(&srv.id_state);
    struct re_gen_backend gbe = { /* the backend's numbers (lm.h, task.h) */
        .salt = 0x6261636b656e64ULL * (uint64_t)(srv.cfg->res->backend + 2),
        .noise = srv.be->logit_noise,
        .error = srv.be->logit_error,
        .accuracy = srv.be->accuracy,
        .term = srv.cfg->lm_term, /* CUDA worlds: cuda_lm.h */
    };
    re_gen_init_be(&s->gen, s->req.prompt, s->req.prompt_len, seed,
                   srv.be->failure == WF_GARBAGE, &gbe);
    if (re_lp_echo(s->lp) && !s->req.stream)
        buf_add(&s->text, s->req.prompt, s->req.prompt_len);

    draw_failure(s);

    if (s->req.stream)
        re_srv_sse_begin(c);
    if (srv.hung) {
        srv.nwaiting++;
    } else {
        re_srv_enqueue(s);
    }
    re_srv_flush(c);
}
