/* moe_cuda.h - refengine's CUDA backends: a small MoE layer with NVFP4
 * weights, run for real on the GPU (C ABI over refengine/cuda/moe_cuda.cu).
 *
 * Weights: per expert a gate/up matrix [2I][H] and a down matrix [H][I],
 * stored as NVFP4 like ModelOpt checkpoints: E2M1 4-bit values packed two per
 * byte (element 2j in the low nibble), one FP8 E4M3 block scale per 16
 * consecutive elements of a row, and one FP32 global scale per matrix
 * (value = e2m1 * e4m3 * global). A router [E][H] (FP32) picks the top-k
 * experts per token (softmax, top-k, renormalised).
 *
 * Paths (enum moe_cuda_path):
 *   MARLIN      one stream: route, dequantise the used experts to FP16,
 *               FP16 GEMMs (FP32 accumulation), combine.
 *   TWO_STREAM  routing on one stream, fused NVFP4 expert kernels on a second
 *               stream that waits for routing through an event.
 *   RACY        TWO_STREAM without the event: the expert kernels can read the
 *               routing indices while the routing kernel still holds them
 *               poisoned (a huge index) and fault with an illegal address.
 *   FAULTY      TWO_STREAM whose gate/up kernel reads a block scale at an
 *               unchecked index; a step with fault set makes it read far
 *               outside the allocation (a real out-of-bounds access).
 *   BF16        TWO_STREAM with BF16 activations: the kernels read their
 *               inputs rounded to BF16 and round what they write (gate, up,
 *               SiLU*up, the expert outputs, the sum and the residual
 *               stream) to BF16; products and sums in FP32. A legitimately
 *               different kernel (noise of a few 1e-3 relative).
 *   WRONG_SCALE TWO_STREAM whose gate/up and down kernels read each block
 *               scale one block off (block b uses the scale of block b + 1
 *               of the same row, the last one the first): every access in
 *               bounds, no fault, and the output wrong by tens of percent
 *               (a wrong kernel that serves fluently).
 *
 * Errors: every function returns 0 or the cudaError_t value (> 0) of the first
 * CUDA call that failed, and fills *e with the runtime's own strings and the
 * name of the host call site that saw it (where the host noticed, which for an
 * asynchronous fault is not where it happened). After an error the context
 * may be dead (sticky errors): call nothing but moe_cuda_free().
 *
 * Without CUDA compiled in (refengine/cuda_stub.c), moe_cuda_init() returns
 * MOE_CUDA_ENOTBUILT and moe_cuda_compiled() is false. */
#ifndef RE_MOE_CUDA_H
#define RE_MOE_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOE_CUDA_ENOTBUILT 100000 /* not a cudaError_t */
#define MOE_CUDA_MAX_TOKENS 256   /* tokens per step */

enum moe_cuda_path {
    MOE_CUDA_MARLIN,
    MOE_CUDA_TWO_STREAM,
    MOE_CUDA_RACY,
    MOE_CUDA_FAULTY,
    MOE_CUDA_BF16,
    MOE_CUDA_WRONG_SCALE,
    MOE_CUDA_PATH_COUNT
};

/* Call sites (index into moe_cuda_site_name): what the host was doing. */
enum moe_cuda_site {
    MOE_SITE_INIT,       /* allocation / upload at start */
    MOE_SITE_INPUT,      /* H2D copy of the step's hidden states */
    MOE_SITE_ROUTE,      /* routing kernel launch */
    MOE_SITE_EVENT,      /* event record / stream wait */
    MOE_SITE_DEQUANT,    /* Marlin-like dequantisation launch */
    MOE_SITE_EXPERTS,    /* expert kernel launches */
    MOE_SITE_COMBINE,    /* combine (moe_sum) launch */
    MOE_SITE_OUTPUT,     /* D2H copy of the result */
    MOE_SITE_SYNC,       /* waiting for the step's copy event */
    MOE_SITE_STATS,      /* mid-step expert-load read-back (a stream synchronisation) */
    MOE_SITE_COUNT
};

struct moe_cuda_cfg {
    int hidden;       /* H, multiple of 64 */
    int inter;        /* I, multiple of 64 */
    int experts;      /* E, 2..256 */
    int top_k;        /* 1..16, <= E */
    int layers;       /* MoE layers per step (same weights, residual chained) */
    uint64_t seed;    /* weights and inputs are drawn from it */
};

struct moe_cuda_err {
    int code;             /* cudaError_t, 0 = none */
    enum moe_cuda_site site;
    char name[64];        /* cudaGetErrorName: "cudaErrorIllegalAddress" */
    char text[160];       /* cudaGetErrorString: "an illegal memory access was encountered" */
    char call[64];        /* the runtime call: "cudaLaunchKernel", "cudaEventSynchronize" */
};

struct moe_cuda_step {
    int ntok;             /* tokens in this step, 1..MOE_CUDA_MAX_TOKENS */
    uint32_t route_delay_ns; /* routing kernel holds its output poisoned this long (0 = no window) */
    bool fault;           /* FAULTY path: this step triggers the out-of-bounds read */
    uint64_t input_seed;  /* hidden states are drawn from it */
};

/* Host copy of the weights, for tests (owned by the handle). */
struct moe_cuda_host_weights {
    const uint8_t *up_q, *down_q;     /* [E][2I][H/2], [E][H][I/2] packed E2M1 */
    const uint8_t *up_s, *down_s;     /* [E][2I][H/16], [E][H][I/16] E4M3 bytes */
    const float *up_g, *down_g;       /* [E] global scales */
    const float *router;              /* [E][H] */
};

struct moe_cuda;

/* true when this binary has CUDA support compiled in */
bool moe_cuda_compiled(void);

/* Selects device 0, allocates and uploads the weights. On success *out is a
 * handle to free with moe_cuda_free(); desc (may be NULL) gets "NVIDIA H200
 * (sm_90), driver 13.0, runtime 13.0". */
int moe_cuda_init(const struct moe_cuda_cfg *cfg, struct moe_cuda **out, char *desc,
                  size_t desclen, struct moe_cuda_err *e);

/* One decode step of st->ntok tokens through cfg.layers MoE layers on the
 * given path; waits for the result. Returns 0 or the CUDA error (see above). */
int moe_cuda_step(struct moe_cuda *h, enum moe_cuda_path path, const struct moe_cuda_step *st,
                  struct moe_cuda_err *e);

/* The hidden state behind a logit (refengine/cuda_lm.c): n tokens (1 ..
 * MOE_CUDA_MAX_TOKENS), token i's input drawn from seeds[i] exactly as a
 * step's, through cfg.layers layers on path (residual chained; no slow
 * routing, no fault); the final residual stream goes to out [n][H].
 * Deterministic: the same seeds and path give the same bits. Returns 0 or
 * the CUDA error. */
int moe_cuda_hidden(struct moe_cuda *h, enum moe_cuda_path path, const uint64_t *seeds, int n,
                    float *out, struct moe_cuda_err *e);

/* Tests: one layer on x [ntok][H] -> out [ntok][H]; ids/wts [ntok][top_k]
 * receive the routing (may be NULL). */
int moe_cuda_forward(struct moe_cuda *h, enum moe_cuda_path path, const float *x, int ntok,
                     float *out, int *ids, float *wts, struct moe_cuda_err *e);

/* Tests: the GPU's dequantisation of expert ex's gate/up (which = 0, [2I][H])
 * or down (which = 1, [H][I]) matrix as FP32 (the Marlin path's FP16 values
 * when as_fp16). */
int moe_cuda_dequant(struct moe_cuda *h, int ex, int which, bool as_fp16, float *out,
                     struct moe_cuda_err *e);

const struct moe_cuda_host_weights *moe_cuda_weights(const struct moe_cuda *h);

/* A hang: launch a kernel that never ends (a warp spinning on a flag no one
 * sets), for a core dump to find; nothing else may be called but
 * moe_cuda_free, which then leaves the device alone. Returns 0 or the
 * CUDA error. */
int moe_cuda_spin(struct moe_cuda *h);

/* Frees device memory unless the context is dead (the process is about to
 * exit then, which releases it). NULL is fine. */
void moe_cuda_free(struct moe_cuda *h);

/* "fused_topk", "flashinfer_cutlass_fused_moe" ...: a stable name per site. */
const char *moe_cuda_site_name(enum moe_cuda_site s);

#ifdef __cplusplus
}
#endif

#endif
