/* att_internal.h - what the files of one attempt share (attempt.c: set-up,
 * teardown and the summary; capture.c: the engine's output, signals and the
 * loop turn; record.c: a finished request into requests.jsonl, the store and
 * the phase's metric histograms; phases.c: readiness, the workload's phases,
 * the output check and the failure watch). Private to src/run/; the public
 * contract is run/attempt.h. Loop-thread only. */
#ifndef MP_RUN_ATT_INTERNAL_H
#define MP_RUN_ATT_INTERNAL_H

#include "compat.h"

#include <stdio.h>

#include "buf.h"
#include "lines.h"
#include "http/loadgen.h"
#include "run/attempt.h"

#define PROMPT_COUNT MP_NPROMPTS
#define LOG_CAP_BYTES (512L << 20)
#define TAG_HEALTH 1
#define TAG_MODELS 2
/* Grace after an announcement that cannot be reached: a wrapper or proxy
 * that does forward moeprobe's port answers within it. */
#define MISMATCH_GRACE_NS 5000000000LL

struct mp_proc;
struct mp_logscan;
struct mp_gpu_sampler;
struct mp_store_mask;
struct mp_lg_config;

/* One attempt in progress. */
/* Attach mode: bytes kept per line of the followed log file. */
#define MP_ATT_FOLLOW_LINE_MAX (64 * 1024)

struct att {
    const struct mp_attempt_opts *o;
    struct mp_attempt_result *r;
    struct mp_proc *proc;
    struct mp_logscan *ls;
    struct mp_lg *lg;
    struct mp_loop *loop;      /* the attempt's one loop (owned) */
    FILE *logf, *timesf, *reqf;
    int64_t t_spawn;
    long log_bytes;
    bool log_capped;
    unsigned events;
    bool exited, eof;
    int exit_status;
    int signo;
    char model[512];
    /* workload */
    int cur_phase;
    int64_t t_phase;           /* when the current phase began (live progress), 0 = none */
    unsigned long gen_started;
    bool failed;               /* first failure recorded */
    int64_t t_fail;
    char *req_fail_class, *req_fail_msg;
    int64_t last_draw;
    const struct mp_store_mask *mask; /* secret values to mask in files, or NULL */
    bool io_err;               /* the store or an evidence file failed: stop */
    int ev_errno;              /* first failed write of an evidence file (errno), 0 = none */
    const char *ev_file;       /* that file's name in the attempt directory */
    int follow_fd;             /* attach mode: the followed log file, or -1 */
    struct mp_lines follow;    /* its lines, bound MP_ATT_FOLLOW_LINE_MAX */
    long nreq_stored;          /* requests written to the store */
    long req_lines;            /* lines written to requests.jsonl */
    long fail_req_line;        /* requests.jsonl line of the first failed request */
    bool died_early;           /* the engine was gone before teardown began */
    /* where the engine says it listens (read until it is ready) */
    bool before_ready;         /* still waiting for ready: read announcements */
    long nlines;               /* engine log lines so far */
    char *const *argv;         /* the final command (borrowed from the launch) */
    size_t argc;
    bool container;            /* launched as a container run */
    int64_t t_mismatch;        /* when an unreachable announced port was seen, 0 = not */
    long announce_line;        /* its log line */
    char mismatch_why[512];
    bool selected;             /* the engine logged that its model is built */
    bool same_checked;         /* o->same_config was asked */
    bool same;                 /* ... and said this is a configuration tested already */
    bool said_resolved;        /* progress_lines: the resolution was reported */
    bool resolve_stop;         /* resolve_only: stopped once resolved */
    struct mp_gpu_sampler *gpu; /* NVML telemetry, or NULL */
    struct mp_srvm *srvm;      /* the engine's /metrics per load phase (observe/srvmetrics.h), or NULL */
    char *sized[PROMPT_COUNT]; /* prompts of sized_tokens tokens (built on first use) */
    int sized_tokens;
    char last_line[96];        /* the engine's last log line (live line during start-up) */
    char *nondefault;          /* the engine's "non-default args" line (knob delivery) */
    long nondefault_line;
};

/* ---- capture.c ---- */
/* progress_lines: one line per state change. */
void mp_att_note(struct att *a, const char *fmt, ...) MP_PRINTF(2, 3);
/* Note the first failed write of an evidence file (see capture.c). Returns ok. */
bool mp_att_ev_ok(struct att *a, bool ok, const char *name);
/* One engine log line (mp_proc_read_lines / teardown callback; ud is the att). */
void mp_att_on_line(void *ud, const char *line, size_t len, bool truncated);
void mp_att_check_exit(struct att *a);
/* Attach mode: read what the followed log gained since the last turn. */
void mp_att_follow_log(struct att *a);
/* One turn of the event loop: wait for transfers, engine output, signals. */
void mp_att_pump(struct att *a, int timeout_ms);
/* Watch the signalfd and the engine's output on the attempt's loop (once
 * spawned), and stop (before teardown reads the output itself). */
void mp_att_watch(struct att *a);
void mp_att_unwatch(struct att *a);

/* ---- record.c ---- */
/* Record the first failure (class, message) of the attempt. */
void mp_att_set_fail(struct att *a, const char *cls, const char *msg);
/* A finished generation request: requests.jsonl, the store, the phase's
 * counts and metric histograms, the first failure. */
void mp_att_handle_result(struct att *a, struct mp_lg_result *res);

/* ---- phases.c ---- */
void mp_att_draw_progress(struct att *a, const char *what, int done, int total);
void mp_att_clear_progress(struct att *a);
/* progress_lines: say what the engine resolved, once. */
void mp_att_say_resolved(struct att *a);
/* Wait for /health 200 and a model in /v1/models. Returns true when ready. */
bool mp_att_wait_ready(struct att *a);
/* Run the phases. Returns the outcome (CLEAN, CRASH, HANG, INTERRUPTED). */
enum mp_outcome mp_att_run_workload(struct att *a);
/* The output check: greedy completions of fixed prompts, one at a time. */
enum mp_outcome mp_att_run_quality(struct att *a);
/* Pop the next load-generator result that is not a /metrics scrape (those
 * go to the scraper). True when *res was filled (release it). */
bool mp_att_next_result(struct att *a, struct mp_lg_result *res);

/* ---- attempt.c ---- */
/* What the log resolved, into the result. */
void mp_att_copy_resolved(struct att *a);

#endif
