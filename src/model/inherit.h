/* inherit.h - the environment the candidates inherit from moeprobe's own:
 * every VLLM_*, CUDA_* and FLASHINFER_* variable that reaches the engine
 * besides the candidate's knobs (a user's `export VLLM_...` changes every
 * candidate, "auto" included). Recorded with the fingerprint, shown on the
 * first screen of every report, and - where it acts on the backend
 * selection - counted as a knob of every candidate (verdict/inherit.h).
 * Plain data. */
#ifndef MP_MODEL_INHERIT_H
#define MP_MODEL_INHERIT_H

#include "compat.h"

#include <stddef.h>

/* Does the variable name belong to the inherited set (VLLM_, CUDA_,
 * FLASHINFER_ prefixes)? name may end at '=' or NUL. */
bool mp_inherit_is_tracked(const char *name);

enum mp_inh_acts {
    MP_INH_NO = 0,      /* the knowledge says it does not act on a selection here */
    MP_INH_YES = 1,     /* it acts on the MoE, dense or attention selection */
    MP_INH_UNKNOWN = 2, /* the knowledge does not know it (a VLLM_/FLASHINFER_ name): it may */
};

struct mp_inh_var {
    char *name;
    char *value;     /* secret values are *** (secret.h) */
    bool passed;     /* it reached the candidates (false: --clean-env removed it) */
    int acts;        /* enum mp_inh_acts, judged for the engine version */
    char *affects;   /* "moe", "linear", "attention" when it acts, else NULL */
    char *note;      /* the knowledge's sentence, or NULL */
};

struct mp_inherited {
    struct mp_inh_var *v;
    size_t n;
    bool clean_env;  /* --clean-env: the tracked variables that are not needed to run
                      * (mp_inherit_keep) were removed from the candidates' environment */
};

/* The variables --clean-env keeps because the engine needs them to run:
 * the GPUs it may use, the CUDA installation and caches, credentials
 * (secret names). */
bool mp_inherit_keep(const char *name);

/* Append one variable (copied). */
void mp_inherited_add(struct mp_inherited *in, const char *name, const char *value, bool passed);
/* The passed variables that act or may act on a selection (acts != NO). */
size_t mp_inherited_nacting(const struct mp_inherited *in);
void mp_inherited_copy(struct mp_inherited *dst, const struct mp_inherited *src);
void mp_inherited_release(struct mp_inherited *in);

#endif
