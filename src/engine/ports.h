/* ports.h - can moeprobe reach the engine that announced a port? Compares
 * the port the engine says it listens on with the port moeprobe probes,
 * through the container's port publishing where the command is a container
 * run. Pure: reads the command words, starts nothing. */
#ifndef MP_PORTS_H
#define MP_PORTS_H

#include "compat.h"

enum mp_port_judgement {
    MP_PORT_OK,       /* the announced port is the probed one (or published on it) */
    MP_PORT_MISMATCH, /* it cannot be: why says how, with the fix */
    MP_PORT_UNKNOWN,  /* cannot tell from the command (e.g. -P, --pod, a bridge without -p) */
};

/* argv[0..argc) is the final server command; container is true when it is a
 * `docker|podman|nerdctl ... run` (knobs went in as -e). announced is the
 * engine's port (its own view: inside the container for a container run),
 * probe the port moeprobe probes on the host. On MP_PORT_MISMATCH, why
 * (whysz bytes) gets one sentence naming both ports and the fix; otherwise
 * it is set to "". */
enum mp_port_judgement mp_ports_judge(char *const *argv, size_t argc, bool container, int announced,
                                      int probe, char *why, size_t whysz);

#endif
