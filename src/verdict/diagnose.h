/* diagnose.h - what the CUDA_LAUNCH_BLOCKING=1 diagnosis decides
 * (docs/verdicts.md "The async-race / kernel-fault discriminator"): whether
 * a candidate is diagnosed, the evidence the required count comes from,
 * whether one more normal run comes first (the thin-evidence rerun), and
 * what the blocked run means. Pure: no I/O, no global state; inputs are
 * borrowed model data. run/runner.c only starts the attempts these ask
 * for. */
#ifndef MP_VERDICT_DIAGNOSE_H
#define MP_VERDICT_DIAGNOSE_H

#include "compat.h"

#include "model/report.h"
#include "verdict/stats.h"

/* At most this many extra normal runs sharpen the estimate before the
 * blocked run. */
#define MP_VERDICT_MAX_RERUNS 3

/* The blocked run's sequential requests (after its warm-up): enough for a
 * median rate beside the normal run's (the throughput ratio); every other
 * request goes at the top level, where a blocked request costs a fraction
 * of one served alone (#27: on a Spark a 256-token blocked request alone is
 * ~30 s, and ten of them were ~5 minutes of every diagnosis). */
#define MP_DIAG_BLOCKED_SEQ 3

/* The workload of the CUDA_LAUNCH_BLOCKING=1 run from the normal one wl:
 * its warm-up, its sequential phase cut to MP_DIAG_BLOCKED_SEQ requests,
 * then only the highest concurrency step (every step at that level),
 * extended to need clean requests (min_total_ok) within budget_s
 * (extend_budget_s; <= 0: none). Writes *out; wl is borrowed. */
void mp_verdict_blocked_workload(const struct mp_workload *wl, unsigned long need, double budget_s,
                                 struct mp_workload *out);

/* Requests a run of wl serves one at a time before its top level (its
 * phases at level <= 1: warm-up, sequential). */
unsigned long mp_verdict_workload_lead(const struct mp_workload *wl);
/* The same for the blocked run of the normal workload wl. */
unsigned long mp_verdict_blocked_lead(const struct mp_workload *wl);

/* Is the candidate whose first normal attempt is p (NULL: no) diagnosed
 * with CUDA_LAUNCH_BLOCKING=1? Only a failure after ready with CUDA-fault
 * evidence in the log, every knob delivered. When not, *note (owned) says
 * why for a startup failure, a hang, a missing knob or a failure without
 * CUDA-fault evidence, and is NULL where there is nothing to say (a clean
 * run, no attempt). */
bool mp_verdict_diagnosable(const struct mp_attempt_result *p, char **note);

/* The normal-mode evidence of c: one observation per normal attempt that
 * crashed (the requests it served before the failure, failed) or ran clean
 * (all its requests, censored), in run order, into obs (room for
 * c->nattempts). Other outcomes are no evidence. Returns the count. */
size_t mp_verdict_diag_evidence(const struct mp_cand_report *c, struct mp_stats_attempt *obs);

/* The contention assumed where the top concurrency was not measured: a
 * request at concurrency C takes 1 + MP_DIAG_CONTENTION x (C - 1) times as
 * long as one alone (the ETA's assumption too, verdict/eta.h). */
#define MP_DIAG_CONTENTION 0.1

/* What c's normal attempts measured for the diagnosis' cost rule, as the
 * engine's time only: moeprobe's own (settling, teardown, scrapes, the gaps
 * between phases, a failed request's wait) is in none of them. */
struct mp_diag_meas {
    double start_s;  /* mean spawn-to-ready of the normal attempts that became ready (0: none) */
    double req1_s;   /* one request alone: the median E2E latency (sent to its last token) of
                      * the OK requests of level-1 phases (warm-up, sequential); 0: none */
    double top_s;    /* seconds per request at `level`: a phase at that level that served
                      * without a failure (wall time / OK requests), else projected from
                      * req1_s: req1_s x (1 + MP_DIAG_CONTENTION x (level - 1)) / level */
    int level;
    bool projected;  /* top_s was projected */
};
/* Fill *m for concurrency level (>= 1). */
void mp_verdict_diag_meas(const struct mp_cand_report *c, int level, struct mp_diag_meas *m);

/* The estimate (*est) and the plan (*plan: what the blocked run is sized
 * by, whether one more normal run comes first) from c's normal attempts
 * under pol, with the engine's times (mp_verdict_diag_meas). The runner
 * decides with it; the derived diagnosis records its reasoning. */
void mp_verdict_diag_estimate(const struct mp_cand_report *c, const struct mp_diag_policy *pol,
                              struct mp_stats_async *est, struct mp_diag_plan *plan);

/* The thin-evidence rerun: one more normal run before the blocked one when
 * the plan says it saves more blocked time than it costs (plan->sharpen)
 * and fewer than MP_VERDICT_MAX_RERUNS were made already (reruns). */
bool mp_verdict_rerun_first(const struct mp_diag_plan *plan, int reruns);
/* The extra normal runs c has had so far: its normal-mode attempts after
 * the first, and those an interruption cut short (c->cut_reruns), so that
 * a resumed run does not start the budget again. */
int mp_verdict_reruns_done(const struct mp_cand_report *c);

/* Blocked / normal median per-request decode rate of c, from the
 * "sequential" phase, else the "warmup" phase, that both modes ran (the
 * best attempt of each mode); <0 when unknown. Contention does not skew it:
 * it is measured at concurrency 1. */
double mp_verdict_throughput_ratio(const struct mp_cand_report *c);

/* The two rates that ratio divides, and where they come from. */
struct mp_diag_rates {
    double normal, blocked;          /* median per-request decode rate, tok/s */
    const char *phase;               /* "sequential" or "warmup" (static) */
    int normal_attempt, blocked_attempt; /* their attempts' 1-based index */
};
/* Fills *out and returns true when both modes ran such a phase, else false. */
bool mp_verdict_diag_rates(const struct mp_cand_report *c, struct mp_diag_rates *out);

/* c's diagnosis, derived from its attempts under policy pol, into *dg
 * (reset first; dg may be &c->diag): for a crash of its first normal
 * attempt with pol->diagnose, what run/runner.c's mp_diagnose ran - the
 * required clean count from every normal attempt (mp_stats_async_estimate,
 * mp_stats_diag_plan with pol's cap, budget and concurrency), the reasoning,
 * and what the last CUDA_LAUNCH_BLOCKING=1 attempt means
 * (mp_verdict_read_blocked, the throughput ratio); or why it is not
 * diagnosed (mp_verdict_diagnosable's note); with pol->skipped a crash says
 * "diagnosis skipped (--no-diagnose)"; with pol->notes every other outcome
 * says why it is not diagnosed (a same-configuration result: "not tested
 * again: ..."). Pure. */
void mp_verdict_diagnosis(const struct mp_cand_report *c, const struct mp_diag_policy *pol,
                          struct mp_diagnosis *dg);

/* What the blocked run b means for dg, which the caller has given
 * requests_required (= required) and throughput_ratio: sets requests_clean,
 * launch_blocking ("clean" | "crashed" | NULL), confidence, pinned_site and
 * launch_site (crashed), and note (replaced; NULL when decided):
 *  - a knob (or CUDA_LAUNCH_BLOCKING=1 itself) missing in b: no evidence;
 *  - clean: confidence 0.95 when b served at least required requests, else
 *    0 and a note with the shortfall (capped: by --diagnose-max-requests;
 *    over_budget: stopped at --diagnose-budget) and its time at b's rate;
 *  - crashed: the pinned site is b's first traceback site (else its
 *    message);
 *  - any other outcome: inconclusive. */
void mp_verdict_read_blocked(const struct mp_attempt_result *b, unsigned long required, bool capped,
                             bool over_budget, struct mp_diagnosis *dg);

#endif
