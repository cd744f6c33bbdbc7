/* launch.c - the engine's command line for one candidate (run/launch.h). */
#include "run/launch.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "secret.h"
#include "xalloc.h"

static bool is_container_run(char *const *cmd, size_t argc, size_t *run_idx)
{
    if (argc < 2)
        return false;
    const char *base = strrchr(cmd[0], '/');
    base = base ? base + 1 : cmd[0];
    if (strcmp(base, "docker") != 0 && strcmp(base, "podman") != 0)
        return false;
    for (size_t i = 1; i < argc; i++) {
        if (strcmp(cmd[i], "run") == 0) {
            *run_idx = i;
            return true;
        }
        if (cmd[i][0] != '-')
            return false;
    }
    return false;
}

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
    size_t run_idx = 0;
    bool container = is_container_run(cmd, argc, &run_idx);
    struct mp_strv envs = MP_STRV_INIT;
    for (size_t i = 0; c && i < c->env.n; i++)
        mp_strv_push(&envs, c->env.v[i]);
    for (size_t i = 0; extra_env && extra_env[i]; i++)
        mp_strv_push(&envs, extra_env[i]);

    for (size_t i = 0; i < argc; i++) {
        mp_strv_push_owned(&out->argv, subst_port(cmd[i], port, &found));
        if (container && i == run_idx) {
            bool has_name = false;
            for (size_t j = run_idx + 1; j < argc; j++) {
                if (!strcmp(cmd[j], "--name") || !strncmp(cmd[j], "--name=", 7))
                    has_name = true;
            }
            for (size_t j = 0; j < envs.n; j++) {
                mp_strv_push(&out->argv, "-e");
                mp_strv_push(&out->argv, envs.v[j]);
            }
            if (!has_name && container_name) {
                mp_strv_push(&out->argv, "--name");
                mp_strv_push(&out->argv, container_name);
                out->container_name = xstrdup(container_name);
            }
            const char *base = strrchr(cmd[0], '/');
            out->container_runtime = xstrdup(base ? base + 1 : cmd[0]);
        }
    }
    if (container && !out->container_name) {
        for (size_t j = run_idx + 1; j + 1 < argc; j++) {
            if (!strcmp(cmd[j], "--name"))
                out->container_name = xstrdup(cmd[j + 1]);
        }
    }
    for (size_t i = 0; c && i < c->args.n; i++)
        mp_strv_push_owned(&out->argv, subst_port(c->args.v[i], port, &found));
    if (!found) {
        mp_strv_push(&out->argv, "--port");
        mp_strv_push_owned(&out->argv, xasprintf("%d", port));
    }
    if (!container) {
        for (size_t j = 0; j < envs.n; j++)
            mp_strv_push(&out->env, envs.v[j]);
    }
    mp_strv_array(&out->env);
    mp_strv_array(&out->argv);
    mp_strv_release(&envs);
}

void mp_launch_release(struct mp_launch *l)
{
    mp_strv_release(&l->argv);
    mp_strv_release(&l->env);
    free(l->container_runtime);
    free(l->container_name);
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
        if (i > 0 && !strcmp(l->argv.v[i - 1], "-e") && mp_is_env_word(w)) {
            char *r = mp_redact_assignment(w);
            buf_add_shell_word(&b, r);
            free(r);
        } else {
            buf_add_shell_word(&b, w);
        }
    }
    return buf_detach(&b, NULL);
}
