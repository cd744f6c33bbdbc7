/* fuzz_secret.c - the secret rules (base/secret.h) and the one mask that
 * applies them to outside text (store/mask.c: engine output, failure notes,
 * task logs, scan's JSON) under arbitrary input.
 *
 * Byte 0: the flags (bit 0 MP_MASK_WORDS, bit 1 MP_MASK_CUT); byte 1: the
 * length (0-16) of a planted secret value V taken from the next bytes, kept
 * to [A-Za-z0-9] so that it "looks like" a secret; the rest is the text.
 * Invariants: the masked copy has the length it reports and never contains
 * V (every occurrence of a known value is replaced, and "***" cannot help
 * form a new one), nor, with MP_MASK_CUT, ends in the beginning of V (8
 * bytes or more, after a space) where the text did; the structural scan reports only non-empty values inside
 * the text; the name rule and the argument scan read nothing out of bounds
 * (ASan). Partial input is the point: any prefix of a line is a text. */
#include "compat.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "secret.h"
#include "store/store.h"

struct span {
    const char *lo, *hi;
};

static void in_text(void *ud, const char *v, size_t len)
{
    const struct span *s = ud;
    if (len == 0 || v < s->lo || v + len > s->hi)
        abort();
}

static void count(void *ud, const char *v, size_t len)
{
    (void)v;
    (void)len;
    ++*(size_t *)ud;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned flags = data[0] & (MP_MASK_WORDS | MP_MASK_CUT);
    size_t vlen = data[1] % 17;
    if (size < 2 + vlen)
        return 0;
    char v[17];
    for (size_t i = 0; i < vlen; i++) {
        static const char an[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        v[i] = an[data[2 + i] % (sizeof(an) - 1)];
    }
    v[vlen] = '\0';
    const char *text = (const char *)data + 2 + vlen;
    size_t tlen = size - 2 - vlen;

    struct mp_store_mask m;
    mp_store_mask_init(&m, NULL, 0, vlen >= MP_SECRET_MIN_LEN ? v : NULL);
    size_t outlen = 0;
    bool changed = false;
    char *out = mp_store_mask_apply_ex(&m, text, tlen, flags, &changed, &outlen);
    if (!out || out[outlen] != '\0')
        abort();
    if (vlen >= MP_SECRET_MIN_LEN && memmem(out, outlen, v, vlen))
        abort(); /* a planted value survived the mask */
    if (!changed && (outlen != tlen || memcmp(out, text, tlen) != 0))
        abort(); /* nothing replaced, yet the text changed */
    /* a cut text that ends in the first k >= 8 bytes of V (after a space):
     * that tail is masked too */
    for (size_t k = MP_SECRET_MIN_LEN; (flags & MP_MASK_CUT) && k < vlen && k <= tlen; k++)
        if (!memcmp(text + tlen - k, v, k) && (tlen == k || text[tlen - k - 1] == ' ') &&
            outlen >= k && !memcmp(out + outlen - k, v, k))
            abort();
    free(out);
    mp_store_mask_release(&m);

    struct span sp = {text, text + tlen};
    mp_secret_scan_text(text, tlen, in_text, &sp);
    (void)mp_is_secret_name(text, tlen);
    /* the text's words as an argument vector (NUL-separated) */
    char *copy = malloc(tlen + 1);
    if (!copy)
        return 0;
    memcpy(copy, text, tlen);
    copy[tlen] = '\0';
    char *argv[16];
    size_t argc = 0;
    for (char *p = copy; argc < 16 && p < copy + tlen; p += strlen(p) + 1)
        argv[argc++] = p;
    size_t found = 0;
    mp_secret_scan_args(argv, argc, count, &found);
    free(copy);
    return 0;
}
