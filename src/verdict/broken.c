/* broken.c - a server command that fails before any backend is chosen
 * (broken.h). */
#include "verdict/broken.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "knowledge/knowledge.h"
#include "xalloc.h"

static bool selected_anything(const struct mp_resolved *r)
{
    return r->moe_backend || r->moe_candidates.n || r->linear_kernel || r->linear_kernels.n ||
           r->attention_backend || r->unquantized_moe_backend;
}

/* Does text contain word, ignoring case? (vLLM names a backend in capitals:
 * "NvFp4 MoE backend 'CUTLASS' does not support ...", for --moe-backend cutlass.) */
static bool has_word(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (; *text; text++)
        if (!strncasecmp(text, word, n))
            return true;
    return false;
}

/* Does text name knob k (an environment variable's name, a flag, or one of
 * the flag's values; an environment value as Python quotes it: "invalid
 * literal for int() with base 10: 'true'")? */
static bool names_knob(const char *text, const struct mp_knob *k)
{
    if (strstr(text, k->key))
        return true;
    if (k->env) {
        const char *eq = k->words.n ? strchr(k->words.v[0], '=') : NULL;
        if (!eq || !eq[1])
            return false;
        char *q = xasprintf("'%s'", eq + 1);
        bool hit = strstr(text, q) != NULL;
        free(q);
        return hit;
    }
    const char *eq = k->words.n ? strchr(k->words.v[0], '=') : NULL; /* --x=value */
    if (eq && strlen(eq + 1) > 2 && has_word(text, eq + 1))
        return true;
    for (size_t i = 1; i < k->words.n; i++)
        if (strlen(k->words.v[i]) > 2 && has_word(text, k->words.v[i]))
            return true;
    return false;
}

/* A class that is itself about backends: the MoE selection ran and found
 * none ("No NvFp4 MoE backend supports the deployment configuration"), or
 * refused the one asked for. Knobs decide those. */
static bool backend_class(const char *cls)
{
    int c = mp_kn_class_from_name(cls);
    return c == MP_KN_CLS_NO_MOE_BACKEND || c == MP_KN_CLS_UNSUPPORTED_BACKEND;
}

bool mp_broken_before_selection(const struct mp_candidate *c, const struct mp_attempt_result *a)
{
    if (!a || a->outcome != MP_OUT_STARTUP_FAILURE || selected_anything(&a->res) ||
        !a->fail_message || backend_class(a->fail_class))
        return false;
    struct mp_knobs ks = MP_KNOBS_INIT;
    mp_candidate_knobs(c, &ks);
    bool knob = false;
    for (size_t i = 0; i < ks.n && !knob; i++)
        knob = names_knob(a->fail_message, &ks.k[i]);
    mp_knobs_release(&ks);
    return !knob;
}

/* a and b equal once every run of digits counts as one '#'. */
static bool same_but_digits(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (isdigit((unsigned char)*a))
                a++;
            while (isdigit((unsigned char)*b))
                b++;
            continue;
        }
        if (*a++ != *b++)
            return false;
    }
    return *a == *b;
}

bool mp_broken_same_way(const struct mp_attempt_result *a, const struct mp_attempt_result *b)
{
    const char *ca = a->fail_class ? a->fail_class : "", *cb = b->fail_class ? b->fail_class : "";
    return !strcmp(ca, cb) && a->fail_message && b->fail_message &&
           same_but_digits(a->fail_message, b->fail_message);
}

bool mp_broken_knobs_apart(const struct mp_candidate *a, const struct mp_candidate *b)
{
    struct mp_knobs ka = MP_KNOBS_INIT, kb = MP_KNOBS_INIT;
    mp_candidate_knobs(a, &ka);
    mp_candidate_knobs(b, &kb);
    bool apart = true;
    for (size_t i = 0; i < ka.n && apart; i++)
        for (size_t j = 0; j < kb.n && apart; j++)
            apart = strcmp(ka.k[i].key, kb.k[j].key) != 0;
    mp_knobs_release(&ka);
    mp_knobs_release(&kb);
    return apart;
}
