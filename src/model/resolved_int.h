/* resolved_int.h - attempt.c's hooks into resolved.c (src/model only). */
#ifndef MP_MODEL_RESOLVED_INT_H
#define MP_MODEL_RESOLVED_INT_H

#include "model/attempt.h"

/* Free / deep-copy the fields beyond the classic columns. */
void mp_resolved_more_release(struct mp_resolved *v);
void mp_resolved_more_copy(struct mp_resolved *dst, const struct mp_resolved *src);

#endif
