/* lg_internal.h - what the load generator's files (loadgen.c: lifecycle, starting, results;
 * lgsock.c: sockets, epoll, connection shards; lgresp.c: parsing responses, finishing a request)
 * share. Private to src/http/lg*.c; the public contract is loadgen.h. */
#ifndef MP_LG_INTERNAL_H
#define MP_LG_INTERNAL_H

#include "compat.h"

#include <curl/curl.h>

#include "buf.h"
#include "http/loadgen.h"
#include "loop.h"
#include "http/sse.h"

#define LG_GET_BODY_MAX ((size_t)1 << 20)  /* GET bodies kept up to 1 MiB */
#define LG_ERR_BODY_MAX ((size_t)64 << 10) /* error bodies of generation requests */
#define LG_POOL_MAX 8192                   /* idle easy handles kept for reuse */
#define LG_SPARE_MAX 1024
#define LG_SHARDS 32      /* connection-cache shards (see shard_setup) */
#define LG_SHARD_SIZE 32  /* in-flight requests per shard before the next one is used */
/* [DONE] ends a request: an engine that keeps the response open after it (no terminating chunk,
 * no close) gets this long for the rest of the body, then the request is finished as ok and its
 * connection closed. Engines that end the body send it right after [DONE]. */
#define LG_DONE_GRACE_NS ((int64_t)50 * 1000000)

struct lg_req {
    struct mp_lg *lg;
    CURL *easy;
    struct lg_req *prev, *next; /* in-flight list, then the done FIFO (next only) */
    struct mp_lg_result res;
    struct mp_sse sse;
    struct buf text;   /* generated text (GEN) or body (GET) */
    struct buf errbody;
    char *body;        /* POST body (owned) */
    int64_t now;       /* arrival stamp of the bytes being parsed */
    int64_t last_event_ns;
    int usage_tokens;
    bool status_seen, done_seen, stream_error, protocol_error;
    bool body_checked; /* the first bytes of a 200 body were checked for SSE */
    bool retried;      /* sent again on a new connection (lg_drain: a reused one had died) */
    long timeout_ms;   /* CURLOPT_TIMEOUT_MS, 0 = none */
    /* after [DONE]: on the list of requests waiting for the end of their body, ordered by
     * done_by (see LG_DONE_GRACE_NS) */
    struct lg_req *dw_prev, *dw_next;
    int64_t done_by;
    int shard;
    char errbuf[CURL_ERROR_SIZE];
};

struct mp_lg {
    CURLM *multi;
    int local_errno;   /* our socket() failed for lack of our own resources (lgsock.c), 0 = no */
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
    char *model;       /* default of mp_lg_gen.model, or NULL */
    char *auth_hdr;
    struct curl_slist *post_hdrs, *json_hdrs, *get_hdrs;
    struct mp_lg_config cfg;
    long next_id;
    size_t ninflight;
    size_t ngen;       /* of them, generation requests (MP_LG_GEN, MP_LG_COMPLETE) */
    struct lg_req *inflight;              /* doubly linked */
    struct lg_req *done_head, *done_tail; /* FIFO of finished requests */
    unsigned long nqueued;                /* results ever put on it (lg_turn) */
    CURL **pool;
    size_t npool;
    struct lg_req *spare; /* free list of request records (next), saves a large calloc/free */
    size_t nspare;
    /* curl_multi_socket_action driver: libcurl's sockets are watched by the loop (an epoll
     * set), so a wakeup costs O(ready sockets), not O(connections) as curl_multi_poll does */
    struct mp_loop *loop;
    bool own_loop;     /* made by mp_lg_new (freed with lg), else the caller's */
    uint8_t *fdst;     /* per-fd LGFD_* bits, indexed by fd */
    size_t fdcap;
    struct mp_loop_timer curl_timer; /* libcurl's timeout (CURLMOPT_TIMERFUNCTION) */
    struct mp_loop_timer held_timer; /* the first request past [DONE] is due */
    struct lg_req *dw_head, *dw_tail; /* requests past [DONE] whose body has not ended */
};

/* Per-fd state. libcurl asks for CURL_POLL_REMOVE whenever a transfer ends and for IN/OUT again
 * when the next transfer reuses the connection: a DEL + ADD pair of epoll_ctl calls per request.
 * For the connection sockets libcurl opens through our opensocket callback (LGFD_OWNED) the
 * registration is kept while the connection idles in libcurl's cache (LGFD_ACTIVE cleared); an
 * event on an idle socket (the server closed it) drops the registration then, and libcurl finds
 * the connection dead when it next looks. The closesocket callback forgets the fd, so a reused fd
 * number is never mistaken for a registered one. Other sockets (resolver) are added and removed
 * as libcurl says. */
#define LGFD_OWNED 0x01u  /* opened by lg_opensocket, not yet closed */
#define LGFD_REG 0x02u    /* watched by the loop */
#define LGFD_ACTIVE 0x04u /* libcurl wants events on it */
#define LGFD_IN 0x08u     /* registered events */
#define LGFD_OUT 0x10u

/* lgsock.c */
uint8_t *lg_fd_state(struct mp_lg *lg, curl_socket_t fd); /* grows the table; never NULL */
curl_socket_t lg_opensocket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a);
int lg_closesocket(void *clientp, curl_socket_t fd);
int lg_sock_cb(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp);
int lg_timer_cb(CURLM *m, long timeout_ms, void *userp);
/* The loop's before-sleep hook: finish what libcurl reports done. */
void lg_turn(struct mp_loop *l, void *ud);
/* The loop timers' callbacks (curl_timer, held_timer). */
void lg_on_curl_timer(struct mp_loop *l, struct mp_loop_timer *t, void *ud);
void lg_on_held_timer(struct mp_loop *l, struct mp_loop_timer *t, void *ud);
/* Spread requests over connection shards; returns the number of shards (1: base_url as is). */
int lg_shard_setup(struct mp_lg *lg, const char *gen_path, struct curl_slist **hosthdr);
int lg_shard_pick(struct mp_lg *lg); /* the shard for the next request */

/* lgresp.c */
size_t lg_gen_write(char *ptr, size_t size, size_t nmemb, void *ud); /* CURLOPT_WRITEFUNCTION */
size_t lg_get_write(char *ptr, size_t size, size_t nmemb, void *ud);
/* A finished transfer's easy handle back to the pool (LG_POOL_MAX), or cleaned up. */
void lg_easy_recycle(struct mp_lg *lg, CURL *e);
/* Finish r: outcome from cc and what arrived, release its transfer, queue it as done. */
void lg_finalize(struct mp_lg *lg, struct lg_req *r, CURLcode cc, bool aborted);
/* Finish every request libcurl reports done. */
void lg_drain(struct mp_lg *lg);
/* Finish (as ok) the requests whose body did not end within LG_DONE_GRACE_NS of [DONE]. */
void lg_finish_held(struct mp_lg *lg, int64_t now);
/* (Re)arm held_timer for the first such request still waiting (stop it when none). */
void lg_arm_held(struct mp_lg *lg);

#endif
