/* re_int.h - what the parts of refengine's resolution share (resolve.c,
 * envread.c, drafter.c); not used outside refengine's resolution. */
#ifndef RE_INT_H
#define RE_INT_H

#include "compat.h"
#include "resolve.h"

#define RE_PY RE_TB_PY

/* The engine fails at startup with err (a Python exception line); frames:
 * the traceback frames between the model load and the raise (static text,
 * NULL: the NvFp4 oracle's). */
void re_fail(struct re_resolution *r, const char *frames, const char *fmt, ...) MP_PRINTF(3, 4);

/* A development build ("0.19.2rc1.dev8+g..."): main, not a release branch. */
bool re_dev_build(const struct world *w);

/* stages.c: the dense NVFP4 auto-selection of the kernels/linear era
 * (0.19.1+): dense_kernel and its line, skipping VLLM_DISABLED_KERNELS. */
void re_dense_auto(const struct world *w, const struct re_inputs *in, struct re_resolution *r);

/* ---- envread.c: the environment as vLLM of the world's era reads it ---- */

/* A 0/1 variable read as bool(int(value)): 1, 0 (unset, or an integer 0),
 * or -1 when int() refuses the value (r fails with vLLM's ValueError;
 * frames says where vLLM read it). */
int re_env_int(const struct re_inputs *in, const char *name, struct re_resolution *r,
               const char *frames);
/* VLLM_FLASHINFER_MOE_BACKEND through env_with_choices: the value, NULL
 * when unset, NULL with r failed when it is not a choice. */
const char *re_env_fi_backend(const struct re_inputs *in, struct re_resolution *r,
                              const char *frames);
/* v0.22+ (envs.compile_factors) reads every registered variable when the
 * engine starts: a value its parser refuses fails the start there. */
void re_env_eager(const struct world *w, const struct re_inputs *in, struct re_resolution *r);
/* Is the variable registered in the world's envs.py (its span)? */
bool re_env_live(const struct world *w, const char *name);

#endif
