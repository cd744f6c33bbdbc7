/* spec.h - the built-in candidate presets (`--preset`), expressed per vLLM
 * era. Candidates themselves are model/candidate.h.
 *
 * A preset candidate names a destination (a MoE backend) and the roads to
 * it, newest first: `--moe-backend X` where the engine has that flag and
 * value, else environment variables that choose it in older versions
 * (before v0.17: VLLM_USE_FLASHINFER_MOE_FP4=0 for vLLM CUTLASS,
 * VLLM_TEST_FORCE_FP8_MARLIN=1 for Marlin, ...). Whether a road exists in a
 * version is the knowledge's (knowledge/knowledge.h eras): a flag value
 * must be among the era's choices, an environment variable must act on the
 * MoE selection there. A candidate with no road in a version is not
 * applicable to it (verdict not-applicable; it is not started); one the
 * knowledge says appears only in later versions (b12x) is left out before
 * them. */
#ifndef MP_SPEC_H
#define MP_SPEC_H

#include "compat.h"

#include "model/candidate.h"

struct mp_knowledge;

/* One candidate of an expressed preset: its knobs for the version, and
 * why it does not apply there (NULL: it applies). */
struct mp_preset_cand {
    struct mp_candidate cand;
    char *not_applicable;
};

/* Preset name expressed for engine version (NULL: not known yet, the
 * newest era) into *out (array of *n; release with mp_preset_free).
 * Returns 0, or MP_EUSAGE for an unknown preset name. */
int mp_preset_express(const struct mp_knowledge *kn, const char *name, const char *version,
                      struct mp_preset_cand **out, size_t *n);
void mp_preset_free(struct mp_preset_cand *p, size_t n);

/* Presets: fills *out (array of *n candidates, caller releases each and frees
 * the array) as the newest era spells them. Returns 0, or MP_EUSAGE for an
 * unknown preset name. */
int mp_preset_load(const char *name, struct mp_candidate **out, size_t *n);
/* Name list for --help ("sm12x-nvfp4"). */
const char *mp_preset_names(void);

/* The engine version a docker-like server command's image names, when the
 * knowledge knows it (knowledge.h mp_kn_image_version: an upstream tag
 * "vllm/vllm-openai:v0.17.0" -> "0.17.0", an NGC tag from its table), into
 * out (size n). Returns true when found. */
bool mp_image_engine_version(const struct mp_knowledge *kn, char *const *cmd, size_t ncmd,
                             char *out, size_t n);

#endif
