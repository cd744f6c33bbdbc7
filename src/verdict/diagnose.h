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

/* What c's normal attempts measured for the cost estimate: *start_s the
 * mean spawn-to-ready of those that became ready (0 when none), *req_s the
 * seconds per request (phase wall time / OK requests) of the highest
 * concurrency phase that served (the last such phase; 0 when none). */
void mp_verdict_diag_measure(const struct mp_cand_report *c, double *start_s, double *req_s);

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
