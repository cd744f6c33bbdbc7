/* gen.c - deterministic token stream; see gen.h. */
#include "compat.h"

#include "gen.h"

#include <stdio.h>
#include <string.h>

const struct re_sanity re_gen_sanity[] = {
    {"The capital of France is", " Paris"},
    {"2 + 2 =", " 4"},
    {"Repeat exactly: alpha beta gamma", " alpha beta gamma"},
    {"The opposite of hot is", " cold"},
    {NULL, NULL},
};

static const char *const vocab[] = {
    " the",    " model",  " of",     " and",    " a",      " to",     " in",     " is",
    " that",   " for",    " kernel", " expert", " layer",  " data",   " with",   " on",
    " as",     " by",     " this",   " we",     " can",    " be",     " are",    " from",
    " at",     " it",     " an",     " which",  " each",   " token",  " GPU",    " memory",
    ",",       ".",       " value",  " system", " time",   " result", " test",   " first",
    " second", " new",    " more",   " one",    " two",    " three",  " also",   " when",
    " not",    " but",    " or",     " its",    " has",    " have",   " will",   " into",
    " than",   " other",  " some",   " these",  " output", " input",  " backend", " run",
};

uint64_t re_gen_mix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t re_gen_hash(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static bool ends_with_trimmed(const char *s, size_t len, const char *suffix)
{
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\n' || s[len - 1] == '\t' ||
                   s[len - 1] == '\r'))
        len--;
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static unsigned count_words(const char *s)
{
    unsigned n = 0;
    for (const char *p = s; *p; p++)
        if (*p == ' ')
            n++;
    return n;
}

void re_gen_init(struct re_gen *g, const char *prompt, size_t len, uint64_t seed, bool garbage)
{
    memset(g, 0, sizeof(*g));
    g->h = re_gen_hash(prompt, len, seed);
    g->garbage = garbage;
    for (const struct re_sanity *s = re_gen_sanity; s->prompt; s++)
        if (ends_with_trimmed(prompt, len, s->prompt)) {
            g->answer = s->answer;
            g->answer_tokens = count_words(s->answer);
            break;
        }
    uint64_t st = g->h;
    g->eos_at = g->answer ? g->answer_tokens : 32 + (unsigned)(re_gen_mix(&st) % 480);
}

const char *re_gen_token(struct re_gen *g, unsigned i)
{
    if (g->garbage)
        return RE_GEN_GARBAGE_TOKEN;
    if (g->answer && i < g->answer_tokens) {
        /* the i-th " word" of the answer */
        const char *p = g->answer;
        for (unsigned k = 0; k < i; k++)
            p = strchr(p + 1, ' ');
        const char *e = strchr(p + 1, ' ');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n >= sizeof(g->tok))
            n = sizeof(g->tok) - 1;
        memcpy(g->tok, p, n);
        g->tok[n] = 0;
        return g->tok;
    }
    uint64_t st = g->h ^ ((uint64_t)i * 0x2545f4914f6cdd1dULL);
    snprintf(g->tok, sizeof(g->tok), "%s", vocab[re_gen_mix(&st) % MP_ARRAY_SIZE(vocab)]);
    return g->tok;
}

bool re_gen_is_eos(const struct re_gen *g, unsigned i)
{
    return !g->garbage && i == g->eos_at;
}

unsigned re_gen_count_tokens(const char *text, size_t len)
{
    MP_UNUSED(text);
    /* ~4 bytes per token plus BOS */
    return (unsigned)(len / 4) + 1;
}
