/* strv.h - a growable NULL-terminated vector of owned strings, and the
 * shell-like word splitter that fills one (value types; no I/O).
 *
 *   struct mp_strv s = MP_STRV_INIT;
 *   mp_strv_push(&s, "a");          copies
 *   mp_strv_release(&s);            frees every string; s is MP_STRV_INIT again */
#ifndef MP_STRV_H
#define MP_STRV_H

#include "compat.h"

#include "err.h"

struct buf;

struct mp_strv {
    char **v;
    size_t n, cap;
};
#define MP_STRV_INIT { NULL, 0, 0 }
void mp_strv_push(struct mp_strv *s, const char *str);      /* copies str */
void mp_strv_push_owned(struct mp_strv *s, char *owned_str); /* takes ownership */
void mp_strv_release(struct mp_strv *s);
/* v as a NULL-terminated array (never NULL; valid until the next push/release) */
char **mp_strv_array(struct mp_strv *s);

/* Split text into shell-like words appended to out: spaces separate;
 * '...' and "..." quote; backslash escapes outside single quotes. Returns 0,
 * or MP_EPARSE with d->msg set for an unterminated quote. */
int mp_split_words(const char *text, struct mp_strv *out, struct mp_diag *d);

/* Append w to b as one shell word: as is when it has no shell-special
 * characters, else single-quoted ('\'' for a quote). */
void buf_add_shell_word(struct buf *b, const char *w);

/* True when name is one of the items of the comma-separated list only, or
 * only is NULL (no list = everything). */
bool mp_csv_has(const char *only, const char *name);

#endif
