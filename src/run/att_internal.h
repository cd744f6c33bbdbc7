/* att_internal.h - what the files of one attempt share. Private to src/run/;
 * the public contract is run/attempt.h, the manual (states, events, the
 * table) is run/attempt.c's header.
 *
 *   attempt.c   the state x event table, the dispatcher, the one place the
 *               outcome is set, mp_attempt_run (uses every file below)
 *   att_core.c  what every file uses: raising an event, the state's timers,
 *               a progress line, an evidence file's failure, the resolved
 *               backends (uses none of the others)
 *   att_open.c  set-up (directory, evidence files, launch, spawn, sampler,
 *               load generator), the knob-delivery check (a container's
 *               inspect on the loop), the summary after teardown, release
 *   capture.c   the loop's watches: the engine's output (server.log,
 *               server.times: masked, capped), its exit, signals, the
 *               attach-mode log follower; the per-turn hook
 *   phases.c    readiness probes, the load phases, the passes after them
 *               (the output check), stall checks, progress
 *   record.c    a finished request into requests.jsonl, the store and its
 *               phase's histograms; the attempt's first failure
 *
 * Rule: the loop's callbacks (capture.c, the timers) only record facts and
 * raise events (att_raise); cells of the table (attempt.c) decide. Loop-
 * thread only. */
#ifndef MP_RUN_ATT_INTERNAL_H
#define MP_RUN_ATT_INTERNAL_H

#include "compat.h"

#include <stdio.h>

#include "buf.h"
#include "http/loadgen.h"
#include "lines.h"
#include "logs/selstop.h"
#include "loop.h"
#include "run/attempt.h"
#include "run/crashhang.h"
#include "run/crashinfo.h"
#include "run/score.h"

#define PROMPT_COUNT MP_NPROMPTS
#define LOG_CAP_BYTES (512L << 20)
/* user tags of the load generator's GETs (generation requests carry their
 * prompt index >= 0, or -1 - i for pass prompt i) */
#define TAG_HEALTH (-2000001)
#define TAG_MODELS (-2000002)
#define TAG_SETTLE (-2000003)
/* Grace after an announcement that cannot be reached: a wrapper or proxy
 * that does forward moeprobe's port answers within it. */
#define MISMATCH_GRACE_NS 5000000000LL
/* Never ready: how long the engine gets to finish saying why. */
#define LAST_WORDS_NS 3000000000LL
/* After a failure: the longest wait for the engine to say what happened. */
#define SETTLE_NS 10000000000LL
/* Readiness probes: the next one this long after an answer that was not yet ready. */
#define PROBE_INTERVAL_NS 250000000LL
/* Attach mode: bytes kept per line of the followed log file. */
#define MP_ATT_FOLLOW_LINE_MAX (64 * 1024)

/* The states (attempt.c's header says what each waits for). */
enum att_state {
    ST_STARTING,
    ST_LAST_WORDS,
    ST_VERIFYING,
    ST_OPENING,
    ST_SERVING,
    ST_CLOSING,
    ST_CHECKING,
    ST_HANGING,
    ST_SETTLING,
    ST_STOPPING,
    ST_KILLING,
    ST_SCANNING,
    ST_DONE,
    ST_COUNT
};

/* The events, in the order the dispatcher serves those pending at once
 * (a result first: what a turn brought in is recorded before the turn's
 * other news is judged). */
enum att_event {
    EV_RESULT,        /* a load-generator result (a->res) */
    EV_SIGNAL,        /* SIGINT, SIGTERM, SIGHUP, ... (a->sig_q) */
    EV_IO_ERROR,      /* an evidence file or the store could not be written */
    EV_FATAL,         /* the log shows a fatal error (first time) */
    EV_EXIT,          /* the engine's main process exited (reaped) */
    EV_EOF,           /* its output ended */
    EV_DEADLINE,      /* the state's timer */
    EV_SELECTED,      /* every selection line the command can print is in (logs/selstop.h) */
    EV_PORT_ELSEWHERE,/* the log announces a port moeprobe cannot reach */
    EV_MISMATCH,      /* ... and the grace for it passed */
    EV_READY_LINE,    /* the log says the server is ready */
    EV_PROBE,         /* the next readiness probe is due */
    EV_STALL,         /* the stall check is due */
    EV_SCRAPED,       /* a phase's first or last /metrics scrape is back */
    EV_RECHECK,       /* look at the state's condition again (a phase with nothing to send) */
    EV_STOP_STEP,     /* teardown entered its next step */
    EV_VERIFIED,      /* the container's inspect for the knob-delivery check ended */
    EV_COUNT
};

struct mp_proc;
struct mp_proc_stop;
struct mp_logscan;
struct mp_gpu_sampler;
struct mp_store_mask;
struct mp_srvm;
struct mp_launch;

/* One attempt in progress. */
struct att {
    const struct mp_attempt_opts *o;
    struct mp_attempt_result *r;
    enum att_state state;
    /* the loop and what it watches */
    struct mp_loop *loop;      /* the attempt's one loop (owned) */
    struct mp_lg *lg;          /* its one load generator (owned) */
    struct mp_srvm *srvm;      /* the engine's /metrics per load phase (observe/srvmetrics.h) */
    struct mp_gpu_sampler *gpu; /* NVML telemetry, or NULL */
    struct mp_proc *proc;      /* the engine (NULL attached) */
    struct mp_proc_stop *stop; /* its teardown in progress */
    struct mp_launch *launch;  /* the command as launched (owned) */
    struct mp_crash_env crash; /* its core-dump variables (run/crashinfo.h) */
    char marker[96];           /* its run marker, "" attached */
    char base_url[512];
    struct mp_logscan *ls;
    int pidfd;                 /* the engine's pidfd while the loop watches it, else -1 */
    struct mp_loop_timer t_state;   /* EV_DEADLINE of the current state */
    struct mp_loop_timer t_probe;   /* EV_PROBE */
    struct mp_loop_timer t_mismatch; /* EV_MISMATCH */
    struct mp_loop_timer t_stall;   /* EV_STALL */
    struct mp_loop_timer t_tick;    /* progress line, attach-mode log, exit check without pidfd */
    /* pending events */
    uint32_t pending;          /* bit per enum att_event (not EV_RESULT) */
    int sig_q[8];              /* signals not yet served (EV_SIGNAL each) */
    size_t nsig_q;
    struct mp_lg_result res;   /* EV_RESULT: the result being served */
    /* facts */
    FILE *logf, *timesf, *reqf;
    int64_t t_spawn;
    long log_bytes;
    bool log_capped;
    unsigned events;           /* MP_LOGEV_* seen so far */
    bool exited, eof;
    int exit_status;
    int signo;                 /* the first signal (the attempt was interrupted), 0 = none */
    int nsignals;              /* signals served so far */
    bool second_signal;        /* another came during teardown: KILL at once */
    char model[512];           /* the served model (from /v1/models), "" until ready */
    bool probing;              /* a readiness probe is in flight */
    bool selected;             /* every selection line its command can print is in (sel) */
    struct mp_selstop sel;     /* which are still to come (logs/selstop.h) */
    bool same_checked;         /* o->same_config was asked (the answer is r->same_as) */
    bool said_resolved;        /* progress_lines: the resolution was reported */
    bool ready;
    /* workload */
    struct mp_phase_spec sp;   /* the load phase in progress */
    size_t next_phase;         /* index of the next workload phase (then "extended") */
    bool extended;             /* the extension phase was planned */
    int cur_phase;             /* index into r->phases, -1 = none */
    int64_t t_phase;           /* when the current phase began (live progress), 0 = none */
    int started, done;         /* the current phase's requests */
    bool expired;              /* its duration is over */
    size_t pass;               /* the pass after the load phases (CHECKING) */
    size_t pass_i;             /* its prompt in flight */
    struct mp_score_state score; /* the scoring pass (run/score.h) */
    unsigned long gen_started;
    bool failed;               /* first failure recorded */
    bool hang;                 /* no token progress for stall_timeout_s */
    struct mp_hang *hanging;   /* HANGING: the hang's evidence in progress (run/crashhang.h) */
    enum att_state hang_from;  /* ... and the state it came from (SERVING or CHECKING) */
    int64_t t_fail;
    int64_t t_settle;          /* SETTLING began (its note says how long it took) */
    enum mp_seen seen;         /* the first failure moeprobe saw (model/attempt.h) */
    char *seen_msg;            /* ... its message */
    bool settle_up;            /* SETTLING: /health answered 200 after the failure */
    int64_t last_draw;
    int64_t last_beat;         /* progress_lines: the last line said (the heartbeat's clock) */
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
    long nlines;               /* engine log lines so far */
    long lines_at_exit;        /* ... when its main process exited */
    char *const *argv;         /* the final command (borrowed from the launch) */
    size_t argc;
    bool container;            /* launched as a container run */
    long announce_line;        /* the unreachable announcement's log line */
    char mismatch_why[512];
    char *sized[PROMPT_COUNT]; /* prompts of sized_tokens tokens (built on first use) */
    int sized_tokens;
    char last_line[96];        /* the engine's last log line (live line during start-up) */
    char *nondefault;          /* the engine's "non-default args" line (knob delivery) */
    long nondefault_line;
    int64_t t_begin, t_work, t_teardown;
    /* the engine's processes recorded in the store (procwatch.c) */
    size_t procs_known;        /* mp_proc_watch's count so far */
    int64_t procs_at;          /* last look, 0 = none */
    bool procs_ready;          /* looked once the engine was ready */
    pid_t tree_pids[128];      /* the first processes of its tree seen (for the kernel
                                * log's Xid lines, which name the faulting pid) */
    size_t ntree_pids;
    char *local_err;           /* moeprobe's own resources ran out (MP_LG_LOCAL), or NULL */
    /* VERIFYING: the container's inspect for the delivery check, on the loop */
    struct mp_capture_run *dlv_run;
    struct buf dlv_out;        /* its output so far */
    bool dlv_stop;             /* then stop with dlv_outcome (resolved), else the work */
    enum mp_outcome dlv_outcome;
    uint32_t dlv_deferred;     /* EV_EXIT/FATAL/EOF that came meanwhile: raised again after */
};

/* ---- attempt.c ---- */
/* Serve every pending event and result (the loop's before-sleep hook). */
void att_dispatch(struct att *a);

/* ---- att_core.c ---- */
/* Queue event ev (served by the dispatcher after the current callback). */
void att_raise(struct att *a, enum att_event ev);
/* The state's timers, each raising its event (t_state: EV_DEADLINE, ...). */
void att_timers_init(struct att *a);
/* progress_lines: one line per state change. */
void mp_att_note(struct att *a, const char *fmt, ...) MP_PRINTF(2, 3);
/* Note the first failed write of an evidence file (see att_core.c). Returns ok. */
bool mp_att_ev_ok(struct att *a, bool ok, const char *name);
/* The store could not be written: stop (EV_IO_ERROR). */
void mp_att_io_error(struct att *a);
/* What the log resolved, into the result. */
void mp_att_copy_resolved(struct att *a);

/* ---- att_open.c ---- */
/* Set up and spawn (or attach). 0, or <0 with r->fail_message set (and
 * *spawn_failed when the server command could not be started). */
int att_open(struct att *a, const struct mp_attempt_opts *o, struct mp_attempt_result *r,
             bool *spawn_failed);
/* Once ready (or resolved): did the knobs reach the engine?
 * (engine/delivery.h) Checked at once and false, or, for a container's
 * environment knobs, true: its `container inspect` runs on the loop, the
 * caller enters VERIFYING, EV_VERIFIED comes when it ended and
 * att_delivery_done completes the check. */
bool att_check_delivery(struct att *a);
/* Complete a check att_check_delivery left running (a helper still running
 * is killed: the answer is "interrupted"); nothing when none runs. */
void att_delivery_done(struct att *a);
/* After teardown: the attempt's summary into *r (exit, resolved, failure,
 * delivery, the evidence files' last flush). */
void att_summarise(struct att *a);
/* Release everything; returns the final code of mp_attempt_run given rc. */
int att_close(struct att *a, int rc);

/* ---- capture.c ---- */
/* One engine log line (mp_proc_read_lines / teardown callback; ud is the att). */
void mp_att_on_line(void *ud, const char *line, size_t len, bool truncated);
/* Has the engine exited? (EV_EXIT once when it has.) */
void mp_att_check_exit(struct att *a);
/* Attach mode: read what the followed log gained since the last look. */
void mp_att_follow_log(struct att *a);
/* Watch the signalfd, the engine's output and its exit on the loop (once
 * spawned); stop watching the engine (before teardown reads it itself). */
void mp_att_watch(struct att *a);
void mp_att_unwatch_engine(struct att *a);
void mp_att_unwatch_signals(struct att *a);
/* The evidence files are current on disk (once a turn). */
void mp_att_flush(struct att *a);

/* ---- procwatch.c ---- */
/* Record in the store every process of the engine's tree first seen since
 * the last look (a look at most every 0.5 s, and once when the engine is
 * ready), so that a --resume after a kill -9 can end them (store.h "engine
 * processes"). Returns false when the store could not be written. */
bool mp_att_watch_procs(struct att *a);

/* ---- record.c ---- */
/* Record the first failure (what moeprobe saw, its message) of the attempt. */
void mp_att_set_fail(struct att *a, enum mp_seen seen, const char *msg);
/* One finished request into requests.jsonl and the store (nothing else). */
void mp_att_write_request(struct att *a, const struct mp_lg_result *res, const char *phase);
/* A finished generation request: requests.jsonl, the store, the phase's
 * counts and metric histograms, the first failure. */
void mp_att_handle_result(struct att *a, struct mp_lg_result *res);

/* ---- phases.c ---- */
void mp_att_draw_progress(struct att *a);
void mp_att_clear_progress(struct att *a);
/* progress_lines: say what the engine resolved, once. */
void mp_att_say_resolved(struct att *a);
/* Resolve first: is this a configuration tested already? (once) */
bool mp_att_check_same(struct att *a);
/* Readiness: send the next probe (/health). */
void mp_att_probe(struct att *a);
/* A probe's answer: 1 ready (a->model set), 0 not yet (next probe armed or
 * /v1/models asked), -1 not a probe's. */
int mp_att_probe_result(struct att *a, const struct mp_lg_result *res);
/* The next load phase into a->sp and a new r->phases entry; false when the
 * workload is over. */
bool mp_att_next_phase(struct att *a);
/* Start requests until the phase's level is reached (or its count, or its
 * time, or a failure). */
void mp_att_fill(struct att *a);
/* Is the current phase's work complete (count reached, or time over with
 * nothing in flight)? */
bool mp_att_phase_complete(const struct att *a);
/* A phase's end: duration, rates, GPU load off. */
void mp_att_finish_phase(struct att *a);
/* Arm the stall check; true when no token came for stall_timeout_s with
 * requests in flight (then the hang is recorded). */
void mp_att_arm_stall(struct att *a);
bool mp_att_stalled(struct att *a, const char *phase);

/* The passes after the load phases, before teardown (CHECKING): the output
 * check today; a scoring pass is one more row of passes[] in phases.c. */
struct att_pass {
    const char *name;                       /* the phase name its requests carry */
    bool (*wanted)(const struct att *a);
    void (*begin)(struct att *a);           /* r->phases entry made; send its first request(s) */
    void (*on_result)(struct att *a, struct mp_lg_result *res); /* a generation result */
    bool (*complete)(const struct att *a);  /* nothing more to send or wait for */
};
extern const struct att_pass mp_att_passes[];
extern const size_t mp_att_npasses;

#endif
