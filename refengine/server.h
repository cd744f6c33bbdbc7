/* server.h - refengine's API server: one epoll loop serving HTTP/1.1 with
 * keep-alive, timerfd-paced token streams, vLLM's endpoints, the world's
 * failure modes (engine death, hang) and vLLM-like shutdown.
 *
 * re_server_run() owns the process from "engine loading" until exit: it
 * returns the exit status the process should end with. */
#ifndef RE_SERVER_H
#define RE_SERVER_H

#include "compat.h"
#include "logfmt.h"
#include "resolve.h"
#include "world.h"
#include "drafter.h"
#include "lm.h"
#include "cuda/moe_cuda.h"

#include <sys/types.h>

struct re_server_cfg {
    const struct world *w;
    const struct re_resolution *res;
    struct re_log *log;
    int listen_fd;          /* bound, not yet listening */
    const char *host;
    int port;               /* actual port */
    const char *served_model;
    long max_model_len;
    long max_logprobs;      /* --max-logprobs (default 20): more logprobs are refused */
    uint64_t seed;
    bool blocking;          /* CUDA_LAUNCH_BLOCKING=1 */
    bool disable_log_stats; /* --disable-log-stats: /metrics without vllm:* series */
    pid_t child;            /* EngineCore process */
    int child_pipe;         /* write end; closing it tells the child we are gone */
    bool child_hostile;     /* ignores SIGTERM or escaped the group: never signalled */
    const char *site_key;   /* identifies the world for crash-site rotation */
    struct moe_cuda *cuda;  /* CUDA mode: the GPU MoE (NULL otherwise), not owned */
    enum moe_cuda_path cuda_path;
    const struct re_lm_term *lm_term; /* CUDA mode: the logits' GPU term (cuda_lm.h), NULL: none */
    const struct re_drafter *drafter; /* --speculative-config (NULL or !on: none) */
};

/* The CUDA path a backend runs in CUDA mode: its world key cuda_path when
 * set, else async-race -> RACY, kernel-fault -> FAULTY, MARLIN -> MARLIN,
 * any other -> TWO_STREAM. */
enum moe_cuda_path re_server_cuda_path(enum world_backend b, const struct world_backend_cfg *cfg);

int re_server_run(const struct re_server_cfg *cfg);

/* CUDA mode: a CUDA error outside a step (cuda_lm.h's GPU term) kills the
 * engine like a step's would (once; later calls do nothing). */
void re_server_cuda_fail(const struct moe_cuda_err *e);

/* Where an async CUDA error surfaces: Python frames for a site name
 * (unknown names get a generic frame). Appends to b. */
struct buf;
void re_server_site_frames(struct buf *b, const char *site);

#endif
