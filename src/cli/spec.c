#include "cli/spec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "xalloc.h"

void mp_strv_push_owned(struct mp_strv *s, char *owned_str)
{
    if (s->n + 2 > s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->v = xreallocarray(s->v, s->cap, sizeof(*s->v));
    }
    s->v[s->n++] = owned_str;
    s->v[s->n] = NULL;
}

void mp_strv_push(struct mp_strv *s, const char *str)
{
    mp_strv_push_owned(s, xstrdup(str));
}

void mp_strv_release(struct mp_strv *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

char **mp_strv_array(struct mp_strv *s)
{
    if (!s->v) {
        s->cap = 4;
        s->v = xcalloc(s->cap, sizeof(*s->v));
    }
    return s->v;
}

int mp_split_words(const char *text, struct mp_strv *out, struct mp_diag *d)
{
    struct buf w = BUF_INIT;
    const char *p = text;
    int rc = 0;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        buf_reset(&w);
        bool have = false;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
            if (*p == '\'') {
                const char *start = p;
                const char *e = strchr(p + 1, '\'');
                if (!e) {
                    rc = mp_diag_set(d, MP_EPARSE, 0, "unterminated ' quote at column %zu",
                                     (size_t)(start - text) + 1);
                    goto out;
                }
                buf_add(&w, p + 1, (size_t)(e - p - 1));
                p = e + 1;
                have = true;
            } else if (*p == '"') {
                const char *start = p++;
                while (*p && *p != '"') {
                    if (*p == '\\' && (p[1] == '"' || p[1] == '\\' || p[1] == '$'))
                        p++;
                    buf_addc(&w, *p++);
                }
                if (*p != '"') {
                    rc = mp_diag_set(d, MP_EPARSE, 0, "unterminated \" quote at column %zu",
                                     (size_t)(start - text) + 1);
                    goto out;
                }
                p++;
                have = true;
            } else if (*p == '\\' && p[1]) {
                buf_addc(&w, p[1]);
                p += 2;
                have = true;
            } else {
                buf_addc(&w, *p++);
                have = true;
            }
        }
        if (have)
            mp_strv_push(out, w.data);
    }
out:
    buf_release(&w);
    return rc;
}

bool mp_is_env_word(const char *word)
{
    const char *eq = strchr(word, '=');
    if (!eq || eq == word)
        return false;
    if (!(isalpha((unsigned char)word[0]) || word[0] == '_'))
        return false;
    for (const char *q = word; q < eq; q++) {
        if (!(isalnum((unsigned char)*q) || *q == '_'))
            return false;
    }
    return true;
}

static bool valid_name(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

int mp_candidate_from_knobs(const char *name, const char *knobs, struct mp_candidate *out,
                            struct mp_diag *d)
{
    struct mp_strv words = MP_STRV_INIT;
    memset(out, 0, sizeof(*out));
    if (!valid_name(name, strlen(name)))
        return mp_diag_set(d, MP_EPARSE, 0,
                           "invalid candidate name '%s' (use letters, digits, '.', '_', '-')",
                           name);
    int rc = mp_split_words(knobs, &words, d);
    if (rc < 0)
        goto out;
    out->name = xstrdup(name);
    for (size_t i = 0; i < words.n; i++) {
        if (mp_is_env_word(words.v[i]))
            mp_strv_push(&out->env, words.v[i]);
        else
            mp_strv_push(&out->args, words.v[i]);
    }
out:
    mp_strv_release(&words);
    return rc;
}

int mp_candidate_parse(const char *spec, struct mp_candidate *out, struct mp_diag *d)
{
    memset(out, 0, sizeof(*out));
    const char *colon = strchr(spec, ':');
    if (!colon)
        return mp_diag_set(d, MP_EPARSE, 0,
                           "candidate '%s' has no name: expected 'NAME: KNOBS' "
                           "(e.g. 'cutlass: --moe-backend cutlass')",
                           spec);
    const char *s = spec;
    while (*s == ' ')
        s++;
    const char *e = colon;
    while (e > s && e[-1] == ' ')
        e--;
    if (!valid_name(s, (size_t)(e - s)))
        return mp_diag_set(d, MP_EPARSE, 0,
                           "candidate '%s': invalid name before ':' (use letters, digits, "
                           "'.', '_', '-')",
                           spec);
    char *name = xstrndup(s, (size_t)(e - s));
    int rc = mp_candidate_from_knobs(name, colon + 1, out, d);
    free(name);
    return rc;
}

void mp_candidate_release(struct mp_candidate *c)
{
    free(c->name);
    mp_strv_release(&c->env);
    mp_strv_release(&c->args);
    memset(c, 0, sizeof(*c));
}

void mp_candidate_copy(struct mp_candidate *dst, const struct mp_candidate *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->name = xstrdup(src->name);
    for (size_t i = 0; i < src->env.n; i++)
        mp_strv_push(&dst->env, src->env.v[i]);
    for (size_t i = 0; i < src->args.n; i++)
        mp_strv_push(&dst->args, src->args.v[i]);
}

/* Quote a word for display when it has shell-special characters. */
static void add_shell_word(struct buf *b, const char *w)
{
    bool plain = *w != '\0';
    for (const char *p = w; *p; p++) {
        if (!(isalnum((unsigned char)*p) || strchr("-_./=:,+@%{}", *p))) {
            plain = false;
            break;
        }
    }
    if (plain) {
        buf_adds(b, w);
        return;
    }
    buf_addc(b, '\'');
    for (const char *p = w; *p; p++) {
        if (*p == '\'')
            buf_adds(b, "'\\''");
        else
            buf_addc(b, *p);
    }
    buf_addc(b, '\'');
}

char *mp_candidate_knobs_str(const struct mp_candidate *c)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < c->env.n; i++) {
        char *r = mp_redact_assignment(c->env.v[i]);
        if (b.len)
            buf_addc(&b, ' ');
        add_shell_word(&b, r);
        free(r);
    }
    for (size_t i = 0; i < c->args.n; i++) {
        if (b.len)
            buf_addc(&b, ' ');
        add_shell_word(&b, c->args.v[i]);
    }
    return buf_detach(&b, NULL);
}

size_t mp_candidate_nknobs(const struct mp_candidate *c)
{
    /* a flag and its value count as one knob */
    size_t n = c->env.n;
    for (size_t i = 0; i < c->args.n; i++) {
        if (strncmp(c->args.v[i], "-", 1) == 0 || i == 0)
            n++;
    }
    return n;
}

static const struct {
    const char *name;
    const char *knobs;
} sm12x_nvfp4[] = {
    {"auto", ""},
    {"cutlass", "--moe-backend cutlass"},
    {"marlin", "--moe-backend marlin"},
    {"flashinfer_cutlass", "--moe-backend flashinfer_cutlass"},
    {"marlin-env", "VLLM_SCALED_MM_BACKEND=marlin"},
};

int mp_preset_load(const char *name, struct mp_candidate **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (strcmp(name, "sm12x-nvfp4") != 0)
        return MP_EUSAGE;
    struct mp_candidate *c = xcalloc(MP_ARRAY_SIZE(sm12x_nvfp4), sizeof(*c));
    for (size_t i = 0; i < MP_ARRAY_SIZE(sm12x_nvfp4); i++)
        mp_candidate_from_knobs(sm12x_nvfp4[i].name, sm12x_nvfp4[i].knobs, &c[i], NULL);
    *out = c;
    *n = MP_ARRAY_SIZE(sm12x_nvfp4);
    return 0;
}

const char *mp_preset_names(void)
{
    return "sm12x-nvfp4";
}

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
        add_shell_word(&b, r);
        buf_addc(&b, ' ');
        free(r);
    }
    for (size_t i = 0; i < l->argv.n; i++) {
        if (i)
            buf_addc(&b, ' ');
        const char *w = l->argv.v[i];
        if (i > 0 && !strcmp(l->argv.v[i - 1], "-e") && mp_is_env_word(w)) {
            char *r = mp_redact_assignment(w);
            add_shell_word(&b, r);
            free(r);
        } else {
            add_shell_word(&b, w);
        }
    }
    return buf_detach(&b, NULL);
}
