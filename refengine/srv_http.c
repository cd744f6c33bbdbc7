/* srv_http.c - refengine's HTTP side (srv_int.h): accepting and reading
 * connections, parsing requests (http.h), routing them to vLLM's endpoints,
 * and writing responses and SSE streams with uvicorn's access lines. A
 * generation request is handed to srv_gen.c; /metrics to srv_metrics.c. */
#include "srv_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_OUT (16u << 20) /* a client that stops reading gets cut off here */

static void ep_mod(struct conn *c)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | (c->want_out ? EPOLLOUT : 0),
                             .data.ptr = c};
    epoll_ctl(srv.ep, EPOLL_CTL_MOD, c->fd, &ev);
}

void re_srv_flush(struct conn *c)
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
    re_log_uvicorn(srv.cfg->log, true, "INFO", "%s - \"%s\" %d %s", c->peer, c->line, status,
                   re_http_reason(status));
}

void re_srv_respond(struct conn *c, int status, const char *ctype, const char *body, size_t n)
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

void re_srv_respond_json(struct conn *c, int status, const struct buf *b)
{
    re_srv_respond(c, status, "application/json", b->data, b->len);
}

void re_srv_respond_error(struct conn *c, int status, const char *type, const char *msg,
                          const char *param)
{
    struct buf b = BUF_INIT;
    re_api_error(&b, &srv.shape, status, type, msg, param);
    re_srv_respond_json(c, status, &b);
    buf_release(&b);
}

void re_srv_respond_dead(struct conn *c)
{
    if (srv.shape.dead_json)
        re_srv_respond_error(c, 500, "InternalServerError",
                             "EngineCore encountered an issue. See stack trace (above) for the root "
                             "cause.",
                             NULL);
    else
        re_srv_respond(c, 500, NULL, "", 0);
}

void re_srv_sse_begin(struct conn *c)
{
    char date[64];
    http_date(date, sizeof(date));
    buf_printf(&c->out,
               "HTTP/1.1 200 OK\r\ndate: %s\r\nserver: uvicorn\r\ncontent-type: text/event-stream; "
               "charset=utf-8\r\ntransfer-encoding: chunked\r\n%s\r\n",
               date, c->keep_alive ? "" : "connection: close\r\n");
    access_log(c, 200);
}

void re_srv_sse_event(struct conn *c, const char *json, size_t n)
{
    buf_printf(&c->out, "%zx\r\ndata: ", n + 8);
    buf_add(&c->out, json, n);
    buf_adds(&c->out, "\n\n\r\n");
}

void re_srv_sse_end(struct conn *c)
{
    re_srv_sse_event(c, "[DONE]", 6);
    buf_adds(&c->out, "0\r\n\r\n");
}

static void models(struct conn *c)
{
    struct buf b = BUF_INIT;
    long now = (long)time(NULL);
    const char *m = srv.cfg->served_model;
    buf_adds(&b, "{\"object\":\"list\",\"data\":[{\"id\":");
    buf_add_json_str(&b, m, strlen(m));
    buf_printf(&b, ",\"object\":\"model\",\"created\":%ld,\"owned_by\":\"vllm\",\"root\":", now);
    buf_add_json_str(&b, srv.cfg->w->model, strlen(srv.cfg->w->model));
    buf_printf(&b,
               ",\"parent\":null,\"max_model_len\":%ld,\"permission\":[{\"id\":\"modelperm-%016llx\","
               "\"object\":\"model_permission\",\"created\":%ld,\"allow_create_engine\":false,"
               "\"allow_sampling\":true,\"allow_logprobs\":true,\"allow_search_indices\":false,"
               "\"allow_view\":true,\"allow_fine_tuning\":false,\"organization\":\"*\",\"group\":"
               "null,\"is_blocking\":false}]}]}",
               srv.cfg->max_model_len, (unsigned long long)re_gen_mix(&srv.id_state), now);
    re_srv_respond_json(c, 200, &b);
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
        re_srv_respond(c, srv.dead ? 503 : 200, NULL, "", 0);
    } else if (!strcmp(p, "/v1/models")) {
        if (!get)
            goto not_allowed;
        models(c);
    } else if (!strcmp(p, "/version")) {
        if (!get)
            goto not_allowed;
        struct buf b = BUF_INIT;
        buf_adds(&b, "{\"version\":");
        buf_add_json_str(&b, srv.cfg->w->version, strlen(srv.cfg->w->version));
        buf_addc(&b, '}');
        re_srv_respond_json(c, 200, &b);
        buf_release(&b);
    } else if (!strcmp(p, "/metrics")) {
        if (!get)
            goto not_allowed;
        re_srv_metrics(c);
    } else if (!strcmp(p, "/v1/completions") || !strcmp(p, "/v1/chat/completions")) {
        if (!post)
            goto not_allowed;
        re_srv_start_generation(c, hr, p[4] == 'c' && p[5] == 'h');
    } else {
        const char *nf = "{\"detail\":\"Not Found\"}";
        re_srv_respond(c, 404, "application/json", nf, strlen(nf));
    }
    return;
not_allowed:;
    const char *na = "{\"detail\":\"Method Not Allowed\"}";
    re_srv_respond(c, 405, "application/json", na, strlen(na));
}

/* parse and serve complete requests while no stream is active */
void re_srv_process_input(struct conn *c)
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
            re_srv_respond(c, st, "application/json", body, strlen(body));
            buf_reset(&c->in);
            break;
        }
        handle(c, &hr);
        /* consume the request bytes (the stream copied what it needs) */
        memmove(c->in.data, c->in.data + n, c->in.len - (size_t)n);
        c->in.len -= (size_t)n;
        c->in.data[c->in.len] = 0;
    }
    re_srv_flush(c);
    if (c->close_after && !c->out.len && !c->s)
        re_srv_conn_close(c);
}

void re_srv_conn_close(struct conn *c)
{
    if (c->s) {
        struct stream *s = c->s;
        re_srv_stream_done(s, 2); /* client went away: abort */
    }
    epoll_ctl(srv.ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv.conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    buf_release(&c->in);
    buf_release(&c->out);
    /* freed after the current epoll batch: later events may still name it */
    c->prev = NULL;
    c->next = srv.graveyard;
    srv.graveyard = c;
}

void re_srv_free_graveyard(void)
{
    while (srv.graveyard) {
        struct conn *c = srv.graveyard;
        srv.graveyard = c->next;
        free(c);
    }
}

void re_srv_on_readable(struct conn *c)
{
    char tmp[16384];
    for (;;) {
        ssize_t n = recv(c->fd, tmp, sizeof(tmp), 0);
        if (n > 0) {
            if (c->in.len + (size_t)n > RE_API_MAX_BODY + RE_HTTP_MAX_HEAD + 1024) {
                re_srv_conn_close(c);
                return;
            }
            buf_add(&c->in, tmp, (size_t)n);
            continue;
        }
        if (n == 0) {
            re_srv_conn_close(c);
            return;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            break;
        re_srv_conn_close(c);
        return;
    }
    re_srv_process_input(c);
}

void re_srv_on_accept(void)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(srv.cfg->listen_fd, (struct sockaddr *)&ss, &sl,
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
        c->next = srv.conns;
        if (srv.conns)
            srv.conns->prev = c;
        srv.conns = c;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        epoll_ctl(srv.ep, EPOLL_CTL_ADD, fd, &ev);
    }
}
