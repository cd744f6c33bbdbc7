/* delivery.h - did the candidate's knobs reach the engine? Checked once the
 * engine is ready, knob by knob, in the engine's own environment and
 * arguments (DESIGN.md "knob_delivery"):
 *
 *  - environment knobs of a host or apptainer-like command: the initial
 *    environment (/proc/PID/environ) of the engine's process tree (the
 *    spawned process's group, the processes carrying the run marker, their
 *    descendants): when the processes listening on the engine's port are
 *    found, they decide (all have NAME=VALUE -> verified, else missing: a
 *    wrapper around the engine may hold it, the engine does not); otherwise
 *    some process has it -> verified; none of them, all readable -> missing;
 *    some unreadable -> unverified.
 *  - environment knobs of a docker-like run: `<client> container inspect` of the
 *    named container: not in .Config.Env -> missing; in it, and the
 *    container's processes (from .State.Pid, on this host) readable: one has
 *    it -> verified, none -> missing (an entrypoint dropped it); processes
 *    not readable or on another host -> verified by the configuration.
 *    No container name, or inspect failed -> unverified.
 *  - flag knobs: the engine's "non-default args: {...}" line: the key with
 *    the value -> verified; with another value -> missing; absent (the value
 *    may be the default) or no such line -> unverified.
 * Knob texts and evidence have secret values redacted (base/secret.h). */
#ifndef MP_ENGINE_DELIVERY_H
#define MP_ENGINE_DELIVERY_H

#include "compat.h"

#include <sys/types.h>

#include "model/attempt.h"
#include "model/candidate.h"
#include "engine/launch.h"

struct mp_delivery_ctx {
    const struct mp_candidate *cand;   /* its flag knobs are checked */
    const struct mp_launch *launch;    /* env_knobs, kind, client, container name */
    pid_t leader;                      /* the spawned process */
    const char *marker;                /* the run marker, or NULL */
    const char *nondefault;            /* the engine's "non-default args" line, or NULL */
    long nondefault_line;              /* its server.log line number */
    int port;                          /* the port the engine serves (its listener is the
                                        * engine; 0: unknown) */
};

/* Check every knob and append one entry per knob to r (env knobs first, in
 * order, then flag groups). Runs the container client's inspect once, to
 * completion (at most MP_DELIVERY_INSPECT_TIMEOUT_S): a caller on a loop
 * runs it there instead (mp_delivery_inspect_argv, then
 * mp_delivery_check_inspected with its answer). */
void mp_delivery_check(const struct mp_delivery_ctx *x, struct mp_attempt_result *r);

#define MP_DELIVERY_INSPECT_TIMEOUT_S 15.0
struct mp_strv;
/* The command whose answer the check needs (`<client> container inspect
 * --format ... NAME`, words pushed onto argv), or false when it needs none
 * (no environment knob, or not a named docker-like container). */
bool mp_delivery_inspect_argv(const struct mp_delivery_ctx *x, struct mp_strv *argv);
/* What that command gave: rc < 0 when it could not be run (err says why),
 * else its output (stdout and stderr) and waitpid status (-1: killed at its
 * timeout). Borrowed for the call. */
struct mp_dlv_inspect {
    int rc;
    int status;
    const char *out;
    const char *err;
};
/* mp_delivery_check with the inspect's answer (NULL when
 * mp_delivery_inspect_argv wanted none). */
void mp_delivery_check_inspected(const struct mp_delivery_ctx *x, const struct mp_dlv_inspect *in,
                                 struct mp_attempt_result *r);

/* Append an `unverified` entry with the same evidence for every knob of
 * cand and every extra NAME=VALUE (NULL-terminated, may be NULL). */
void mp_delivery_unverified(const struct mp_candidate *cand, const char *const *extra_env,
                            const char *why, struct mp_attempt_result *r);

/* Pure, for tests: the value (as the engine printed it, a Python literal)
 * of key in a "non-default args: {...}" line, into val (size n).
 * Returns 1 found, 0 not in the dict, -1 no dict in the line. */
int mp_nondefault_find(const char *line, const char *key, char *val, size_t n);

/* Pure, for tests: judge flag knob k (words of one flag group) against the
 * non-default args line (NULL: none printed) at server.log line lineno.
 * *evidence gets an owned sentence. */
enum mp_dlv_status mp_delivery_judge_flag(const struct mp_knob *k, const char *line, long lineno,
                                          char **evidence);

/* Pure, for tests: judge env knob want from the container's .Config.Env
 * (a JSON array text; NULL: inspect gave none). Returns MP_DLV_VERIFIED
 * when it is there, MP_DLV_MISSING when not (evidence names what the
 * container has instead), MP_DLV_UNVERIFIED when env_json is unusable. */
enum mp_dlv_status mp_delivery_judge_config_env(const char *want, const char *env_json,
                                                const char *what, char **evidence);

#endif
