/* strv.c - the string vector and the shell-like word splitter. */
#include "strv.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "xalloc.h"

void mp_strv_push_owned(struct mp_strv *s, char *owned_str)
{
    mp_vec_reserve(s, 2); /* the string and the NULL after it */
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

void mp_strv_clear(struct mp_strv *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    s->n = 0;
    if (s->v)
        s->v[0] = NULL;
}

bool mp_strv_has(const struct mp_strv *s, const char *str)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], str))
            return true;
    return false;
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

void buf_add_shell_word(struct buf *b, const char *w)
{
    bool plain = *w != '\0';
    for (const char *p = w; *p; p++) {
        if (!(isalnum((unsigned char)*p) || strchr("-_./=:,+@%{}", *p))) {
            plain = false;
            break;
        }
    }
    if (plain)
        buf_adds(b, w);
    else
        buf_add_shell_quoted(b, w);
}

void buf_add_shell_quoted(struct buf *b, const char *w)
{
    buf_addc(b, '\'');
    for (const char *p = w; *p; p++) {
        if (*p == '\'')
            buf_adds(b, "'\\''");
        else
            buf_addc(b, *p);
    }
    buf_addc(b, '\'');
}


bool mp_csv_has(const char *only, const char *name)
{
    if (!only)
        return true;
    size_t nl = strlen(name);
    const char *p = only;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == nl && !strncmp(p, name, nl))
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}
