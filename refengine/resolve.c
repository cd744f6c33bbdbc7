/* resolve.c - vLLM-era NvFp4 MoE backend resolution. Pure; see resolve.h.
 *
 * Era facts come from reference/vllm-knobs.md; the version cut-offs marked
 * "approx" there are approximations here too (docs/refengine.md lists them). */
#include "compat.h"

#include "re_int.h"
#include "resolve.h"
#include "xalloc.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool re_ver_ge(const struct world *w, int maj, int min, int pat)
{
    if (w->ver_major != maj)
        return w->ver_major > maj;
    if (w->ver_minor != min)
        return w->ver_minor > min;
    return w->ver_patch >= pat;
}

void re_lines_add(struct re_lines *l, enum re_proc proc, enum re_level level, const char *file,
                  int lineno, const char *fmt, ...)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
    }
    struct re_line *ln = &l->v[l->n++];
    memset(ln, 0, sizeof(*ln));
    ln->proc = proc;
    ln->level = level;
    snprintf(ln->file, sizeof(ln->file), "%s", file ? file : "");
    ln->lineno = lineno;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) {
        va_end(ap);
        abort();
    }
    va_end(ap);
    ln->text = s;
}

void re_lines_free(struct re_lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].text);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

void re_resolution_free(struct re_resolution *r)
{
    re_lines_free(&r->api_lines);
    re_lines_free(&r->engine_lines);
    re_lines_free(&r->load_lines);
    re_lines_free(&r->tune_lines);
}

const char *re_env_get(const char *const *env, const char *name)
{
    if (!env)
        return NULL;
    size_t n = strlen(name);
    for (; *env; env++)
        if (!strncmp(*env, name, n) && (*env)[n] == '=')
            return *env + n + 1;
    return NULL;
}

const char *re_proc_tag(const struct world *w, enum re_proc p)
{
    if (!re_ver_ge(w, 0, 10, 1))
        return NULL; /* v0.10.0 and older: no prefix for API server / EngineCore */
    if (p == RE_PROC_API)
        return "APIServer";
    if (!re_ver_ge(w, 0, 11, 0))
        return "EngineCore_0";
    if (!re_ver_ge(w, 0, 17, 0))
        return "EngineCore_DP0";
    return "EngineCore";
}

/* ---- environment knowledge ---- */

/* Variables every era we imitate knows (a subset of envs.py). */
static const char *const known_env[] = {
    "VLLM_HOST_IP", "VLLM_PORT", "VLLM_CACHE_ROOT", "VLLM_CONFIG_ROOT", "VLLM_API_KEY",
    "VLLM_LOGGING_LEVEL", "VLLM_LOGGING_PREFIX", "VLLM_LOGGING_COLOR", "VLLM_CONFIGURE_LOGGING",
    "VLLM_LOGGING_CONFIG_PATH", "VLLM_LOG_STATS_INTERVAL", "VLLM_HTTP_TIMEOUT_KEEP_ALIVE",
    "VLLM_WORKER_MULTIPROC_METHOD", "VLLM_ENABLE_V1_MULTIPROCESSING",
    "VLLM_ENGINE_ITERATION_TIMEOUT_S", "VLLM_KEEP_ALIVE_ON_ENGINE_DEATH",
    "VLLM_DISABLED_KERNELS", "VLLM_MARLIN_USE_ATOMIC_ADD", "VLLM_MARLIN_INPUT_DTYPE",
    "VLLM_USE_DEEP_GEMM", "VLLM_MOE_USE_DEEP_GEMM", "VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE",
    "VLLM_USE_FLASHINFER_SAMPLER", "VLLM_BATCH_INVARIANT", "VLLM_PROCESS_NAME_PREFIX",
    "VLLM_NO_USAGE_STATS", "VLLM_DO_NOT_TRACK", "VLLM_USAGE_SOURCE", "VLLM_TARGET_DEVICE",
    "VLLM_SERVER_DEV_MODE", "VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_MAX_COMPLETION_PROMPTS",
    "VLLM_USE_PRECOMPILED", "VLLM_MAIN_CUDA_VERSION",
    "VLLM_DEBUG_LOG_API_SERVER_RESPONSE", "VLLM_ALLOW_RUNTIME_LORA_UPDATING",
};
/* Not in the list: VLLM_WATCHDOG_TIME_S was never a variable (a constant in
 * entrypoints/launcher.py); real vLLM warns about it like any typo. */

/* Variables whose lifetime is bounded: known from `since` until `until`
 * (exclusive; 0.0.0 = never removed). */
struct env_span {
    const char *name;
    int since[3], until[3];
};
static const struct env_span env_spans[] = {
    {"VLLM_USE_FLASHINFER_MOE_FP4", {0, 9, 2}, {0, 23, 0}},
    {"VLLM_FLASHINFER_MOE_BACKEND", {0, 10, 1}, {0, 23, 0}},
    {"VLLM_TEST_FORCE_FP8_MARLIN", {0, 0, 0}, {0, 28, 0}}, /* PR #52182, after v0.27.1 */
    {"VLLM_NVFP4_GEMM_BACKEND", {0, 11, 0}, {0, 25, 0}},
    /* deprecated by PR #39538 (v0.22) and still read; the release that removed
     * them is not verified: gone in the newest environment list (uncertain) */
    {"VLLM_USE_NVFP4_CT_EMULATIONS", {0, 9, 2}, {0, 30, 0}},
    {"VLLM_USE_FBGEMM", {0, 11, 0}, {0, 30, 0}},
    /* absent from the newest environment list; the removal releases are
     * estimates, as in the knowledge (uncertain) */
    {"VLLM_USE_FLASHINFER_MOE_FP16", {0, 0, 0}, {0, 23, 0}},
    {"VLLM_USE_FLASHINFER_MOE_FP8", {0, 0, 0}, {0, 23, 0}},
    {"VLLM_MXFP4_USE_MARLIN", {0, 0, 0}, {0, 23, 0}},
    {"VLLM_RPC_TIMEOUT", {0, 0, 0}, {0, 11, 0}}, /* a V0-engine variable */
    {"VLLM_TORCH_PROFILER_DIR", {0, 0, 0}, {0, 30, 0}}, /* now --profiler-config */
    {"VLLM_ATTENTION_BACKEND", {0, 0, 0}, {0, 15, 0}},
    {"VLLM_ALL2ALL_BACKEND", {0, 0, 0}, {0, 16, 0}}, /* PR #33535, after v0.15.0 */
    {"VLLM_USE_V1", {0, 0, 0}, {0, 11, 0}},
    {"VLLM_B12X_MOE_FP4_FORCE_A16", {0, 28, 0}, {0, 0, 0}}, /* PR #52018 */
};

static bool span_live(const struct world *w, const struct env_span *s)
{
    if (!re_ver_ge(w, s->since[0], s->since[1], s->since[2]))
        return false;
    if (s->until[0] || s->until[1] || s->until[2])
        return !re_ver_ge(w, s->until[0], s->until[1], s->until[2]);
    return true;
}

bool re_env_live(const struct world *w, const char *name)
{
    for (size_t i = 0; i < MP_ARRAY_SIZE(env_spans); i++)
        if (!strcmp(env_spans[i].name, name))
            return span_live(w, &env_spans[i]);
    return false;
}

bool re_env_known(const struct world *w, const char *name)
{
    for (size_t i = 0; i < MP_ARRAY_SIZE(known_env); i++)
        if (!strcmp(known_env[i], name))
            return true;
    for (size_t i = 0; i < MP_ARRAY_SIZE(env_spans); i++)
        if (!strcmp(env_spans[i].name, name))
            return span_live(w, &env_spans[i]);
    for (unsigned i = 0; i < w->nknobs; i++)
        if (!strcmp(w->knobs[i].name, name))
            return true;
    return false;
}


/* ---- device gates ---- */

static bool is_sm12x(const struct world *w)
{
    return w->device == WD_SM120 || w->device == WD_SM121;
}

/* NULL when the backend can run here, else vLLM's reason text. */
static const char *unsupported_reason(const struct world *w, enum world_backend b)
{
    const char *dev = "kernel does not support current device";
    switch (b) {
    case WB_FLASHINFER_TRTLLM:
    case WB_FLASHINFER_CUTEDSL:
    case WB_FLASHINFER_CUTEDSL_BATCHED:
        if (w->device != WD_SM100)
            return dev; /* SM100 family only */
        break;
    case WB_FLASHINFER_CUTLASS:
        /* v0.15.0 lacked the family(120) check (PR #33417, fixed in 0.15.1) */
        if (is_sm12x(w) && w->ver_major == 0 && w->ver_minor == 15 && w->ver_patch == 0)
            return dev;
        break;
    case WB_VLLM_CUTLASS:
        if (w->device == WD_SM90)
            return dev; /* families 100/110/120 */
        break;
    case WB_FLASHINFER_B12X:
    case WB_B12X:
        if (!is_sm12x(w))
            return dev;
        break;
    default:
        break;
    }
    if (!w->backends[b].supported)
        return dev;
    return NULL;
}

/* ---- era lists ---- */

/* A development build ("0.19.2rc1.dev8+g4b7f5ea1a"): main, not a release
 * branch, so it has what main had then. */
bool re_dev_build(const struct world *w)
{
    return strstr(w->version, ".dev") != NULL;
}

static unsigned auto_list(const struct world *w, enum world_backend *out)
{
    unsigned n = 0;
    out[n++] = WB_FLASHINFER_TRTLLM;
    out[n++] = WB_FLASHINFER_CUTEDSL;
    /* PR #38251 (main, April 2026) shipped in v0.20.0; v0.19.1 is release-branch code */
    if (re_ver_ge(w, 0, 20, 0) || (re_ver_ge(w, 0, 19, 1) && re_dev_build(w)))
        out[n++] = WB_FLASHINFER_CUTEDSL_BATCHED;
    out[n++] = WB_FLASHINFER_CUTLASS;
    out[n++] = WB_VLLM_CUTLASS;
    out[n++] = WB_MARLIN;
    if (re_ver_ge(w, 0, 25, 0))
        out[n++] = WB_HUMMING;
    if (re_ver_ge(w, 0, 20, 0))
        out[n++] = WB_EMULATION;
    return n;
}

static bool is_flashinfer(enum world_backend b)
{
    return b == WB_FLASHINFER_TRTLLM || b == WB_FLASHINFER_CUTEDSL ||
           b == WB_FLASHINFER_CUTEDSL_BATCHED || b == WB_FLASHINFER_CUTLASS ||
           b == WB_FLASHINFER_B12X;
}

/* --moe-backend values valid for NvFP4 in this era, with their backend
 * (the oracle's map_nvfp4_backend). */
struct flag_map {
    const char *value;
    enum world_backend b;
    int since_minor; /* 0.<since_minor>.0 */
};
static const struct flag_map nvfp4_flags[] = {
    {"cutlass", WB_VLLM_CUTLASS, 17},
    {"flashinfer_trtllm", WB_FLASHINFER_TRTLLM, 17},
    {"flashinfer_cutlass", WB_FLASHINFER_CUTLASS, 17},
    {"flashinfer_cutedsl", WB_FLASHINFER_CUTEDSL, 17},
    {"marlin", WB_MARLIN, 17},
    {"emulation", WB_EMULATION, 20},
    {"humming", WB_HUMMING, 22},
    {"flashinfer_b12x", WB_FLASHINFER_B12X, 23},
    {"b12x", WB_B12X, 29},
};

/* The MoEBackend literal = argparse choices of --moe-backend, per release
 * (0.<since_minor>.0), as data/knowledge.json has them (test_refengine_resolve
 * checks they agree): v0.17-0.19 (docs v0.18.0); +deep_gemm_mega_moe,
 * emulation (v0.20); +humming, triton_unfused (v0.22; main had them on
 * 2026-05-07, before flashinfer_b12x); +flashinfer_b12x (v0.23); b12x and
 * the non-NvFp4 additions (v0.29); rdna3 (v0.31). Boundaries after v0.20
 * are the latest plausible release (uncertain, docs/refengine.md). */
static const struct {
    const char *value;
    int since_minor;
} moe_choices[] = {
    {"auto", 17},           {"triton", 17},       {"deep_gemm", 17},
    {"cutlass", 17},        {"flashinfer_trtllm", 17}, {"flashinfer_cutlass", 17},
    {"flashinfer_cutedsl", 17}, {"marlin", 17},   {"aiter", 17},
    {"deep_gemm_mega_moe", 20}, {"emulation", 20}, {"humming", 22},
    {"triton_unfused", 22}, {"flashinfer_b12x", 23}, {"b12x", 29},
    {"batched_triton", 29}, {"flashinfer_moe_ep_mega_deep_gemm", 29},
    {"flashinfer_moe_ep_mega_cutedsl", 29}, {"aiter_triton_mxfp4_bf16", 29}, {"flydsl", 29},
    {"hpc", 29},            {"rdna3", 31},
};

bool re_moe_choice(const struct world *w, const char *v)
{
    for (size_t i = 0; i < MP_ARRAY_SIZE(moe_choices); i++)
        if (!strcmp(v, moe_choices[i].value) && re_ver_ge(w, 0, moe_choices[i].since_minor, 0))
            return true;
    return false;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 'a', 'b', ...: argparse prints sorted(options) (literal_to_kwargs) */
static void choices_repr(const struct world *w, char *out, size_t cap)
{
    const char *v[MP_ARRAY_SIZE(moe_choices)];
    size_t n = 0, o = 0;
    for (size_t i = 0; i < MP_ARRAY_SIZE(moe_choices); i++)
        if (re_ver_ge(w, 0, moe_choices[i].since_minor, 0))
            v[n++] = moe_choices[i].value;
    qsort(v, n, sizeof(v[0]), cmp_cstr);
    out[0] = 0;
    for (size_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s'%s'", o ? ", " : "", v[i]);
}

static void normalize_flag(const char *in, char *out, size_t cap)
{
    size_t i = 0;
    for (; in[i] && i + 1 < cap; i++)
        out[i] = in[i] == '-' ? '_' : (char)tolower((unsigned char)in[i]);
    out[i] = 0;
}

/* ---- line helpers ---- */

static const char *moe_file(const struct world *w, int *lineno)
{
    if (!re_ver_ge(w, 0, 20, 0)) {
        *lineno = re_dev_build(w) && re_ver_ge(w, 0, 19, 1) ? 203 : 256;
    } else if (!re_ver_ge(w, 0, 22, 0)) {
        *lineno = 209;
    } else {
        *lineno = 222;
    }
    return "nvfp4.py";
}

static void list_repr(const enum world_backend *v, unsigned n, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    o += (size_t)snprintf(out + o, cap - o, "[");
    for (unsigned i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s'%s'", i ? ", " : "", world_backend_name(v[i]));
    if (o < cap)
        snprintf(out + o, cap - o, "]");
}

static bool is_ct(const struct world *w)
{
    return !strncmp(w->quantization, "compressed", 10);
}

static void marlin_warning(const struct world *w, struct re_resolution *r)
{
    re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_WARNING, "marlin_utils_fp4.py",
                 re_ver_ge(w, 0, 15, 0) ? 131 : 109,
                 "Your GPU does not have native support for FP4 computation but FP4 quantization "
                 "is being used. Weight-only FP4 compression will be used leveraging the Marlin "
                 "kernel. This may degrade performance for compute-heavy workloads.");
}

/* ---- dense and attention lines ---- */

static const char gemm_backend_frames[] =
    RE_TB_LOAD "  File \"" RE_PY "/model_executor/layers/quantization/modelopt.py\", line 1106, in __init__\n"
               "    self.kernel = init_nvfp4_linear_kernel()\n"
               "  File \"" RE_PY "/model_executor/kernels/linear/__init__.py\", line 683, in init_nvfp4_linear_kernel\n"
               "    raise ValueError(\n";

/* The kernels/linear era (0.19.2 dev builds, releases from 0.20.0 - see
 * auto_list) maps VLLM_NVFP4_GEMM_BACKEND through _NVFP4_BACKEND_TO_KERNEL:
 * fbgemm or any other value outside it is a ValueError. */
static bool gemm_backend_ok(const struct world *w, const char *e, const char *norm,
                            struct re_resolution *r)
{
    static const char *const ok[] = {"flashinfer-cutlass", "cutlass", "marlin", "flashinfer-trtllm",
                                     "flashinfer-cudnn", "emulation"};
    if (!e || !re_ver_ge(w, 0, 19, 1))
        return true;
    for (size_t i = 0; i < MP_ARRAY_SIZE(ok); i++)
        if (!strcmp(norm, ok[i]))
            return true;
    re_fail(r, gemm_backend_frames,
            "ValueError: Unknown VLLM_NVFP4_GEMM_BACKEND='%.100s'. Valid choices: "
            "['flashinfer-cutlass', 'cutlass', 'marlin', 'flashinfer-trtllm', "
            "'flashinfer-cudnn', 'emulation']",
            e);
    return false;
}

static void dense_line(const struct world *w, const struct re_inputs *in, struct re_resolution *r)
{
    char v[64] = "";
    if (in->linear_backend && re_ver_ge(w, 0, 22, 0)) {
        normalize_flag(in->linear_backend, v, sizeof(v));
        for (char *p = v; *p; p++)
            if (*p == '_')
                *p = '-';
    } else {
        const char *e = re_env_get(in->env, "VLLM_NVFP4_GEMM_BACKEND");
        if (e && re_env_live(w, "VLLM_NVFP4_GEMM_BACKEND"))
            normalize_flag(e, v, sizeof(v));
        for (char *p = v; *p; p++)
            if (*p == '_')
                *p = '-';
        if (v[0] && !gemm_backend_ok(w, e, v, r))
            return;
    }
    static const struct {
        const char *v, *enum_name, *kernel;
    } map[] = {
        {"flashinfer-cutlass", "FLASHINFER_CUTLASS", "FlashInferCutlassNvFp4LinearKernel"},
        {"flashinfer-trtllm", "FLASHINFER_TRTLLM", "FlashInferTrtllmNvFp4LinearKernel"},
        {"flashinfer-cudnn", "FLASHINFER_CUDNN", "FlashInferCudnnNvFp4LinearKernel"},
        {"cutlass", "VLLM_CUTLASS", "CutlassNvFp4LinearKernel"},
        {"marlin", "MARLIN", "MarlinNvFp4LinearKernel"},
        {"emulation", "EMULATION", "EmulationNvFp4LinearKernel"},
        {"fbgemm", "FBGEMM", "FbgemmNvFp4LinearKernel"},
    };
    size_t k = MP_ARRAY_SIZE(map);
    for (size_t i = 0; i < MP_ARRAY_SIZE(map); i++)
        if (!strcmp(v, map[i].v))
            k = i;
    if (k == MP_ARRAY_SIZE(map))
        k = w->device == WD_SM90 ? 4 : 0; /* default: FlashInfer CUTLASS; Marlin on Hopper */
    if (!re_ver_ge(w, 0, 15, 0)) {
        snprintf(r->dense_kernel, sizeof(r->dense_kernel), "%s", map[k].v);
        re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_INFO,
                     is_ct(w) ? "compressed_tensors_w4a4_nvfp4.py" : "modelopt.py",
                     is_ct(w) ? 62 : 982, "Using %s for NVFP4 GEMM", map[k].v);
    } else if (!re_ver_ge(w, 0, 19, 1)) {
        snprintf(r->dense_kernel, sizeof(r->dense_kernel), "NvFp4LinearBackend.%s",
                 map[k].enum_name);
        re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_INFO, "nvfp4_utils.py", 85,
                     "Using NvFp4LinearBackend.%s for NVFP4 GEMM", map[k].enum_name);
    } else if (!v[0]) {
        re_dense_auto(w, in, r); /* stages.c: VLLM_DISABLED_KERNELS, the v0.29.0 W4A16 order */
    } else {
        snprintf(r->dense_kernel, sizeof(r->dense_kernel), "%s", map[k].kernel);
        re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_INFO, "__init__.py", 683,
                     "Using %s for NVFP4 GEMM", map[k].kernel);
    }
}

static void attention_line(const struct world *w, const struct re_inputs *in,
                           struct re_resolution *r)
{
    if (in->attention_backend) {
        char v[64];
        size_t i = 0;
        for (; in->attention_backend[i] && i + 1 < sizeof(v); i++)
            v[i] = (char)toupper((unsigned char)in->attention_backend[i]);
        v[i] = 0;
        snprintf(r->attention, sizeof(r->attention), "%s", v);
        re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_INFO, "cuda.py", 308,
                     "Using AttentionBackendEnum.%s backend.", v);
        return;
    }
    bool hopper = w->device == WD_SM90;
    snprintf(r->attention, sizeof(r->attention), "%s", hopper ? "FLASH_ATTN" : "FLASHINFER");
    if (!re_ver_ge(w, 0, 15, 0))
        re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_INFO, "cuda.py", 351,
                     "Using %s attention backend out of potential backends: %s", r->attention,
                     hopper ? "('FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION')"
                            : "('FLASHINFER', 'TRITON_ATTN')");
    else
        re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_INFO, "cuda.py", 334,
                     "Using %s attention backend out of potential backends: %s.", r->attention,
                     hopper ? "['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION']"
                            : "['FLASHINFER', 'TRITON_ATTN']");
}

/* ---- environment warnings (API server) ---- */

static void env_warnings(const struct world *w, const struct re_inputs *in,
                         struct re_resolution *r)
{
    if (!in->env)
        return;
    /* PR #33581: a real v0.17.1 log warns; v0.16.0 likely does too, but that
     * is not verified, so it is not imitated */
    if (re_ver_ge(w, 0, 17, 0)) {
        for (const char *const *e = in->env; *e; e++) {
            if (strncmp(*e, "VLLM_", 5) != 0)
                continue;
            const char *eq = strchr(*e, '=');
            if (!eq || eq - *e >= 128)
                continue;
            char name[128];
            memcpy(name, *e, (size_t)(eq - *e));
            name[eq - *e] = 0;
            if (!re_env_known(w, name))
                re_lines_add(&r->api_lines, RE_PROC_API, RE_WARNING, "envs.py", 1744,
                             "Unknown vLLM environment variable detected: %s", name);
        }
    }
}

/* FutureWarnings of PR #43148 (first in v0.22) and PR #39538 (v0.22), as
 * vLLM prints them: from EngineCore, where the variable is read. */
static void env_deprecations(const struct world *w, const struct re_inputs *in,
                             struct re_resolution *r)
{
    static const struct {
        const char *name;
        int from, until;
        const char *msg;
    } dep[] = {
        {"VLLM_USE_FLASHINFER_MOE_FP4", 22, 23,
         "is deprecated and will be removed in v0.23. Use --moe-backend (e.g. flashinfer_trtllm, "
         "flashinfer_cutlass, flashinfer_cutedsl)."},
        {"VLLM_FLASHINFER_MOE_BACKEND", 22, 23,
         "is deprecated and will be removed in v0.23. Use --moe-backend (e.g. flashinfer_trtllm, "
         "flashinfer_cutlass, flashinfer_cutedsl)."},
        {"VLLM_NVFP4_GEMM_BACKEND", 22, 25,
         "is deprecated and will be removed in v0.21. Use --linear-backend."},
    };
    if (!in->env)
        return;
    for (size_t i = 0; i < MP_ARRAY_SIZE(dep); i++) {
        if (!re_env_get(in->env, dep[i].name))
            continue;
        if (!re_ver_ge(w, 0, dep[i].from, 0) || re_ver_ge(w, 0, dep[i].until, 0))
            continue;
        re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_RAW, "", 0,
                     "/usr/local/lib/python3.12/dist-packages/vllm/envs.py:2144: FutureWarning: "
                     "%s %s",
                     dep[i].name, dep[i].msg);
        re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_RAW, "", 0, "  raw = getter()");
    }
}

/* ---- MoE selection ---- */

void re_fail(struct re_resolution *r, const char *frames, const char *fmt, ...)
{
    r->frames = frames;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof(r->error), fmt, ap);
    va_end(ap);
    r->status = RE_ERR_STARTUP;
    r->backend = WB_NONE;
}

/* explicit choice: no fallback */
static void return_or_raise(const struct world *w, struct re_resolution *r, enum world_backend b)
{
    const char *why = unsupported_reason(w, b);
    if (why) {
        re_fail(r, NULL,
             "ValueError: NvFp4 MoE backend '%s' does not support the deployment configuration "
             "since %s.",
             world_backend_name(b), why);
        return;
    }
    r->backend = b;
}

/* world [knob] mapping: the first set knob whose value maps to a backend */
static enum world_backend knob_choice(const struct world *w, const struct re_inputs *in)
{
    for (unsigned i = 0; i < w->nknobs; i++) {
        const char *v = re_env_get(in->env, w->knobs[i].name);
        if (!v)
            continue;
        for (unsigned j = 0; j < w->knobs[i].nvalues; j++)
            if (!strcasecmp(v, w->knobs[i].values[j].value))
                return w->knobs[i].values[j].backend;
    }
    return WB_NONE;
}

static enum world_backend fi_subchoice(const struct world *w, const char *v)
{
    if (!v)
        v = re_ver_ge(w, 0, 11, 1) ? "latency" : "throughput"; /* PR #27439 default switch */
    if (!strcmp(v, "latency"))
        return WB_FLASHINFER_TRTLLM;
    if (!strcmp(v, "masked_gemm"))
        return WB_FLASHINFER_CUTEDSL;
    return WB_FLASHINFER_CUTLASS;
}

/* Where vLLM reads the 0/1 and choice variables (the frames of their ValueError). */
static const char fp4_preoracle_frames[] =
    RE_TB_LOAD "  File \"" RE_PY "/model_executor/layers/quantization/modelopt.py\", line 1160, in __init__\n"
               "    self.allow_flashinfer = is_flashinfer_fp4_cutlass_moe_available()\n"
               "  File \"" RE_PY "/model_executor/layers/quantization/utils/flashinfer_fp4_moe.py\", line 46, in is_flashinfer_fp4_cutlass_moe_available\n"
               "    envs.VLLM_USE_FLASHINFER_MOE_FP4\n"
               "  File \"" RE_PY "/envs.py\", line 1258, in __getattr__\n"
               "    return environment_variables[name]()\n"
               "  File \"" RE_PY "/envs.py\", line 1009, in <lambda>\n"
               "    lambda: bool(int(os.getenv(\"VLLM_USE_FLASHINFER_MOE_FP4\", \"0\")))\n";
static const char fp4_oracle_frames[] =
    RE_TB_LOAD "  File \"" RE_PY "/model_executor/layers/fused_moe/oracle/nvfp4.py\", line 187, in select_nvfp4_moe_backend\n"
               "    if not envs.VLLM_USE_FLASHINFER_MOE_FP4:\n"
               "  File \"" RE_PY "/envs.py\", line 1711, in __getattr__\n"
               "    return environment_variables[name]()\n"
               "  File \"" RE_PY "/envs.py\", line 1009, in <lambda>\n"
               "    lambda: bool(int(os.getenv(\"VLLM_USE_FLASHINFER_MOE_FP4\", \"0\")))\n";
static const char marlin_oracle_frames[] =
    RE_TB_LOAD "  File \"" RE_PY "/model_executor/layers/fused_moe/oracle/nvfp4.py\", line 227, in select_nvfp4_moe_backend\n"
               "    if envs.VLLM_TEST_FORCE_FP8_MARLIN:\n"
               "  File \"" RE_PY "/envs.py\", line 1711, in __getattr__\n"
               "    return environment_variables[name]()\n"
               "  File \"" RE_PY "/envs.py\", line 742, in <lambda>\n"
               "    lambda: bool(int(os.getenv(\"VLLM_TEST_FORCE_FP8_MARLIN\", \"0\")))\n";
static const char fi_backend_oracle_frames[] =
    RE_TB_LOAD "  File \"" RE_PY "/model_executor/layers/fused_moe/oracle/nvfp4.py\", line 195, in select_nvfp4_moe_backend\n"
               "    backend = fi_2_vllm_backend_map[get_flashinfer_moe_backend()]\n"
               "  File \"" RE_PY "/envs.py\", line 1711, in __getattr__\n"
               "    return environment_variables[name]()\n"
               "  File \"" RE_PY "/envs.py\", line 290, in _get_validated_env\n"
               "    raise ValueError(\n";

static void select_preoracle(const struct world *w, const struct re_inputs *in,
                             struct re_resolution *r)
{
    struct re_lines *L = &r->engine_lines;
    const char *cls = is_ct(w) ? "CompressedTensorsW4A4Nvfp4MoeMethod" : "ModelOptNvFp4FusedMoE";
    enum world_backend knob = knob_choice(w, in);
    enum world_backend b = WB_NONE;
    int fp4 = knob == WB_NONE ? re_env_int(in, "VLLM_USE_FLASHINFER_MOE_FP4", r, fp4_preoracle_frames)
                              : 0;
    if (fp4 < 0)
        return;
    if (knob != WB_NONE) {
        r->road = "knob";
        r->requested = knob;
        return_or_raise(w, r, knob);
        if (r->status != RE_OK)
            return;
        b = knob;
    } else if (fp4 == 1) {
        r->road = "env";
        enum world_backend fi = fi_subchoice(w, re_env_get(in->env, "VLLM_FLASHINFER_MOE_BACKEND"));
        if (fi == WB_FLASHINFER_TRTLLM && w->device != WD_SM100) {
            re_lines_add(L, RE_PROC_ENGINE, RE_WARNING, "flashinfer_utils.py", 149,
                         "Flashinfer TRTLLM MOE backend is only supported on SM100 and later, "
                         "using CUTLASS backend instead");
            fi = WB_FLASHINFER_CUTLASS;
        }
        if (unsupported_reason(w, fi))
            re_lines_add(L, RE_PROC_ENGINE, RE_INFO, "nvfp4_moe_support.py", 47,
                         "FlashInfer kernels unavailable for %s on current platform.", cls);
        else
            b = fi;
    } else {
        r->road = "auto";
    }
    if (b == WB_NONE) {
        if (!unsupported_reason(w, WB_VLLM_CUTLASS))
            b = WB_VLLM_CUTLASS;
        else if (!unsupported_reason(w, WB_MARLIN))
            b = WB_MARLIN;
    }
    if (b == WB_NONE) {
        re_fail(r, NULL, "NotImplementedError: No NvFp4 MoE backend supports the deployment configuration.");
        return;
    }
    r->backend = b;
    if (is_flashinfer(b)) {
        const char *fi = b == WB_FLASHINFER_TRTLLM  ? "TensorRT-LLM"
                         : b == WB_FLASHINFER_CUTLASS ? "CUTLASS"
                                                      : "CUTEDSL";
        re_lines_add(L, RE_PROC_ENGINE, RE_INFO, "nvfp4_moe_support.py", 42,
                     "Using FlashInfer kernels for %s.", cls);
        re_lines_add(L, RE_PROC_ENGINE, RE_INFO, is_ct(w) ? "compressed_tensors_moe.py" : "modelopt.py",
                     is_ct(w) ? 272 : 1191, "Using FlashInfer %s kernels for %s.", fi, cls);
    } else if (b == WB_MARLIN) {
        if (is_ct(w))
            re_lines_add(L, RE_PROC_ENGINE, RE_INFO, "compressed_tensors_moe.py", 268,
                         "Using Marlin for CompressedTensorsW4A4Nvfp4MoEMethod.");
        else
            re_lines_add(L, RE_PROC_ENGINE, RE_WARNING, "nvfp4_moe_support.py", 58,
                         "Falling back to Marlin FP4 MoE kernel.");
        marlin_warning(w, r);
    } else if (b == WB_VLLM_CUTLASS && is_ct(w)) {
        re_lines_add(L, RE_PROC_ENGINE, RE_INFO, "compressed_tensors_moe.py", 268,
                     "Using Cutlass for CompressedTensorsW4A4Nvfp4MoeMethod.");
    }
    /* ModelOpt + vLLM CUTLASS printed no MoE line in these versions */
}

/* FP4=1: the FlashInfer backends only (the one VLLM_FLASHINFER_MOE_BACKEND
 * names, with no fallback, else TRTLLM, CUTLASS, CuteDSL). */
static void oracle_flashinfer(const struct world *w, const struct re_inputs *in,
                              struct re_resolution *r)
{
    static const enum world_backend fi_order[] = {WB_FLASHINFER_TRTLLM, WB_FLASHINFER_CUTLASS,
                                                  WB_FLASHINFER_CUTEDSL};
    r->road = "env";
    const char *fb = re_env_live(w, "VLLM_FLASHINFER_MOE_BACKEND")
                         ? re_env_fi_backend(in, r, fi_backend_oracle_frames)
                         : NULL;
    if (r->status != RE_OK)
        return;
    if (fb) {
        r->requested = fi_subchoice(w, fb);
        return_or_raise(w, r, r->requested); /* no fallback */
    } else {
        for (size_t i = 0; i < MP_ARRAY_SIZE(fi_order) && r->backend == WB_NONE; i++)
            if (!unsupported_reason(w, fi_order[i]))
                r->backend = fi_order[i];
    }
    if (r->status == RE_OK && r->backend == WB_NONE)
        re_fail(r, NULL, "NotImplementedError: Found VLLM_USE_FLASHINFER_MOE_FP4=1, but no "
                         "FlashInfer NVFP4 MoE backend supports the configuration.");
}

static void oracle_auto(const struct world *w, const enum world_backend *list, unsigned n,
                        struct re_resolution *r)
{
    for (unsigned i = 0; i < n && r->backend == WB_NONE; i++) {
        const char *why = unsupported_reason(w, list[i]);
        if (why)
            re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_DEBUG, "nvfp4.py", 247,
                         "NvFp4 MoE backend '%s' does not support the deployment configuration "
                         "since %s.",
                         world_backend_name(list[i]), why);
        else
            r->backend = list[i];
    }
    if (r->backend == WB_NONE)
        re_fail(r, NULL, "NotImplementedError: No NvFp4 MoE backend supports the deployment "
                         "configuration.");
}

/* VLLM_TEST_FORCE_FP8_MARLIN=1 returns MARLIN in the oracle: read from v0.15
 * until v0.23, the release that dropped the other environment branches (an
 * assumption, like the knowledge's: the commit that removed it from the NvFp4
 * oracle is not found; uncertain). -1: the value failed the start. */
static int oracle_marlin_forced(const struct world *w, const struct re_inputs *in,
                                struct re_resolution *r)
{
    if (!re_env_live(w, "VLLM_TEST_FORCE_FP8_MARLIN") || re_ver_ge(w, 0, 23, 0))
        return 0;
    return re_env_int(in, "VLLM_TEST_FORCE_FP8_MARLIN", r, marlin_oracle_frames);
}

/* The oracle's selection line (the era's list) and Marlin's warning. */
static void oracle_line(const struct world *w, const enum world_backend *list, unsigned n,
                        struct re_resolution *r)
{
    char lr[512];
    list_repr(list, n, lr, sizeof(lr));
    int ln;
    const char *f = moe_file(w, &ln);
    re_lines_add(&r->engine_lines, RE_PROC_ENGINE, RE_INFO, f, ln,
                 "Using '%s' NvFp4 MoE backend out of potential backends: %s.",
                 world_backend_name(r->backend), lr);
    r->selection_line = true;
    if (r->backend == WB_MARLIN)
        marlin_warning(w, r);
}

static void select_oracle(const struct world *w, const struct re_inputs *in,
                          struct re_resolution *r, enum world_backend flag_choice)
{
    enum world_backend list[WB_COUNT];
    unsigned n = auto_list(w, list);
    /* An explicit --moe-backend (or fork knob) returns before any environment
     * branch and logs the full list; VLLM_USE_FLASHINFER_MOE_FP4 is read only
     * past it: =0 removes the FlashInfer backends from the printed list, =1
     * iterates them but prints the list unchanged. */
    enum world_backend knob = knob_choice(w, in);
    bool env_read = flag_choice == WB_NONE && knob == WB_NONE;
    int fp4 = 0;
    bool fp4_set = env_read && re_env_live(w, "VLLM_USE_FLASHINFER_MOE_FP4") &&
                   re_env_get(in->env, "VLLM_USE_FLASHINFER_MOE_FP4");
    if (fp4_set && (fp4 = re_env_int(in, "VLLM_USE_FLASHINFER_MOE_FP4", r, fp4_oracle_frames)) < 0)
        return;
    if (fp4_set && fp4 == 0) {
        unsigned m = 0;
        for (unsigned i = 0; i < n; i++)
            if (!is_flashinfer(list[i]))
                list[m++] = list[i];
        n = m;
    }
    memcpy(r->candidates, list, n * sizeof(list[0]));
    r->ncandidates = n;
    int marlin = 0;
    if (flag_choice != WB_NONE) {
        r->road = "flag";
        r->requested = flag_choice;
        return_or_raise(w, r, flag_choice);
    } else if (knob != WB_NONE) {
        r->road = "knob";
        r->requested = knob;
        return_or_raise(w, r, knob);
    } else if (fp4 == 1) {
        oracle_flashinfer(w, in, r);
    } else if ((marlin = oracle_marlin_forced(w, in, r)) != 0) {
        if (marlin < 0)
            return;
        r->road = "env";
        r->requested = WB_MARLIN;
        return_or_raise(w, r, WB_MARLIN);
    } else {
        r->road = fp4_set ? "env" : "auto";
        oracle_auto(w, list, n, r);
    }
    if (r->status == RE_OK)
        oracle_line(w, list, n, r);
}

/* argparse: --moe-backend's type= lower-cases the value and turns '-' into
 * '_' before it checks the choices (engine/arg_utils.py); the error shows
 * the normalised value and the choices sorted. --kernel-config's value is
 * not an argparse choice (KernelConfig normalises it). Returns 0, or -1
 * with r an argparse error. */
static int moe_argparse(const struct world *w, const char *raw, bool from_flag,
                        struct re_resolution *r)
{
    char v[64];
    normalize_flag(raw, v, sizeof(v));
    if (!from_flag || re_moe_choice(w, v))
        return 0;
    char choices[800];
    choices_repr(w, choices, sizeof(choices));
    snprintf(r->error, sizeof(r->error),
             "argument --moe-backend: invalid choice: '%.40s' (choose from %.800s)", v, choices);
    r->status = RE_ERR_ARGPARSE;
    return -1;
}

/* The oracle's map_nvfp4_backend: the backend, WB_NONE for auto, or WB_NONE
 * with r failed (a choice that is no NvFp4 backend). */
static enum world_backend map_flag(const struct world *w, const char *raw, struct re_resolution *r)
{
    char v[64];
    normalize_flag(raw, v, sizeof(v));
    if (!strcmp(v, "auto"))
        return WB_NONE;
    for (size_t i = 0; i < MP_ARRAY_SIZE(nvfp4_flags); i++)
        if (!strcmp(v, nvfp4_flags[i].value) && re_ver_ge(w, 0, nvfp4_flags[i].since_minor, 0))
            return nvfp4_flags[i].b;
    char expected[512];
    size_t o = 0;
    expected[0] = 0;
    for (size_t i = 0; i < MP_ARRAY_SIZE(nvfp4_flags) && o < sizeof(expected); i++)
        if (re_ver_ge(w, 0, nvfp4_flags[i].since_minor, 0))
            o += (size_t)snprintf(expected + o, sizeof(expected) - o, "%s'%s'", o ? ", " : "",
                                  nvfp4_flags[i].value);
    re_fail(r, NULL,
            "ValueError: moe_backend='%s' is not supported for NvFP4 MoE. Expected one of [%s].", v,
            expected);
    return WB_NONE;
}

int re_resolve(const struct world *w, const struct re_inputs *in, struct re_resolution *r)
{
    memset(r, 0, sizeof(*r));
    r->status = RE_OK;
    r->backend = WB_NONE;
    r->requested = WB_NONE;
    r->road = "auto";

    /* argparse: flags the era does not have */
    size_t o = 0;
    if (in->moe_backend && in->moe_backend_from_flag && !re_ver_ge(w, 0, 17, 0))
        o += (size_t)snprintf(r->error + o, sizeof(r->error) - o, " --moe-backend %s",
                              in->moe_backend);
    if (in->linear_backend && !re_ver_ge(w, 0, 22, 0) && o < sizeof(r->error))
        o += (size_t)snprintf(r->error + o, sizeof(r->error) - o, " --linear-backend %s",
                              in->linear_backend); /* PR #39538, first in v0.22.0 */
    if (in->attention_backend && !re_ver_ge(w, 0, 12, 0) && o < sizeof(r->error))
        o += (size_t)snprintf(r->error + o, sizeof(r->error) - o, " --attention-backend %s",
                              in->attention_backend); /* PR #26315, after v0.11 */
    if (o) {
        char args[512];
        snprintf(args, sizeof(args), "%s", r->error + 1);
        snprintf(r->error, sizeof(r->error), "unrecognized arguments: %.480s", args);
        r->status = RE_ERR_ARGPARSE;
        return 0;
    }

    bool flag = in->moe_backend && re_ver_ge(w, 0, 17, 0);
    if (flag && moe_argparse(w, in->moe_backend, in->moe_backend_from_flag, r) != 0)
        return 0;
    env_warnings(w, in, r);
    env_deprecations(w, in, r);
    /* engine start (compile_factors), then the model: dense layers, then MoE */
    re_env_eager(w, in, r);
    if (r->status == RE_OK)
        dense_line(w, in, r);
    if (r->status == RE_OK && !re_ver_ge(w, 0, 15, 0)) {
        select_preoracle(w, in, r);
    } else if (r->status == RE_OK) {
        enum world_backend flag_choice = flag ? map_flag(w, in->moe_backend, r) : WB_NONE;
        if (r->status == RE_OK)
            select_oracle(w, in, r, flag_choice);
    }
    if (r->status == RE_OK)
        attention_line(w, in, r);
    if (r->status == RE_OK)
        re_resolve_stages(w, in, r); /* stages.c */
    return 0;
}
