/* launch.c - the engine's command line for one candidate (engine/launch.h). */
#include "engine/launch.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "secret.h"
#include "xalloc.h"

/* Replace every "{port}" in w by the port number. */
static char *subst_port(const char *w, int port, bool *found)
{
    struct buf b = BUF_INIT;
    const char *p = w;
    const char *hit;
    while ((hit = strstr(p, "{port}")) != NULL) {
        buf_add(&b, p, (size_t)(hit - p));
        buf_printf(&b, "%d", port);
        p = hit + 6;
        *found = true;
    }
    buf_adds(&b, p);
    return buf_detach(&b, NULL);
}

void mp_launch_build(struct mp_launch *out, char *const *cmd, size_t argc,
                     const struct mp_candidate *c, int port, const char *const *extra_env,
                     const char *container_name)
{
    memset(out, 0, sizeof(*out));
    bool found = false;
    struct mp_shape sh;
    mp_shape_parse(cmd, argc, &sh);
    out->kind = sh.kind;
    out->remote = sh.remote;
    out->client_other = sh.other ? xstrdup(sh.other) : NULL;
    for (size_t i = 0; c && i < c->env.n; i++)
        mp_strv_push(&out->env_knobs, c->env.v[i]);
    for (size_t i = 0; extra_env && extra_env[i]; i++)
        mp_strv_push(&out->env_knobs, extra_env[i]);
    const struct mp_strv *envs = &out->env_knobs;

    bool add_name = sh.kind == MP_SHAPE_DOCKER && !sh.name && container_name;
    if (sh.kind == MP_SHAPE_DOCKER) {
        out->container_runtime = xstrdup(sh.runtime);
        out->container_name = sh.name ? xstrdup(sh.name) : add_name ? xstrdup(container_name) : NULL;
        /* the client as the user runs it; a standalone compose client
         * (docker-compose) is replaced by its runtime */
        const char *cw = cmd[sh.client];
        const char *cb = strrchr(cw, '/');
        cb = cb ? cb + 1 : cw;
        bool same = !strcmp(cb, sh.runtime);
        size_t end = same ? sh.sub : sh.client;
        for (size_t i = 0; i < end; i++)
            mp_strv_push(&out->client, cmd[i]);
        if (!same)
            mp_strv_push(&out->client, sh.runtime);
    }
    /* through sudo/doas on the host: `env NAME=VALUE...` after sudo's options
     * (sudo resets the environment it was given) */
    bool via_env = sh.kind == MP_SHAPE_HOST && sh.elevated > 0 && envs->n > 0;
    for (size_t i = 0; i < argc; i++) {
        if (via_env && i == sh.elevated) {
            mp_strv_push(&out->argv, "env");
            for (size_t j = 0; j < envs->n; j++)
                mp_strv_push(&out->argv, envs->v[j]);
        }
        mp_strv_push_owned(&out->argv, subst_port(cmd[i], port, &found));
        if (sh.kind != MP_SHAPE_HOST && i == sh.run) {
            for (size_t j = 0; j < envs->n; j++) {
                mp_strv_push(&out->argv, sh.kind == MP_SHAPE_DOCKER ? "-e" : "--env");
                mp_strv_push(&out->argv, envs->v[j]);
            }
            if (add_name) {
                mp_strv_push(&out->argv, "--name");
                mp_strv_push(&out->argv, container_name);
            }
        }
    }
    for (size_t i = 0; c && i < c->args.n; i++)
        mp_strv_push_owned(&out->argv, subst_port(c->args.v[i], port, &found));
    if (!found) {
        mp_strv_push(&out->argv, "--port");
        mp_strv_push_owned(&out->argv, xasprintf("%d", port));
    }
    if (sh.kind == MP_SHAPE_HOST && !via_env) {
        for (size_t j = 0; j < envs->n; j++)
            mp_strv_push(&out->env, envs->v[j]);
    }
    mp_strv_array(&out->env);
    mp_strv_array(&out->argv);
    mp_strv_array(&out->client);
    mp_strv_array(&out->env_knobs);
}

void mp_launch_release(struct mp_launch *l)
{
    mp_strv_release(&l->argv);
    mp_strv_release(&l->env);
    mp_strv_release(&l->env_knobs);
    mp_strv_release(&l->client);
    free(l->container_runtime);
    free(l->container_name);
    free(l->client_other);
    memset(l, 0, sizeof(*l));
}

char *mp_launch_display(const struct mp_launch *l)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < l->env.n; i++) {
        char *r = mp_redact_assignment(l->env.v[i]);
        buf_add_shell_word(&b, r);
        buf_addc(&b, ' ');
        free(r);
    }
    for (size_t i = 0; i < l->argv.n; i++) {
        if (i)
            buf_addc(&b, ' ');
        const char *w = l->argv.v[i];
        if (i > 0 && mp_is_env_word(w)) {
            char *r = mp_redact_assignment(w);
            buf_add_shell_word(&b, r);
            free(r);
        } else {
            buf_add_shell_word(&b, w);
        }
    }
    return buf_detach(&b, NULL);
}

void mp_launch_container_name(char *out, size_t n, long run, const char *cand, int attempt,
                              bool launch_blocking)
{
    struct buf b = BUF_INIT;
    buf_printf(&b, "moeprobe-%ld-", run);
    for (const char *p = cand ? cand : ""; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        buf_addc(&b, isalnum(ch) || ch == '_' || ch == '.' || ch == '-' ? (char)ch : '_');
    }
    buf_printf(&b, "-%d%s", attempt, launch_blocking ? "-lb" : "");
    snprintf(out, n, "%s", b.data);
    buf_release(&b);
}
