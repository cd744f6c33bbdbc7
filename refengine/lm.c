/* lm.c - see lm.h. */
#include "compat.h"

#include "lm.h"

#include <math.h>
#include <string.h>

static const char *const vocab[RE_LM_VOCAB] = {
    " the",    " model",  " of",     " and",    " a",      " to",     " in",     " is",
    " that",   " for",    " kernel", " expert", " layer",  " data",   " with",   " on",
    " as",     " by",     " this",   " we",     " can",    " be",     " are",    " from",
    " at",     " it",     " an",     " which",  " each",   " token",  " GPU",    " memory",
    ",",       ".",       " value",  " system", " time",   " result", " test",   " first",
    " second", " new",    " more",   " one",    " two",    " three",  " also",   " when",
    " not",    " but",    " or",     " its",    " has",    " have",   " will",   " into",
    " than",   " other",  " some",   " these",  " output", " input",  " backend", " run",
};

#define CONFIDENT 0.7   /* share of contexts that favour one word */
#define FORCED_MARGIN 6.0

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t text_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static double unit(uint64_t h)
{
    return (double)(h >> 11) / 9007199254740992.0;
}

/* About N(0, 1): four 16-bit uniforms, centred and scaled (Irwin-Hall). */
static double gauss(uint64_t h)
{
    double s = 0;
    for (int i = 0; i < 4; i++)
        s += (double)((h >> (16 * i)) & 0xffff) / 65536.0;
    return (s - 2.0) * 1.7320508075688772;
}

static bool alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

size_t re_lm_token_len(const char *s, size_t len)
{
    if (!len)
        return 0;
    if (s[0] == '\n')
        return 1;
    size_t i = 0;
    if (s[0] == ' ') {
        if (len == 1 || s[1] == ' ' || s[1] == '\n')
            return 1;
        i = 1;
    }
    if (!alnum((unsigned char)s[i]))
        return i + 1;
    size_t j = i;
    while (j < len && j - i < 16 && alnum((unsigned char)s[j]))
        j++;
    return j;
}

uint64_t re_lm_ctx0(const struct re_lm *m)
{
    return mix(m->seed ^ 0x6374782d73746172ULL);
}

uint64_t re_lm_push(uint64_t ctx, const char *tok, size_t n)
{
    return mix(ctx ^ text_hash(tok, n));
}

unsigned re_lm_token_id(const char *tok, size_t n)
{
    for (unsigned i = 0; i < RE_LM_VOCAB; i++)
        if (strlen(vocab[i]) == n && !memcmp(vocab[i], tok, n))
            return 1000 + 37 * i;
    return 20000 + (unsigned)(text_hash(tok, n) % 100000);
}

static uint64_t vocab_hash(unsigned i)
{
    static uint64_t h[RE_LM_VOCAB];
    static bool done;
    if (!done) {
        for (unsigned k = 0; k < RE_LM_VOCAB; k++)
            h[k] = text_hash(vocab[k], strlen(vocab[k]));
        done = true;
    }
    return h[i];
}

/* The model's logit of the token of hash th at ctx (a confident context's
 * favourite word gets its boost) and the backend's noise on it. */
static double clean_logit(const struct re_lm *m, uint64_t ctx, uint64_t th, bool fav, double boost)
{
    return 1.2 * gauss(mix(ctx ^ th ^ m->seed)) + (fav ? boost : 0);
}

static double noise_of(const struct re_lm *m, uint64_t ctx, uint64_t th)
{
    return m->noise > 0 ? m->noise * gauss(mix(ctx ^ th ^ mix(m->salt + 0x6e6f697365ULL))) : 0;
}

static double term_of(const struct re_lm *m, uint64_t ctx, uint64_t th)
{
    return m->term ? m->term->fn(m->term->arg, ctx, th) : 0;
}

/* All vocabulary logits at ctx, with the backend's noise and error. */
static void vocab_logits(const struct re_lm *m, uint64_t ctx, double *L)
{
    uint64_t c = mix(ctx ^ 0x636f6e66ULL);
    unsigned fav = (unsigned)(mix(c ^ 1) % RE_LM_VOCAB);
    double boost = unit(c) < CONFIDENT ? 4.0 + 5.0 * unit(mix(c ^ 2)) : 0.5 * unit(mix(c ^ 3));
    double clean[RE_LM_VOCAB];
    for (unsigned i = 0; i < RE_LM_VOCAB; i++) {
        clean[i] = clean_logit(m, ctx, vocab_hash(i), i == fav, boost);
        L[i] = clean[i] + noise_of(m, ctx, vocab_hash(i)) + term_of(m, ctx, vocab_hash(i));
    }
    if (m->error <= 0 || !(mix(ctx ^ 0x6572726f72ULL) & 1))
        return;
    /* a wrong kernel: a word outside the model's top ten takes the lead */
    uint64_t w = mix(ctx ^ 0x77726f6e67ULL);
    for (unsigned tries = 0; tries < RE_LM_VOCAB; tries++) {
        unsigned i = (unsigned)((w + tries) % RE_LM_VOCAB), above = 0;
        for (unsigned k = 0; k < RE_LM_VOCAB; k++)
            above += clean[k] > clean[i];
        if (above < 10)
            continue;
        double mx = L[0];
        for (unsigned k = 1; k < RE_LM_VOCAB; k++)
            mx = L[k] > mx ? L[k] : mx;
        L[i] = mx + m->error;
        return;
    }
}

const char *re_lm_argmax(const struct re_lm *m, uint64_t ctx, size_t *len)
{
    double L[RE_LM_VOCAB];
    vocab_logits(m, ctx, L);
    unsigned best = 0;
    for (unsigned i = 1; i < RE_LM_VOCAB; i++)
        if (L[i] > L[best])
            best = i;
    *len = strlen(vocab[best]);
    return vocab[best];
}

static int vocab_index(const char *tok, size_t n)
{
    for (unsigned i = 0; tok && i < RE_LM_VOCAB; i++)
        if (strlen(vocab[i]) == n && !memcmp(vocab[i], tok, n))
            return (int)i;
    return -1;
}

void re_lm_eval(const struct re_lm *m, uint64_t ctx, const char *tok, size_t len, bool forced,
                size_t k, struct re_lm_step *out)
{
    double L[RE_LM_VOCAB + 1];
    vocab_logits(m, ctx, L);
    memset(out, 0, sizeof(*out));
    int vi = vocab_index(tok, len);
    size_t nl = RE_LM_VOCAB;
    int own = vi;
    if (tok && vi < 0) { /* a token outside the vocabulary: it joins the distribution */
        uint64_t th = text_hash(tok, len);
        L[nl] = clean_logit(m, ctx, th, false, 0) + noise_of(m, ctx, th) + term_of(m, ctx, th);
        own = (int)nl++;
    }
    if (tok && forced) {
        double mx = -1e300;
        for (size_t i = 0; i < nl; i++)
            if ((int)i != own && L[i] > mx)
                mx = L[i];
        L[own] = mx + FORCED_MARGIN;
    }
    double mx = L[0], z = 0;
    for (size_t i = 1; i < nl; i++)
        mx = L[i] > mx ? L[i] : mx;
    for (size_t i = 0; i < nl; i++)
        z += exp(L[i] - mx);
    double logz = mx + log(z);
    bool used[RE_LM_VOCAB + 1] = {false};
    if (k > RE_LM_MAXK)
        k = RE_LM_MAXK;
    for (size_t r = 0; r < k && r < nl; r++) {
        size_t b = nl;
        for (size_t i = 0; i < nl; i++)
            if (!used[i] && (b == nl || L[i] > L[b]))
                b = i;
        used[b] = true;
        const char *t = (int)b == own && vi < 0 ? tok : vocab[b];
        size_t tl = (int)b == own && vi < 0 ? len : strlen(vocab[b]);
        out->top[out->ntop++] = (struct re_lm_alt){t, tl, L[b] - logz, (unsigned)r + 1,
                                                   re_lm_token_id(t, tl)};
    }
    if (tok) {
        unsigned rank = 1;
        for (size_t i = 0; i < nl; i++)
            rank += L[i] > L[own];
        out->own = (struct re_lm_alt){tok, len, L[own] - logz, rank, re_lm_token_id(tok, len)};
    }
}
