/* broken.c - a server command that fails before any backend is chosen
 * (broken.h). */
#include "verdict/broken.h"

#include <ctype.h>
#include <string.h>

static bool selected_anything(const struct mp_resolved *r)
{
    return r->moe_backend || r->moe_candidates.n || r->linear_kernel || r->linear_kernels.n ||
           r->attention_backend || r->unquantized_moe_backend;
}

/* Does text name knob k (an environment variable's name, a flag, or one of
 * the flag's values)? */
static bool names_knob(const char *text, const struct mp_knob *k)
{
    if (strstr(text, k->key))
        return true;
    for (size_t i = 1; !k->env && i < k->words.n; i++)
        if (strlen(k->words.v[i]) > 2 && strstr(text, k->words.v[i]))
            return true;
    return false;
}

bool mp_broken_before_selection(const struct mp_candidate *c, const struct mp_attempt_result *a)
{
    if (!a || a->outcome != MP_OUT_STARTUP_FAILURE || selected_anything(&a->res) ||
        !a->fail_message)
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
