/* launch.h - how the engine is started for one attempt: the candidate's
 * knobs applied to the server command where they reach the engine (see
 * engine/shape.h: the spawned process's environment, `env NAME=VALUE...` after
 * sudo's options, `-e NAME=VALUE` after a docker-like `run`, `--env
 * NAME=VALUE` after apptainer's `exec`/`run`), and port substitution. Pure:
 * builds vectors, starts nothing. */
#ifndef MP_LAUNCH_H
#define MP_LAUNCH_H

#include "compat.h"

#include "model/candidate.h"
#include "engine/shape.h"

struct mp_launch {
    struct mp_strv argv;     /* final command */
    struct mp_strv env;      /* environment additions of the spawned process (host only) */
    enum mp_shape_kind kind; /* where the env knobs went */
    bool remote;             /* the container client talks to another host/context */
    char *client_other;      /* host kind: "docker exec"-like (a container client with a
                              * subcommand other than run, e.g. "exec"), else NULL */
    struct mp_strv env_knobs; /* every NAME=VALUE delivered (candidate's, then extra) */
    char *container_runtime; /* docker-like: "docker"/"podman"/"nerdctl", else NULL */
    char *container_name;    /* docker-like: the container's name (ours or the user's), else NULL */
    struct mp_strv client;   /* docker-like: the client words for inspect/stop/rm, with wrappers
                              * and global options (`sudo docker -H HOST`); else empty */
};
/* Build the launch for server command cmd (argc words) with candidate c,
 * port substitution ("{port}" in any word, else "--port N" appended after
 * the candidate's args), extra environment extra_env (e.g.
 * CUDA_LAUNCH_BLOCKING=1; may be NULL) and a container name to use for a
 * docker-like run that has no --name (then `--name NAME` is added after
 * the -e words; NULL: none added). */
void mp_launch_build(struct mp_launch *out, char *const *cmd, size_t argc,
                     const struct mp_candidate *c, int port, const char *const *extra_env,
                     const char *container_name);
void mp_launch_release(struct mp_launch *l);
/* Render argv as a copy-pasteable shell line with env prefix, secrets
 * redacted (every NAME=VALUE word with a secret name, caller frees). */
char *mp_launch_display(const struct mp_launch *l);

/* A container name docker and podman accept ([a-zA-Z0-9][a-zA-Z0-9_.-]*),
 * "moeprobe-<run>-<candidate>-<attempt>[-lb]", into out (size n). */
void mp_launch_container_name(char *out, size_t n, long run, const char *cand, int attempt,
                              bool launch_blocking);

#endif
