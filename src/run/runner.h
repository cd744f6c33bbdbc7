/* runner.h - runs attempts for the candidates of a report and diagnoses
 * crashing candidates (the CUDA_LAUNCH_BLOCKING=1 discriminator).
 *
 * The context is shared by qualify, diagnose and minimize: the server
 * command, the workload, where attempts go, and the loop's signal fd.
 * Loop-thread only. */
#ifndef MP_RUNNER_H
#define MP_RUNNER_H

#include "compat.h"

#include "model/report.h"
#include "run/attempt.h"
#include "run/gpuwait.h"

struct mp_runctx {
    const char *run_dir;              /* attempts go to run_dir/attempts/<cand>-<n> */
    char *const *cmd;                 /* server command words (borrowed) */
    size_t ncmd;
    int port;                         /* fixed port, or 0 = pick a free one per attempt */
    const struct mp_knowledge *kn;    /* borrowed */
    const struct mp_workload *wl;     /* borrowed */
    int signal_fd;                    /* signalfd or -1 */
    bool progress;                    /* live progress line on stderr */
    bool progress_lines;              /* stderr is not a terminal: state changes as lines */
    /* measured so far, for the plan and the ETA (filled by mp_run_attempt) */
    size_t meas_full;                 /* attempts that ran their workload */
    double meas_full_s;               /* ... their summed wall time */
    double meas_ready_s;              /* summed start-up of attempts that became ready */
    size_t meas_ready;
    double meas_req_s;                /* summed workload seconds ... */
    unsigned long meas_reqs;          /* ... over this many requests */
    double meas_score_s;              /* scoring passes' summed wall time (run/score.h) ... */
    size_t meas_score;                /* ... over this many attempts */
    bool plan_said;
    bool diagnose;                    /* crashes will be diagnosed (the ETA counts them) */
    struct mp_gpuwait *gpuwait;       /* wait for the previous engine's GPU memory before
                                       * each start (run/gpuwait.h; the session's) or NULL */
    /* the caller's own work beyond the candidates (minimize's tests): called
     * before each estimate to set the three fields below (may be NULL) */
    void (*eta_prepare)(void *ud, const struct mp_report *rep);
    void *eta_ud;
    double eta_extra_attempts;        /* attempts it still expects */
    const struct mp_workload *eta_extra_wl; /* ... of this workload (NULL: wl) */
    double eta_extra_fail_share;      /* ... of which this share fail early */
    bool quiet;                       /* no per-attempt lines on stderr */
    unsigned long diag_max_requests;  /* cap on the blocked run's required requests */
    double diag_budget_s;             /* --diagnose-budget: the blocked run stops there (0 = none) */
    const char *const *quality_prompts; /* output-check prompts (borrowed) or NULL */
    size_t nquality;
    const struct mp_score_plan *score; /* the scoring pass of primary attempts (run/score.h),
                                        * borrowed, or NULL */
    const char *attach_url;           /* soak --base-url: drive this server, spawn nothing */
    const char *attach_log;           /* soak --log: its log file to follow, or NULL */
    bool dedupe;                      /* resolve first: a candidate's first normal attempt
                                       * stops once its log shows the configuration of a
                                       * candidate tested already (verdict/sameconf.h) */
    const char *cwd;                  /* the engine's working directory (a resumed
                                       * run: where it was started), NULL = ours */
    bool resolve_only;                /* `moeprobe resolve`: stop each engine once resolved */
    const struct mp_inherited *inherited; /* what every candidate inherits (borrowed) or NULL:
                                       * counted as knobs of each in the same-configuration
                                       * judgement (verdict/inherit.h) */
    bool no_coredump, keep_coredumps; /* GPU core dumps (run/crashinfo.h) */
    int signo;                        /* set when interrupted */
    struct mp_store *store;           /* evidence store (borrowed) or NULL: every
                                       * candidate and attempt is recorded as it runs */
};

/* Run one attempt of candidate ci (normal, or with CUDA_LAUNCH_BLOCKING=1)
 * with workload wl (NULL = ctx->wl), append it to the report and return it
 * through *out (valid until the next attempt is added). Returns 0, or <0
 * when moeprobe could not run it (every such failure's message printed):
 * MP_ECOMMAND when the server command cannot be started (its attempt is
 * recorded); MP_EUSAGE for an input error (the --port is taken; a symbolic
 * link planted where the attempt writes: attempts/, its directory,
 * server.log, server.times, requests.jsonl - never written through);
 * another code for an internal or I/O error. ctx->signo is set when
 * interrupted. */
int mp_run_attempt(struct mp_runctx *ctx, struct mp_report *rep, size_t ci, bool blocking,
                   const struct mp_workload *wl, const struct mp_attempt_result **out);

/* Run the attempts the diagnosis of candidate ci needs, when its first
 * attempt crashed with CUDA-fault evidence (verdict/diagnose.h): gather
 * normal-mode evidence (more normal attempts, at most 3, while one is
 * expected to save more blocked time than it costs: mp_stats_diag_plan on
 * measured start-up and request times), print the estimate, run with
 * CUDA_LAUNCH_BLOCKING=1 within ctx->diag_budget_s. What they mean is
 * derived afterwards (mp_run_candidate_diagnosis). Returns 0 or <0
 * (moeprobe error). */
int mp_diagnose(struct mp_runctx *ctx, struct mp_report *rep, size_t ci);

/* The diagnosis policy of a run: *pol recorded, from ctx's cap, budget and
 * workload, with what the command does (verdict/diagnose.h). */
void mp_run_diag_policy(const struct mp_runctx *ctx, bool diagnose, bool skipped, bool notes,
                        struct mp_diag_policy *pol);
/* Candidate ci is done: its policy, and its diagnosis derived from its
 * attempts (mp_verdict_diagnosis), into rep->c[ci]. */
void mp_run_candidate_diagnosis(struct mp_report *rep, size_t ci, const struct mp_diag_policy *pol);

/* `--resume`: end what a dead run left (the engines of the attempts the
 * store still has "running", ended by proc/, and every engine process it
 * recorded: mp_run_end_seen_procs) and mark those attempts interrupted. *killed gets the number of processes signalled. 0 or MP_EDB. */
int mp_run_end_dead_run(struct mp_store *st, int *killed);
/* End every engine process the store recorded (procwatch.c: pid, start
 * time and boot id must all match: a recycled pid is never hit) that is
 * still alive. Returns how many were signalled, or MP_EDB. */
int mp_run_end_seen_procs(struct mp_store *st);

#endif
