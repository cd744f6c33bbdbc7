/* attempt.h - the record of one start of the engine for a candidate: its
 * outcome, what the engine resolved, the failure, the phases and their
 * metric histograms. Plain data written by run/ (live) and store/ (loaded),
 * read by verdict/ and report/. */
#ifndef MP_MODEL_ATTEMPT_H
#define MP_MODEL_ATTEMPT_H

#include "compat.h"

#include "hist.h"
#include "model/evidence.h"
#include "model/gpufault.h"
#include "model/score.h"
#include "model/srvmetrics.h"
#include "model/workload.h"
#include "strv.h"

enum mp_outcome {
    MP_OUT_CLEAN = 0,          /* every phase ran with zero failures */
    MP_OUT_STARTUP_FAILURE,    /* never became ready */
    MP_OUT_CRASH,              /* failed after ready: engine died, requests failed */
    MP_OUT_HANG,               /* alive, no token progress for stall_timeout */
    MP_OUT_INTERRUPTED,        /* moeprobe got a signal */
    MP_OUT_ERROR,              /* moeprobe could not run it (spawn, I/O) */
    MP_OUT_SAME_CONFIG,        /* stopped once resolved: the same configuration as a
                                * candidate tested already (same_as) */
    MP_OUT_RESOLVED,           /* `moeprobe resolve`: stopped once resolved, no load */
};
/* fail_class of an attempt whose evidence files could not be written (full
 * disk, file-size limit, I/O error; outcome MP_OUT_ERROR): no verdict is
 * drawn from it. */
#define MP_FAIL_EVIDENCE "evidence-incomplete"
/* fail_class of an attempt whose server command could not be started (its
 * record; the caller learns it from MP_ECOMMAND, never from this string). */
#define MP_FAIL_SPAWN "spawn"

/* What moeprobe itself saw go wrong first (the engine's own words are the
 * log's). Its name is the failure class when the log has none better. */
enum mp_seen {
    MP_SEEN_NONE = 0,
    MP_SEEN_HTTP_ERROR,      /* a request's outcome (http/loadgen.h): ... */
    MP_SEEN_STREAM_ERROR,
    MP_SEEN_STREAM_CUT,
    MP_SEEN_PROTOCOL,
    MP_SEEN_CONNECT,
    MP_SEEN_TIMEOUT,
    MP_SEEN_REQUEST_FAILED,
    MP_SEEN_CLIENT_ERROR,    /* moeprobe could not start a request */
    MP_SEEN_ENGINE_FATAL,    /* the log showed a fatal line during the load */
    MP_SEEN_PROCESS_EXIT,    /* the engine exited (during the load, or before ready) */
    MP_SEEN_HANG,            /* no token progress for --stall-timeout */
    MP_SEEN_READY_TIMEOUT,   /* not ready within --ready-timeout */
    MP_SEEN_PORT_MISMATCH,   /* it announced a port moeprobe cannot reach */
};
/* "http-error", "stream-error", "stream-cut", "protocol-error",
 * "connection-refused", "request-timeout", "request-failed", "client-error",
 * "engine-fatal", "process-exit", "hang", "ready-timeout", "port-mismatch";
 * NULL for MP_SEEN_NONE. */
const char *mp_seen_name(enum mp_seen s);
/* The inverse; NULL or an unknown name is MP_SEEN_NONE. */
enum mp_seen mp_seen_from_name(const char *name);

/* What an attempt's failure is judged from (verdict/classify.h), recorded
 * by run/ as it happened and kept in the store, so a newer moeprobe judges
 * an old run again. Owned strings. */
struct mp_attempt_obs {
    bool recorded;            /* false: a store from before they were kept (the attempt's
                               * fail_* fields stand as stored) */
    enum mp_seen seen;        /* the first failure moeprobe saw, MP_SEEN_NONE */
    char *seen_message;       /* its message, or NULL */
    long announce_line;       /* MP_SEEN_PORT_MISMATCH: the announcement's server.log line */
    bool died_early;          /* the engine's main process was gone before teardown began */
    bool exited;              /* ... was reaped by the end (before or in teardown) */
    int exit_status;          /* its waitpid status; -1 unknown */
    long lines_after_exit;    /* server.log lines after it exited early (a daemon's) */
    /* the log (logs/logscan.h): the first fatal failure, the engine's own
     * reason before ready, its last error-looking lines */
    bool crash;
    char *crash_class, *crash_message, *crash_launch_site;
    long crash_line;
    bool crash_engine_dead;
    struct mp_strv crash_sites;
    char *startup_error;
    long startup_error_line;
    char *error_quote;        /* "server.log:N: text; ..." or NULL */
    long last_error_line;
};
void mp_attempt_obs_release(struct mp_attempt_obs *o);

/* "clean", "startup-failure", "crashed", "hang", "interrupted", "error",
 * "same-config", "resolved". */
const char *mp_outcome_name(enum mp_outcome o);
/* The inverse; an unknown or NULL name is MP_OUT_ERROR. */
enum mp_outcome mp_outcome_from_name(const char *name);

/* Another selection the engine logged ("MxFp8 MoE" = "MARLIN"), with its
 * server.log line. */
struct mp_sel {
    char *what, *value;
    long line;
};
/* How many lines of one kind the log had ("autotuner-skipped": FlashInfer
 * autotuner tactics that failed to profile) and the first one's line. */
struct mp_tally {
    char *name;
    long count, first_line;
};
/* The speculative (MTP) drafter's own MoE selection: loaded_line = 0 when
 * the engine loaded no drafter; moe_backend NULL when the drafter logged no
 * selection of its own. */
struct mp_resolved_drafter {
    long loaded_line, line;
    char *moe_backend, *moe_kind;
    struct mp_strv moe_candidates;
};

/* What the engine's log said it resolved (NULL / 0 when it did not say).
 * The *_line fields are server.log line numbers. Owned strings. */
struct mp_resolved {
    char *moe_backend;
    struct mp_strv moe_candidates;
    char *linear_kernel, *attention_backend, *engine_version, *model, *quantization;
    char *moe_backend_flag;
    struct mp_strv unknown_env;
    struct mp_strv linear_kernels;   /* dense kernels by method, "method=Kernel" */
    char *unquantized_moe_backend;   /* "Using X Unquantized MoE backend" (MTP drafter) */
    long moe_backend_line, linear_kernel_line, attention_backend_line, unknown_env_line;
    /* beyond the target's MoE, dense and attention selections (model/resolved.c) */
    char *moe_kind;                  /* the oracle of moe_backend: "NvFp4", "MxFp8", ... */
    char *device;                    /* the GPU the log names ("sm121"), or NULL */
    struct mp_resolved_drafter drafter;
    struct mp_sel *other;            /* other selection lines, in log order */
    size_t nother;
    struct mp_tally *tallies;        /* FlashInfer autotuner counts and the like */
    size_t ntallies;
    struct mp_strv fatal_messages;   /* the distinct fatal messages of the log */
};
void mp_resolved_release(struct mp_resolved *v);
/* Deep copy into *dst (overwritten, not released). */
void mp_resolved_copy(struct mp_resolved *dst, const struct mp_resolved *src);
/* Append a selection / a tally (strings copied). */
void mp_resolved_add_sel(struct mp_resolved *v, const char *what, const char *value, long line);
void mp_resolved_add_tally(struct mp_resolved *v, const char *name, long count, long first_line);
/* The part beyond the classic columns (moe_kind, device, drafter, other,
 * tallies, fatal_messages) as one JSON text (the store's resolved_more),
 * NULL when all empty; and back (a damaged text leaves v as it was).
 * Caller frees the text. */
char *mp_resolved_more_to_json(const struct mp_resolved *v);
void mp_resolved_more_from_json(struct mp_resolved *v, const char *json);

/* One GPU metric over an attempt's samples: min, median, max; n = 0 when
 * never read. */
struct mp_gpu_stat {
    double min, median, max;
    size_t n;
};

/* What the GPU did during an attempt (observe/telemetry.h); samples = 0: not
 * sampled (no NVML). */
struct mp_gpu_telemetry {
    size_t samples;
    struct mp_gpu_stat sm_clock_mhz, temperature_c, power_w, memory_used_mib;
    unsigned long long throttle_reasons; /* NVML clock-event bits seen in any sample */
};

/* The throttle reasons as words ("sw_power_cap, hw_thermal"; unknown bits
 * as "other 0x..."; bit 0, GPU idle, is no throttle), into out. */
void mp_gpu_reasons_str(unsigned long long reasons, char *out, size_t n);

/* The distributions of one phase's OK requests, in bounded histograms
 * (base/hist.h): memory and storage grow with nothing the engine sends.
 * Each metric has the one definition of docs/metrics.md (`vllm bench
 * serve`'s names). Empty (n = 0) when the phase served nothing. */
struct mp_phase_metrics {
    struct mp_hist ttft_ms;    /* TTFT: request sent to first output token */
    struct mp_hist tpot_ms;    /* TPOT: (E2E - TTFT) / (output tokens - 1), requests of > 1 token */
    struct mp_hist itl_ms;     /* ITL: every gap between successive token events */
    struct mp_hist e2e_ms;     /* E2E latency: request sent to its last token event */
    struct mp_hist req_tok_s;  /* per-request decode rate, tok/s (values are rates, not ms) */
};
/* Free the histograms; *m becomes empty. */
void mp_phase_metrics_release(struct mp_phase_metrics *m);
/* dst += src, metric by metric, bucket-wise (mp_hist_merge); src unchanged. */
void mp_phase_metrics_merge(struct mp_phase_metrics *dst, const struct mp_phase_metrics *src);

struct mp_phase_result {
    char name[32];
    int level;
    int planned;
    int ok;                    /* completed: outcome MP_LG_OK (with or without a token event) */
    int failed;                /* every other generation request */
    double wall_s;             /* duration: first request sent to last request ended */
    long tokens;               /* output tokens of the completed requests */
    double tok_s;              /* output_throughput: tokens / wall_s (0 when unknown) */
    double req_tok_s_p50;      /* per-request decode rate, median */
    long prompt_tokens;        /* summed usage.prompt_tokens of prompt_n OK requests */
    int prompt_n;
    /* while the phase runs (not stored): its span, monotonic ns (0 = no request yet) */
    int64_t t_first_start_ns;  /* the earliest t_start_ns of its requests */
    int64_t t_last_end_ns;     /* the latest t_end_ns */
    struct mp_phase_metrics m; /* owned */
    struct mp_server_metrics srv; /* the engine's /metrics over the phase (model/srvmetrics.h) */
};

/* Did a knob reach the engine? */
enum mp_dlv_status {
    MP_DLV_VERIFIED = 0,  /* seen in the engine's environment / arguments */
    MP_DLV_MISSING,       /* looked for where it must be, and not there */
    MP_DLV_UNVERIFIED,    /* could not be looked for (evidence says why) */
};
/* "verified", "missing", "unverified". */
const char *mp_dlv_status_name(enum mp_dlv_status s);
/* The inverse; an unknown or NULL name is MP_DLV_UNVERIFIED. */
enum mp_dlv_status mp_dlv_status_from_name(const char *name);
struct mp_attempt_result;
/* True when knob j of attempt p (NULL: false) is one whose delivery could
 * not be checked while the engine served: the note a verdict carries. An
 * engine that never became ready measured nothing with its knobs. */
bool mp_dlv_unverified_note(const struct mp_attempt_result *p, size_t j);
struct mp_knob_dlv {
    char *knob;           /* "NAME=VALUE" or "--flag value", secret values redacted */
    enum mp_dlv_status status;
    char *evidence;       /* where it was (not) seen, secret values redacted */
};

struct mp_attempt_result {
    char *dir;                 /* attempt directory */
    int index;                 /* 1-based attempt number of its candidate */
    bool launch_blocking;
    enum mp_outcome outcome;
    char *command;             /* display form, secrets redacted */
    struct mp_resolved res;    /* resolved from the log */
    /* failure */
    char *fail_class;          /* crash class ("illegal-address", "http-error", ...) */
    char *fail_message;        /* the engine's own words where possible */
    long fail_line;            /* server.log line of the evidence, 0 = none */
    struct mp_strv sites;      /* crash sites from the traceback */
    char *launch_site;         /* innermost frame outside torch/triton/CUDA wrappers */
    bool engine_dead;
    unsigned long ok_before_failure; /* generation requests served OK before the failure */
    char *fail_phase;          /* phase in which it failed */
    char *exit_desc;           /* "exited with status 0", ... or NULL if still running at teardown */
    bool cuda_fault;           /* the failure has CUDA-fault evidence in the log (crash class,
                                * mp_kn_class_is_cuda_fault): only then is it diagnosed */
    bool engine_died;          /* the engine exited, or its log says the engine died, before
                                * teardown (else it stayed up: a failure is a server error) */
    long fail_request_line;    /* requests.jsonl line of the first failed request, 0 = none */
    int announced_port;        /* port the engine said it listens on (0 = not said) */
    struct mp_gpu_telemetry gpu; /* samples = 0: none (no NVML) */
    struct mp_gpu_fault fault; /* core-dump kernels, Xids (run/crashinfo.h) */
    struct mp_attempt_obs obs; /* what its failure is judged from (fail_* above are the
                                * judgement, verdict/classify.h) */
    char *same_as;             /* MP_OUT_SAME_CONFIG: the candidate it is the same as */
    char *same_why;            /* ... and why that is safe (knobs that differ) */
    /* knob delivery, one entry per knob of the candidate (and per extra
     * variable such as CUDA_LAUNCH_BLOCKING=1), checked once the engine was
     * ready (engine/delivery.h) */
    struct mp_knob_dlv *dlv;
    size_t ndlv;
    /* workload */
    struct mp_phase_result phases[MP_MAX_PHASES + 2]; /* + extended + quality */
    size_t nphases;
    unsigned long req_ok, req_failed;
    double ready_s;            /* spawn to ready */
    double selected_s;         /* spawn to every selection line logged (logs/selstop.h), 0 = not
                                * seen; measured while the run goes (not stored): the ETA's
                                * cost of a stop at the selection lines */
    double workload_s;         /* ready to end of workload */
    double teardown_s;
    double wall_s;             /* whole attempt */
    int teardown_leftovers;    /* processes of this attempt found alive after teardown */
    bool teardown_killed;
    int escapees_killed;
    char **texts;              /* first generated texts per workload prompt index */
    size_t ntexts;
    char **quality_texts;      /* greedy output per quality prompt (NULL = not run/failed) */
    size_t nquality;
    struct mp_evidence *evidence; /* owned; cited log lines and timeline (store/evidence.h), NULL = none */
    struct mp_score *score;    /* owned; the scoring pass (run/score.h), NULL = not run */
};

/* Append a delivery entry (strings copied). */
void mp_attempt_add_dlv(struct mp_attempt_result *r, const char *knob, enum mp_dlv_status st,
                        const char *evidence);
/* The first entry with status st, or NULL. */
const struct mp_knob_dlv *mp_attempt_find_dlv(const struct mp_attempt_result *r,
                                              enum mp_dlv_status st);

/* Frees every owned field; *r is zeroed. */
void mp_attempt_result_release(struct mp_attempt_result *r);

/* Is r an attempt whose evidence is incomplete (outcome MP_OUT_ERROR,
 * fail_class MP_FAIL_EVIDENCE: a cut log, or moeprobe's own limit), from
 * which no verdict is drawn? The one test of that stored class; NULL is
 * false. */
bool mp_attempt_evidence_incomplete(const struct mp_attempt_result *r);

/* True for a phase that measures the engine under the workload's load, the requests `vllm bench
 * serve` would measure: "sequential", "concurrency-N", a soak's timed phase ("soak") and the
 * diagnosis' continuation at the highest level ("extended"). Not the warm-up, the output check
 * ("quality": greedy, 32 tokens, EOS honoured) or "prefill-N" (long prompts, 3 requests). */
bool mp_phase_is_load(const char *name);

/* The attempt's distributions over its load phases (mp_phase_is_load): *out (zeroed here) gets
 * those phases' histograms merged bucket-wise. r may be NULL (empty). Release with
 * mp_phase_metrics_release. */
void mp_attempt_metrics(const struct mp_attempt_result *r, struct mp_phase_metrics *out);

#endif
