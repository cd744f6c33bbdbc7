/* inherit.h - which of moeprobe's own VLLM_*, CUDA_* and FLASHINFER_*
 * variables reach the engine the server command starts (model/inherit.h),
 * and --clean-env's removal of them. */
#ifndef MP_RUN_INHERIT_H
#define MP_RUN_INHERIT_H

#include "compat.h"

#include "model/inherit.h"

/* The tracked variables of env (a NULL-terminated "NAME=VALUE" list, e.g.
 * environ) that the engine started by cmd inherits, sorted by name, into
 * *out (released by the caller):
 *   - a host or apptainer command: every one (apptainer passes the host's
 *     environment; `sudo` resets it: then none but the ones named by
 *     sudo --preserve-env=A,B or all with -E/--preserve-env);
 *   - a docker-like run: only those the command passes through by name
 *     (`-e NAME`, `--env NAME`, `--env=NAME` without a value).
 * With clean, those mp_inherit_keep does not keep are recorded as not
 * passed (out->clean_env set). Pure. */
void mp_inherit_collect(char *const *env, char *const *cmd, size_t ncmd, bool clean,
                        struct mp_inherited *out);

/* --clean-env: remove every tracked variable that in records as not passed
 * from this process's environment, so that no engine it starts inherits
 * it. 0, or -errno. */
int mp_inherit_apply_clean(const struct mp_inherited *in);

#endif
