/* stages.c - what refengine prints after the model's selection lines, per
 * vLLM era (resolve.h re_resolve_stages, re_dense_auto):
 *
 *   - the dense NVFP4 auto-selection of the kernels/linear era (0.19.1+):
 *     _POSSIBLE_NVFP4_KERNELS in order, skipping what VLLM_DISABLED_KERNELS
 *     names (kernels/linear/__init__.py init_nvfp4_linear_kernel); on
 *     SM120/121 v0.29.0 puts the weight-only FlashInferCuteDslNvFp4W4A16-
 *     LinearKernel first (vllm #53014; #55170, in v0.29.1rc0 and not in
 *     v0.29.0, moved it below the W4A4 kernels);
 *   - after the target's weights (load_lines): the target's
 *     "Using MoEPrepareAndFinalizeNoDPEPModular" (0.20+, the modular
 *     FlashInfer CUTLASS / vLLM CUTLASS paths, as a real v0.20.0 log and a
 *     0.19.2 development log print it), before a speculative drafter's
 *     lines (drafter.c);
 *   - in the warm-up after the KV cache (tune_lines): the FlashInfer
 *     autotuner when a FlashInfer kernel was resolved and autotuning is on
 *     (FlashInfer's logger format), with the "Skipped N unsupported
 *     tactic(s) for OP" summary of FlashInfer 0.6.x (0.20+).
 *
 * Line numbers follow the real logs of each era where one was seen. */
#include "re_int.h"

#include <stdio.h>
#include <string.h>

#include "world.h"

/* ---- the dense NVFP4 kernel, kernels/linear era ---- */

static bool disabled(const struct re_inputs *in, const char *kernel)
{
    const char *v = re_env_get(in->env, "VLLM_DISABLED_KERNELS");
    if (!v)
        return false;
    size_t n = strlen(kernel);
    for (const char *p = v; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, kernel, n))
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

static bool sm12x(const struct world *w)
{
    return w->device == WD_SM120 || w->device == WD_SM121;
}

/* Does the kernel run on the world's device (is_supported)? FBGEMM needs
 * fbgemm_gpu, which the images do not carry. */
static bool dense_supported(const struct world *w, const char *k)
{
    if (!strcmp(k, "MarlinNvFp4LinearKernel") || !strcmp(k, "EmulationNvFp4LinearKernel"))
        return true;
    if (!strcmp(k, "FbgemmNvFp4LinearKernel"))
        return false;
    if (!strcmp(k, "FlashInferTrtllmNvFp4LinearKernel"))
        return w->device == WD_SM100;
    if (!strcmp(k, "FlashInferCuteDslNvFp4W4A16LinearKernel"))
        return sm12x(w);
    return w->device != WD_SM90; /* the W4A4 kernels need FP4 tensor cores */
}

void re_dense_auto(const struct world *w, const struct re_inputs *in, struct re_resolution *r)
{
    static const char *const order[] = {
        "FlashInferCuteDslNvFp4W4A16LinearKernel", /* 0.29.0 on SM12x only */
        "FlashInferCutlassNvFp4LinearKernel", "CutlassNvFp4LinearKernel",
        "MarlinNvFp4LinearKernel",            "FlashInferTrtllmNvFp4LinearKernel",
        "FlashInferCudnnNvFp4LinearKernel",   "FbgemmNvFp4LinearKernel",
        "EmulationNvFp4LinearKernel",
    };
    bool w4a16_first = sm12x(w) && re_ver_ge(w, 0, 29, 0) && !re_ver_ge(w, 0, 29, 1);
    char reasons[1200] = "";
    size_t rl = 0;
    for (size_t i = w4a16_first ? 0 : 1; i < MP_ARRAY_SIZE(order); i++) {
        const char *k = order[i];
        bool off = disabled(in, k), ok = !off && dense_supported(w, k);
        if (!ok) {
            /* the disabled reason is vLLM's; the device one is refengine's words */
            const char *sep = rl ? "\n - " : "";
            int n = off ? snprintf(reasons + rl, sizeof(reasons) - rl,
                                   "%s %s disabled by environment variable", sep, k)
                        : snprintf(reasons + rl, sizeof(reasons) - rl,
                                   "%s%s: not supported on this device", sep, k);
            if (n > 0 && (size_t)n < sizeof(reasons) - rl)
                rl += (size_t)n;
            continue;
        }
        if (!strcmp(k, "EmulationNvFp4LinearKernel") && rl)
            re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_WARNING, "__init__.py", 668,
                         "NVFP4 linear falling back to the slow and unoptimized emulation backend "
                         "as no optimized backend is available (unavailable reasons:\n - %s\n). "
                         "In case you expect one of these backends to be used, please verify your "
                         "environment.",
                         reasons);
        snprintf(r->dense_kernel, sizeof(r->dense_kernel), "%s", k);
        re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_INFO, "__init__.py", 683,
                     "Using %s for NVFP4 GEMM", k);
        return;
    }
}

/* ---- after the target's weights ---- */

static bool modular(enum world_backend b)
{
    return b == WB_FLASHINFER_CUTLASS || b == WB_VLLM_CUTLASS;
}

/* ---- the warm-up ---- */

static bool flashinfer_resolved(const struct re_resolution *r)
{
    return r->backend == WB_FLASHINFER_CUTLASS || r->backend == WB_FLASHINFER_TRTLLM ||
           r->backend == WB_FLASHINFER_CUTEDSL || r->backend == WB_FLASHINFER_CUTEDSL_BATCHED ||
           r->backend == WB_FLASHINFER_B12X || strstr(r->dense_kernel, "FlashInfer") ||
           strstr(r->dense_kernel, "FLASHINFER") || strstr(r->dense_kernel, "flashinfer");
}

static void tune_lines(const struct world *w, const struct re_inputs *in, struct re_resolution *r)
{
    if (in->autotune_off || !re_ver_ge(w, 0, 15, 0) || !flashinfer_resolved(r))
        return;
    bool v20 = re_ver_ge(w, 0, 20, 0), v19 = re_ver_ge(w, 0, 19, 1);
    re_lines_add(&r->tune_lines, RE_PROC_ENGINE, RE_FI_INFO, "autotuner.py", v20 ? 457 : v19 ? 446 : 256,
                 "[Autotuner]: Autotuning process starts ...");
    if (v20 && w->autotuner_unsupported_tactics)
        re_lines_add(&r->tune_lines, RE_PROC_ENGINE, RE_FI_INFO, "autotuner.py", 833,
                     "[Autotuner]: Skipped %u unsupported tactic(s) for trtllm::fused_moe::gemm1 "
                     "(enable debug logs to see details)",
                     w->autotuner_unsupported_tactics);
    re_lines_add(&r->tune_lines, RE_PROC_ENGINE, RE_FI_INFO, "autotuner.py", v20 ? 466 : v19 ? 455 : 262,
                 "[Autotuner]: Autotuning process ends");
}

void re_resolve_stages(const struct world *w, const struct re_inputs *in, struct re_resolution *r)
{
    if (re_ver_ge(w, 0, 20, 0) && r->backend != WB_NONE && modular(r->backend))
        re_lines_add(&r->load_lines, RE_PROC_ENGINE, RE_INFO, "nvfp4.py", 485,
                     "Using MoEPrepareAndFinalizeNoDPEPModular");
    tune_lines(w, in, r);
}
