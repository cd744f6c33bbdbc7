/* verdict.h - the verdict words of DESIGN.md, one per candidate, and the
 * objectives of the recommendation (both decided by verdict/verdict.h). */
#ifndef MP_MODEL_VERDICT_H
#define MP_MODEL_VERDICT_H

#include "compat.h"

enum mp_verdict {
    MP_V_NONE = 0,          /* no verdict: not run, unfinished, evidence incomplete,
                             * resolved only, interrupted */
    MP_V_STABLE,
    MP_V_ASYNC_RACE,
    MP_V_KERNEL_FAULT,
    MP_V_CRASHED,
    MP_V_STARTUP_FAILURE,
    MP_V_HANG,
    MP_V_GARBAGE_OUTPUT,
    MP_V_SERVER_ERROR,
    MP_V_NOT_DELIVERED,
    MP_V_WRONG_OUTPUT,      /* serves fluently, but computes something else than the
                             * others or fails the task gate (model/correct.h) */
    MP_V_NOT_APPLICABLE,    /* its knobs do not exist in the engine's version and no era
                             * equivalent does: not started */
};
#define MP_V_COUNT (MP_V_NOT_APPLICABLE + 1)
/* "stable", "async-race", ... ; NULL for MP_V_NONE. */
const char *mp_verdict_name(enum mp_verdict v);
/* The inverse; NULL or an unknown word is MP_V_NONE. */
enum mp_verdict mp_verdict_from_name(const char *name);

/* What "fastest" means for the recommendation (`--objective`,
 * docs/verdicts.md "Recommendation"). */
enum mp_objective {
    MP_OBJ_SEQUENTIAL = 0,  /* sequential tok/s, then best concurrency tok/s (default) */
    MP_OBJ_THROUGHPUT,      /* best concurrency aggregate tok/s, then sequential tok/s */
    MP_OBJ_TTFT,            /* lowest median TTFT over the load phases */
    MP_OBJ_TPOT,            /* lowest median TPOT over the load phases */
};
#define MP_OBJ_COUNT (MP_OBJ_TPOT + 1)
/* "sequential", "throughput", "ttft", "tpot"; NULL when out of range. */
const char *mp_objective_name(enum mp_objective o);
/* The inverse: 0 and *out set, or -1 for NULL or an unknown word (*out
 * untouched). */
int mp_objective_from_name(const char *name, enum mp_objective *out);

#endif
