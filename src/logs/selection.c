/* selection.c - selection lines into fields: the MoE backend and its
 * candidate list (and what the list says about the vLLM build), the dense
 * kernels by quantization method, the unquantized MoE backend (see
 * scan_int.h). */
#include "compat.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "logs/scan_int.h"
#include "xalloc.h"

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

void mp_logs_set_candidates(struct mp_strv *out, const char *p, size_t n)
{
    mp_strv_clear(out);
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\'' || c == '"') {
            /* a quoted name may hold blanks ("FlashInfer CUTLASS") */
            const char *e = memchr(p + i + 1, (int)c, n - i - 1);
            if (!e)
                break;
            size_t a = i + 1, len = (size_t)(e - p) - a;
            if (len >= 2 && len <= 64)
                mp_strv_push_owned(out, xstrndup(p + a, len));
            i = (size_t)(e - p) + 1;
        } else if ((c >= 'A' && c <= 'Z') || c == '_' || is_digit((char)c)) {
            size_t j = i;
            while (j < n && ((p[j] >= 'A' && p[j] <= 'Z') || p[j] == '_' || is_digit(p[j])))
                j++;
            if (j - i >= 2 && !is_digit(p[i]))
                mp_strv_push_owned(out, xstrndup(p + i, j - i));
            i = j;
        } else if (c == ']' || c == ')') {
            break;
        } else {
            i++;
        }
    }
}

static bool has_ci(const char *s, size_t n, const char *w)
{
    size_t wl = strlen(w);
    for (size_t i = 0; i + wl <= n; i++)
        if (!strncasecmp(s + i, w, wl))
            return true;
    return false;
}

/* The quantization method of a dense kernel from its class name, else from
 * the layer's quantization method ("Selected X for Y"). */
static const char *linear_method(const char *k, size_t kn, const char *m, size_t mn)
{
    for (int pass = 0; pass < 2; pass++) {
        const char *s = pass ? m : k;
        size_t n = pass ? mn : kn;
        if (!s || !n)
            continue;
        if (has_ci(s, n, "nvfp4"))
            return "nvfp4";
        if (has_ci(s, n, "mxfp8"))
            return "mxfp8";
        if (has_ci(s, n, "mxfp6"))
            return "mxfp6";
        if (has_ci(s, n, "mxfp4"))
            return "mxfp4";
        if (has_ci(s, n, "fp8") && has_ci(s, n, "block"))
            return "fp8_block";
        if (has_ci(s, n, "fp8"))
            return "fp8";
        if (has_ci(s, n, "int8") || has_ci(s, n, "w8a8"))
            return "int8";
        if (has_ci(s, n, "wna16") || has_ci(s, n, "machete") || has_ci(s, n, "exllama") ||
            has_ci(s, n, "conch") || has_ci(s, n, "gptq") || has_ci(s, n, "awq") ||
            has_ci(s, n, "mixed"))
            return "mixed";
    }
    return "other";
}

static bool set_linear(struct mp_logscan *s, const char *v, size_t n, const char *aux, size_t auxn,
                       bool aux_is_method)
{
    char method[24];
    if (aux_is_method && auxn && auxn < sizeof(method)) {
        for (size_t i = 0; i < auxn; i++)
            method[i] = (char)tolower((unsigned char)aux[i]);
        method[auxn] = 0;
    } else {
        snprintf(method, sizeof(method), "%s",
                 linear_method(v, n, aux_is_method ? NULL : aux, aux_is_method ? 0 : auxn));
    }
    for (size_t i = 0; i < s->nlin; i++)
        if (!strcmp(s->lin_method[i], method))
            return false; /* the first selection per method (info_once per process) */
    if (s->nlin == MAX_LINEAR)
        return false;
    s->lin_method[s->nlin] = xstrdup(method);
    s->lin_kernel[s->nlin] = clean_copy(v, n, 256);
    s->lin_line[s->nlin] = s->lineno;
    s->nlin++;
    return true;
}

bool mp_logs_set_field(struct mp_logscan *s, int f, const char *v, size_t n, int prio,
                       const char *aux, size_t auxn, bool aux_is_method)
{
    if (f == MP_KN_F_UNKNOWN_ENV) {
        char *x = xstrndup(v, n);
        if (mp_strv_has(&s->unknown_env, x)) {
            free(x);
            return false;
        }
        if (s->unknown_env.n == 0)
            s->fline[f] = s->lineno;
        mp_strv_push_owned(&s->unknown_env, x);
        return true;
    }
    if (f == MP_KN_F_LINEAR_KERNELS)
        return set_linear(s, v, n, aux, auxn, aux_is_method);
    if (s->fields[f] && s->prio[f] >= prio)
        return false;
    if (f == MP_KN_F_MOE_CANDIDATES || f == MP_KN_F_UNQUANT_MOE_CANDIDATES) {
        mp_logs_set_candidates(f == MP_KN_F_MOE_CANDIDATES ? &s->cands : &s->uq_cands, v, n);
        s->prio[f] = prio;
        s->fields[f] = s->fields[f] ? s->fields[f] : xstrdup("");
        return true;
    }
    free(s->fields[f]);
    s->fields[f] = clean_copy(v, n, 256);
    s->prio[f] = prio;
    s->fline[f] = s->lineno;
    if (f == MP_KN_F_MOE_BACKEND) {
        /* a new resolution: the old candidate list does not belong to it */
        mp_strv_clear(&s->cands);
        free(s->fields[MP_KN_F_MOE_CANDIDATES]);
        s->fields[MP_KN_F_MOE_CANDIDATES] = NULL;
        s->prio[MP_KN_F_MOE_CANDIDATES] = 0;
        s->pending_list = false;
    }
    if (f == MP_KN_F_UNQUANT_MOE_BACKEND) {
        mp_strv_clear(&s->uq_cands);
        free(s->fields[MP_KN_F_UNQUANT_MOE_CANDIDATES]);
        s->fields[MP_KN_F_UNQUANT_MOE_CANDIDATES] = NULL;
        s->prio[MP_KN_F_UNQUANT_MOE_CANDIDATES] = 0;
    }
    return true;
}

static bool in_list(char **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], s))
            return true;
    return false;
}

/* True when c[0..n) is a proper subsequence (same order, something left
 * out) of one of the auto lists. */
static bool sub_of_auto(const struct mp_knowledge *k, char **c, size_t n)
{
    for (size_t i = 0; i < k->nautolists; i++) {
        const struct mp_kn_autolist *a = &k->autolists[i];
        if (n >= a->n)
            continue;
        size_t j = 0;
        for (size_t x = 0; x < a->n && j < n; x++)
            if (!strcmp(a->list[x], c[j]))
                j++;
        if (j == n)
            return true;
    }
    return false;
}

void mp_logs_analyse_resolution(struct mp_logscan *s)
{
    const struct mp_knowledge *k = s->k;
    const char *b = s->fields[MP_KN_F_MOE_BACKEND];
    long line = s->fline[MP_KN_F_MOE_BACKEND];
    if (!b)
        return;
    const struct mp_kn_backend *kb = mp_kn_find_backend(k, b);
    if (kb)
        add_finding(s, 0, "moe-backend", line,
                    xasprintf("MoE backend %s%s%s%s: %s (devices: %s)", b,
                              kb->flag ? " (--moe-backend " : "", kb->flag ? kb->flag : "",
                              kb->flag ? ")" : "", kb->note ? kb->note : "",
                              kb->devices ? kb->devices : "?"));
    else
        add_finding(s, 0, "moe-backend", line, xasprintf("MoE backend %s", b));
    size_t n = s->cands.n;
    if (n == 0)
        return;
    size_t known = 0;
    bool any_fi = false;
    for (size_t i = 0; i < n; i++) {
        if (mp_kn_find_backend(k, s->cands.v[i]))
            known++;
        if (!strncmp(s->cands.v[i], "FLASHINFER_", 11))
            any_fi = true;
    }
    if (known == 0)
        return; /* another oracle's list (unquantized, FP8 ...) */
    const struct mp_kn_autolist *match = NULL;
    for (size_t i = 0; i < k->nautolists && !match; i++) {
        const struct mp_kn_autolist *a = &k->autolists[i];
        if (a->n != n)
            continue;
        bool eq = true;
        for (size_t j = 0; j < n && eq; j++)
            eq = !strcmp(a->list[j], s->cands.v[j]);
        if (eq)
            match = a;
    }
    bool all_clamp = true;
    for (size_t i = 0; i < n; i++)
        all_clamp = all_clamp && in_list(k->clamp, k->nclamp, s->cands.v[i]);
    if (match) {
        add_finding(s, 0, "moe-list-era", line,
                    xasprintf("the candidate list (%zu entries) is the auto list of vLLM %s", n,
                              match->era));
        struct mp_kn_ver v;
        const char *ev = s->fields[MP_KN_F_ENGINE_VERSION];
        if (ev && mp_kn_ver_parse(ev, &v) == 0 &&
            ((match->has_from && mp_kn_ver_cmp(&v, &match->from) < 0) ||
             (match->has_until && mp_kn_ver_cmp(&v, &match->until) >= 0)))
            add_finding(s, 1, "moe-list-version-mismatch", line,
                        xasprintf("the candidate list is that of vLLM %s but the log reports "
                                  "version %s: a fork or patched build?",
                                  match->era, ev));
    } else if (!any_fi) {
        add_finding(s, 1, "flashinfer-moe-filtered", line,
                    xstrdup("no FlashInfer backend in the candidate list: VLLM_USE_FLASHINFER_MOE_FP4=0 "
                            "was set, which removes the FlashInfer NvFp4 MoE backends"));
    } else if (all_clamp && sub_of_auto(k, s->cands.v, n)) {
        add_finding(s, 0, "swiglu-clamp", line,
                    xasprintf("candidate list of %zu entries, all applying the SwiGLU clamp: the "
                              "model sets swiglu_limit, so only those backends are eligible",
                              n));
    } else {
        add_finding(s, 0, "moe-list-unknown", line,
                    xstrdup("this candidate list is not in moeprobe's knowledge (a newer vLLM "
                            "or a fork?)"));
    }
    bool listed = false;
    for (size_t i = 0; i < n; i++)
        listed = listed || !strcmp(s->cands.v[i], b);
    if (!listed)
        add_finding(s, 0, "moe-explicit", line,
                    xasprintf("%s is not in the auto list: it was requested explicitly "
                              "(--moe-backend); an explicit choice never falls back",
                              b));
}

void mp_logs_selection_free(struct mp_logscan *s)
{
    mp_strv_release(&s->cands);
    mp_strv_release(&s->uq_cands);
    mp_strv_release(&s->unknown_env);
    for (size_t i = 0; i < s->nlin; i++) {
        free(s->lin_method[i]);
        free(s->lin_kernel[i]);
    }
}
