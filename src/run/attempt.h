/* attempt.h - one start of the engine for a candidate, from spawn to
 * teardown: wait for ready, read the resolved backends from the log, drive
 * the workload phases, watch for every kind of failure, tear down, and
 * summarise what happened. qualify, diagnose and minimize are built from
 * attempts.
 *
 * Everything an attempt learns is written into its directory as it happens:
 *   server.log        the engine's stdout+stderr, byte for byte (lines)
 *   server.times      one line per server.log line: seconds since spawn
 *   requests.jsonl    one JSON object per finished request
 *   attempt.json      the summary (written at the end)
 * Loop-thread only; not re-entrant. */
#ifndef MP_ATTEMPT_H
#define MP_ATTEMPT_H

#include "compat.h"

#include "cli/spec.h"

struct mp_knowledge;
struct mp_store;

#define MP_MAX_PHASES 16

struct mp_phase_spec {
    char name[32];  /* "warmup", "sequential", "concurrency-4", "extended" */
    int level;      /* requests in flight */
    int requests;   /* requests in the phase */
    double duration_s; /* > 0: also stop starting requests after this long (soak) */
};

struct mp_workload {
    struct mp_phase_spec phases[MP_MAX_PHASES];
    size_t nphases;
    /* After the phases, keep going at the highest level until this many
     * requests succeeded in total (diagnosis); 0 = no extension. */
    unsigned long min_total_ok;
    int max_tokens;
    bool chat;
    double ready_timeout_s;
    double stall_timeout_s;
    double grace_s;          /* teardown grace period */
    const char *api_key;     /* borrowed; never logged */
};

/* Default workload: warmup 1, sequential 10, concurrency 4:16 and 8:32. */
void mp_workload_default(struct mp_workload *w);
/* Parse "LEVEL:REQUESTS" and append a concurrency phase. 0 or MP_EUSAGE. */
int mp_workload_add_conc(struct mp_workload *w, const char *spec);

enum mp_outcome {
    MP_OUT_CLEAN = 0,          /* every phase ran with zero failures */
    MP_OUT_STARTUP_FAILURE,    /* never became ready */
    MP_OUT_CRASH,              /* failed after ready: engine died, requests failed */
    MP_OUT_HANG,               /* alive, no token progress for stall_timeout */
    MP_OUT_INTERRUPTED,        /* moeprobe got a signal */
    MP_OUT_ERROR,              /* moeprobe could not run it (spawn, I/O) */
};
const char *mp_outcome_name(enum mp_outcome o);

struct mp_phase_result {
    char name[32];
    int level;
    int planned, ok, failed;
    double wall_s;
    long tokens;
    double tok_s;              /* aggregate output tokens / phase wall time */
    double req_tok_s_p50;      /* per-request decode rate, median */
};

struct mp_attempt_result {
    char *dir;                 /* attempt directory */
    int index;                 /* 1-based attempt number of its candidate */
    bool launch_blocking;
    enum mp_outcome outcome;
    char *command;             /* display form, secrets redacted */
    /* resolved from the log (NULL when the log did not say) */
    char *moe_backend;
    struct mp_strv moe_candidates;
    char *linear_kernel, *attention_backend, *engine_version, *model, *quantization;
    char *moe_backend_flag;
    struct mp_strv unknown_env;
    struct mp_strv linear_kernels;   /* dense kernels by method, "method=Kernel" */
    char *unquantized_moe_backend;   /* "Using X Unquantized MoE backend" (MTP drafter) */
    long moe_backend_line, linear_kernel_line, attention_backend_line, unknown_env_line;
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
    /* knob delivery, one entry per knob (same index in the three lists):
     * dlv_knob "NAME=VALUE" or "--flag value" (secret values redacted),
     * dlv_status "verified" | "missing" | "unverified", dlv_evidence why */
    struct mp_strv dlv_knob, dlv_status, dlv_evidence;
    /* workload */
    struct mp_phase_result phases[MP_MAX_PHASES + 2]; /* + extended + quality */
    size_t nphases;
    unsigned long req_ok, req_failed;
    double *ttft_ms, *itl_ms, *e2e_ms, *req_tok_s;  /* samples of OK requests */
    size_t nttft, nitl, ne2e, nreq_tok_s;
    double ready_s;            /* spawn to ready */
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
};

struct mp_attempt_opts {
    const char *dir;                   /* created if missing */
    char *const *cmd;                  /* server command words */
    size_t ncmd;
    const struct mp_candidate *cand;
    int port;                          /* resolved port */
    bool launch_blocking;              /* add CUDA_LAUNCH_BLOCKING=1 */
    int index;
    const struct mp_knowledge *kn;     /* borrowed */
    const struct mp_workload *wl;      /* borrowed */
    int signal_fd;                     /* signalfd for SIGINT/SIGTERM/SIGHUP/SIGCHLD or -1 */
    const char *label;                 /* progress label, e.g. "cutlass 2/5" */
    bool progress;                     /* draw a live progress line on stderr */
    /* Output check: after a clean workload, each prompt is sent once, greedy
     * (temperature 0), without ignore_eos, with quality_max_tokens (default
     * 32), one at a time, as phase "quality". NULL/0 = no quality phase. */
    const char *const *quality_prompts;
    size_t nquality;
    int quality_max_tokens;
    /* Evidence store (NULL = none): the engine's pid and marker and every
     * finished request are written to attempt row store_attempt as they
     * happen; secret values are masked in server.log and requests.jsonl. A
     * store write error ends the attempt (outcome MP_OUT_ERROR, return
     * MP_EDB). */
    struct mp_store *store;
    int64_t store_attempt;
    /* Attach mode (soak --base-url): drive a server someone else started
     * at attach_url instead of spawning cmd; attach_log (or NULL) is its log
     * file, read from the beginning and followed as it grows. Nothing is
     * torn down. */
    const char *attach_url;
    const char *attach_log;
};

/* Run one attempt. Returns 0 when the attempt ran (whatever its outcome;
 * see r->outcome), or <0 when moeprobe itself failed (r->fail_message says
 * why). *r must be zeroed by the caller; release with
 * mp_attempt_result_release. When interrupted, *signo_out gets the signal. */
int mp_attempt_run(const struct mp_attempt_opts *o, struct mp_attempt_result *r, int *signo_out);
void mp_attempt_result_release(struct mp_attempt_result *r);

/* The fixed prompts of the workload (NULL-terminated). */
extern const char *const mp_prompts[];

/* Pick a free TCP port on 127.0.0.1 (>0) or <0 on error. */
int mp_free_port(void);
/* True when something already listens on 127.0.0.1:port. */
bool mp_port_in_use(int port);

#endif
