/* Unit tests: NvFp4 MoE resolution per vLLM era, device, environment and
 * flags (tables), plus the era's printed lines. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "drafter.h"
#include "knowledge/knowledge.h"
#include "resolve.h"
#include "world.h"

static void mkworld(struct world *w, const char *version, const char *device, const char *extra)
{
    char text[2048];
    snprintf(text, sizeof(text), "[engine]\nversion = %s\ndevice = %s\nmodel = m/x\n%s", version,
             device, extra ? extra : "");
    struct mp_diag d = MP_DIAG_INIT;
    int rc = world_parse(text, strlen(text), "t.ini", w, &d);
    if (rc)
        fail_msg("world: %zu: %s", d.line, d.msg);
}

static bool has_line(const struct re_lines *l, const char *part)
{
    for (size_t i = 0; i < l->n; i++)
        if (strstr(l->v[i].text, part))
            return true;
    return false;
}

struct row {
    const char *version, *device, *extra; /* world */
    const char *flag;                     /* --moe-backend */
    const char *env[4];
    enum re_status status;
    const char *backend;  /* expected backend name or NULL */
    const char *expect;   /* substring of an engine line, or of the error */
};

static const struct row rows[] = {
    /* oracle era, auto on SM12x: TRTLLM/CuteDSL are SM100-only */
    {"0.17.0", "sm121", NULL, NULL, {NULL}, RE_OK, "FLASHINFER_CUTLASS",
     "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: "
     "['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN']."},
    {"0.17.0", "sm100", NULL, NULL, {NULL}, RE_OK, "FLASHINFER_TRTLLM", NULL},
    {"0.17.0", "sm90", NULL, NULL, {NULL}, RE_OK, "FLASHINFER_CUTLASS", NULL},
    /* explicit flag wins over env, no fallback */
    {"0.17.0", "sm121", NULL, "cutlass", {"VLLM_USE_FLASHINFER_MOE_FP4=1", NULL}, RE_OK,
     "VLLM_CUTLASS", NULL},
    {"0.17.0", "sm121", NULL, "flashinfer_trtllm", {NULL}, RE_ERR_STARTUP, NULL,
     "ValueError: NvFp4 MoE backend 'FLASHINFER_TRTLLM' does not support the deployment "
     "configuration since kernel does not support current device."},
    /* argparse lower-cases the value and turns '-' into '_' first (type=), then
     * checks the choices; the error shows the normalised value, choices sorted */
    {"0.17.0", "sm121", NULL, "Flashinfer-TRTLLM", {NULL}, RE_ERR_STARTUP, NULL,
     "NvFp4 MoE backend 'FLASHINFER_TRTLLM' does not support the deployment"},
    {"0.20.0", "sm121", NULL, "CUTLASS", {NULL}, RE_OK, "VLLM_CUTLASS", NULL},
    {"0.20.0", "sm121", NULL, "flashinfer-cutlass", {NULL}, RE_OK, "FLASHINFER_CUTLASS", NULL},
    {"0.17.0", "sm121", NULL, "Foo-Bar", {NULL}, RE_ERR_ARGPARSE, NULL,
     "argument --moe-backend: invalid choice: 'foo_bar' (choose from 'aiter', 'auto', "
     "'cutlass', 'deep_gemm', 'flashinfer_cutedsl', 'flashinfer_cutlass', "
     "'flashinfer_trtllm', 'marlin', 'triton')"},
    /* values the version's MoEBackend literal does not have yet */
    {"0.18.0", "sm121", NULL, "humming", {NULL}, RE_ERR_ARGPARSE, NULL, "invalid choice: 'humming'"},
    {"0.21.0", "sm121", NULL, "humming", {NULL}, RE_ERR_ARGPARSE, NULL, "invalid choice: 'humming'"},
    {"0.22.0", "sm121", NULL, "humming", {NULL}, RE_OK, "HUMMING", NULL},
    {"0.22.0", "sm121", NULL, "triton_unfused", {NULL}, RE_ERR_STARTUP, NULL,
     "ValueError: moe_backend='triton_unfused' is not supported for NvFP4 MoE"},
    {"0.21.0", "sm121", NULL, "flashinfer_b12x", {NULL}, RE_ERR_ARGPARSE, NULL,
     "invalid choice: 'flashinfer_b12x'"},
    {"0.22.0", "sm121", NULL, "flashinfer_b12x", {NULL}, RE_ERR_ARGPARSE, NULL,
     "invalid choice: 'flashinfer_b12x'"},
    {"0.23.0", "sm121", NULL, "flashinfer_b12x", {NULL}, RE_OK, "FLASHINFER_B12X", NULL},
    {"0.30.0", "sm121", NULL, "rdna3", {NULL}, RE_ERR_ARGPARSE, NULL, "invalid choice: 'rdna3'"},
    {"0.31.0", "sm121", NULL, "RDNA3", {NULL}, RE_ERR_STARTUP, NULL,
     "ValueError: moe_backend='rdna3' is not supported for NvFP4 MoE"},
    {"0.20.0", "sm121", NULL, "emulation", {NULL}, RE_OK, "EMULATION", NULL},
    {"0.17.0", "sm121", NULL, "triton", {NULL}, RE_ERR_STARTUP, NULL,
     "ValueError: moe_backend='triton' is not supported for NvFP4 MoE. Expected one of"},
    {"0.17.0", "sm121", NULL, "b12x", {NULL}, RE_ERR_ARGPARSE, NULL, "invalid choice: 'b12x'"},
    {"0.28.0", "sm121", NULL, "b12x", {NULL}, RE_ERR_ARGPARSE, NULL, "invalid choice: 'b12x'"},
    {"0.29.0", "sm121", NULL, "b12x", {NULL}, RE_OK, "B12X", NULL},
    /* the flag does not exist before 0.17 */
    {"0.15.1", "sm120", NULL, "cutlass", {NULL}, RE_ERR_ARGPARSE, NULL,
     "unrecognized arguments: --moe-backend cutlass"},
    /* env semantics of the oracle era */
    {"0.17.0", "sm121", NULL, NULL, {"VLLM_USE_FLASHINFER_MOE_FP4=0", NULL}, RE_OK,
     "VLLM_CUTLASS", "potential backends: ['VLLM_CUTLASS', 'MARLIN']."},
    {"0.17.0", "sm121", NULL, NULL, {"VLLM_TEST_FORCE_FP8_MARLIN=1", NULL}, RE_OK, "MARLIN",
     "Weight-only FP4 compression will be used leveraging the Marlin kernel"},
    /* FP4=1 + a FlashInfer sub-backend: that one, no fallback */
    {"0.17.0", "sm121", NULL, NULL,
     {"VLLM_USE_FLASHINFER_MOE_FP4=1", "VLLM_FLASHINFER_MOE_BACKEND=latency", NULL},
     RE_ERR_STARTUP, NULL, "NvFp4 MoE backend 'FLASHINFER_TRTLLM' does not support"},
    /* FP4=1 never narrows the printed list */
    {"0.17.0", "sm121", NULL, NULL, {"VLLM_USE_FLASHINFER_MOE_FP4=1", NULL}, RE_OK,
     "FLASHINFER_CUTLASS",
     "potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', "
     "'VLLM_CUTLASS', 'MARLIN']."},
    {"0.17.0", "sm121", NULL, NULL,
     {"VLLM_USE_FLASHINFER_MOE_FP4=1", "VLLM_FLASHINFER_MOE_BACKEND=throughput", NULL}, RE_OK,
     "FLASHINFER_CUTLASS", "potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL',"},
    {"0.17.0", "sm121", "[backend FLASHINFER_CUTLASS]\nsupported = false\n", NULL,
     {"VLLM_USE_FLASHINFER_MOE_FP4=1", NULL}, RE_ERR_STARTUP, NULL,
     "Found VLLM_USE_FLASHINFER_MOE_FP4=1, but no FlashInfer"},
    /* an explicit flag returns before any environment branch: the full list */
    {"0.17.0", "sm121", NULL, "marlin", {"VLLM_USE_FLASHINFER_MOE_FP4=0", NULL}, RE_OK, "MARLIN",
     "potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', "
     "'VLLM_CUTLASS', 'MARLIN']."},
    /* VLLM_TEST_FORCE_FP8_MARLIN: the NvFp4 oracle reads it until v0.23 (assumed,
     * like the knowledge: uncertain), the variable lives until v0.28 (PR #52182) */
    {"0.22.0", "sm121", NULL, NULL, {"VLLM_TEST_FORCE_FP8_MARLIN=1", NULL}, RE_OK, "MARLIN", NULL},
    {"0.23.0", "sm121", NULL, NULL, {"VLLM_TEST_FORCE_FP8_MARLIN=1", NULL}, RE_OK,
     "FLASHINFER_CUTLASS", NULL},
    {"0.28.0", "sm121", NULL, NULL, {"VLLM_TEST_FORCE_FP8_MARLIN=1", NULL}, RE_OK,
     "FLASHINFER_CUTLASS", NULL},
    /* 0/1 variables are bool(int(value)): true or empty stop the engine where read */
    {"0.17.0", "sm121", NULL, NULL, {"VLLM_USE_FLASHINFER_MOE_FP4=true", NULL}, RE_ERR_STARTUP,
     NULL, "ValueError: invalid literal for int() with base 10: 'true'"},
    {"0.17.0", "sm121", NULL, NULL, {"VLLM_TEST_FORCE_FP8_MARLIN=", NULL}, RE_ERR_STARTUP, NULL,
     "ValueError: invalid literal for int() with base 10: ''"},
    {"0.17.0", "sm121", NULL, NULL, {"VLLM_USE_FLASHINFER_MOE_FP4=2", NULL}, RE_OK,
     "FLASHINFER_CUTLASS", NULL},
    {"0.26.0", "sm121", NULL, NULL, {"VLLM_USE_FLASHINFER_MOE_FP4=true", NULL}, RE_OK,
     "FLASHINFER_CUTLASS", NULL}, /* removed: not read */
    /* VLLM_FLASHINFER_MOE_BACKEND is env_with_choices */
    {"0.17.0", "sm121", NULL, NULL,
     {"VLLM_USE_FLASHINFER_MOE_FP4=1", "VLLM_FLASHINFER_MOE_BACKEND=fast", NULL}, RE_ERR_STARTUP,
     NULL,
     "ValueError: Invalid value 'fast' for VLLM_FLASHINFER_MOE_BACKEND. Valid options: "
     "['throughput', 'latency', 'masked_gemm']."},
    /* fbgemm is no VLLM_NVFP4_GEMM_BACKEND value in the kernels/linear era */
    {"0.20.0", "sm120", NULL, NULL, {"VLLM_NVFP4_GEMM_BACKEND=fbgemm", NULL}, RE_ERR_STARTUP, NULL,
     "ValueError: Unknown VLLM_NVFP4_GEMM_BACKEND='fbgemm'. Valid choices: ['flashinfer-cutlass', "
     "'cutlass', 'marlin', 'flashinfer-trtllm', 'flashinfer-cudnn', 'emulation']"},
    /* a variable the era does not have changes nothing */
    {"0.17.0", "sm121", NULL, NULL, {"VLLM_SCALED_MM_BACKEND=marlin", NULL}, RE_OK,
     "FLASHINFER_CUTLASS", NULL},
    /* ...unless the world's fork knows it */
    {"0.17.0", "sm121", "[knob VLLM_SCALED_MM_BACKEND]\nmarlin = MARLIN\n", NULL,
     {"VLLM_SCALED_MM_BACKEND=marlin", NULL}, RE_OK, "MARLIN", NULL},
    /* the explicit flag beats the fork knob */
    {"0.17.0", "sm121", "[knob VLLM_SCALED_MM_BACKEND]\nmarlin = MARLIN\n", "cutlass",
     {"VLLM_SCALED_MM_BACKEND=marlin", NULL}, RE_OK, "VLLM_CUTLASS", NULL},
    /* unsupported backends are skipped by auto */
    {"0.15.1", "sm120", "[backend FLASHINFER_CUTLASS]\nsupported = false\n", NULL, {NULL}, RE_OK,
     "VLLM_CUTLASS", NULL},
    {"0.17.0", "sm121",
     "[backend FLASHINFER_CUTLASS]\nsupported = false\n[backend VLLM_CUTLASS]\nsupported = false\n"
     "[backend MARLIN]\nsupported = false\n",
     NULL, {NULL}, RE_ERR_STARTUP, NULL,
     "NotImplementedError: No NvFp4 MoE backend supports the deployment configuration."},
    /* 0.15.0 lacked the SM120 family check (fixed in 0.15.1) */
    {"0.15.0", "sm120", NULL, NULL, {NULL}, RE_OK, "VLLM_CUTLASS", NULL},
    /* list growth by era */
    {"0.19.2rc1.dev8+g4b7f5ea1a", "sm120", NULL, NULL, {NULL}, RE_OK, "FLASHINFER_CUTLASS",
     "'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTEDSL_BATCHED', 'FLASHINFER_CUTLASS'"},
    /* a v0.19.1 release prints the five-entry list (BATCHED first shipped in v0.20.0) */
    {"0.19.1", "sm120", NULL, NULL, {NULL}, RE_OK, "FLASHINFER_CUTLASS",
     "potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', "
     "'VLLM_CUTLASS', 'MARLIN']."},
    {"0.20.0", "sm120", NULL, NULL, {NULL}, RE_OK, "FLASHINFER_CUTLASS",
     "'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTEDSL_BATCHED', 'FLASHINFER_CUTLASS'"},
    {"0.23.1", "sm121", NULL, NULL, {NULL}, RE_OK, "FLASHINFER_CUTLASS", "'MARLIN', 'EMULATION']."},
    {"0.26.0", "sm121", NULL, NULL, {NULL}, RE_OK, "FLASHINFER_CUTLASS",
     "'MARLIN', 'HUMMING', 'EMULATION']."},
    /* removed env vars are no-ops in 0.23+ */
    {"0.23.1", "sm121", NULL, NULL, {"VLLM_USE_FLASHINFER_MOE_FP4=0", NULL}, RE_OK,
     "FLASHINFER_CUTLASS", NULL},
    /* pre-oracle: FlashInfer only when opted in */
    {"0.13.0", "sm120", NULL, NULL, {NULL}, RE_OK, "VLLM_CUTLASS", "Using flashinfer-cutlass for NVFP4 GEMM"},
    {"0.13.0", "sm120", NULL, NULL,
     {"VLLM_USE_FLASHINFER_MOE_FP4=1", "VLLM_FLASHINFER_MOE_BACKEND=throughput", NULL}, RE_OK,
     "FLASHINFER_CUTLASS", "Using FlashInfer CUTLASS kernels for ModelOptNvFp4FusedMoE."},
    {"0.13.0", "sm121", NULL, NULL, {"VLLM_USE_FLASHINFER_MOE_FP4=1", NULL}, RE_OK,
     "FLASHINFER_CUTLASS", "Flashinfer TRTLLM MOE backend is only supported on SM100"},
    {"0.13.0", "sm120", "[backend VLLM_CUTLASS]\nsupported = false\n", NULL, {NULL}, RE_OK,
     "MARLIN", "Falling back to Marlin FP4 MoE kernel."},
    {"0.13.0", "sm120", NULL, NULL, {"VLLM_TEST_FORCE_FP8_MARLIN=1", NULL}, RE_OK, "VLLM_CUTLASS",
     NULL},
};

static void test_table(void **st)
{
    MP_UNUSED(st);
    for (size_t i = 0; i < MP_ARRAY_SIZE(rows); i++) {
        const struct row *r = &rows[i];
        struct world w;
        mkworld(&w, r->version, r->device, r->extra);
        struct re_inputs in = {.moe_backend = r->flag, .moe_backend_from_flag = r->flag != NULL,
                               .env = r->env};
        struct re_resolution res;
        assert_int_equal(re_resolve(&w, &in, &res), 0);
        if (res.status != r->status)
            fail_msg("row %zu: status %d, error '%s'", i, res.status, res.error);
        if (r->backend && strcmp(world_backend_name(res.backend), r->backend) != 0)
            fail_msg("row %zu: backend %s, expected %s", i, world_backend_name(res.backend),
                     r->backend);
        if (r->expect && !has_line(&res.engine_lines, r->expect) && !strstr(res.error, r->expect))
            fail_msg("row %zu: no line or error containing '%s' (error '%s')", i, r->expect,
                     res.error);
        re_resolution_free(&res);
    }
}

static void test_env_warnings(void **st)
{
    MP_UNUSED(st);
    const char *env[] = {"VLLM_SCALED_MM_BACKEND=marlin", "VLLM_LOGGING_LEVEL=INFO",
                         "VLLM_USE_FLASHINFER_MOE_FP4=0", "HOME=/root", NULL};
    struct world w;
    struct re_resolution res;
    struct re_inputs in = {.env = env};
    /* 0.16: no unknown-variable warning imitated (v0.16 is uncertain) */
    mkworld(&w, "0.16.0", "sm121", NULL);
    re_resolve(&w, &in, &res);
    assert_int_equal(res.api_lines.n, 0);
    re_resolution_free(&res);
    /* 0.17: a real v0.17.1 log has the warning (PR #33581) */
    mkworld(&w, "0.17.0", "sm121", NULL);
    re_resolve(&w, &in, &res);
    assert_true(has_line(&res.api_lines, "Unknown vLLM environment variable detected: VLLM_SCALED_MM_BACKEND"));
    re_resolution_free(&res);
    /* VLLM_WATCHDOG_TIME_S never was a variable: real vLLM warns about it */
    const char *wd[] = {"VLLM_WATCHDOG_TIME_S=5", "VLLM_USE_FBGEMM=1", NULL};
    struct re_inputs inw = {.env = wd};
    mkworld(&w, "0.21.0", "sm121", NULL);
    re_resolve(&w, &inw, &res);
    assert_true(has_line(&res.api_lines, "detected: VLLM_WATCHDOG_TIME_S"));
    assert_false(has_line(&res.api_lines, "detected: VLLM_USE_FBGEMM")); /* deprecated v0.22, not gone */
    re_resolution_free(&res);
    /* 0.19: the fork variable is unknown, the others are known */
    mkworld(&w, "0.19.0", "sm120", NULL);
    re_resolve(&w, &in, &res);
    assert_true(has_line(&res.api_lines, "Unknown vLLM environment variable detected: VLLM_SCALED_MM_BACKEND"));
    assert_false(has_line(&res.api_lines, "VLLM_LOGGING_LEVEL"));
    assert_false(has_line(&res.api_lines, "detected: VLLM_USE_FLASHINFER_MOE_FP4"));
    re_resolution_free(&res);
    /* 0.18.0 already warns about unknown variables (PR #33581) */
    mkworld(&w, "0.18.0", "sm120", NULL);
    re_resolve(&w, &in, &res);
    assert_true(has_line(&res.api_lines, "Unknown vLLM environment variable detected: VLLM_SCALED_MM_BACKEND"));
    re_resolution_free(&res);
    /* 0.21: not deprecated yet (PR #43148 came after v0.21.0) */
    mkworld(&w, "0.21.0", "sm120", NULL);
    re_resolve(&w, &in, &res);
    assert_false(has_line(&res.engine_lines, "is deprecated"));
    assert_false(has_line(&res.api_lines, "is deprecated"));
    re_resolution_free(&res);
    /* 0.22: vLLM's FutureWarning, printed by EngineCore where the variable is read */
    mkworld(&w, "0.22.0", "sm120", NULL);
    re_resolve(&w, &in, &res);
    assert_true(has_line(&res.engine_lines,
                         "FutureWarning: VLLM_USE_FLASHINFER_MOE_FP4 is deprecated and will be "
                         "removed in v0.23. Use --moe-backend (e.g. flashinfer_trtllm, "
                         "flashinfer_cutlass, flashinfer_cutedsl)."));
    assert_true(has_line(&res.engine_lines, "  raw = getter()"));
    assert_false(has_line(&res.api_lines, "is deprecated"));
    re_resolution_free(&res);
    /* 0.23: removed -> unknown */
    mkworld(&w, "0.23.1", "sm121", NULL);
    re_resolve(&w, &in, &res);
    assert_true(has_line(&res.api_lines, "detected: VLLM_USE_FLASHINFER_MOE_FP4"));
    re_resolution_free(&res);
    /* a world knob is known to its fork */
    mkworld(&w, "0.19.0", "sm120", "[knob VLLM_SCALED_MM_BACKEND]\nmarlin = MARLIN\n");
    re_resolve(&w, &in, &res);
    assert_false(has_line(&res.api_lines, "VLLM_SCALED_MM_BACKEND"));
    assert_int_equal(res.backend, WB_MARLIN);
    re_resolution_free(&res);
}

static void test_dense_attention_and_tags(void **st)
{
    MP_UNUSED(st);
    struct world w;
    struct re_resolution res;
    const char *env[] = {"VLLM_NVFP4_GEMM_BACKEND=marlin", NULL};
    struct re_inputs in = {.env = env};
    mkworld(&w, "0.17.0", "sm121", NULL);
    re_resolve(&w, &in, &res);
    assert_true(has_line(&res.engine_lines, "Using NvFp4LinearBackend.MARLIN for NVFP4 GEMM"));
    assert_true(has_line(&res.engine_lines, "Using FLASHINFER attention backend out of potential backends: ['FLASHINFER', 'TRITON_ATTN']."));
    re_resolution_free(&res);
    struct re_inputs in2 = {.linear_backend = "cutlass", .attention_backend = "triton_attn"};
    mkworld(&w, "0.21.0", "sm120", NULL);
    re_resolve(&w, &in2, &res);
    assert_int_equal(res.status, RE_ERR_ARGPARSE); /* --linear-backend is v0.22+ */
    assert_non_null(strstr(res.error, "unrecognized arguments: --linear-backend cutlass"));
    re_resolution_free(&res);
    mkworld(&w, "0.22.0", "sm120", NULL);
    re_resolve(&w, &in2, &res);
    assert_true(has_line(&res.engine_lines, "Using CutlassNvFp4LinearKernel for NVFP4 GEMM"));
    assert_true(has_line(&res.engine_lines, "Using AttentionBackendEnum.TRITON_ATTN backend."));
    re_resolution_free(&res);
    mkworld(&w, "0.13.0", "sm120", NULL);
    re_resolve(&w, &in2, &res);
    assert_int_equal(res.status, RE_ERR_ARGPARSE);
    re_resolution_free(&res);
    struct re_inputs in3 = {.attention_backend = "TRITON_ATTN"};
    mkworld(&w, "0.11.0", "sm120", NULL);
    re_resolve(&w, &in3, &res);
    assert_int_equal(res.status, RE_ERR_ARGPARSE); /* --attention-backend: after v0.11 */
    assert_non_null(strstr(res.error, "--attention-backend TRITON_ATTN"));
    re_resolution_free(&res);
    assert_string_equal(re_proc_tag(&w, RE_PROC_ENGINE), "EngineCore_DP0");
    mkworld(&w, "0.19.0", "sm120", NULL);
    assert_string_equal(re_proc_tag(&w, RE_PROC_ENGINE), "EngineCore");
    assert_string_equal(re_proc_tag(&w, RE_PROC_API), "APIServer");
}

static bool line_at(const struct re_lines *l, size_t i, const char *part)
{
    return i < l->n && strstr(l->v[i].text, part) != NULL;
}

/* The dense NVFP4 kernel (#25): from the kernels/linear move (0.19.1) the
 * auto-selection skips what VLLM_DISABLED_KERNELS names (in the order of
 * _POSSIBLE_NVFP4_KERNELS); before it the variable does not reach NVFP4.
 * On SM12x v0.29.0 prefers the weight-only W4A16 kernel (vllm #53014) until
 * #55170 (v0.29.1). */
static void test_dense_kernels(void **st)
{
    MP_UNUSED(st);
    struct world w;
    struct re_resolution res;
    const char *dis[] = {"VLLM_DISABLED_KERNELS=FlashInferCutlassNvFp4LinearKernel", NULL};
    struct re_inputs in = {.env = dis};
    mkworld(&w, "0.25.0", "sm120", NULL);
    re_resolve(&w, &in, &res);
    assert_string_equal(res.dense_kernel, "CutlassNvFp4LinearKernel");
    assert_true(has_line(&res.engine_lines, "Using CutlassNvFp4LinearKernel for NVFP4 GEMM"));
    re_resolution_free(&res);
    mkworld(&w, "0.19.0", "sm120", NULL);
    re_resolve(&w, &in, &res);
    assert_string_equal(res.dense_kernel, "NvFp4LinearBackend.FLASHINFER_CUTLASS");
    re_resolution_free(&res);
    const char *all[] = {"VLLM_DISABLED_KERNELS=FlashInferCutlassNvFp4LinearKernel,"
                         "CutlassNvFp4LinearKernel,MarlinNvFp4LinearKernel,"
                         "FlashInferTrtllmNvFp4LinearKernel,FlashInferCudnnNvFp4LinearKernel,"
                         "FbgemmNvFp4LinearKernel",
                         NULL};
    struct re_inputs ina = {.env = all};
    mkworld(&w, "0.25.0", "sm120", NULL);
    re_resolve(&w, &ina, &res);
    assert_string_equal(res.dense_kernel, "EmulationNvFp4LinearKernel");
    assert_true(has_line(&res.engine_lines, "NVFP4 linear falling back to the slow and unoptimized "
                                            "emulation backend as no optimized backend is available"));
    re_resolution_free(&res);
    struct re_inputs none = {0};
    mkworld(&w, "0.29.0", "sm121", NULL);
    re_resolve(&w, &none, &res);
    assert_string_equal(res.dense_kernel, "FlashInferCuteDslNvFp4W4A16LinearKernel");
    assert_true(has_line(&res.engine_lines,
                         "Using FlashInferCuteDslNvFp4W4A16LinearKernel for NVFP4 GEMM"));
    re_resolution_free(&res);
    const char *w4[] = {"VLLM_DISABLED_KERNELS=FlashInferCuteDslNvFp4W4A16LinearKernel", NULL};
    struct re_inputs in4 = {.env = w4};
    re_resolve(&w, &in4, &res);
    assert_string_equal(res.dense_kernel, "FlashInferCutlassNvFp4LinearKernel");
    re_resolution_free(&res);
    mkworld(&w, "0.29.1", "sm121", NULL);
    re_resolve(&w, &none, &res);
    assert_string_equal(res.dense_kernel, "FlashInferCutlassNvFp4LinearKernel");
    re_resolution_free(&res);
    mkworld(&w, "0.29.0", "sm100", NULL);
    re_resolve(&w, &none, &res);
    assert_string_equal(res.dense_kernel, "FlashInferCutlassNvFp4LinearKernel");
    re_resolution_free(&res);
}

/* After the target's weights (0.20+, the modular FlashInfer CUTLASS and
 * vLLM CUTLASS paths): "Using MoEPrepareAndFinalizeNoDPEPModular", as a real
 * v0.20.0 log prints it, before a drafter's lines (drafter.c); and a world
 * can say what the drafter's unquantized oracle picks under auto on its
 * device (drafter_moe). */
static void test_load_lines_and_drafter_auto(void **st)
{
    MP_UNUSED(st);
    struct world w;
    struct re_resolution res;
    struct re_inputs in = {0};
    mkworld(&w, "0.20.0", "sm121", NULL);
    re_resolve(&w, &in, &res);
    assert_int_equal(res.load_lines.n, 1);
    assert_true(line_at(&res.load_lines, 0, "Using MoEPrepareAndFinalizeNoDPEPModular"));
    assert_string_equal(res.load_lines.v[0].file, "nvfp4.py");
    re_resolution_free(&res);
    struct re_inputs mar = {.moe_backend = "marlin", .moe_backend_from_flag = true};
    re_resolve(&w, &mar, &res);
    assert_int_equal(res.load_lines.n, 0); /* not seen for Marlin: not printed */
    re_resolution_free(&res);
    mkworld(&w, "0.19.0", "sm121", NULL);
    re_resolve(&w, &in, &res);
    assert_int_equal(res.load_lines.n, 0);
    re_resolution_free(&res);
    /* the drafter's auto pick */
    struct re_drafter d;
    char err[160];
    assert_int_equal(re_drafter_parse("{\"method\": \"mtp\"}", &d, err, sizeof(err)), 0);
    mkworld(&w, "0.23.0", "sm121", "drafter_moe = TRITON\n");
    re_drafter_resolve(&w, NULL, &d);
    assert_string_equal(d.moe, "TRITON");
    re_drafter_resolve(&w, "flashinfer-cutlass", &d); /* an explicit value still selects */
    assert_string_equal(d.moe, "FlashInfer CUTLASS");
    mkworld(&w, "0.23.0", "sm121", NULL);
    re_drafter_resolve(&w, "auto", &d);
    assert_string_equal(d.moe, "FlashInfer CUTLASS");
}

/* The FlashInfer autotuner in the warm-up (FlashInfer kernels resolved,
 * autotuning on): its begin and end lines in FlashInfer's logger format,
 * and, from 0.20, the summary of tactics it called unsupported. */
static void test_autotune_lines(void **st)
{
    MP_UNUSED(st);
    struct world w;
    struct re_resolution res;
    struct re_inputs in = {0};
    mkworld(&w, "0.20.0", "sm121", "autotuner_unsupported_tactics = 14\n");
    re_resolve(&w, &in, &res);
    assert_int_equal(res.tune_lines.n, 3);
    assert_int_equal(res.tune_lines.v[0].level, RE_FI_INFO);
    assert_true(line_at(&res.tune_lines, 0, "[Autotuner]: Autotuning process starts ..."));
    assert_true(line_at(&res.tune_lines, 1, "[Autotuner]: Skipped 14 unsupported tactic(s) for "
                                            "trtllm::fused_moe::gemm1 (enable debug logs to see details)"));
    assert_true(line_at(&res.tune_lines, 2, "[Autotuner]: Autotuning process ends"));
    re_resolution_free(&res);
    struct re_inputs off = {.autotune_off = true};
    re_resolve(&w, &off, &res);
    assert_int_equal(res.tune_lines.n, 0);
    re_resolution_free(&res);
    /* no FlashInfer kernel resolved (Hopper: Marlin dense, --moe-backend marlin): no autotuning */
    struct re_inputs mar = {.moe_backend = "marlin", .moe_backend_from_flag = true};
    mkworld(&w, "0.20.0", "sm90", NULL);
    re_resolve(&w, &mar, &res);
    assert_int_equal(res.tune_lines.n, 0);
    re_resolution_free(&res);
}

/* refengine and the knowledge tell one story: a variable refengine's era
 * knows is one the knowledge calls present (not removed, not yet there, not
 * unknown) in that version, and --moe-backend accepts exactly the choices
 * the knowledge lists for the version. */
static void test_agrees_with_knowledge(void **st)
{
    MP_UNUSED(st);
    static const char *const versions[] = {"0.9.2", "0.10.1", "0.11.0", "0.13.0", "0.15.0",
                                           "0.15.1", "0.16.0", "0.17.0", "0.19.1", "0.20.0",
                                           "0.21.0", "0.22.0", "0.23.0", "0.25.0", "0.27.1",
                                           "0.28.0", "0.29.0", "0.30.0", "0.31.0"};
    static const char *const vars[] = {
        "VLLM_USE_FLASHINFER_MOE_FP4", "VLLM_FLASHINFER_MOE_BACKEND", "VLLM_TEST_FORCE_FP8_MARLIN",
        "VLLM_NVFP4_GEMM_BACKEND", "VLLM_USE_NVFP4_CT_EMULATIONS", "VLLM_USE_FBGEMM",
        "VLLM_ATTENTION_BACKEND", "VLLM_ALL2ALL_BACKEND", "VLLM_USE_V1",
        "VLLM_B12X_MOE_FP4_FORCE_A16", "VLLM_WATCHDOG_TIME_S", "VLLM_RPC_TIMEOUT",
        "VLLM_TORCH_PROFILER_DIR", "VLLM_USE_FLASHINFER_MOE_FP16", "VLLM_USE_FLASHINFER_MOE_FP8",
        "VLLM_MXFP4_USE_MARLIN", "VLLM_DISABLED_KERNELS", "VLLM_SCALED_MM_BACKEND"};
    const struct mp_knowledge *k = mp_knowledge_builtin();
    for (size_t i = 0; i < MP_ARRAY_SIZE(versions); i++) {
        struct world w;
        mkworld(&w, versions[i], "sm121", NULL);
        struct mp_kn_ver v;
        mp_kn_ver_parse(versions[i], &v);
        for (size_t j = 0; j < MP_ARRAY_SIZE(vars); j++) {
            const struct mp_kn_knob *kb = mp_kn_find_knob(k, vars[j]);
            const struct mp_kn_era *e = kb ? mp_kn_knob_era(kb, &v) : NULL;
            bool kn = e && strcmp(e->status, "removed") && strcmp(e->status, "not-yet-available") &&
                      strcmp(e->status, "unknown-to-engine");
            if (kn != re_env_known(&w, vars[j]))
                fail_msg("%s on %s: knowledge says %s, refengine %s", vars[j], versions[i],
                         e ? e->status : "(no era)", kn ? "unknown" : "known");
        }
        const struct mp_kn_knob *mb = mp_kn_find_knob(k, "--moe-backend");
        const struct mp_kn_era *me = mp_kn_knob_era(mb, &v);
        for (size_t j = 0; j < mb->nvalues; j++) {
            bool kn = false;
            for (size_t x = 0; me && x < me->nvalues; x++)
                kn = kn || !strcmp(me->values[x], mb->values[j]);
            if (kn != re_moe_choice(&w, mb->values[j]))
                fail_msg("--moe-backend %s on %s: knowledge %s, refengine differs", mb->values[j],
                         versions[i], kn ? "accepts" : "rejects");
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_env_warnings),
        cmocka_unit_test(test_dense_attention_and_tags),
        cmocka_unit_test(test_agrees_with_knowledge),
        cmocka_unit_test(test_dense_kernels),
        cmocka_unit_test(test_load_lines_and_drafter_auto),
        cmocka_unit_test(test_autotune_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
