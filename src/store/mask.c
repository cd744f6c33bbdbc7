/* mask.c - replacing secret values by *** in everything the store writes
 * (the rule itself is in base/secret.h). */
#include "store/store.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "escape.h"
#include "secret.h"
#include "xalloc.h"

extern char **environ;

#define EXPLICIT_MIN_LEN 4 /* a value given as a secret (the API key) */
#define CUT_MIN_TAIL 4     /* a cut tail this long that begins a value is masked */

static void add_n(struct mp_store_mask *m, const char *value, size_t len)
{
    if (!m || !value || len < EXPLICIT_MIN_LEN || (len == 3 && !memcmp(value, "***", 3)))
        return;
    for (size_t i = 0; i < m->values.n; i++) {
        if (strlen(m->values.v[i]) == len && !memcmp(m->values.v[i], value, len))
            return;
    }
    /* longest first, so a value that contains another is replaced whole */
    mp_strv_push_owned(&m->values, xstrndup(value, len));
    m->first[(unsigned char)value[0]] = true;
    for (size_t i = m->values.n - 1; i > 0; i--) {
        if (strlen(m->values.v[i]) <= strlen(m->values.v[i - 1]))
            break;
        char *t = m->values.v[i];
        m->values.v[i] = m->values.v[i - 1];
        m->values.v[i - 1] = t;
    }
}

void mp_store_mask_add(struct mp_store_mask *m, const char *value)
{
    if (value)
        add_n(m, value, strlen(value));
}

/* found by the secret rule: only values that look like secrets are kept as
 * known values (a short URL password is still masked structurally) */
static void add_found(void *ud, const char *value, size_t len)
{
    if (mp_secret_value_ok(value, len))
        add_n(ud, value, len);
}

void mp_store_mask_add_args(struct mp_store_mask *m, char *const *argv, size_t argc)
{
    mp_secret_scan_args(argv, argc, add_found, m);
}

void mp_store_mask_add_cands(struct mp_store_mask *m, const struct mp_candidate *cands,
                             size_t ncands)
{
    for (size_t i = 0; m && i < ncands; i++) {
        mp_secret_scan_args(cands[i].env.v, cands[i].env.n, add_found, m);
        mp_secret_scan_args(cands[i].args.v, cands[i].args.n, add_found, m);
    }
}

void mp_store_mask_init(struct mp_store_mask *m, const struct mp_candidate *cands, size_t ncands,
                        const char *extra)
{
    memset(m, 0, sizeof(*m));
    for (char **e = environ; e && *e; e++)
        mp_secret_scan_args(e, 1, add_found, m); /* NAME=VALUE words */
    mp_store_mask_add_cands(m, cands, ncands);
    mp_store_mask_add(m, extra);
}

void mp_store_mask_merge(struct mp_store_mask *dst, const struct mp_store_mask *src)
{
    for (size_t i = 0; dst && src && i < src->values.n; i++)
        mp_store_mask_add(dst, src->values.v[i]);
}

/* ---- the process's mask: the terminal and the scheduler's task logs ---- */

static struct mp_store_mask process_mask;
static bool process_mask_set;

struct mp_store_mask *mp_store_mask_process(void)
{
    return process_mask_set ? &process_mask : NULL;
}

static char *term_mask(const void *ud, const char *s, size_t n, size_t *outlen)
{
    return mp_store_mask_apply_ex(ud, s, n, MP_MASK_WORDS, NULL, outlen);
}

void mp_store_mask_process_init(char *const *argv, size_t argc)
{
    mp_store_mask_release(&process_mask);
    mp_store_mask_init(&process_mask, NULL, 0, NULL);
    /* the server command after "--" (moeprobe's own options name no
     * secret values: --api-key-env names a variable; candidates and the API
     * key are added once parsed) */
    size_t dd = 0;
    while (dd < argc && strcmp(argv[dd], "--") != 0)
        dd++;
    if (dd < argc)
        mp_store_mask_add_args(&process_mask, argv + dd + 1, argc - dd - 1);
    process_mask_set = true;
    mp_term_set_mask(term_mask, &process_mask);
}

void mp_store_mask_process_end(void)
{
    mp_term_set_mask(NULL, NULL);
    mp_store_mask_release(&process_mask);
    process_mask_set = false;
}

void mp_store_mask_release(struct mp_store_mask *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->values.n; i++)
        memset(m->values.v[i], 0, strlen(m->values.v[i]));
    mp_strv_release(&m->values);
    memset(m->first, 0, sizeof(m->first));
}

static bool name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
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

/* At p = '=' of a word NAME=VALUE / --name=VALUE with a secret NAME: the
 * value's length, else 0. */
static size_t word_value(const char *s, const char *p, const char *end)
{
    const char *n0 = p;
    while (n0 > s && name_char(n0[-1]))
        n0--;
    bool at_word = n0 == s || isspace((unsigned char)n0[-1]) || n0[-1] == '\'' ||
                   n0[-1] == '"' || n0[-1] == ':';
    const char *name = n0;
    while (name < p && *name == '-')
        name++;
    if (!at_word || name == p || isdigit((unsigned char)*name) ||
        !mp_is_secret_name(name, (size_t)(p - name)))
        return 0;
    size_t vl = value_len(p + 1, end);
    return mp_secret_value_ok(p + 1, vl) ? vl : 0;
}

/* Length of a known value at p, or 0. */
static size_t known_at(const struct mp_store_mask *m, const char *p, const char *end)
{
    if (!m || !m->first[(unsigned char)*p])
        return 0;
    for (size_t i = 0; i < m->values.n; i++) {
        size_t vl = strlen(m->values.v[i]);
        if (vl <= (size_t)(end - p) && !memcmp(p, m->values.v[i], vl))
            return vl;
    }
    return 0;
}

/* A cut text's tail at p (to end) that is the beginning of a known value. */
static bool cut_tail_at(const struct mp_store_mask *m, const char *p, const char *end)
{
    size_t tl = (size_t)(end - p);
    if (!m || tl < CUT_MIN_TAIL || !m->first[(unsigned char)*p])
        return false;
    for (size_t i = 0; i < m->values.n; i++) {
        size_t vl = strlen(m->values.v[i]);
        if (vl > tl && !memcmp(p, m->values.v[i], tl))
            return true;
    }
    return false;
}

/* Appends the part [p, p+keep) a structural match keeps verbatim (its name,
 * quotes, ...) with the known values in it replaced, then *** for the value
 * [p+keep, p+keep+vl). Returns where the text goes on: after the value, or
 * after a known value that began in the kept part and reaches past it. */
static const char *add_match(struct buf *b, const struct mp_store_mask *m, const char *p,
                             size_t keep, size_t vl, const char *end)
{
    const char *kend = p + keep, *vend = kend + vl, *q = p, *lit = p;
    while (q < kend) {
        size_t kv = known_at(m, q, end);
        if (!kv) {
            q++;
            continue;
        }
        buf_add(b, lit, (size_t)(q - lit));
        buf_adds(b, "***");
        q += kv;
        lit = q;
    }
    if (q >= vend)
        return q; /* a known value covered the value too */
    buf_add(b, lit, (size_t)(kend > lit ? kend - lit : 0));
    buf_adds(b, "***");
    return vend;
}

char *mp_store_mask_apply_ex(const struct mp_store_mask *m, const char *s, size_t len,
                             unsigned flags, bool *changed, size_t *outlen)
{
    struct buf b = BUF_INIT;
    bool any = false;
    const char *end = s + len;
    const char *run = s; /* start of the bytes not yet copied */
    const char *p = s;
    while (p < end) {
        size_t keep = 0, vl = known_at(m, p, end);
        if (!vl && (flags & MP_MASK_WORDS) && *p == '=' && p > s) {
            vl = word_value(s, p, end);
            keep = vl ? 1 : 0;
        }
        if (!vl && !mp_secret_match_at(s, p, end, &keep, &vl))
            vl = keep = 0;
        if (!vl && (flags & MP_MASK_CUT) && cut_tail_at(m, p, end))
            vl = (size_t)(end - p);
        if (!vl) {
            p++;
            continue;
        }
        /* every byte before p was checked for a known value; the kept part
         * of a structural match was not (a JSON key can hold one) */
        buf_add(&b, run, (size_t)(p - run));
        p = add_match(&b, m, p, keep, vl, end);
        run = p;
        any = true;
    }
    if (changed)
        *changed = any;
    if (!any) {
        char *c = xmalloc(len + 1);
        memcpy(c, s, len);
        c[len] = '\0';
        if (outlen)
            *outlen = len;
        return c;
    }
    buf_add(&b, run, (size_t)(end - run));
    size_t n = 0;
    char *r = buf_detach(&b, &n);
    if (outlen)
        *outlen = n;
    return r;
}

char *mp_store_mask_apply(const struct mp_store_mask *m, const char *s, size_t len, bool words,
                          bool *changed)
{
    return mp_store_mask_apply_ex(m, s, len, words ? MP_MASK_WORDS : 0, changed, NULL);
}
