/* report.h - the report model of a qualify run: per candidate, every
 * attempt (normal and launch-blocking) and the diagnosis, and what is
 * derived from them (verdict, groups, no-op knobs, recommendation: decided
 * by verdict/verdict.h). Plain data built by store/load.c and read by
 * verdict/ and report/. */
#ifndef MP_MODEL_REPORT_H
#define MP_MODEL_REPORT_H

#include "compat.h"

#include "model/attempt.h"
#include "model/candidate.h"
#include "model/correct.h"
#include "model/fingerprint.h"
#include "model/inherit.h"
#include "model/qcheck.h"
#include "model/verdict.h"
#include "model/workload.h"
#include "strv.h"

#define MP_REPORT_MAX_PCT 8 /* --percentiles takes at most this many */

/* What the CUDA_LAUNCH_BLOCKING=1 run showed. */
enum mp_lb_result {
    MP_LB_NONE = 0,  /* not run, or no evidence */
    MP_LB_CLEAN,     /* it ran its requests clean */
    MP_LB_CRASHED,   /* it failed too */
};
/* "clean", "crashed", or NULL for MP_LB_NONE (report.json's words). */
const char *mp_lb_name(enum mp_lb_result r);
/* The inverse; NULL or an unknown name is MP_LB_NONE. */
enum mp_lb_result mp_lb_from_name(const char *name);

struct mp_diagnosis {
    bool done;
    enum mp_lb_result launch_blocking;
    unsigned long requests_clean;  /* OK requests in the blocked run(s) */
    unsigned long requests_required;
    double confidence;             /* 0.95 when the requirement was met */
    double throughput_ratio;       /* blocked / normal per-request tok/s; <0 unknown */
    char *pinned_site;
    char *launch_site;             /* innermost frame outside the launch machinery */
    char *reasoning;               /* how n was chosen */
    char *note;                    /* why the result is crashed/inconclusive, or NULL */
};

/* Free the diagnosis' strings; *dg becomes empty (throughput_ratio -1). */
void mp_diagnosis_reset(struct mp_diagnosis *dg);

/* How a candidate's diagnosis ran: recorded with the candidate, so that its
 * diagnosis is derived from its attempts again (verdict/diagnose.h
 * mp_verdict_diagnosis), by this moeprobe or a newer one. */
struct mp_diag_policy {
    bool recorded;             /* false: an older store (its stored diagnosis stands) */
    bool diagnose;             /* a crash with CUDA-fault evidence gets the
                                * CUDA_LAUNCH_BLOCKING=1 run */
    bool skipped;              /* --no-diagnose: a crash's note says so */
    bool notes;                /* every other outcome says why it is not diagnosed
                                * (qualify, diagnose; not soak, resolve, bisect) */
    unsigned long cap;         /* --diagnose-max-requests, 0 = none */
    double budget_s;           /* --diagnose-budget, 0 = none */
    int concurrency;           /* the workload's highest level (the blocked run's) */
    unsigned long lead;        /* requests a run serves one at a time before that level
                                * (warm-up, sequential); 0 = not recorded (older runs) */
    unsigned long blocked_lead; /* the same for the blocked run (its sequential phase cut,
                                 * verdict/diagnose.h MP_DIAG_BLOCKED_SEQ); 0 = as lead
                                 * (not recorded: runs before the cut) */
};

struct mp_cand_report {
    struct mp_candidate cand;
    struct mp_attempt_result *attempts; /* normal and blocked, in run order */
    size_t nattempts;
    struct mp_diagnosis diag;       /* derived from the attempts under policy (finalize) when
                                     * policy.recorded, else as stored */
    struct mp_diag_policy policy;
    /* derived by finalize */
    enum mp_verdict verdict;        /* MP_V_NONE if not run, unfinished or without a verdict
                                     * (mp_verdict_name gives DESIGN's word) */
    char *why;                      /* one sentence */
    bool not_run;
    /* The run stopped (signal, kill) before this candidate finished
     * (candidates.done = 0 in the store): no verdict, whatever its attempts
     * show so far; "finished": false in report.json. */
    bool unfinished;
    /* Engines of this candidate that an interruption cut short and that are
     * not among attempts[] (a resume redid them; a kill -9 left them
     * 'running'): counted in its cost, never results (store: attempts whose
     * status is not 'done' and that were not loaded). cut_reruns: of them,
     * normal-mode ones started after a finished normal attempt - extra
     * normal runs of the diagnosis, which count against its budget. */
    unsigned cut_starts, cut_reruns;
    double cut_engine_s;
    /* The candidate cannot exist in the engine's version (its knobs are not
     * there and the preset has no era equivalent): the reason ("not
     * applicable to vLLM 0.15.1: ..."), and it was not started; NULL when
     * it applies. Verdict not-applicable. */
    char *not_applicable;
};

/* Candidates that reached the same resolved backends by different roads. */
struct mp_group {
    const char *moe_backend, *linear_kernel, *attention_backend; /* borrowed from attempts */
    struct mp_strv candidates;
};

/* A knob whose candidate resolved exactly like the knob-less candidate. */
struct mp_noop {
    char *candidate, *knob, *resolved_like;
    char *engine_warning; /* the engine's "unknown variable" line, or NULL */
    const char *delivery; /* how the knob reached the engine: "verified" | "unverified"
                           * (knob_delivery), or NULL when it was not checked */
    char *delivery_evidence; /* for "unverified": why, or NULL */
};

struct mp_knowledge;

struct mp_report {
    char *moeprobe_version;
    char *run_dir;
    char *started, *finished;       /* ISO 8601 */
    struct mp_fingerprint fp;
    struct mp_cand_report *c;
    size_t n;
    /* what "fastest" means for the recommendation (--objective; the run's
     * own, recorded with it: mp_store_set_report_opts; MP_OBJ_SEQUENTIAL
     * default) */
    enum mp_objective objective;
    /* derived */
    int recommended;                /* index or -1 */
    char *recommendation_why;
    struct mp_strv learned;         /* sentences for the "what we learned" part */
    struct mp_group *groups;
    size_t ngroups;
    struct mp_noop *noop;
    size_t nnoop;
    /* `qualify --model-dir`: what the checkpoint says (mp_report_set_checkpoint) */
    char *checkpoint_json;          /* mp_inspect_to_json output, or NULL */
    /* the engine's kernel coverage (`inspect --engine`'s JSON, compact;
     * qualify/resolve with --engine-dir or a host vllm), or NULL */
    char *engine_kernels_json;
    char *engine_kernels_summary;   /* its "summary", or NULL */
    char *checkpoint_summary;       /* one line, or NULL */
    struct mp_strv checkpoint_notes;
    /* the output check across candidates (index = candidate index) */
    struct mp_qcheck qc;
    /* correctness across candidates (index = candidate index; verdict/correct.h);
     * cor.reference is the run's --reference NAME (kept by mp_correct_compute) */
    struct mp_correct cor;
    /* what every attempt sent (phases, tokens, API, sampling), as the run
     * recorded it; has_workload = false: the store does not say (older
     * run). workload.api_key is always NULL here. */
    struct mp_workload workload;
    bool has_workload;
    /* the percentiles the reports show (--percentiles; report/ falls back to
     * 50, 90, 99 when npercentiles = 0), each in (0, 100], in the order given */
    double percentiles[MP_REPORT_MAX_PCT];
    size_t npercentiles;
    bool interrupted;               /* stopped by a signal (run.interrupted) */
    int resumes;                    /* times it was continued with --resume (run.resumes) */
    char *stopped_by;               /* interrupted by an I/O error of the evidence store
                                     * (run.interrupted = 2): what it was (owned), else NULL */
    char *subcommand;               /* the run's command ("qualify", "soak", ...) or NULL */
    /* what the candidates inherited from moeprobe's environment (judged for
     * the engine version), and --clean-env */
    struct mp_inherited inherited;
    /* the engine version the preset's candidates were expressed for (its
     * era), or NULL (no preset, or not known) */
    char *preset_version;
    /* why the run stopped before its candidates were done (the server
     * command fails before any backend is chosen), or NULL */
    char *stop_reason;
    /* the server command as the run recorded it (secrets masked; {port} as
     * given), for the next steps; empty when not known (attached soak) */
    struct mp_strv server_cmd;
    /* the knowledge whose known issues the reports match (--knowledge;
     * borrowed), NULL: the built-in one */
    const struct mp_knowledge *kn;
};

void mp_report_init(struct mp_report *rep, const char *run_dir);
void mp_report_release(struct mp_report *rep);
/* Free and clear what mp_report_finalize derives (groups, noop knobs). */
void mp_report_derived_release(struct mp_report *rep);
/* Append a candidate (copied); returns its index. */
size_t mp_report_add_candidate(struct mp_report *rep, const struct mp_candidate *c);
/* Append an attempt to candidate i; takes ownership of *owned_a's contents
 * (zeroes it). Returns a pointer valid until the next add. */
struct mp_attempt_result *mp_report_add_attempt(struct mp_report *rep, size_t i,
                                                struct mp_attempt_result *owned_a);
/* The first normal (non-blocking) attempt of a candidate, or NULL. */
const struct mp_attempt_result *mp_cand_primary(const struct mp_cand_report *c);
/* True when the report is a `moeprobe resolve` map: some candidate's first
 * attempt stopped once resolved (no load was driven). */
bool mp_report_is_resolve_map(const struct mp_report *rep);

/* The run did not finish: interrupted by a signal, killed (no finished
 * time), or a candidate is unfinished. */
bool mp_report_incomplete(const struct mp_report *rep);
/* Number of unfinished candidates. */
size_t mp_report_nunfinished(const struct mp_report *rep);
/* What the report shows in a candidate's verdict place: the verdict,
 * "unfinished", "evidence incomplete" (its primary attempt's evidence files
 * could not be written: MP_FAIL_EVIDENCE), or "not run" (static). */
const char *mp_cand_verdict_label(const struct mp_cand_report *c);

/* What `inspect` found in the model directory, as mp_inspect_to_json wrote
 * it's output (NULL clears); summary and
 * notes are derived from it. */
void mp_report_set_checkpoint_json(struct mp_report *rep, const char *json);

/* The engine's kernel coverage as `inspect --engine --json` wrote it (NULL
 * clears); the summary is derived from it. */
void mp_report_set_engine_kernels_json(struct mp_report *rep, const char *json);

/* A --percentiles LIST ("50,90,99.9": at most MP_REPORT_MAX_PCT distinct
 * numbers in (0, 100] with at most 3 decimals) into out[*n]; 0, or -1 with
 * the reason in err (out and *n then unspecified). The one parser of the
 * option and of what the store recorded of it. */
int mp_percentiles_parse(const char *list, double *out, size_t *n, char *err, size_t errn);

#endif
