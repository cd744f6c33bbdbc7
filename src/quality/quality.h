/* quality.h - the output check: greedy sanity prompts and how their answers
 * are judged (verdict garbage-output). */
#ifndef MP_QUALITY_H
#define MP_QUALITY_H

#include "compat.h"

/* The sanity prompts sent after a clean workload (borrowed, static, *n set). */
const char *const *mp_quality_prompts(size_t *n);

#endif
