/* lgsock.c - the load generator's sockets: per-fd epoll state, libcurl socket and timer
 * callbacks, connection-cache shards, handing ready sockets to libcurl (see lg_internal.h). */
#include "compat.h"

#include <errno.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
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
    if (fd == CURL_SOCKET_BAD)
        return fd;
    *lg_fd_state(lg, fd) = LGFD_OWNED;
    return fd;
}

int lg_closesocket(void *clientp, curl_socket_t fd)
{
    struct mp_lg *lg = clientp;
    if (fd >= 0 && (size_t)fd < lg->fdcap)
        lg->fdst[fd] = 0; /* close() removes it from the epoll set */
    return close(fd);
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

int lg_timer_cb(CURLM *m, long timeout_ms, void *userp)
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

short lg_to_poll(short curl_events)
{
    return (short)(((curl_events & CURL_WAIT_POLLIN) ? POLLIN : 0) |
                   ((curl_events & CURL_WAIT_POLLPRI) ? POLLPRI : 0) |
                   ((curl_events & CURL_WAIT_POLLOUT) ? POLLOUT : 0));
}

short lg_from_poll(short revents)
{
    return (short)(((revents & (POLLIN | POLLHUP | POLLERR)) ? CURL_WAIT_POLLIN : 0) |
                   ((revents & POLLPRI) ? CURL_WAIT_POLLPRI : 0) |
                   ((revents & POLLOUT) ? CURL_WAIT_POLLOUT : 0));
}

int lg_run_sockets(struct mp_lg *lg)
{
    struct epoll_event evs[256];
    int running = 0, n;
    do {
        n = epoll_wait(lg->epfd, evs, (int)MP_ARRAY_SIZE(evs), 0);
        if (n < 0)
            return errno == EINTR ? 0 : MP_EHTTP;
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            uint8_t *st = lg_fd_state(lg, fd);
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
