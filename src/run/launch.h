/* launch.h - how the engine is started for one attempt: the candidate's
 * knobs applied to the server command (environment or container -e flags,
 * port substitution). Pure: builds vectors, starts nothing. */
#ifndef MP_LAUNCH_H
#define MP_LAUNCH_H

#include "compat.h"

#include "model/candidate.h"

struct mp_launch {
    struct mp_strv argv;   /* final command */
    struct mp_strv env;    /* environment additions (empty for containers) */
    char *container_runtime; /* "docker"/"podman" or NULL */
    char *container_name;    /* the --name we set, or NULL */
};
/* Build the launch for server command cmd (argc words) with candidate c,
 * port substitution ("{port}" in any word, else "--port N" appended after
 * the candidate's args), extra environment extra_env (e.g.
 * CUDA_LAUNCH_BLOCKING=1; may be NULL) and a container name to use when the
 * command is `docker run` / `podman run` (env knobs become -e NAME=VALUE
 * right after `run`, and `--name NAME` is added unless present). */
void mp_launch_build(struct mp_launch *out, char *const *cmd, size_t argc,
                     const struct mp_candidate *c, int port, const char *const *extra_env,
                     const char *container_name);
void mp_launch_release(struct mp_launch *l);
/* Render argv as a copy-pasteable shell line with env prefix, secrets
 * redacted (caller frees). */
char *mp_launch_display(const struct mp_launch *l);

#endif
