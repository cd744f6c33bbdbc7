#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

const char *mp_progname = "moeprobe";

int mp_diag_set(struct mp_diag *d, int code, size_t line, const char *fmt, ...)
{
    if (!d)
        return code;
    d->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
    va_end(ap);
    return code;
}

void mp_diag_format(const struct mp_diag *d, char *out, size_t outsz)
{
    if (d->file[0] && d->line)
        snprintf(out, outsz, "%s:%zu: %s", d->file, d->line, d->msg);
    else if (d->file[0])
        snprintf(out, outsz, "%s: %s", d->file, d->msg);
    else if (d->line)
        snprintf(out, outsz, "line %zu: %s", d->line, d->msg);
    else
        snprintf(out, outsz, "%s", d->msg);
}

bool mp_errno_is_local_resource(int e)
{
    return e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS || e == EADDRNOTAVAIL;
}

const char *mp_strerror(int code)
{
    switch (code) {
    case 0:
        return "success";
    case MP_EPARSE:
        return "malformed input";
    case MP_ELIMIT:
        return "input exceeds a limit";
    case MP_EHTTP:
        return "HTTP error";
    case MP_EDB:
        return "storage error";
    case MP_ETIMEOUT:
        return "timed out";
    case MP_EUSAGE:
        return "usage error";
    case MP_ESTATE:
        return "invalid state";
    case MP_ECOMMAND:
        return "the command cannot be started";
    default:
        if (code < 0 && code > -4096)
            return strerror(-code);
        return "unknown error";
    }
}

static void vreport(const char *kind, const char *fmt, va_list ap) MP_PRINTF(2, 0);
static void vreport(const char *kind, const char *fmt, va_list ap)
{
    char msg[4096];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    /* messages quote engine output, paths and names: no raw control
     * character reaches the terminal (escape.h) */
    char *shown = mp_term_dup(msg);
    fprintf(stderr, "%s: %s: %s\n", mp_progname, kind, shown);
    free(shown);
}

int mp_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("error", fmt, ap);
    va_end(ap);
    return -1;
}

void mp_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("warning", fmt, ap);
    va_end(ap);
}
