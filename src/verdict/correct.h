/* correct.h - correctness across the candidates of a report: who agrees
 * with whom (quality/agree.h), the task gate, the class that makes a stable
 * candidate wrong-output (docs/verdicts.md "wrong-output"). Pure: no I/O;
 * strings returned are owned by the caller.
 *
 * Task gate: each candidate's accuracy (right / answered) with its Wilson
 * 95 % interval; the best is the highest accuracy (ties: more answers, then
 * the earlier candidate); a candidate fails when the one-sided
 * two-proportion z test (pooled) puts it below the best at 95 %
 * (z > 1.645). */
#ifndef MP_VERDICT_CORRECT_H
#define MP_VERDICT_CORRECT_H

#include "compat.h"

#include "model/correct.h"
#include "model/report.h"
#include "model/score.h"

/* Which candidates take part: a finished candidate whose verdict so far is
 * stable and whose primary attempt has a score. Fills rep->cor (released
 * first) from the primary attempts: configuration groups (equal resolved
 * backends and engine version), agreement against the consensus or
 * rep->cor.reference (kept), the task gate, the class; same-configuration
 * results get their representative's correctness (shared_from). */
void mp_correct_compute(struct mp_report *rep);

/* The task gate over count candidates' answered / right counts (n[i] = 0:
 * not run): acc[i].result, n, right, low, high, z and best. */
void mp_correct_gate(const size_t *n, const size_t *right, size_t count, struct mp_accuracy *acc);
/* The same against one bar (n[bar] > 0) instead of the best: the bar
 * passes, each other fails only when the test puts it below the bar at
 * 95 % (a better one passes). mp_correct_compute uses it in a bisect run
 * (rep->subcommand "bisect") with the reference, the good build: against
 * the best of the builds the good one would fail next to a luckier build. */
void mp_correct_gate_bar(const size_t *n, const size_t *right, size_t count, long bar,
                         struct mp_accuracy *acc);

/* Step 2b of mp_verdict_finalize: a stable candidate with a correctness
 * class becomes wrong-output, *why_out saying what diverged and how much;
 * a stable one that was measured keeps its verdict and *why_out adds what
 * was checked ("agrees with 3 others: top-1 99.2 %, mean |Δ| 0.012 nats;
 * 62/64 task answers right"). Otherwise v, *why_out NULL. names: candidate
 * names by index (for the best of the task gate). */
enum mp_verdict mp_verdict_correctness(enum mp_verdict v, const char *why,
                                       const struct mp_correctness *k, const struct mp_report *rep,
                                       char **why_out);

/* For the recommendation of candidate i (stable, scored): why its
 * correctness is not established, in words ("correctness not established:
 * its logprobs disagree with 'b' and the task gate did not tell which one
 * is wrong"), or NULL when it agrees with the others, when a disagreeing
 * partner failed the task gate, or when it was not scored (the report's
 * correctness section says why). Caller frees. */
char *mp_correct_caveat(const struct mp_report *rep, size_t i);

/* minimize: does test's scoring agree with the --to set's (ref)? NULL when
 * it does or nothing could be compared, else why not (caller frees).
 * *compared (may be NULL) tells the two NULLs apart: true when the logprobs
 * or the task answers of both could be compared. */
char *mp_correct_against(const struct mp_score *ref, const char *ref_name,
                         const struct mp_score *test, const char *test_name, bool *compared);

#endif
