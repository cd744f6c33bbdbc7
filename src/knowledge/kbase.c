/* kbase.c - what every part of the knowledge uses (kn_int.h, knowledge.h):
 * vLLM versions, crash classes, and regex compilation with the {Q} quote
 * class. Uses no other file of src/knowledge. */
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "knowledge/knowledge.h"
#include "knowledge/kn_int.h"

/* ---------------------------------------------------------------- versions */

int mp_kn_ver_parse(const char *s, struct mp_kn_ver *out)
{
    memset(out, 0, sizeof(*out));
    if (!s)
        return MP_EPARSE;
    if (*s == 'v' || *s == 'V')
        s++;
    if (*s < '0' || *s > '9')
        return MP_EPARSE;
    for (int i = 0; i < 3; i++) {
        long n = 0;
        if (*s < '0' || *s > '9')
            break;
        while (*s >= '0' && *s <= '9') {
            if (n < 100000)
                n = n * 10 + (*s - '0');
            s++;
        }
        out->v[i] = (int)n;
        if (*s != '.')
            break;
        s++;
    }
    /* "0.1.dev19908+g728d3ad09": setuptools-scm's fallback for a build from
     * a checkout without release tags (a nightly image, a shallow clone),
     * not vLLM 0.1: no version at all */
    if (out->v[0] == 0 && out->v[1] <= 1 && !strncmp(s, "dev", 3)) {
        memset(out, 0, sizeof(*out));
        return MP_EPARSE;
    }
    return 0;
}

int mp_kn_ver_cmp(const struct mp_kn_ver *a, const struct mp_kn_ver *b)
{
    for (int i = 0; i < 3; i++)
        if (a->v[i] != b->v[i])
            return a->v[i] < b->v[i] ? -1 : 1;
    return 0;
}

/* ----------------------------------------------------------------- classes */

static const char *const class_names[MP_KN_NCLASSES] = {
    "illegal-address", "misaligned-address", "illegal-instruction", "launch-failure",
    "tma-descriptor",  "out-of-memory",      "cuda-other",          "no-moe-backend",
    "unsupported-backend", "engine-dead",    "python-error",
};
static const int class_ranks[MP_KN_NCLASSES] = {4, 4, 4, 4, 4, 4, 3, 4, 4, 1, 2};

const char *mp_kn_class_name(int cls)
{
    return cls >= 0 && cls < MP_KN_NCLASSES ? class_names[cls] : NULL;
}

int mp_kn_class_from_name(const char *name)
{
    for (int i = 0; i < MP_KN_NCLASSES; i++)
        if (name && !strcmp(name, class_names[i]))
            return i;
    return -1;
}

int mp_kn_class_rank(int cls)
{
    return cls >= 0 && cls < MP_KN_NCLASSES ? class_ranks[cls] : 0;
}

bool mp_kn_class_is_cuda_fault(int cls)
{
    switch (cls) {
    case MP_KN_CLS_ILLEGAL_ADDRESS:
    case MP_KN_CLS_MISALIGNED_ADDRESS:
    case MP_KN_CLS_ILLEGAL_INSTRUCTION:
    case MP_KN_CLS_LAUNCH_FAILURE:
    case MP_KN_CLS_TMA_DESCRIPTOR:
    case MP_KN_CLS_CUDA_OTHER:
        return true;
    default:
        return false;
    }
}

bool mp_kn_class_name_is_cuda_fault(const char *name)
{
    return mp_kn_class_is_cuda_fault(mp_kn_class_from_name(name));
}

/* Expand {Q} (any quote: ' " or a curly quote) in a regex. */
char *mp_kn_expand_regex(const char *re)
{
    static const char q[] = "(?:['\"]|\\xe2\\x80[\\x98\\x99\\x9c\\x9d])";
    struct buf b = BUF_INIT;
    for (const char *p = re; *p; p++) {
        if (!strncmp(p, "{Q}", 3)) {
            buf_adds(&b, q);
            p += 2;
        } else {
            buf_addc(&b, *p);
        }
    }
    return buf_detach(&b, NULL);
}

pcre2_code *mp_kn_compile(const char *re, char *msg, size_t n)
{
    char *x = mp_kn_expand_regex(re);
    int err;
    PCRE2_SIZE off;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)x, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    free(x);
    if (!code) {
        PCRE2_UCHAR m[120];
        pcre2_get_error_message(err, m, sizeof(m));
        snprintf(msg, n, "regex does not compile at offset %zu: %s", (size_t)off,
                 (const char *)m);
        return NULL;
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* falls back to the interpreter */
    return code;
}

