/* gen.c - deterministic token stream; see gen.h. */
#include "compat.h"

#include "gen.h"
#include "task.h"

#include <stdio.h>
#include <string.h>

const struct re_sanity re_gen_sanity[] = {
    {"The capital of France is", " Paris"},
    {"2 + 2 =", " 4"},
    {"Repeat exactly: alpha beta gamma", " alpha beta gamma"},
    {"The opposite of hot is", " cold"},
    {NULL, NULL},
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

/* Tokens of a text (refengine/lm.h's split). */
static unsigned count_tokens(const char *s)
{
    unsigned n = 0;
    for (size_t off = 0, len = strlen(s); off < len; n++)
        off += re_lm_token_len(s + off, len - off);
    return n;
}

void re_gen_init_be(struct re_gen *g, const char *prompt, size_t len, uint64_t seed, bool garbage,
                    const struct re_gen_backend *be)
{
    memset(g, 0, sizeof(*g));
    g->h = re_gen_hash(prompt, len, seed);
    g->garbage = garbage;
    g->lm = (struct re_lm){.seed = seed};
    if (be) {
        g->lm.salt = be->salt;
        g->lm.noise = be->noise;
        g->lm.error = be->error;
        g->lm.term = be->term;
    }
    uint64_t ctx = re_lm_ctx0(&g->lm);
    for (size_t off = 0; off < len;) {
        size_t n = re_lm_token_len(prompt + off, len - off);
        ctx = re_lm_push(ctx, prompt + off, n);
        off += n;
    }
    g->prompt_ctx = g->ctx = ctx;
    for (const struct re_sanity *s = re_gen_sanity; s->prompt; s++)
        if (ends_with_trimmed(prompt, len, s->prompt)) {
            snprintf(g->forced, sizeof(g->forced), "%s", s->answer);
            break;
        }
    if (!g->forced[0])
        re_task_reply(prompt, len, be ? be->accuracy : 1.0, be ? be->salt : 0, g->forced,
                      sizeof(g->forced));
    g->forced_tokens = count_tokens(g->forced);
    uint64_t st = g->h;
    g->eos_at = g->forced[0] ? g->forced_tokens : 32 + (unsigned)(re_gen_mix(&st) % 480);
}

void re_gen_init(struct re_gen *g, const char *prompt, size_t len, uint64_t seed, bool garbage)
{
    re_gen_init_be(g, prompt, len, seed, garbage, NULL);
}

/* Produce token g->next. */
static void advance(struct re_gen *g)
{
    const char *t;
    size_t n;
    size_t left = strlen(g->forced) - g->forced_off;
    g->prev_ctx = g->ctx;
    g->last_forced = true;
    if (g->garbage) {
        t = RE_GEN_GARBAGE_TOKEN;
        n = strlen(t);
    } else if (left) {
        t = g->forced + g->forced_off;
        n = re_lm_token_len(t, left);
        g->forced_off += n;
    } else {
        t = re_lm_argmax(&g->lm, g->ctx, &n);
        g->last_forced = false;
    }
    if (n >= sizeof(g->tok))
        n = sizeof(g->tok) - 1;
    memmove(g->tok, t, n);
    g->tok[n] = 0;
    g->ctx = re_lm_push(g->ctx, g->tok, n);
    g->next++;
}

const char *re_gen_token(struct re_gen *g, unsigned i)
{
    if (i + 1 == g->next)
        return g->tok; /* asked again */
    if (i < g->next) {
        g->ctx = g->prompt_ctx;
        g->forced_off = 0;
        g->next = 0;
    }
    while (g->next <= i)
        advance(g);
    return g->tok;
}

void re_gen_last_step(const struct re_gen *g, size_t k, struct re_lm_step *out)
{
    re_lm_eval(&g->lm, g->prev_ctx, g->tok, strlen(g->tok), g->last_forced, k, out);
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
