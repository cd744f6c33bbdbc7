/* cuda_lm.h - in CUDA worlds with [engine] cuda_logit_scale > 0, the
 * logits of refengine's model (lm.h) get a term the backend computes on the
 * GPU, so that what the scoring pass compares across backends (prompt
 * logprobs, greedy tokens) carries real kernel numerics:
 *
 *   context ctx -> a hidden vector drawn from ctx (moe_cuda_hidden: the
 *   same draw as a step's inputs) -> the backend's CUDA path through the
 *   world's MoE layer stack -> RMS-normalised -> a fixed readout row per
 *   token (entries uniform, drawn from the token's text hash; the same for
 *   every backend) -> times cuda_logit_scale.
 *
 * Over tokens the term has a standard deviation of about cuda_logit_scale
 * nats. Healthy paths differ from each other by their rounding (FP32,
 * FP16, BF16), a wrong kernel (block scales one block off) by much more;
 * the sizes are measured, not set (docs/gpu.md). The hidden vector of a
 * context is cached (direct-mapped); the GPU runs one context per miss.
 *
 * A CUDA error calls cfg->fail once (the engine dies as vLLM's would) and
 * the term is 0 from then on. */
#ifndef RE_CUDA_LM_H
#define RE_CUDA_LM_H

#include "compat.h"

#include "cuda/moe_cuda.h"
#include "lm.h"

struct re_cuda_lm_cfg {
    struct moe_cuda *gpu;      /* borrowed; outlives the handle */
    enum moe_cuda_path path;   /* the backend's path */
    int hidden;                /* H of the world's MoE */
    double scale;              /* cuda_logit_scale, nats (> 0) */
    uint64_t seed;             /* the world's seed: the readout and the inputs */
    void (*fail)(const struct moe_cuda_err *e); /* the first CUDA error; may be NULL */
};

struct re_cuda_lm;

/* A handle (never NULL: allocation failure aborts); free with
 * re_cuda_lm_free. */
struct re_cuda_lm *re_cuda_lm_new(const struct re_cuda_lm_cfg *cfg);
void re_cuda_lm_free(struct re_cuda_lm *c); /* accepts NULL */

/* The term for lm.h (owned by c). */
const struct re_lm_term *re_cuda_lm_term(struct re_cuda_lm *c);

/* The readout alone (pure, for tests): scale x (row(th, seed) . y) /
 * rms(y), row entries uniform in [-sqrt(3/H), sqrt(3/H)). 0 when y is 0. */
double re_cuda_lm_readout(const float *y, int hidden, uint64_t th, uint64_t seed, double scale);

#endif
