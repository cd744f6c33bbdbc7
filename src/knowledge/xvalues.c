/* xvalues.c - the values of knobs as the engine reads them (xint.h):
 * argparse choices of flags (normalised where vLLM normalises), the
 * environment parsers that stop the engine on a bad value, and what vLLM
 * does with a variable it does not know. */
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "knowledge/xint.h"
#include "xalloc.h"

static void era_values(const struct mp_kn_knob *kb, const struct mp_kn_era *era, char ***v,
                       size_t *n)
{
    *v = era && era->nvalues ? era->values : kb->values;
    *n = era && era->nvalues ? era->nvalues : kb->nvalues;
}

bool mp_xn_in_values(const struct mp_kn_knob *kb, const struct mp_kn_era *era, const char *v)
{
    char **vals;
    size_t n;
    era_values(kb, era, &vals, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(vals[i], v))
            return true;
    return false;
}

bool mp_xn_env_has(char **env, size_t nenv, const char *assign)
{
    for (size_t i = 0; i < nenv; i++)
        if (!strcmp(env[i], assign))
            return true;
    return false;
}

/* Python's repr of a str: 'x', with ' and \ escaped. */
static void py_repr(struct buf *b, const char *s)
{
    buf_addc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'' || *s == '\\')
            buf_addc(b, '\\');
        buf_addc(b, *s);
    }
    buf_addc(b, '\'');
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 'a', 'b', ... (sorted: argparse prints sorted(options)) or ['a', 'b']. */
static char *values_list(const struct mp_kn_knob *kb, const struct mp_kn_era *era, bool sorted,
                         bool brackets)
{
    char **vals;
    size_t n;
    era_values(kb, era, &vals, &n);
    char **v = xcalloc(n + 1, sizeof(char *));
    memcpy(v, vals, n * sizeof(char *));
    if (sorted)
        qsort(v, n, sizeof(char *), cmp_str);
    struct buf b = BUF_INIT;
    buf_adds(&b, brackets ? "[" : "");
    for (size_t i = 0; i < n; i++) {
        buf_adds(&b, i ? ", " : "");
        py_repr(&b, v[i]);
    }
    buf_adds(&b, brackets ? "]" : "");
    free(v);
    return buf_detach(&b, NULL);
}

/* Does Python's int() take s? Blanks around, a sign, digits with single
 * underscores between them. */
static bool py_int(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    if (*s == '+' || *s == '-')
        s++;
    if (*s < '0' || *s > '9')
        return false;
    while ((*s >= '0' && *s <= '9') || (*s == '_' && s[1] >= '0' && s[1] <= '9'))
        s++;
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    return *s == 0;
}

/* era->error with {name}, {value}, {values} filled. */
static char *render_error(const char *tpl, const char *name, const char *value, const char *values)
{
    struct buf b = BUF_INIT;
    for (const char *t = tpl; *t; t++) {
        if (!strncmp(t, "{value}", 7)) {
            py_repr(&b, value);
            t += 6;
        } else if (!strncmp(t, "{values}", 8)) {
            buf_adds(&b, values);
            t += 7;
        } else if (!strncmp(t, "{name}", 6)) {
            buf_adds(&b, name);
            t += 5;
        } else {
            buf_addc(&b, *t);
        }
    }
    return buf_detach(&b, NULL);
}

static void note_prepend(char **note, char *first)
{
    char *n2 = xasprintf("%s %s", first, *note);
    free(first);
    free(*note);
    *note = n2;
}

void mp_xn_env_value(struct xctx *x, const struct mp_kn_knob *kb, const struct mp_kn_era *era,
                     const char *name, const char *value, struct mp_kn_knob_report *r)
{
    bool bad = kb->parse_int ? !py_int(value) : kb->nvalues && !mp_xn_in_values(kb, era, value);
    if (!bad)
        return;
    if (!era->error) {
        char *n2 = xasprintf("%s (value '%s' is not one this knob takes)", r->note, value);
        free(r->note);
        r->note = n2;
        return;
    }
    char *vals = values_list(kb, era, false, true);
    r->status = "rejected";
    r->stops = render_error(era->error, name, value, vals);
    r->fix = kb->parse_int ? xasprintf("set %s=0 or %s=1 (vLLM reads it as bool(int(value)))",
                                       name, name)
                           : xasprintf("set %s to one of %s", name, vals);
    note_prepend(&r->note, xasprintf("vLLM %s reads this variable and refuses the value: %s.",
                                     x->out->engine_version, r->stops));
    free(vals);
}

/* --moe-backend: the value is a choice but selects no NvFp4 MoE backend. */
static void not_nvfp4(struct xctx *x, const struct mp_kn_knob *kb, const struct mp_kn_era *era,
                      const char *val, struct mp_kn_knob_report *r)
{
    struct buf exp = BUF_INIT, fix = BUF_INIT;
    for (size_t i = 0; i < kb->nmap; i++) {
        if (!mp_xn_in_values(kb, era, kb->map[i].key))
            continue;
        buf_adds(&exp, exp.len ? ", " : "[");
        py_repr(&exp, kb->map[i].key);
        buf_printf(&fix, "%s%s", fix.len ? ", " : "", kb->map[i].key);
    }
    buf_adds(&exp, "]");
    r->status = "rejected";
    r->stops = xasprintf("vLLM %s refuses --moe-backend '%s' for NvFP4 MoE at startup "
                         "(ValueError: moe_backend='%s' is not supported for NvFP4 MoE. Expected "
                         "one of %s.)",
                         x->out->engine_version, val, val, exp.data);
    r->fix = xasprintf("use an NvFp4 MoE backend of this version: %s", fix.data ? fix.data : "");
    note_prepend(&r->note, xasprintf("'%s' is a choice of --moe-backend but not an NvFp4 MoE "
                                     "backend: startup fails with %s",
                                     val, r->stops));
    buf_release(&exp);
    buf_release(&fix);
}

/* The first later era whose choices have val ("0.22.0"), into buf. */
static const char *arrives_in(const struct mp_kn_knob *kb, const struct mp_kn_era *era,
                              const char *val, char *buf, size_t n)
{
    for (size_t i = 0; i < kb->neras; i++) {
        const struct mp_kn_era *e = &kb->eras[i];
        if (e == era || !e->has_from || !e->nvalues || (era && era->has_from &&
                                                        mp_kn_ver_cmp(&e->from, &era->from) <= 0))
            continue;
        if (mp_xn_in_values(kb, e, val)) {
            snprintf(buf, n, "%d.%d.%d", e->from.v[0], e->from.v[1], e->from.v[2]);
            return buf;
        }
    }
    return NULL;
}

/* The NvFp4 MoE backends the flag can name in this era: "cutlass, marlin". */
static char *nvfp4_choices(const struct mp_kn_knob *kb, const struct mp_kn_era *era)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < kb->nmap; i++)
        if (mp_xn_in_values(kb, era, kb->map[i].key))
            buf_printf(&b, "%s%s", b.len ? ", " : "", kb->map[i].key);
    return buf_detach(&b, NULL);
}

static void invalid_choice(struct xctx *x, const struct mp_kn_knob *kb, const struct mp_kn_era *era,
                           const char *name, const char *val, struct mp_kn_knob_report *r)
{
    char *choices = values_list(kb, era, true, false), later[24];
    const char *in = arrives_in(kb, era, val, later, sizeof(later));
    r->status = "rejected";
    r->stops = xasprintf("%s '%s' is not a choice of vLLM %s (argparse: invalid choice, exit "
                         "status 2)",
                         name, val, x->out->engine_version);
    char *alts = kb->nmap ? nvfp4_choices(kb, era) : NULL;
    r->fix = xasprintf("%s %s%s%s%s", alts ? "use an NvFp4 MoE backend of this version:" : "use one of",
                       alts ? alts : choices, in ? " ('" : "", in ? val : "", in ? "' arrives in vLLM " : "");
    if (in) {
        char *f2 = xasprintf("%s%s)", r->fix, in);
        free(r->fix);
        r->fix = f2;
    }
    note_prepend(&r->note, xasprintf("'%s' is not one of the choices of %s in vLLM %s: argparse "
                                     "stops the server before it starts (\"vllm serve: error: "
                                     "argument %s: invalid choice: '%s' (choose from %s)\", exit "
                                     "status 2).",
                                     val, name, x->out->engine_version, name, val, choices));
    free(alts);
    free(choices);
}

void mp_xn_flag_value(struct xctx *x, const struct mp_kn_knob *kb, const struct mp_kn_era *era,
                      const char *name, const char *value, struct mp_kn_knob_report *r)
{
    char *val = kb->normalize ? mp_xn_norm_value(value) : xstrdup(value);
    if (kb->nvalues && !mp_xn_in_values(kb, era, val)) {
        invalid_choice(x, kb, era, name, val, r);
    } else if (kb->nmap) {
        const char *to = mp_xn_map_get(kb->map, kb->nmap, val);
        if (!to && strcmp(val, "auto"))
            not_nvfp4(x, kb, era, val, r);
        else if (to)
            note_prepend(&r->note, xasprintf("selects %s.", to));
    }
    if (kb->normalize && strcmp(val, value)) {
        char *n2 = xasprintf("%s (written '%s': vLLM lower-cases it and turns '-' into '_', "
                             "so it reads '%s')",
                             r->note, value, val);
        free(r->note);
        r->note = n2;
    }
    free(val);
}

void mp_xn_flag_missing(struct xctx *x, const struct mp_kn_knob *kb, const char *name,
                        struct mp_kn_knob_report *r)
{
    const struct mp_kn_ver *first = NULL;
    for (size_t i = 0; i < kb->neras && !first; i++)
        if (strcmp(kb->eras[i].status, "not-yet-available") && kb->eras[i].has_from)
            first = &kb->eras[i].from;
    r->stops = xasprintf("%s does not exist in vLLM %s: argparse stops it (\"unrecognized "
                         "arguments: %s\", exit status 2)",
                         name, x->out->engine_version, name);
    if (first)
        r->fix = xasprintf("remove %s, or use vLLM >= %d.%d.%d", name, first->v[0], first->v[1],
                           first->v[2]);
    else
        r->fix = xasprintf("remove %s", name);
}

char *mp_xn_unknown_env_note(const struct xctx *x, const char *name)
{
    const struct mp_kn_unknown_env *u = &x->k->unknown_env;
    const char *src = u->source ? u->source : "vllm envs.py validate_environ";
    if (!x->out->version_known || !u->has_from)
        return xasprintf("not a variable of any vLLM release moeprobe knows (knowledge up to v%s): "
                         "vLLM ignores it; from v%d.%d.%d on it warns 'Unknown vLLM environment "
                         "variable detected: %s' at start [%s]",
                         x->k->newest_version, u->from.v[0], u->from.v[1], u->from.v[2], name, src);
    if (mp_kn_ver_cmp(&x->v, &u->from) >= 0)
        return xasprintf("not a variable of vLLM %s: it prints 'Unknown vLLM environment variable "
                         "detected: %s' at start and ignores it [%s]",
                         x->out->engine_version, name, src);
    if (u->has_maybe && mp_kn_ver_cmp(&x->v, &u->maybe) >= 0)
        return xasprintf("not a variable of vLLM %s: it ignores it; uncertain whether it already "
                         "warns 'Unknown vLLM environment variable detected' (verified from "
                         "v%d.%d.%d on) [%s]",
                         x->out->engine_version, u->from.v[0], u->from.v[1], u->from.v[2], src);
    return xasprintf("not a variable of vLLM %s: it ignores it silently (the 'Unknown vLLM "
                     "environment variable' warning came later) [%s]",
                     x->out->engine_version, src);
}
