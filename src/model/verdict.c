/* verdict.c - verdict and objective words (model/verdict.h). */
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
    [MP_V_WRONG_OUTPUT] = "wrong-output",
    [MP_V_NOT_APPLICABLE] = "not-applicable",
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

static const char *const objectives[MP_OBJ_COUNT] = {
    [MP_OBJ_SEQUENTIAL] = "sequential",
    [MP_OBJ_THROUGHPUT] = "throughput",
    [MP_OBJ_TTFT] = "ttft",
    [MP_OBJ_TPOT] = "tpot",
};

const char *mp_objective_name(enum mp_objective o)
{
    return (unsigned)o < MP_OBJ_COUNT ? objectives[o] : NULL;
}

int mp_objective_from_name(const char *name, enum mp_objective *out)
{
    for (int o = 0; name && o < MP_OBJ_COUNT; o++) {
        if (!strcmp(name, objectives[o])) {
            *out = (enum mp_objective)o;
            return 0;
        }
    }
    return -1;
}
