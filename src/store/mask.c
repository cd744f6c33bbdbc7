/* mask.c - replacing secret values by *** in everything the store writes. */
#include "store/store.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "secret.h"
#include "xalloc.h"

extern char **environ;

void mp_store_mask_add(struct mp_store_mask *m, const char *value)
{
    if (!value || strlen(value) < 4 || !strcmp(value, "***"))
        return;
    for (size_t i = 0; i < m->values.n; i++) {
        if (!strcmp(m->values.v[i], value))
            return;
    }
    /* longest first, so a value that contains another is replaced whole */
    mp_strv_push(&m->values, value);
    for (size_t i = m->values.n - 1; i > 0; i--) {
        if (strlen(m->values.v[i]) <= strlen(m->values.v[i - 1]))
            break;
        char *t = m->values.v[i];
        m->values.v[i] = m->values.v[i - 1];
        m->values.v[i - 1] = t;
    }
}

static void add_assignment(struct mp_store_mask *m, const char *w)
{
    const char *eq = strchr(w, '=');
    if (eq && eq > w && mp_is_secret_name(w, (size_t)(eq - w)))
        mp_store_mask_add(m, eq + 1);
}

void mp_store_mask_init(struct mp_store_mask *m, const struct mp_candidate *cands, size_t ncands,
                        const char *extra)
{
    memset(m, 0, sizeof(*m));
    for (char **e = environ; e && *e; e++)
        add_assignment(m, *e);
    for (size_t i = 0; i < ncands; i++) {
        for (size_t j = 0; j < cands[i].env.n; j++)
            add_assignment(m, cands[i].env.v[j]);
    }
    mp_store_mask_add(m, extra);
}

void mp_store_mask_release(struct mp_store_mask *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->values.n; i++)
        memset(m->values.v[i], 0, strlen(m->values.v[i]));
    mp_strv_release(&m->values);
}

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Length of the NAME=VALUE value starting at v: up to whitespace or a quote. */
static size_t value_len(const char *v, const char *end)
{
    const char *p = v;
    while (p < end && !isspace((unsigned char)*p) && *p != '\'' && *p != '"' && *p != ',' &&
           *p != '}')
        p++;
    return (size_t)(p - v);
}

char *mp_store_mask_apply(const struct mp_store_mask *m, const char *s, size_t len, bool words,
                          bool *changed)
{
    struct buf b = BUF_INIT;
    bool any = false;
    const char *end = s + len;
    const char *p = s;
    while (p < end) {
        /* a known secret value */
        bool hit = false;
        for (size_t i = 0; m && i < m->values.n; i++) {
            size_t vl = strlen(m->values.v[i]);
            if (vl <= (size_t)(end - p) && !memcmp(p, m->values.v[i], vl)) {
                buf_adds(&b, "***");
                p += vl;
                hit = any = true;
                break;
            }
        }
        if (hit)
            continue;
        /* NAME=VALUE with a secret NAME, at a word start */
        if (words && *p == '=' && p > s) {
            const char *n0 = p;
            while (n0 > s && ident_char(n0[-1]))
                n0--;
            size_t vl = value_len(p + 1, end);
            bool at_word = n0 == s || isspace((unsigned char)n0[-1]) || n0[-1] == '\'' ||
                           n0[-1] == '"' || n0[-1] == ':';
            if (at_word && n0 < p && !isdigit((unsigned char)*n0) &&
                mp_is_secret_name(n0, (size_t)(p - n0)) &&
                vl > 0 && !(vl == 3 && !memcmp(p + 1, "***", 3))) {
                buf_adds(&b, "=***");
                p += 1 + vl;
                any = true;
                continue;
            }
        }
        buf_addc(&b, *p);
        p++;
    }
    if (changed)
        *changed = any;
    if (!b.data)
        return xstrdup("");
    return buf_detach(&b, NULL);
}
