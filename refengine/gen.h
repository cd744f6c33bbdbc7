/* gen.h - deterministic output text of the reference engine (pure).
 *
 * The text of a request depends only on the prompt and a seed: healthy
 * backends therefore agree token for token. A few fixed "sanity prompts"
 * get a correct answer (re_gen_sanity), so an output-quality check can
 * tell a healthy backend from a garbage one. `garbage` mode repeats one
 * token ("lock") and never stops early. */
#ifndef RE_GEN_H
#define RE_GEN_H

#include "compat.h"

#include "lm.h"

struct re_sanity {
    const char *prompt; /* the prompt ends with this text (after trimming) */
    const char *answer; /* greedy continuation of a healthy model */
};

/* The table, in one place; terminated by a {NULL, NULL} entry. */
extern const struct re_sanity re_gen_sanity[];

#define RE_GEN_GARBAGE_TOKEN "lock"

/* The backend's numbers (world keys; refengine/lm.h and task.h). */
struct re_gen_backend {
    uint64_t salt;     /* per backend */
    double noise;      /* logit_noise */
    double error;      /* logit_error */
    double accuracy;   /* accuracy (task problems) */
    const struct re_lm_term *term; /* the logits' GPU term (lm.h), NULL: none */
};

struct re_gen {
    uint64_t h;        /* prompt+seed hash */
    bool garbage;
    struct re_lm lm;   /* the model with this backend's numbers */
    uint64_t prompt_ctx, ctx, prev_ctx; /* contexts: after the prompt, now, before the last token */
    unsigned next;     /* the token index re_gen_token produces next */
    char forced[512];  /* a fixed reply (sanity answer, task answer), "" = none */
    size_t forced_off;
    unsigned forced_tokens;
    bool last_forced;  /* the last token returned was fixed, not the model's choice */
    unsigned eos_at;   /* token index that is EOS (finish_reason "stop") */
    char tok[64];      /* storage for the last token returned */
};

/* Prepare generation for prompt (len bytes) with seed; be = NULL: a backend
 * without noise, error or wrong answers. */
void re_gen_init(struct re_gen *g, const char *prompt, size_t len, uint64_t seed, bool garbage);
void re_gen_init_be(struct re_gen *g, const char *prompt, size_t len, uint64_t seed, bool garbage,
                    const struct re_gen_backend *be);
/* Text of token i (0-based; normally called with 0, 1, 2, ...); valid
 * until the next call. */
const char *re_gen_token(struct re_gen *g, unsigned i);
/* The distribution the last token of re_gen_token came from (k
 * alternatives): its logprob, rank and the k most likely tokens. */
void re_gen_last_step(const struct re_gen *g, size_t k, struct re_lm_step *out);
/* Is token i the end-of-sequence (only honoured without ignore_eos)? */
bool re_gen_is_eos(const struct re_gen *g, unsigned i);
/* Rough prompt token count (>= 1). */
unsigned re_gen_count_tokens(const char *text, size_t len);
/* splitmix64 step, used as the engine's PRNG. */
uint64_t re_gen_mix(uint64_t *state);
/* FNV-1a 64 of bytes. */
uint64_t re_gen_hash(const void *p, size_t n, uint64_t seed);

#endif
