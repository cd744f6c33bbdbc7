/* shape.h - what kind of command starts the engine: a host process, a
 * docker-like container client (docker, podman, nerdctl, docker/podman
 * compose) or an apptainer-like one (apptainer, singularity). It decides
 * where a candidate's environment knobs must go to reach the engine:
 *   host:      the spawned process's environment; through sudo/doas (which
 *              reset it) as `env NAME=VALUE...` right after sudo's options;
 *   docker:    `-e NAME=VALUE` right after the `run` word;
 *   apptainer: `--env NAME=VALUE` right after the `exec`/`run` word.
 *
 * Pure: reads the words, allocates nothing, keeps pointers into argv.
 *
 * Recognised, after any wrappers `sudo [opts]`, `doas [opts]`,
 * `env [opts] [NAME=VALUE...]`, `nohup`, `nice [-n N]`:
 *   docker|podman|nerdctl [global options] [container] run [options] IMAGE ...
 *   docker|podman [global options] compose [compose options] run [options] SERVICE ...
 *   docker-compose|podman-compose [options] run [options] SERVICE ...
 *   apptainer|singularity [global options] exec|run [options] IMAGE ...
 * Global options are skipped with their arguments (a table of the clients'
 * options that take one; `--opt=value` is one word; an unknown `--opt` takes
 * the next word unless that word is the subcommand). Anything else is a
 * host command (`vllm serve`, `srun ... vllm serve`, `bash -c '...'`). */
#ifndef MP_ENGINE_SHAPE_H
#define MP_ENGINE_SHAPE_H

#include "compat.h"

#include <stddef.h>

enum mp_shape_kind {
    MP_SHAPE_HOST = 0,
    MP_SHAPE_DOCKER,     /* docker-like: -e NAME=VALUE, --name, inspect/stop/rm */
    MP_SHAPE_APPTAINER,  /* apptainer-like: --env NAME=VALUE, host processes */
};

struct mp_shape {
    enum mp_shape_kind kind;
    size_t client;        /* index of the client word (docker, podman, ...) */
    size_t sub;           /* index of the first subcommand word ("container", "compose",
                           * or the run word itself): words [0, sub) are the client
                           * with its wrappers and global options */
    size_t run;           /* index of the `run` / `exec` word */
    size_t image;         /* index of the image (compose: the service); argc when none */
    const char *runtime;  /* client for inspect/stop/rm: "docker", "podman", "nerdctl",
                           * "apptainer", "singularity"; NULL for host commands */
    bool compose;         /* docker/podman compose run */
    bool remote;          /* a global option points the client at another host or
                           * context (-H, --host, --context, --url, --connection,
                           * --remote): its processes are not ours to read */
    const char *name;     /* the container name given with --name/--name=, or NULL */
    size_t elevated;      /* host kind only: the index right after the options of the last
                           * `sudo`/`doas` wrapper, where `env NAME=VALUE...` reaches the
                           * engine (sudo resets the environment); 0 when there is none */
    const char *other;    /* host kind only: a known container client with another
                           * subcommand (`docker exec ...`, `podman start`): that word;
                           * knobs in the client's environment do not reach the engine */
};

/* Parse argv (argc words). Always fills *out (a command that is not a
 * container run is MP_SHAPE_HOST with runtime NULL). */
void mp_shape_parse(char *const *argv, size_t argc, struct mp_shape *out);

/* "host", "docker", "apptainer". */
const char *mp_shape_kind_name(enum mp_shape_kind k);

#endif
