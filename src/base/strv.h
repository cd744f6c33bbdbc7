/* strv.h - a growable NULL-terminated vector of owned strings, and the
 * shell-like word splitter that fills one (value types; no I/O).
 *
 *   struct mp_strv s = MP_STRV_INIT;
 *   mp_strv_push(&s, "a");          copies
 *   mp_strv_release(&s);            frees every string; s is MP_STRV_INIT again
 *
 * The vector owns its strings and its array (a vec.h vector of char *, kept
 * NULL-terminated once anything was added: v[n] == NULL). */
#ifndef MP_STRV_H
#define MP_STRV_H

#include "compat.h"

#include "err.h"
#include "vec.h"

struct buf;

MP_VEC(mp_strv, char *);
#define MP_STRV_INIT MP_VEC_INIT
void mp_strv_push(struct mp_strv *s, const char *str);      /* copies str */
void mp_strv_push_owned(struct mp_strv *s, char *owned_str); /* takes ownership */
/* Frees every string and the array; s is MP_STRV_INIT again. */
void mp_strv_release(struct mp_strv *s);
/* Frees every string, keeps the array for reuse: n = 0. */
void mp_strv_clear(struct mp_strv *s);
/* Is a string equal to str (strcmp) in s? */
bool mp_strv_has(const struct mp_strv *s, const char *str);
/* v as a NULL-terminated array (never NULL; valid until the next push/release) */
char **mp_strv_array(struct mp_strv *s);

/* Split text into shell-like words appended to out: spaces separate;
 * '...' and "..." quote; backslash escapes outside single quotes. Returns 0,
 * or MP_EPARSE with d->msg set for an unterminated quote. */
int mp_split_words(const char *text, struct mp_strv *out, struct mp_diag *d);

/* Append w to b as one shell word: as is when it has no shell-special
 * characters, else as buf_add_shell_quoted. For commands shown to a reader. */
void buf_add_shell_word(struct buf *b, const char *w);
/* Append w to b single-quoted, always ('\'' for a quote): one word to a
 * POSIX shell whatever w holds (w must not contain NUL, which no shell word
 * can). For generated scripts, where a uniform form is easier to check. */
void buf_add_shell_quoted(struct buf *b, const char *w);

/* True when name is one of the items of the comma-separated list only, or
 * only is NULL (no list = everything). */
bool mp_csv_has(const char *only, const char *name);

#endif
