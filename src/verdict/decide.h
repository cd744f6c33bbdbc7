/* decide.h - one candidate's verdict from its facts: the rules of DESIGN.md
 * "Verdict rules" and docs/verdicts.md as code. Pure: no I/O, no global
 * state; every input is borrowed model data, every sentence returned is
 * owned by the caller (free). The order in which they apply to a report is
 * verdict.h's (mp_verdict_finalize):
 *
 *   1. mp_verdict_decide        the candidate's own attempts and diagnosis
 *   2. mp_verdict_output_check  a stable candidate whose answers are garbage
 *   2b. mp_verdict_correctness  a stable candidate that computes something else
 *                               (verdict/correct.h): wrong-output
 *   3. mp_verdict_shared        a same-configuration result takes its
 *                               representative's verdict
 *   4. mp_verdict_delivery      a knob that never reached the engine
 *                               overrides everything (not-delivered) */
#ifndef MP_VERDICT_DECIDE_H
#define MP_VERDICT_DECIDE_H

#include "compat.h"

#include "model/qcheck.h"
#include "model/report.h"

/* The verdict of c from its first normal attempt (mp_cand_primary) and its
 * diagnosis; *why (owned, never NULL) says why in one sentence:
 *  - no verdict (MP_V_NONE): evidence incomplete (MP_FAIL_EVIDENCE: a cut
 *    log proves nothing), unfinished, not run, resolved only, interrupted,
 *    and a same-configuration result (its representative decides, step 3);
 *  - clean -> stable; never ready (or moeprobe could not run it) ->
 *    startup-failure; stalled -> hang;
 *  - failed after ready: without CUDA-fault evidence, server-error when the
 *    engine stayed up, crashed when it died (not diagnosed); with it,
 *    kernel-fault when the CUDA_LAUNCH_BLOCKING=1 run crashed too,
 *    async-race when it ran clean for at least requests_required requests
 *    (requests_clean >= requests_required), else crashed (with the
 *    diagnosis note: skipped, inconclusive, short of the required count). */
enum mp_verdict mp_verdict_decide(const struct mp_cand_report *c, char **why);

/* The output check (step 2) on a verdict v with sentence why (borrowed):
 * only a stable candidate the check ran for changes. q garbage ->
 * MP_V_GARBAGE_OUTPUT; q ok -> stable with "output check passed (P of
 * nprompts sanity prompts)" appended. *why_out (owned) is the new sentence,
 * or NULL when nothing changed (v returned). */
enum mp_verdict mp_verdict_output_check(enum mp_verdict v, const char *why,
                                        const struct mp_qcand_out *q, size_t nprompts,
                                        char **why_out);

/* A same-configuration result (step 3): c's primary attempt is
 * MP_OUT_SAME_CONFIG; r is the candidate it names (same_as) with r's final
 * verdict (after its own steps 1-2), or NULL when that is not in the report.
 * Returns r's verdict, or MP_V_NONE when r is NULL or has none; *why
 * (owned) is "shared with 'X', not tested again: ...". */
enum mp_verdict mp_verdict_shared(const struct mp_cand_report *c, const struct mp_cand_report *r,
                                  char **why);

/* Knob delivery (step 4): when c's primary attempt found a knob missing,
 * and c has a verdict or stopped once resolved (as the same configuration,
 * or by `moeprobe resolve`), and c is finished: MP_V_NOT_DELIVERED, with
 * *why_out (owned) naming the knob, its evidence and what the run did test
 * (v and why, borrowed). Otherwise v and *why_out = NULL. */
enum mp_verdict mp_verdict_delivery(const struct mp_cand_report *c, enum mp_verdict v,
                                    const char *why, char **why_out);

#endif
