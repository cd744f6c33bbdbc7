/* derive.h - what the report derives across candidates once their
 * verdicts are known (docs/verdicts.md "Recommendation"): same-backend
 * groups and no-op knobs. Pure: no I/O; reads the model, fills the
 * report's derived lists (released by mp_report_derived_release). */
#ifndef MP_VERDICT_DERIVE_H
#define MP_VERDICT_DERIVE_H

#include "compat.h"

#include "model/report.h"

/* Do two attempts resolve to the same destination? Their MoE backend is
 * logged (not NULL) and equal, and so are the dense kernel(s) and the
 * attention backend (NULL equals only NULL). */
bool mp_verdict_same_resolved(const struct mp_attempt_result *a, const struct mp_attempt_result *b);

/* Append to rep->groups every set of two or more candidates whose primary
 * attempts resolved the same (mp_verdict_same_resolved), in candidate order
 * ("same destination, different road"). A not-delivered candidate, or one
 * whose MoE backend is not logged, is in none. Group strings are borrowed
 * from the attempts. */
void mp_verdict_groups(struct mp_report *rep);

/* Append to rep->noop each knob (mp_candidate_knobs: env words, then flag
 * groups such as "--moe-backend cutlass") of every candidate that resolved
 * exactly like the first knob-less candidate with an attempt (whose MoE
 * backend is logged): resolved_like names that one; an env knob carries
 * the engine's "Unknown vLLM environment variable detected: NAME" when the
 * engine called NAME unknown; delivery is the knob's delivery status (and
 * evidence unless verified). A not-delivered candidate adds none. */
void mp_verdict_noop(struct mp_report *rep);

#endif
