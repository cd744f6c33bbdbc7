/* inherit.c - the tracked variables an engine inherits (run/inherit.h). */
#include "run/inherit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/shape.h"
#include "xalloc.h"

/* Does the docker-like run in cmd pass NAME through without a value?
 * Podman also passes every host variable with --env-host, and those that
 * start with PREFIX with -e 'PREFIX*' (podman-run(1), --env, --env-host). */
static bool docker_passes(char *const *cmd, size_t ncmd, const struct mp_shape *sh,
                          const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = sh->run + 1; i < sh->image && i < ncmd; i++) {
        const char *w = cmd[i], *v = NULL;
        if (!strcmp(w, "--env-host") || !strcmp(w, "--env-host=true"))
            return true;
        if ((!strcmp(w, "-e") || !strcmp(w, "--env")) && i + 1 < ncmd)
            v = cmd[i + 1];
        else if (!strncmp(w, "--env=", 6))
            v = w + 6;
        else if (!strncmp(w, "-e", 2) && w[2])
            v = w + 2;
        if (v && !strncmp(v, name, nl) && v[nl] == '\0')
            return true;
        size_t vl = v ? strlen(v) : 0;
        if (vl && v[vl - 1] == '*' && !strchr(v, '=') && !strncmp(v, name, vl - 1))
            return true;
    }
    return false;
}

/* Does the apptainer-like run in cmd start from a clean environment
 * (-e/--cleanenv, -C/--containall: apptainer-exec(1))? */
static bool apptainer_cleans(char *const *cmd, size_t ncmd, const struct mp_shape *sh)
{
    static const char *const clean[] = {"-e", "--cleanenv", "-C", "--containall"};
    for (size_t i = sh->run + 1; i < sh->image && i < ncmd; i++)
        for (size_t j = 0; j < MP_ARRAY_SIZE(clean); j++)
            if (!strcmp(cmd[i], clean[j]))
                return true;
    return false;
}

/* The index after the last sudo/doas word before the container client
 * (0: none): the client runs in the environment sudo left. */
static size_t sudo_before(char *const *cmd, size_t client)
{
    size_t at = 0;
    for (size_t i = 0; i < client; i++) {
        const char *b = strrchr(cmd[i], '/');
        b = b ? b + 1 : cmd[i];
        if (!strcmp(b, "sudo") || !strcmp(b, "doas"))
            at = client;
    }
    return at;
}

/* Does the sudo wrapper of a host command keep NAME: -E,
 * --preserve-env or --preserve-env=...,NAME,...? */
static bool sudo_keeps(char *const *cmd, size_t upto, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < upto; i++) {
        const char *w = cmd[i];
        if (!strcmp(w, "-E") || !strcmp(w, "--preserve-env"))
            return true;
        if (!strncmp(w, "--preserve-env=", 15)) {
            for (const char *p = w + 15; *p;) {
                size_t len = strcspn(p, ",");
                if (len == nl && !strncmp(p, name, nl))
                    return true;
                p += len + (p[len] == ',');
            }
        }
    }
    return false;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct mp_inh_var *)a)->name, ((const struct mp_inh_var *)b)->name);
}

void mp_inherit_collect(char *const *env, char *const *cmd, size_t ncmd, bool clean,
                        struct mp_inherited *out)
{
    memset(out, 0, sizeof(*out));
    out->clean_env = clean;
    struct mp_shape sh;
    mp_shape_parse(cmd, ncmd, &sh);
    for (size_t i = 0; env && env[i]; i++) {
        const char *eq = strchr(env[i], '=');
        if (!eq || eq == env[i] || !mp_inherit_is_tracked(env[i]))
            continue;
        char *name = xstrndup(env[i], (size_t)(eq - env[i]));
        bool reaches = true;
        size_t su = sh.kind == MP_SHAPE_HOST ? sh.elevated : sudo_before(cmd, sh.client);
        if (sh.kind == MP_SHAPE_DOCKER)
            reaches = docker_passes(cmd, ncmd, &sh, name);
        else if (sh.kind == MP_SHAPE_APPTAINER)
            reaches = !apptainer_cleans(cmd, ncmd, &sh);
        if (su)
            reaches = reaches && sudo_keeps(cmd, su, name);
        if (reaches)
            mp_inherited_add(out, name, eq + 1, !clean || mp_inherit_keep(name));
        free(name);
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof(*out->v), by_name);
}

int mp_inherit_apply_clean(const struct mp_inherited *in)
{
    for (size_t i = 0; i < in->n; i++) {
        if (!in->v[i].passed && unsetenv(in->v[i].name) != 0)
            return -errno;
    }
    return 0;
}
