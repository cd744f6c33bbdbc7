/* verdict.c - verdict words (model/verdict.h). */
#include "model/verdict.h"

#include <string.h>

static const char *const names[MP_V_COUNT] = {
    [MP_V_NONE] = NULL,
    [MP_V_STABLE] = "stable",
    [MP_V_ASYNC_RACE] = "async-race",
    [MP_V_KERNEL_FAULT] = "kernel-fault",
    [MP_V_CRASHED] = "crashed",
    [MP_V_STARTUP_FAILURE] = "startup-failure",
    [MP_V_HANG] = "hang",
    [MP_V_GARBAGE_OUTPUT] = "garbage-output",
    [MP_V_SERVER_ERROR] = "server-error",
    [MP_V_NOT_DELIVERED] = "not-delivered",
};

const char *mp_verdict_name(enum mp_verdict v)
{
    return (unsigned)v < MP_V_COUNT ? names[v] : NULL;
}

enum mp_verdict mp_verdict_from_name(const char *name)
{
    for (int v = 1; name && v < MP_V_COUNT; v++) {
        if (!strcmp(name, names[v]))
            return (enum mp_verdict)v;
    }
    return MP_V_NONE;
}
