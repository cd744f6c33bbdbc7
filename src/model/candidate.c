/* candidate.c - candidates and their knobs (model/candidate.h). */
#include "model/candidate.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "secret.h"
#include "vec.h"
#include "xalloc.h"

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

char *mp_candidate_knobs_str(const struct mp_candidate *c)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < c->env.n; i++) {
        char *r = mp_redact_assignment(c->env.v[i]);
        if (b.len)
            buf_addc(&b, ' ');
        buf_add_shell_word(&b, r);
        free(r);
    }
    for (size_t i = 0; i < c->args.n; i++) {
        if (b.len)
            buf_addc(&b, ' ');
        buf_add_shell_word(&b, c->args.v[i]);
    }
    return buf_detach(&b, NULL);
}

void mp_knobs_add(struct mp_knobs *s, bool env, const char *key, char *const *words, size_t nw)
{
    mp_grow(s->k, s->cap, s->n + 1);
    struct mp_knob *k = &s->k[s->n++];
    memset(k, 0, sizeof(*k));
    k->env = env;
    k->key = xstrdup(key);
    struct buf t = BUF_INIT;
    for (size_t i = 0; i < nw; i++) {
        mp_strv_push(&k->words, words[i]);
        if (i)
            buf_addc(&t, ' ');
        buf_adds(&t, words[i]);
    }
    k->text = buf_detach(&t, NULL);
}

void mp_knobs_release(struct mp_knobs *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->k[i].key);
        free(s->k[i].text);
        mp_strv_release(&s->k[i].words);
    }
    free(s->k);
    memset(s, 0, sizeof(*s));
}

/* End of the flag group that starts at args[i]. */
static size_t group_end(const struct mp_candidate *c, size_t i)
{
    size_t j = i + 1;
    while (j < c->args.n && c->args.v[j][0] != '-')
        j++;
    return j;
}

void mp_candidate_knobs(const struct mp_candidate *c, struct mp_knobs *out)
{
    for (size_t i = 0; i < c->env.n; i++) {
        const char *w = c->env.v[i];
        const char *eq = strchr(w, '=');
        char *name = xstrndup(w, eq ? (size_t)(eq - w) : strlen(w));
        mp_knobs_add(out, true, name, &c->env.v[i], 1);
        free(name);
    }
    for (size_t i = 0; i < c->args.n;) {
        size_t j = group_end(c, i);
        const char *w = c->args.v[i];
        const char *eq = strchr(w, '=');
        char *key = w[0] == '-' && eq ? xstrndup(w, (size_t)(eq - w)) : xstrdup(w);
        mp_knobs_add(out, false, key, &c->args.v[i], j - i);
        free(key);
        i = j;
    }
}

size_t mp_candidate_nknobs(const struct mp_candidate *c)
{
    size_t n = c->env.n;
    for (size_t i = 0; i < c->args.n; i = group_end(c, i))
        n++;
    return n;
}
