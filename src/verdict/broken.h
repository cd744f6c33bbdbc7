/* broken.h - is it the server command that fails, not the backends? An
 * engine that dies before it logs any kernel selection, for a reason that
 * names none of its candidate's knobs (the model is not found, a token is
 * missing, memory runs out before selection, an argument that is not a
 * knob is wrong), fails the same way whatever the knobs: when the first
 * attempts of a run all die like that, the same way, no backend can be
 * judged, and the run stops (cli: exit 2, "your server command fails
 * before any backend is chosen"). Pure. */
#ifndef MP_VERDICT_BROKEN_H
#define MP_VERDICT_BROKEN_H

#include "compat.h"

#include "model/attempt.h"
#include "model/candidate.h"

/* Did attempt a of candidate c die before any kernel selection line, for
 * a reason that names none of c's knobs (a name, a flag, a flag's value in
 * any case, an environment value as Python quotes it) and is not itself
 * about backends (class no-moe-backend or unsupported-backend: the
 * selection ran and found none, which knobs decide)? */
bool mp_broken_before_selection(const struct mp_candidate *c, const struct mp_attempt_result *a);

/* Did two such attempts die the same way: the same failure class, and the
 * same message once digits (line numbers, pids, ports) are set aside? */
bool mp_broken_same_way(const struct mp_attempt_result *a, const struct mp_attempt_result *b);

/* Do candidates a and b share no knob (no environment name, no flag)? Two
 * attempts that die the same way are evidence that the command fails
 * whatever the knobs only when their knobs are apart: auto (no knob) and
 * any other, or cutlass and marlin - never two candidates that both set
 * --moe-backend or VLLM_USE_FLASHINFER_MOE_FP4, which one knob can break. */
bool mp_broken_knobs_apart(const struct mp_candidate *a, const struct mp_candidate *b);

#endif
