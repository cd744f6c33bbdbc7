/* srv_int.h - what the files of refengine's API server share; not part of
 * server.h. The server is single-threaded: one epoll loop (server.c) owns
 * the one state srv, and every function here runs on it, so none locks.
 *
 *   server.c       the process's life: state, loop, signals, the EngineCore
 *                  child, teardown
 *   srv_startup.c  the start-up and shutdown timeline and its log lines
 *   srv_http.c     connections, requests, routing, responses, SSE
 *   srv_gen.c      generation: requests into streams, the token ticks
 *   srv_sched.c    the scheduler: pacing, admission, KV-cache blocks, the end
 *                  of a request
 *   srv_fail.c     engine death: CUDA error, traceback, failing what is in
 *                  flight
 *   srv_metrics.c  GET /metrics and the latency histograms
 *
 * New behaviour goes into a new srv_*.c with its hook here. */
#ifndef RE_SRV_INT_H
#define RE_SRV_INT_H

#include "compat.h"

#include "server.h"

#include "api.h"
#include "buf.h"
#include "clock.h"
#include "gen.h"
#include "http.h"
#include "logprobs.h"
#include "xalloc.h"

#include <stdint.h>

#define PY "/usr/local/lib/python3.12/dist-packages/vllm"
#define KV_BLOCK 16 /* vLLM's default block size on CUDA */

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
    bool queued;          /* in srv.queue: waiting for room (new, or preempted) */
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
 * WEIGHTS (weights load) [-> DRAFTER (a speculative drafter is built: its
 * MoE line) -> DRAFTED (its weights)] -> LOADING (profile, KV cache, CUDA
 * graphs) -> READY */
enum misc_state { MISC_WEIGHTS, MISC_DRAFTER, MISC_DRAFTED, MISC_LOADING, MISC_READY, MISC_SHUTDOWN };

/* The server's state (defined in server.c, zeroed by re_server_run). */
struct re_srv_state {
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
    char tag_listen, tag_tok, tag_misc, tag_sig; /* epoll cookies: their addresses */
};
extern struct re_srv_state srv;

/* ---- srv_coredump.c: the GPU driver's side of a fault (issue 24) ---- */

/* A simulated CUDA failure: the fake kernel log's Xids, then, when the
 * environment asks for a core dump, the driver's lines and file and the
 * EngineCore's abort: true when it aborted (no traceback follows). */
bool re_srv_cd_fault(void);
/* At start: the user-triggered dump's pipe and its reader thread. */
void re_srv_cd_start(void);
/* A hang began: CUDA mode launches a kernel that spins. */
void re_srv_cd_hang(void);

/* ---- server.c ---- */

/* SIGTERM to the EngineCore child unless it is hostile (never signalled). */
void re_srv_stop_child(void);

/* ---- srv_startup.c ---- */

/* Arm the misc timer (start-up steps, the shutdown delay) seconds ahead. */
void re_srv_arm_misc(double seconds);
/* Stop the server in seconds (vLLM's watchdog after engine death). */
void re_srv_start_shutdown_timer(double seconds);
/* Seconds from start to weights loaded, as the world implies. */
double re_srv_weights_done(const struct world *w);
/* Seconds a speculative drafter adds after the weights: to its MoE line
 * (*to_line) and then to its weights loaded (*to_loaded); 0 without one. */
void re_srv_drafter_times(const struct world *w, double *to_line, double *to_loaded);
/* The misc timer fired: the next start-up step, or the shutdown. */
void re_srv_on_misc(void);
/* "Engine core initialization failed" (start-up never completed). */
void re_srv_print_startup_failed(void);
/* vLLM's shutdown lines of the era (after_signal: SIGTERM/SIGINT). */
void re_srv_shutdown_lines(bool after_signal);

/* ---- srv_http.c ---- */

/* Accept every pending connection on the listening socket. */
void re_srv_on_accept(void);
/* Read what c has, then serve the complete requests in it. */
void re_srv_on_readable(struct conn *c);
/* Parse and serve c's complete requests while no stream is active. */
void re_srv_process_input(struct conn *c);
/* Send what c's output buffer holds without blocking; a client that falls
 * MAX_OUT behind is cut off. */
void re_srv_flush(struct conn *c);
/* Close c (its stream ends as aborted); c is freed by
 * re_srv_free_graveyard after the current epoll batch. */
void re_srv_conn_close(struct conn *c);
void re_srv_free_graveyard(void);
/* A whole response with uvicorn's headers and access line. */
void re_srv_respond(struct conn *c, int status, const char *ctype, const char *body, size_t n);
void re_srv_respond_json(struct conn *c, int status, const struct buf *b);
/* vLLM's error body of the era (api.h). */
void re_srv_respond_error(struct conn *c, int status, const char *type, const char *msg,
                          const char *param);
/* What a request gets once the engine is dead: 500. */
void re_srv_respond_dead(struct conn *c);
/* An SSE response: headers, one "data:" event, "[DONE]" and the last chunk. */
void re_srv_sse_begin(struct conn *c);
void re_srv_sse_event(struct conn *c, const char *json, size_t n);
void re_srv_sse_end(struct conn *c);

/* ---- srv_gen.c ---- */

/* POST /v1/completions (chat false) or /v1/chat/completions. */
void re_srv_start_generation(struct conn *c, const struct re_http_req *hr, bool chat);
/* The token timer fired: the due streams' next tokens. */
void re_srv_on_tokens(void);

/* ---- srv_sched.c ---- */

void re_srv_heap_push(struct stream *s);
/* Take s off the heap (nothing when it is not on it). */
void re_srv_heap_remove(struct stream *s);
/* Arm timer fd for monotonic time ns (0: disarm). */
void re_srv_arm_at(int fd, int64_t ns);
/* The token timer at the first scheduled stream (disarmed when none). */
void re_srv_rearm_tokens(void);
/* A new request joins the queue; it runs as soon as there is room. */
void re_srv_enqueue(struct stream *s);
/* Admit waiting requests while there is room (FCFS). */
void re_srv_schedule(int64_t now);
/* Room for s's next token; false: s itself was preempted. */
bool re_srv_kv_grow(struct stream *s);
/* The time between two of a stream's tokens now. */
int64_t re_srv_token_interval_ns(void);
/* The request is over (finish_idx: stop, length, abort, error; <0: not
 * counted); its room goes to the first waiting request; s is freed. */
void re_srv_stream_done(struct stream *s, int finish_idx);
void re_srv_stream_free(struct stream *s);

/* ---- srv_fail.c ---- */

/* The engine dies at site (NULL: one of the world's sites, rotated). */
void re_srv_engine_die(const char *site, const char *why);
/* The engine dies of a CUDA error with the runtime's text and enum name
 * (may be NULL). */
void re_srv_engine_die_err(const char *site, const char *text, const char *en);
/* CUDA mode: the vLLM call site where the host notices an error at site. */
const char *re_srv_cuda_site(enum moe_cuda_site site);
/* Every in-flight request fails as vLLM's do after engine death; lg (or
 * NULL) logs the per-stream "Error in ... stream generator". */
void re_srv_fail_in_flight(struct re_log *lg);

/* ---- srv_metrics.c ---- */

/* GET /metrics. */
void re_srv_metrics(struct conn *c);
/* A first token ttft seconds after its request, an inter-token gap of itl
 * seconds: into the histograms /metrics serves. */
void re_srv_observe_ttft(double ttft);
void re_srv_observe_itl(double itl);

#endif
