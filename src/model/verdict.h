/* verdict.h - the verdict words of DESIGN.md, one per candidate (decided by
 * verdict/verdict.h). */
#ifndef MP_MODEL_VERDICT_H
#define MP_MODEL_VERDICT_H

#include "compat.h"

enum mp_verdict {
    MP_V_NONE = 0,          /* not run (no attempt) */
    MP_V_STABLE,
    MP_V_ASYNC_RACE,
    MP_V_KERNEL_FAULT,
    MP_V_CRASHED,
    MP_V_STARTUP_FAILURE,
    MP_V_HANG,
    MP_V_GARBAGE_OUTPUT,
    MP_V_SERVER_ERROR,
    MP_V_NOT_DELIVERED,
};
#define MP_V_COUNT (MP_V_NOT_DELIVERED + 1)
/* "stable", "async-race", ... ; NULL for MP_V_NONE. */
const char *mp_verdict_name(enum mp_verdict v);
/* The inverse; NULL or an unknown word is MP_V_NONE. */
enum mp_verdict mp_verdict_from_name(const char *name);

#endif
