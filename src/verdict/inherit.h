/* inherit.h - what the inherited environment (model/inherit.h) means for
 * the verdicts: which variables act on a backend selection (the
 * knowledge, per engine version), the candidate as the engine really ran
 * it (its knobs plus what it inherited), and which no-op claims an acting
 * inherited variable makes unsafe. Pure. */
#ifndef MP_VERDICT_INHERIT_H
#define MP_VERDICT_INHERIT_H

#include "compat.h"

#include "model/candidate.h"
#include "model/inherit.h"

struct mp_knowledge;
struct mp_strv;

/* Set acts, affects and note of every variable of in for engine_version
 * (NULL: not known yet; then a variable that acts in some versions of the
 * knowledge and not in others may act: MP_INH_UNKNOWN with affects set and
 * a note saying the version is not known - never a guessed era; the same
 * for a version no era of the knowledge covers). A variable the knowledge does not know acts MP_INH_UNKNOWN when
 * its name is VLLM_* or FLASHINFER_* (those may select kernels) and not one
 * the engine needs to run (mp_inherit_keep: paths, credentials), else
 * MP_INH_NO. */
void mp_inherit_judge(const struct mp_knowledge *kn, const char *engine_version,
                      struct mp_inherited *in);

/* c as the engine ran it: c's knobs, then every passed inherited variable
 * c does not set itself as an environment knob, into *out (release it). In
 * the same-configuration judgement both candidates carry the same
 * inherited knobs, so only a candidate that overrides one differs by it. */
void mp_inherit_effective(const struct mp_inherited *in, const struct mp_candidate *c,
                          struct mp_candidate *out);

/* May the no-op claim for knob k be false because an inherited variable
 * acts on the selection (so "auto" is not the engine's default)? True when
 * a passed variable acts or may act and k is not one the engine itself
 * called unknown (engine_unknown). */
bool mp_inherit_masks_noop(const struct mp_inherited *in, bool engine_unknown);

/* Does the environment a resumed run's candidates inherit (now) differ from
 * the one the run started with (was) in a variable that reached them? A
 * sentence naming the first difference (caller frees), or NULL. */
char *mp_inherit_mismatch(const struct mp_inherited *was, const struct mp_inherited *now);

/* "VLLM_A=1, VLLM_B=x": the passed variables that act or may act (caller
 * frees; NULL when none). */
char *mp_inherit_acting_list(const struct mp_inherited *in);

#endif
