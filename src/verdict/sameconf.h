/* sameconf.h - is a candidate the same configuration as one already tested
 * in this run, so that its engine can be stopped as soon as its selection
 * lines are in the log? "The same" must be safe, not hopeful:
 *
 *   - the engine version is known and equal;
 *   - the resolved MoE backend is known and equal, and so are the
 *     unquantized MoE backend, every dense kernel (by method) and the
 *     attention backend (absent in both counts as equal), the MoE line's
 *     oracle, the MTP drafter's own MoE selection (or its absence) and the
 *     other selection lines (one in one log only counts, except those the
 *     engine logs after model loading, such as the allreduce fusion);
 *   - every knob by which the two candidates differ is one the engine itself
 *     reported as unknown (`Unknown vLLM environment variable detected`, in
 *     the run of the candidate that has it), or one the knowledge marks as
 *     acting only through the backend selection of its area in that engine
 *     version (era `selection_only`), with that area's selection logged.
 *
 * A knob the knowledge does not know, or one that changes kernel behaviour
 * without changing a selection line (VLLM_MARLIN_USE_ATOMIC_ADD), makes the
 * two different. Pure: no I/O. */
#ifndef MP_SAMECONF_H
#define MP_SAMECONF_H

#include "compat.h"

#include "model/attempt.h"
#include "model/candidate.h"

struct mp_knowledge;

struct mp_sameconf {
    bool same;
    char *why; /* owned, never NULL after a judgement: one sentence, secrets redacted */
};

/* Judge candidate b (resolution rb, from its own start) against candidate
 * a, tested already (resolution ra). Fills *out (release it). */
void mp_sameconf_judge(const struct mp_knowledge *kn, const struct mp_candidate *a,
                       const struct mp_resolved *ra, const struct mp_candidate *b,
                       const struct mp_resolved *rb, struct mp_sameconf *out);
void mp_sameconf_release(struct mp_sameconf *s);

#endif
