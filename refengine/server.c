/* server.c - see server.h. The process's life: the server's state (srv,
 * srv_int.h), the event loop (epoll + timerfds + signalfd, single-threaded)
 * dispatching to srv_http.c (connections), srv_gen.c (the token timer) and
 * srv_startup.c (the misc timer), the EngineCore child's death and the
 * signals that stop the server, and the teardown. */
#include "srv_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

struct re_srv_state srv;

void re_srv_stop_child(void)
{
    const struct re_server_cfg *cfg = srv.cfg;
    if (cfg->child <= 0 || cfg->child_hostile)
        return;
    kill(cfg->child, SIGTERM);
}

static void on_signal(void)
{
    struct signalfd_siginfo si;
    while (read(srv.sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
            int st;
            pid_t p;
            while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
                if (p != srv.cfg->child || srv.dead || srv.stopping)
                    continue;
                const char *tag = re_proc_tag(srv.cfg->w, RE_PROC_ENGINE);
                re_log(srv.cfg->log, RE_PROC_API, RE_ERROR, "core_client.py", 585,
                       "Engine core proc %s died unexpectedly, shutting down client.",
                       tag ? tag : "EngineCore_DP0");
                if (!srv.ready) {
                    re_srv_print_startup_failed();
                    srv.exit_code = 1;
                    srv.stopping = true;
                    return;
                }
                /* like engine death, without a CUDA traceback */
                srv.dead = true;
                re_srv_fail_in_flight(NULL);
                re_srv_start_shutdown_timer(1.0);
            }
        } else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            if (srv.stopping)
                continue;
            re_srv_shutdown_lines(true);
            srv.exit_code = 0;
            srv.stopping = true;
        }
    }
}

static void teardown(void)
{
    while (srv.conns) {
        struct conn *c = srv.conns;
        re_srv_flush(c);
        re_srv_conn_close(c);
    }
    free(srv.heap);
    srv.heap = NULL;
    close(srv.cfg->child_pipe); /* the child sees EOF: a non-hostile one exits */
    if (srv.cfg->child > 0 && !srv.cfg->child_hostile) {
        kill(srv.cfg->child, SIGTERM);
        /* a non-hostile child dies on SIGTERM; reap it */
        while (waitpid(srv.cfg->child, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    close(srv.tfd);
    close(srv.mfd);
    close(srv.sfd);
    close(srv.ep);
    close(srv.cfg->listen_fd);
}

/* srv from cfg: the backend's parameters (a failure_when the environment
 * does not meet leaves it healthy), the API shape of the era, the seeds. */
static void init_state(const struct re_server_cfg *cfg)
{
    memset(&srv, 0, sizeof(srv));
    srv.cfg = cfg;
    srv.blocks_total = MP_MAX(cfg->w->kv_cache_tokens / KV_BLOCK, 1);
    srv.be = &cfg->w->backends[cfg->res->backend];
    /* a failure that only a knob of the environment brings about (a kernel
     * option that changes behaviour, not the selection) */
    static struct world_backend_cfg be_quiet;
    if (srv.be->failure_when[0]) {
        const char *eq = strchr(srv.be->failure_when, '=');
        char name[WORLD_STR];
        snprintf(name, sizeof(name), "%.*s", (int)(eq - srv.be->failure_when), srv.be->failure_when);
        const char *val = getenv(name);
        if (!val || strcmp(val, eq + 1) != 0) {
            be_quiet = *srv.be;
            be_quiet.failure = WF_NONE;
            srv.be = &be_quiet;
        }
    }
    const struct world *w = cfg->w;
    srv.shape = (struct re_api_shape){
        .nested_errors = re_ver_ge(w, 0, 10, 1),
        .token_fields = re_ver_ge(w, 0, 10, 2),
        .usage_key = !re_ver_ge(w, 0, 20, 0),
        .fingerprint = re_ver_ge(w, 0, 20, 0),
        .dead_json = re_ver_ge(w, 0, 20, 0),
        .version = w->version,
    };
    srv.race_state = cfg->seed ^ 0xa5a5a5a5u;
    srv.id_state = (uint64_t)mp_wall_ns() ^ ((uint64_t)getpid() << 32);
    srv.jitter_state = srv.id_state ^ 0x6a09e667f3bcc909ULL;
}

/* The loop's fds: signalfd (SIGTERM, SIGINT, SIGCHLD blocked), epoll, the
 * token and misc timers. <0 (message printed) when one cannot be made. */
static int open_loop(const struct re_server_cfg *cfg)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    srv.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    srv.ep = epoll_create1(EPOLL_CLOEXEC);
    srv.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    srv.mfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (srv.sfd < 0 || srv.ep < 0 || srv.tfd < 0 || srv.mfd < 0) {
        fprintf(stderr, "refengine: cannot set up the event loop: %s\n", strerror(errno));
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &srv.tag_sig};
    epoll_ctl(srv.ep, EPOLL_CTL_ADD, srv.sfd, &ev);
    ev.data.ptr = &srv.tag_tok;
    epoll_ctl(srv.ep, EPOLL_CTL_ADD, srv.tfd, &ev);
    ev.data.ptr = &srv.tag_misc;
    epoll_ctl(srv.ep, EPOLL_CTL_ADD, srv.mfd, &ev);
    fcntl(cfg->listen_fd, F_SETFL, fcntl(cfg->listen_fd, F_GETFL) | O_NONBLOCK);
    return 0;
}

/* A connection's events: write what waits, then read. */
static void on_conn(struct conn *c, uint32_t events)
{
    if (c->fd < 0)
        return; /* closed earlier in this batch */
    if (events & EPOLLOUT) {
        re_srv_flush(c);
        if (c->close_after && !c->out.len) {
            re_srv_conn_close(c);
            return;
        }
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        re_srv_on_readable(c);
}

int re_server_run(const struct re_server_cfg *cfg)
{
    init_state(cfg);
    if (open_loop(cfg) < 0)
        return 3;
    re_srv_cd_start(); /* a core-dump pipe (srv_coredump.c) */
    const struct world *w = cfg->w;
    srv.misc = MISC_WEIGHTS; /* main.c printed the selection lines at select_seconds */
    re_srv_arm_misc(re_srv_weights_done(w) - w->select_seconds);

    struct epoll_event evs[256];
    while (!srv.stopping) {
        int n = epoll_wait(srv.ep, evs, (int)MP_ARRAY_SIZE(evs), -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < n && !srv.stopping; i++) {
            void *p = evs[i].data.ptr;
            if (p == &srv.tag_sig) {
                on_signal();
            } else if (p == &srv.tag_tok) {
                re_srv_on_tokens();
            } else if (p == &srv.tag_misc) {
                re_srv_on_misc();
            } else if (p == &srv.tag_listen) {
                re_srv_on_accept();
            } else {
                on_conn(p, evs[i].events);
            }
        }
        re_srv_free_graveyard();
    }
    int rc = srv.exit_code;
    teardown();
    re_srv_free_graveyard();
    return rc;
}
