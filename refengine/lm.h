/* lm.h - the reference engine's "model": a deterministic token
 * distribution per context (pure). Greedy text, prompt_logprobs and
 * logprobs all come from it, so they agree as they do in vLLM.
 *
 * Text is split into tokens (re_lm_token_len): a newline; or an optional
 * leading space and then a run of letters and digits (at most 16 bytes) or
 * one other character; or a lone space. The context of a position is a
 * hash chained over the tokens before it (re_lm_push). At each context the
 * logits of the 64 vocabulary words, and of any other token asked about,
 * are fixed by the world's seed: most contexts favour one word strongly
 * (a confident position), the others are flat (near ties).
 *
 * A backend's numerics (world keys, docs/refengine.md):
 *   logit_noise  every logit gets noise x N(0, 1), fixed per (context,
 *                token, backend): legitimately different kernels;
 *   logit_error  on half of the contexts (fixed by the context) a word
 *                outside the model's top ten gets the top logit plus this
 *                much: the greedy token changes, the text stays made of
 *                words (a wrong kernel that reads fluently).
 * In CUDA worlds with cuda_logit_scale the logits also get a term computed
 * on the GPU by the backend's own MoE path (term below, refengine/cuda_lm.h):
 * the differences between backends are then real kernel numerics. */
#ifndef RE_LM_H
#define RE_LM_H

#include "compat.h"

#include <stddef.h>

#define RE_LM_VOCAB 64
#define RE_LM_MAXK 20 /* most alternatives reported per position (vLLM's default --max-logprobs) */

/* A logit term from outside (cuda_lm.h): fn(arg, ctx, th) is added to the
 * logit of the token whose text has FNV-1a 64 hash th (re_gen_hash(text,
 * len, 0)) at context ctx. */
struct re_lm_term {
    double (*fn)(void *arg, uint64_t ctx, uint64_t th);
    void *arg;
};

struct re_lm {
    uint64_t seed;  /* the model (the world's seed): equal for every backend */
    uint64_t salt;  /* the backend: its noise pattern */
    double noise;   /* logit_noise */
    double error;   /* logit_error */
    const struct re_lm_term *term; /* NULL: none (borrowed) */
};

struct re_lm_alt {
    const char *tok; /* borrowed: the vocabulary, or the token asked about */
    size_t len;
    double lp;
    unsigned rank;   /* 1 = most likely */
    unsigned id;     /* token id */
};

/* One position: the asked-about token and the k most likely tokens. */
struct re_lm_step {
    struct re_lm_alt own;                 /* the token asked about (NULL tok: none) */
    struct re_lm_alt top[RE_LM_MAXK];
    size_t ntop;
};

/* Length of the token starting at s[0] (len > 0 bytes left); >= 1. */
size_t re_lm_token_len(const char *s, size_t len);
/* The context before the first token, and after one more token. */
uint64_t re_lm_ctx0(const struct re_lm *m);
uint64_t re_lm_push(uint64_t ctx, const char *tok, size_t n);
/* The token id of a token's text. */
unsigned re_lm_token_id(const char *tok, size_t n);

/* The greedy token at ctx (static text, *len set). */
const char *re_lm_argmax(const struct re_lm *m, uint64_t ctx, size_t *len);
/* The distribution at ctx: tok (may be NULL) gets its logprob and rank;
 * forced: tok is what the engine emits here whatever the model says (a
 * fixed answer), so it is made the most likely by a wide margin. The k most
 * likely tokens (k <= RE_LM_MAXK) go to out->top in order. */
void re_lm_eval(const struct re_lm *m, uint64_t ctx, const char *tok, size_t len, bool forced,
                size_t k, struct re_lm_step *out);

#endif
