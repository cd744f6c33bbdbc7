/* err.h - the one error convention of moeprobe.
 *
 * Pure and library-like modules (parsers, loadgen, proc, report rendering)
 * never print and never exit: they return int, 0 on success and a negative
 * value on failure: -errno for system errors, or one of the MP_E* codes
 * below (far from the errno range). Where a message helps, they also fill a
 * caller-supplied struct mp_diag.
 *
 * Driver modules (main, cli, commands) turn codes into messages with
 * mp_error()/mp_warn() and into the documented exit codes (MP_EXIT_*). */
#ifndef MP_ERR_H
#define MP_ERR_H

#include "compat.h"

enum {
    MP_EPARSE = -10001,   /* malformed input */
    MP_ELIMIT = -10002,   /* input exceeds a hard bound */
    MP_EHTTP = -10003,    /* HTTP-level failure */
    MP_EDB = -10004,      /* storage failure */
    MP_ETIMEOUT = -10005, /* a deadline passed */
    MP_EUSAGE = -10006,   /* bad command line / spec */
    MP_ESTATE = -10007,   /* call not valid in current state */
    MP_ECOMMAND = -10008, /* a command given to moeprobe could not be started */
};

/* Exit codes: a public contract (DESIGN.md). */
enum {
    MP_EXIT_OK = 0,        /* a recommendation was made / command succeeded */
    MP_EXIT_NONE = 1,      /* run finished and no candidate qualified */
    MP_EXIT_USAGE = 2,     /* usage or input error */
    MP_EXIT_INTERNAL = 3,  /* internal or I/O error */
};

/* Position and message for an input error. line/col are 1-based, 0 = n/a. */
struct mp_diag {
    char file[256];
    size_t line, col;
    char msg[256];
};
#define MP_DIAG_INIT { "", 0, 0, "" }

/* Fill d (may be NULL) and return code. */
int mp_diag_set(struct mp_diag *d, int code, size_t line, const char *fmt, ...)
    MP_PRINTF(4, 5);
/* Render "file:line: msg" (or parts that are set) into out. */
void mp_diag_format(const struct mp_diag *d, char *out, size_t outsz);

/* Is e (an errno) moeprobe's own resource running out when it opens a
 * connection or a file - EMFILE, ENFILE (descriptors), ENOMEM, ENOBUFS
 * (memory), EADDRNOTAVAIL (local ports exhausted) - never evidence about
 * the peer? */
bool mp_errno_is_local_resource(int e);

/* Human-readable text for a code from this convention (-errno or MP_E*). */
const char *mp_strerror(int code);

/* Program name used in messages ("moeprobe" or "refengine"). */
extern const char *mp_progname;
/* Print "<prog>: error: <msg>\n" to stderr; returns -1. Control
 * characters in msg (from engine output, paths, names) are shown escaped
 * (mp_term_esc), never sent to the terminal raw. */
int mp_error(const char *fmt, ...) MP_PRINTF(1, 2);
/* Print "<prog>: warning: <msg>\n" to stderr. */
void mp_warn(const char *fmt, ...) MP_PRINTF(1, 2);

#endif
