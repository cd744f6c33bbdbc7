/* lgsock.c - the load generator's sockets: per-fd state, libcurl's socket and timer callbacks
 * onto the loop (base/loop.h), connection-cache shards, handing ready sockets to libcurl (see
 * lg_internal.h). */
#include "compat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "xalloc.h"
#include "http/lg_internal.h"

uint8_t *lg_fd_state(struct mp_lg *lg, curl_socket_t fd)
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

curl_socket_t lg_opensocket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct mp_lg *lg = clientp;
    (void)purpose;
    curl_socket_t fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    if (fd == CURL_SOCKET_BAD) {
        if (mp_errno_is_local_resource(errno))
            lg->local_errno = errno; /* libcurl says only "could not connect" */
        return fd;
    }
    *lg_fd_state(lg, fd) = LGFD_OWNED;
    return fd;
}

int lg_closesocket(void *clientp, curl_socket_t fd)
{
    struct mp_lg *lg = clientp;
    if (fd >= 0 && (size_t)fd < lg->fdcap) {
        if (lg->fdst[fd] & LGFD_REG)
            mp_loop_fd_del(lg->loop, fd);
        lg->fdst[fd] = 0;
    }
    return close(fd);
}

/* Ready sockets go to libcurl; what finished is queued (lg_drain). */
static void on_socket(struct mp_loop *l, int fd, unsigned what, void *ud)
{
    struct mp_lg *lg = ud;
    uint8_t *st = lg_fd_state(lg, fd);
    if (!(*st & LGFD_ACTIVE)) { /* idle in libcurl's cache and the peer closed it, or stale */
        mp_loop_fd_del(l, fd);
        *st &= LGFD_OWNED;
        return;
    }
    int flags = 0, running = 0;
    if (what & MP_LOOP_IN)
        flags |= CURL_CSELECT_IN;
    if (what & MP_LOOP_OUT)
        flags |= CURL_CSELECT_OUT;
    if (what & MP_LOOP_ERR)
        flags |= CURL_CSELECT_ERR;
    curl_multi_socket_action(lg->multi, fd, flags, &running);
}

int lg_sock_cb(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct mp_lg *lg = userp;
    (void)e;
    (void)socketp;
    uint8_t *st = lg_fd_state(lg, fd);
    if (what == CURL_POLL_REMOVE) {
        if ((*st & (LGFD_OWNED | LGFD_REG)) == (LGFD_OWNED | LGFD_REG)) {
            *st &= (uint8_t)~LGFD_ACTIVE; /* keep it registered while it idles */
        } else {
            mp_loop_fd_del(lg->loop, fd); /* may already be gone with a close */
            *st &= LGFD_OWNED;
        }
        return 0;
    }
    uint8_t want = (uint8_t)(((what & CURL_POLL_IN) ? LGFD_IN : 0u) | ((what & CURL_POLL_OUT) ? LGFD_OUT : 0u));
    if ((*st & LGFD_REG) && (*st & (LGFD_IN | LGFD_OUT)) == want) {
        *st |= LGFD_ACTIVE;
        return 0;
    }
    unsigned ev = ((want & LGFD_IN) ? MP_LOOP_IN : 0u) | ((want & LGFD_OUT) ? MP_LOOP_OUT : 0u);
    if (mp_loop_fd_set(lg->loop, fd, ev, on_socket, lg) < 0) {
        *st &= LGFD_OWNED; /* libcurl finds the transfer stuck and times it out */
        return 0;
    }
    *st = (uint8_t)((*st & LGFD_OWNED) | LGFD_REG | LGFD_ACTIVE | want);
    return 0;
}

int lg_timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    struct mp_lg *lg = userp;
    (void)m;
    if (timeout_ms < 0)
        mp_loop_timer_stop(lg->loop, &lg->curl_timer);
    else
        mp_loop_timer_start(lg->loop, &lg->curl_timer, mp_now_ns() + (int64_t)timeout_ms * 1000000);
    return 0;
}

void lg_on_curl_timer(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    struct mp_lg *lg = ud;
    int running = 0;
    (void)l;
    (void)t;
    curl_multi_socket_action(lg->multi, CURL_SOCKET_TIMEOUT, 0, &running);
}

/* Once a turn, after every ready socket and due timer of the last one was
 * handed to libcurl: finish what it reports done, all at once (a transfer
 * removed while other handles of the turn are still being served would let
 * libcurl's connection cache shrink to four per handle still added, and
 * close connections the next requests then open again). Results it queued
 * make this turn's wait return at once, so a caller that pops results
 * after each mp_loop_run_once (loadgen.h) sees them now, not after the next
 * event or its deadline. */
void lg_turn(struct mp_loop *l, void *ud)
{
    struct mp_lg *lg = ud;
    unsigned long before = lg->nqueued;
    lg_drain(lg);
    lg_arm_held(lg);
    if (lg->nqueued != before)
        mp_loop_wakeup(l);
}

void lg_on_held_timer(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    struct mp_lg *lg = ud;
    (void)l;
    (void)t;
    lg_finish_held(lg, mp_now_ns());
    lg_arm_held(lg);
}

void lg_arm_held(struct mp_lg *lg)
{
    if (!lg->dw_head)
        mp_loop_timer_stop(lg->loop, &lg->held_timer);
    else if (!mp_loop_timer_active(&lg->held_timer) || lg->held_timer.when_ns != lg->dw_head->done_by)
        mp_loop_timer_start(lg->loop, &lg->held_timer, lg->dw_head->done_by);
}

/* libcurl 7.x keeps a host's connections in one list and scans it linearly for an idle one at
 * every request start: ~20 ns per connection, +10-20 us per request at 256-1,000 connections.
 * With an IP-literal http:// base URL without a path, requests are spread over LG_SHARDS
 * synthetic host names (RFC 6761 .invalid, never resolved: CURLOPT_RESOLVE pins them to the
 * real address), each its own list; the Host header is the real one, so the server sees no
 * difference. A request goes to the lowest shard with fewer than LG_SHARD_SIZE in flight, so
 * sequential requests all use shard 0 and one connection. Returns the number of shards. */
int lg_shard_setup(struct mp_lg *lg, const char *gen_path, struct curl_slist **hosthdr)
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

int lg_shard_pick(struct mp_lg *lg)
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
