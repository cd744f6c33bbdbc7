/* fuzz_candidate.c - the `--candidate 'NAME: KNOBS'` parser and what is built
 * on a candidate (knob list, display string, copy) under arbitrary input.
 *
 * The input is the spec (made a C string: up to the first NUL). Invariants:
 * a failure says why; a parsed candidate has a valid name, env words that are
 * NAME=VALUE, as many knobs as mp_candidate_nknobs says, env knobs first,
 * a copy with the same words; mp_candidate_from_knobs on the part after the
 * colon gives the same words, and so does the (shell-quoted) display string
 * when nothing in it was redacted. */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "model/candidate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_strv(const struct mp_strv *a, const struct mp_strv *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0)
            return false;
    return true;
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *spec = malloc(size + 1);
    if (!spec)
        return 0;
    memcpy(spec, data, size);
    spec[size] = '\0';

    struct mp_candidate c;
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_candidate_parse(spec, &c, &d);
    if (rc < 0) {
        if (d.msg[0] == '\0')
            __builtin_trap(); /* every failure says why */
        mp_candidate_release(&c);
        free(spec);
        return 0;
    }
    if (!c.name || !name_ok(c.name))
        __builtin_trap();
    for (size_t i = 0; i < c.env.n; i++)
        if (!mp_is_env_word(c.env.v[i]))
            __builtin_trap();
    for (size_t i = 0; i < c.args.n; i++)
        if (mp_is_env_word(c.args.v[i]))
            __builtin_trap();

    struct mp_knobs k = MP_KNOBS_INIT;
    mp_candidate_knobs(&c, &k);
    if (k.n != mp_candidate_nknobs(&c))
        __builtin_trap();
    size_t nwords = 0;
    bool flags_seen = false;
    for (size_t i = 0; i < k.n; i++) {
        if (!k.k[i].key || !k.k[i].text || k.k[i].words.n == 0)
            __builtin_trap();
        if (k.k[i].env && flags_seen)
            __builtin_trap(); /* env assignments come first */
        flags_seen |= !k.k[i].env;
        nwords += k.k[i].words.n;
    }
    if (nwords != c.env.n + c.args.n)
        __builtin_trap(); /* every word is in exactly one knob */
    mp_knobs_release(&k);

    /* the display string is shell-quoted: it splits back into the same
     * words, unless a secret was redacted in it */
    char *shown = mp_candidate_knobs_str(&c);
    if (!shown)
        __builtin_trap();
    if (!strstr(shown, "***")) {
        struct mp_candidate back;
        struct mp_diag d3 = MP_DIAG_INIT;
        if (mp_candidate_from_knobs(c.name, shown, &back, &d3) != 0 || !same_strv(&back.env, &c.env) ||
            !same_strv(&back.args, &c.args))
            __builtin_trap();
        mp_candidate_release(&back);
    }
    free(shown);

    struct mp_candidate cp;
    mp_candidate_copy(&cp, &c);
    if (strcmp(cp.name, c.name) != 0 || !same_strv(&cp.env, &c.env) || !same_strv(&cp.args, &c.args))
        __builtin_trap();
    mp_candidate_release(&cp);

    struct mp_candidate again;
    struct mp_diag d2 = MP_DIAG_INIT;
    if (mp_candidate_from_knobs(c.name, strchr(spec, ':') + 1, &again, &d2) != 0 ||
        !same_strv(&again.env, &c.env) || !same_strv(&again.args, &c.args))
        __builtin_trap();
    mp_candidate_release(&again);

    mp_candidate_release(&c);
    free(spec);
    return 0;
}
