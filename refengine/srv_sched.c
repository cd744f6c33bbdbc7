/* srv_sched.c - refengine's scheduler (srv_int.h): the heap of streams by
 * the time of their next token, their pace (tokens_per_second, contention,
 * launch blocking), admission and KV-cache blocks like vLLM v1's, and a
 * request's end. */
#include "srv_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>

static void heap_swap(size_t a, size_t b)
{
    struct stream *t = srv.heap[a];
    srv.heap[a] = srv.heap[b];
    srv.heap[b] = t;
    srv.heap[a]->heap_idx = a;
    srv.heap[b]->heap_idx = b;
}

static void heap_up(size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (srv.heap[p]->next_ns <= srv.heap[i]->next_ns)
            break;
        heap_swap(p, i);
        i = p;
    }
}

static void heap_down(size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < srv.nheap && srv.heap[l]->next_ns < srv.heap[m]->next_ns)
            m = l;
        if (r < srv.nheap && srv.heap[r]->next_ns < srv.heap[m]->next_ns)
            m = r;
        if (m == i)
            break;
        heap_swap(i, m);
        i = m;
    }
}

void re_srv_heap_push(struct stream *s)
{
    if (srv.nheap == srv.capheap) {
        srv.capheap = srv.capheap ? srv.capheap * 2 : 64;
        srv.heap = xreallocarray(srv.heap, srv.capheap, sizeof(*srv.heap));
    }
    srv.heap[srv.nheap] = s;
    s->heap_idx = srv.nheap++;
    heap_up(s->heap_idx);
}

void re_srv_heap_remove(struct stream *s)
{
    size_t i = s->heap_idx;
    if (i == SIZE_MAX)
        return;
    srv.nheap--;
    if (i != srv.nheap) {
        srv.heap[i] = srv.heap[srv.nheap];
        srv.heap[i]->heap_idx = i;
        heap_down(i);
        heap_up(i);
    }
    s->heap_idx = SIZE_MAX;
}

void re_srv_arm_at(int fd, int64_t ns)
{
    struct itimerspec its;
    memset(&its, 0, sizeof(its));
    if (ns > 0) {
        its.it_value.tv_sec = ns / 1000000000;
        its.it_value.tv_nsec = ns % 1000000000;
    }
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

void re_srv_rearm_tokens(void)
{
    re_srv_arm_at(srv.tfd, srv.nheap ? MP_MAX(srv.heap[0]->next_ns, 1) : 0);
}

void re_srv_stream_free(struct stream *s)
{
    re_lp_free(s->lp);
    re_srv_heap_remove(s);
    re_api_req_free(&s->req);
    buf_release(&s->text);
    free(s);
}

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
    srv.blocks_used -= MP_MIN(s->blocks, srv.blocks_used);
    s->blocks = 0;
    ptr_remove(srv.run, &srv.nrun, s);
}

void re_srv_stream_done(struct stream *s, int finish_idx)
{
    struct conn *c = s->c;
    if (finish_idx >= 0)
        srv.success[finish_idx]++;
    if (s->queued) {
        ptr_remove(srv.queue, &srv.nqueue, s);
    } else if (s->heap_idx != SIZE_MAX || !srv.hung) {
        if (srv.nactive)
            srv.nactive--;
    } else if (srv.nwaiting) {
        srv.nwaiting--;
    }
    release_blocks(s);
    c->s = NULL;
    re_srv_stream_free(s);
    re_srv_schedule(mp_now_ns()); /* its room goes to the first waiting request */
}

static unsigned cur_contention(void)
{
    return srv.nactive ? srv.nactive : 1;
}

int64_t re_srv_token_interval_ns(void)
{
    double rate = srv.be->tokens_per_second;
    if (srv.cfg->blocking && !srv.cfg->cuda)
        rate *= srv.be->blocking_slowdown; /* CUDA mode: the real launches cost what they cost */
    rate /= 1.0 + srv.be->contention * (double)(cur_contention() - 1);
    double ns = 1e9 / rate;
    return ns < 1000 ? 1000 : (int64_t)ns;
}

/* ------------------------------------------------------------------ */
/* the scheduler: like vLLM v1's (FCFS). A request runs when fewer than
 * max_num_seqs run and the KV cache has the blocks of its tokens; else it
 * waits in srv.queue. A running request that needs one more block when none
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
    return srv.blocks_total > srv.blocks_used ? srv.blocks_total - srv.blocks_used : 0;
}

void re_srv_schedule(int64_t now)
{
    bool any = false;
    while (!srv.hung && !srv.dead && srv.nqueue && srv.nrun < srv.cfg->w->max_num_seqs) {
        struct stream *s = srv.queue[0];
        unsigned long need = blocks_for((unsigned long)s->ptoks + s->emitted + 1);
        if (need > blocks_free() && srv.nrun > 0)
            break; /* first come, first served: nobody overtakes it */
        ptr_remove(srv.queue, &srv.nqueue, s);
        s->queued = false;
        s->blocks = need;
        srv.blocks_used += need;
        ptr_insert(&srv.run, &srv.nrun, &srv.caprun, srv.nrun, s);
        srv.nactive++;
        int64_t prefill = ((int64_t)s->ptoks + s->emitted) * 20000;
        s->next_ns = now + MP_MIN(prefill, 2000000000) + re_srv_token_interval_ns();
        re_srv_heap_push(s);
        any = true;
    }
    if (any)
        re_srv_rearm_tokens();
}

static void preempt(struct stream *v)
{
    re_srv_heap_remove(v);
    release_blocks(v);
    if (srv.nactive)
        srv.nactive--;
    ptr_insert(&srv.queue, &srv.nqueue, &srv.capqueue, 0, v);
    v->queued = true;
    srv.preemptions++;
}

/* Room for s's next token. false: s itself was preempted. */
bool re_srv_kv_grow(struct stream *s)
{
    unsigned long need = blocks_for((unsigned long)s->ptoks + s->emitted + 1);
    if (need <= s->blocks)
        return true;
    while (blocks_free() < need - s->blocks && srv.nrun > 1) {
        struct stream *v = srv.run[srv.nrun - 1];
        preempt(v);
        if (v == s)
            return false;
    }
    srv.blocks_used += need - s->blocks;
    s->blocks = need;
    return true;
}

/* s (a new request) joins the end of the queue; it runs as soon as there is
 * room. */
void re_srv_enqueue(struct stream *s)
{
    ptr_insert(&srv.queue, &srv.nqueue, &srv.capqueue, srv.nqueue, s);
    s->queued = true;
    re_srv_schedule(s->start_ns);
}
