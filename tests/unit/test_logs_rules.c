/* test_logs_rules.c - one test per log-reading rule, on lines in the shapes
 * real vLLM (and the tools around it: journald, docker compose, kubectl,
 * podman, terminals) print: frames of any package, the launch site, every
 * form of the CUDA error, log framings, selection lines. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "knowledge/knowledge.h"
#include "logs/logscan.h"
#include "logs/scan_int.h"
#include "xalloc.h"

static struct mp_logscan *scan(const char *text)
{
    struct mp_logscan *s = mp_logscan_new(mp_knowledge_builtin());
    size_t len = strlen(text);
    for (size_t i = 0; i < len; i += 13)
        mp_logscan_feed(s, text + i, MP_MIN((size_t)13, len - i));
    mp_logscan_finish(s);
    return s;
}

static bool has_finding(const struct mp_logresult *r, const char *code)
{
    for (size_t i = 0; i < r->nfindings; i++)
        if (!strcmp(r->findings[i].code, code))
            return true;
    return false;
}

static const char *finding_text(const struct mp_logresult *r, const char *code)
{
    for (size_t i = 0; i < r->nfindings; i++)
        if (!strcmp(r->findings[i].code, code))
            return r->findings[i].text;
    return NULL;
}

static const char *lin(const struct mp_logresult *r, const char *method)
{
    for (size_t i = 0; i < r->n_linear_kernels; i++)
        if (!strcmp(r->linear_kernels[i].method, method))
            return r->linear_kernels[i].kernel;
    return NULL;
}

static void test_frame_names(void **st)
{
    (void)st;
    static const struct {
        const char *path, *fn, *want;
    } cases[] = {
        {"/usr/local/lib/python3.12/dist-packages/triton/backends/nvidia/driver.py", "__call__",
         "triton/backends/nvidia/driver.py:__call__"},
        {"/home/u/torch/venv/lib/python3.12/site-packages/myengine/engine.py", "step",
         "myengine/engine.py:step"},
        {"/srv/app/engine.py", "step", "engine.py:step"},
        {"/home/u/torch/engine.py", "step", "engine.py:step"},
        {"/workspace/vllm/vllm/v1/engine/core.py", "run_busy_loop",
         "vllm/v1/engine/core.py:run_busy_loop"},
        {"/root/.cache/huggingface/modules/transformers_modules/org/M/abc/modeling_x.py", "forward",
         "transformers_modules/org/M/abc/modeling_x.py:forward"},
        {"/usr/lib/python3.12/threading.py", "run", "threading.py:run"},
        {"/usr/lib/python3.12/concurrent/futures/thread.py", "run", "concurrent/futures/thread.py:run"},
        {"vllm/v1/attention/backends/flashinfer.py", "build",
         "vllm/v1/attention/backends/flashinfer.py:build"},
        {"./bench.py", "main", "bench.py:main"},
        {"/opt/venv/lib/python3.12/site-packages/deep_gemm/jit/runtime.py", NULL,
         "deep_gemm/jit/runtime.py"},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(cases); i++) {
        char *got = mp_logs_frame_name(cases[i].path, strlen(cases[i].path), cases[i].fn,
                                       cases[i].fn ? strlen(cases[i].fn) : 0);
        assert_string_equal(got, cases[i].want);
        free(got);
    }
    assert_true(mp_logs_is_machinery("torch/cuda/__init__.py:synchronize"));
    assert_true(mp_logs_is_machinery("triton/runtime/jit.py:run"));
    assert_false(mp_logs_is_machinery("myengine/engine.py:step"));
    assert_false(mp_logs_is_machinery("vllm/v1/worker/gpu_model_runner.py:execute_model"));
}

/* A CUDA race in a Python engine whose frames are outside vllm/flashinfer:
 * sites are kept, and the launch site skips torch and triton frames. */
static void test_any_package_and_launch_site(void **st)
{
    (void)st;
    const char *t =
        "Traceback (most recent call last):\n"
        "  File \"/srv/app/serve.py\", line 88, in <module>\n"
        "    main()\n"
        "  File \"/srv/app/engine.py\", line 412, in step\n"
        "    out = fused_moe_kernel[grid](x, w, out)\n"
        "  File \"/opt/venv/lib/python3.12/site-packages/triton/runtime/jit.py\", line 390, in <lambda>\n"
        "    return lambda *args, **kwargs: self.run(grid=grid, warmup=False, *args, **kwargs)\n"
        "  File \"/opt/venv/lib/python3.12/site-packages/triton/backends/nvidia/driver.py\", line 529, in __call__\n"
        "    self.launch(*args, **kwargs)\n"
        "  File \"/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py\", line 1040, in synchronize\n"
        "    return torch._C._cuda_synchronize()\n"
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n";
    struct mp_logscan *s = scan(t);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_true(r->has_crash);
    assert_string_equal(r->crash.cls, "illegal-address");
    assert_int_equal(r->crash.nsites, 4);
    assert_string_equal(r->crash.sites[0], "torch/cuda/__init__.py:synchronize");
    assert_string_equal(r->crash.sites[1], "triton/backends/nvidia/driver.py:__call__");
    assert_string_equal(r->crash.launch_site, "engine.py:step");
    mp_logscan_free(s);
}

static void test_cuda_error_forms(void **st)
{
    (void)st;
    static const struct {
        const char *line, *cls;
    } cases[] = {
        {"torch.AcceleratorError: CUDA error: an illegal memory access was encountered", "illegal-address"},
        {"RuntimeError: CUDA error: an illegal memory access was encountered", "illegal-address"},
        {"RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered", "illegal-address"},
        {"RuntimeError: Triton Error [CUDA]: misaligned address", "misaligned-address"},
        {"RuntimeError: Triton Error [CUDA]: device-side assert triggered", "cuda-other"},
        {"RuntimeError: CUDA error: out of memory", "out-of-memory"},
        {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.74 GiB.", "out-of-memory"},
        {"RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "out-of-memory"},
        {"RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`", "cuda-other"},
        {"RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", "cuda-other"},
        {"torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3", "cuda-other"},
        {"RuntimeError: NCCL Error 1: unhandled cuda error (run with NCCL_DEBUG=INFO for details) ncclUnhandledCudaError", "cuda-other"},
        {"RuntimeError: CUDA error: device-side assert triggered", "cuda-other"},
        {"/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:94: operator(): block: [0,0,0], thread: [0,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.", "cuda-other"},
        {"cuda.bindings.runtime.cudaError_t.cudaErrorIllegalAddress", "illegal-address"},
        {"RuntimeError: CUDA driver error: CUDA_ERROR_ILLEGAL_INSTRUCTION", "illegal-instruction"},
        {"NVRM: Xid (PCI:0000:01:00): 13, pid=4242, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Misaligned Address", "misaligned-address"},
        {"NVRM: Xid (PCI:0000:01:00): 13, pid=4242, name=python3, Graphics SM Warp Exception on (GPC 2, TPC 0, SM 1): Out Of Range Address", "illegal-address"},
        {"NVRM: Xid (PCI:0000:c1:00): 31, pid=4242, name=python3, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34560000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE", "illegal-address"},
        {"NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", "cuda-other"},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(cases); i++) {
        char *t = xasprintf("%s\n", cases[i].line);
        struct mp_logscan *s = scan(t);
        const struct mp_logresult *r = mp_logscan_result(s);
        if (!r->has_crash || strcmp(r->crash.cls, cases[i].cls))
            fail_msg("%s: want %s, got %s", cases[i].line, cases[i].cls,
                     r->has_crash ? r->crash.cls : "no crash");
        mp_logscan_free(s);
        free(t);
    }
}

/* A kernel Xid line gives its class; the CUDA error that follows gives the
 * message and the line (the Xid is weaker evidence of the same fault). */
static void test_xid_then_cuda_error(void **st)
{
    (void)st;
    const char *t =
        "[ 8123.456789] NVRM: Xid (PCI:0000:01:00): 13, pid=4242, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Misaligned Address\n"
        "(EngineCore pid=4242) ERROR 09-02 10:00:00 [core.py:1] torch.AcceleratorError: CUDA error: misaligned address\n";
    struct mp_logscan *s = scan(t);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_string_equal(r->crash.cls, "misaligned-address");
    assert_int_equal(r->crash.line, 2);
    assert_non_null(strstr(r->crash.message, "torch.AcceleratorError"));
    assert_non_null(strstr(finding_text(r, "xid"), "Xid 13"));
    mp_logscan_free(s);
}

/* The same crash in every framing gives the same class, site and fields. */
static void test_framings(void **st)
{
    (void)st;
    static const char *const prefix[] = {
        "",
        "Aug 19 18:34:27 gpu-host vllm[2211]: ",
        "Aug  9 18:34:27 gpu-host docker/vllm: ",
        "2026-08-19T18:34:27+0000 gpu-host vllm[2211]: ",
        "vllm-1  | ",
        "vllm-openai-1  | 2026-08-19T18:34:27.123456789Z ",
        "2026-08-19T18:34:27.123456789Z ",
        "2026-08-19T18:34:27.123456789+02:00 ",
        "[pod/vllm-7d9f/vllm] 2026-08-19T18:34:27.123456789Z ",
        "2026-08-19 18:34:27.989 | ",
        "\x1b[36mvllm-1  |\x1b[0m ",
    };
    static const char *const body[] = {
        "(EngineCore pid=184) INFO 08-19 18:06:36 [nvfp4.py:256] Using 'MARLIN' NvFp4 MoE backend out of potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN'].",
        "(EngineCore pid=184) ERROR 08-19 18:09:00 [core.py:1] Traceback (most recent call last):",
        "(EngineCore pid=184) ERROR 08-19 18:09:00 [core.py:1]   File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py\", line 313, in get_output",
        "(EngineCore pid=184) ERROR 08-19 18:09:00 [core.py:1]     self.async_copy_ready_event.synchronize()",
        "(EngineCore pid=184) ERROR 08-19 18:09:00 [core.py:1] torch.AcceleratorError: CUDA error: misaligned address",
    };
    for (size_t p = 0; p < MP_ARRAY_SIZE(prefix); p++) {
        struct buf b = BUF_INIT;
        for (size_t l = 0; l < MP_ARRAY_SIZE(body); l++)
            buf_printf(&b, "%s%s\n", prefix[p], body[l]);
        struct mp_logscan *s = scan(b.data);
        const struct mp_logresult *r = mp_logscan_result(s);
        if (!r->moe_backend || strcmp(r->moe_backend, "MARLIN") || r->n_moe_candidates != 5)
            fail_msg("prefix %zu: MoE backend %s", p, r->moe_backend ? r->moe_backend : "(none)");
        if (!r->has_crash || strcmp(r->crash.cls, "misaligned-address") || r->crash.line != 5 ||
            r->crash.nsites != 1 ||
            strcmp(r->crash.sites[0], "vllm/v1/worker/gpu_model_runner.py:get_output"))
            fail_msg("prefix %zu: crash %s line %ld", p, r->has_crash ? r->crash.cls : "none",
                     r->crash.line);
        mp_logscan_free(s);
        buf_release(&b);
    }
}

/* A line wrapped by a terminal at 100 columns reads like the whole line; the
 * lines after it keep their numbers. */
static void test_wrapped_lines(void **st)
{
    (void)st;
    const char *whole =
        "(EngineCore pid=184) INFO 04-17 18:06:36 [nvfp4.py:256] Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN'].";
    struct buf b = BUF_INIT;
    size_t n = strlen(whole);
    for (size_t i = 0; i < n; i += 100) {
        buf_add(&b, whole + i, MP_MIN((size_t)100, n - i));
        buf_addc(&b, '\n');
    }
    buf_adds(&b, "(APIServer pid=1) INFO:     Application startup complete.\n");
    struct mp_logscan *s = scan(b.data);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_string_equal(r->moe_backend, "FLASHINFER_CUTLASS");
    assert_int_equal(r->moe_backend_line, 1);
    assert_int_equal(r->n_moe_candidates, 5);
    assert_true(has_finding(r, "moe-list-era"));
    assert_int_equal(r->ready_line, 4);
    assert_int_equal(r->lines, 4);
    mp_logscan_free(s);
    buf_release(&b);

    /* a long prose line is not a log record: the next line stays its own */
    const char *prose =
        "This is a long paragraph of an issue report that goes on and on past eighty columns of text\n"
        "RuntimeError: CUDA error: misaligned address\n";
    s = scan(prose);
    r = mp_logscan_result(s);
    assert_int_equal(r->crash.line, 2);
    mp_logscan_free(s);

    /* the live line API never holds a line */
    s = mp_logscan_new(mp_knowledge_builtin());
    assert_int_equal(mp_logscan_line(s, whole, strlen(whole)), MP_LOGEV_RESOLVED);
    mp_logscan_free(s);
}

static void test_attention_lines(void **st)
{
    (void)st;
    const char *t =
        "(EngineCore pid=1) INFO 06-01 10:00:00 [mm_encoder_attention.py:1] Using AttentionBackendEnum.FLASH_ATTN for MMEncoderAttention.\n"
        "(EngineCore pid=1) INFO 06-01 10:00:00 [cuda.py:1] Using backend AttentionBackendEnum.FLASH_ATTN for vit attention\n"
        "(EngineCore pid=1) INFO 06-01 10:00:01 [cuda.py:2] Using FLASHINFER attention backend.\n";
    struct mp_logscan *s = scan(t);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_string_equal(r->attention_backend, "FLASHINFER");
    assert_int_equal(r->attention_backend_line, 3);
    mp_logscan_free(s);

    s = scan("(EngineCore pid=1) INFO 06-01 [cuda.py:1] Using backend AttentionBackendEnum.TORCH_SDPA for vit attention\n");
    assert_null(mp_logscan_result(s)->attention_backend);
    mp_logscan_free(s);
}

/* A log with no banner: version and model from the input dump of a failing
 * step, which also shows the engine was serving. */
static void test_dump_without_banner(void **st)
{
    (void)st;
    const char *t =
        "(EngineCore pid=274) ERROR 07-28 10:00:00 [dump_input.py:69] Dumping input data for V1 LLM engine (v0.23.1rc1.dev1279+gdcfebf93f) with config: model='nvidia/Qwen3.6-35B-A3B-NVFP4', speculative_config=None, tokenizer='nvidia/Qwen3.6-35B-A3B-NVFP4'\n"
        "(EngineCore pid=274) ERROR 07-28 10:00:00 [dump_input.py:76] Dumping scheduler output for model execution: SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(req_ids=['chatcmpl-1']))\n"
        "(EngineCore pid=274) ERROR 07-28 10:00:00 [core.py:1] EngineCore encountered a fatal error.\n"
        "(EngineCore pid=274) ERROR 07-28 10:00:00 [core.py:1] torch.AcceleratorError: CUDA error: misaligned address\n";
    struct mp_logscan *s = scan(t);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_string_equal(r->engine_version, "0.23.1rc1.dev1279+gdcfebf93f");
    assert_string_equal(r->model, "nvidia/Qwen3.6-35B-A3B-NVFP4");
    assert_true(r->ready);
    assert_null(r->startup_error);
    assert_null(strstr(finding_text(r, "crash"), "before any sign"));
    mp_logscan_free(s);
}

/* An excerpt that starts after start-up: serving lines come after the error
 * line too; the crash is never called a startup failure. */
static void test_serving_excerpt(void **st)
{
    (void)st;
    const char *t =
        "(EngineCore pid=1) ERROR 09-01 [core.py:1] RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "(APIServer pid=1) INFO:     127.0.0.1:51234 - \"POST /v1/chat/completions HTTP/1.1\" 500 Internal Server Error\n";
    struct mp_logscan *s = scan(t);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_true(r->ready);
    assert_null(r->startup_error);
    assert_null(strstr(finding_text(r, "crash"), "before any sign"));
    mp_logscan_free(s);

    s = scan("(APIServer pid=1) INFO 09-01 [logger.py:1] Received request chatcmpl-9f: prompt: 'hi'\n");
    assert_true(mp_logscan_result(s)->ready);
    mp_logscan_free(s);
}

static void test_engine_dead_alone(void **st)
{
    (void)st;
    const char *t =
        "(APIServer pid=1) ERROR 09-01 10:00:00 [async_llm.py:480] AsyncLLM output_handler failed.\n"
        "(APIServer pid=1) ERROR 09-01 10:00:00 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n";
    struct mp_logscan *s = scan(t);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_string_equal(r->crash.cls, "engine-dead");
    assert_true(r->crash.engine_dead);
    mp_logscan_free(s);
}

/* A nightly's version written in prose: "0.1.devN+g..." has two numeric parts. */
static void test_dev_version_in_prose(void **st)
{
    (void)st;
    struct mp_logscan *s = scan("DGX Spark (GB10, sm_121), vLLM `0.1.dev19908+g728d3ad09` (`vllm/vllm-openai:nightly`)\n");
    assert_string_equal(mp_logscan_result(s)->engine_version, "0.1.dev19908+g728d3ad09");
    mp_logscan_free(s);
    s = scan("we run vLLM 0.11 on two nodes\n");
    assert_null(mp_logscan_result(s)->engine_version);
    mp_logscan_free(s);
}

/* An image tag is a vLLM version only for vLLM's own image: LMCache's
 * lmcache/vllm-openai:v0.3.9 tags LMCache's version, NGC's vllm:25.11-py3
 * is NVIDIA's release (knowledge.h mp_kn_image_version says the same). */
static void test_image_tag_version_only_upstream(void **st)
{
    (void)st;
    static const struct {
        const char *line, *want;
    } rows[] = {
        {"own image on top of `vllm/vllm-openai:v0.27.1`, torch 2.13\n", "0.27.1"},
        {"pulled docker.io/vllm/vllm-openai:v0.28.0 sha256:61fc\n", "0.28.0"},
        {"image lmcache/vllm-openai:v0.3.9 started\n", NULL},
        {"image myvllm/vllm-openai:v0.3.9 started\n", NULL},
        {"### 1. `nvcr.io/nvidia/vllm:25.11-py3` (NGC)\n", NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct mp_logscan *s = scan(rows[i].line);
        const char *got = mp_logscan_result(s)->engine_version;
        if (rows[i].want ? !got || strcmp(got, rows[i].want) : got != NULL)
            fail_msg("%s: engine version %s", rows[i].line, got ? got : "(none)");
        mp_logscan_free(s);
    }
}

static void test_moe_backend_flag_auto(void **st)
{
    (void)st;
    const char *t =
        "(EngineCore pid=1) INFO 06-04 [core.py:107] Initializing a V1 LLM engine (v0.22.0) with config: model='a/b', kernel_config=KernelConfig(ir_op_priority=IrOpPriorityConfig(rms_norm=['native']), enable_flashinfer_autotune=False, moe_backend='auto', linear_backend='auto')\n";
    struct mp_logscan *s = scan(t);
    assert_string_equal(mp_logscan_result(s)->moe_backend_flag, "auto");
    mp_logscan_free(s);
    s = scan("(APIServer pid=1) INFO 04-19 [utils.py:233] non-default args: {'model': 'a/b', 'moe_backend': 'marlin'}\n");
    assert_string_equal(mp_logscan_result(s)->moe_backend_flag, "marlin");
    mp_logscan_free(s);
}

static void test_linear_kernels(void **st)
{
    (void)st;
    const char *t =
        "(EngineCore pid=1) INFO 09-07 [__init__.py:1] Selected CutlassFp8BlockScaledMMKernel for Fp8LinearMethod\n"
        "(EngineCore pid=1) INFO 09-07 [__init__.py:2] Selected FlashInferFP8ScaledMMLinearKernel for ModelOptFp8LinearMethod\n"
        "(EngineCore pid=1) INFO 09-07 [__init__.py:3] Using FlashInferCutlassMxfp8LinearKernel for MXFP8 GEMM\n"
        "(EngineCore pid=1) INFO 09-07 [__init__.py:4] Using MarlinLinearKernel for mixed-precision linear\n"
        "(EngineCore pid=1) INFO 09-07 [__init__.py:5] Selected MacheteLinearKernel for CompressedTensorsWNA16\n";
    struct mp_logscan *s = scan(t);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_null(r->linear_kernel); /* no NVFP4 GEMM line */
    assert_string_equal(lin(r, "fp8_block"), "CutlassFp8BlockScaledMMKernel");
    assert_string_equal(lin(r, "fp8"), "FlashInferFP8ScaledMMLinearKernel");
    assert_string_equal(lin(r, "mxfp8"), "FlashInferCutlassMxfp8LinearKernel");
    assert_string_equal(lin(r, "mixed"), "MarlinLinearKernel"); /* the first per method */
    mp_logscan_free(s);

    s = scan("(EngineCore pid=1) INFO 09-07 [__init__.py:683] Using FlashInferCuteDslNvFp4LinearKernel for NVFP4 GEMM\n");
    r = mp_logscan_result(s);
    assert_string_equal(r->linear_kernel, "FlashInferCuteDslNvFp4LinearKernel");
    assert_string_equal(lin(r, "nvfp4"), "FlashInferCuteDslNvFp4LinearKernel");
    mp_logscan_free(s);
}

/* The MTP drafter's unquantized MoE line (a name with a blank) beside the
 * NvFp4 one: both reported, the NvFp4 one stays the MoE backend. */
static void test_unquantized_moe_beside_nvfp4(void **st)
{
    (void)st;
    const char *t =
        "(EngineCore pid=1) INFO 08-25 [nvfp4.py:244] Using 'VLLM_CUTLASS' NvFp4 MoE backend out of potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTEDSL_BATCHED', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN', 'HUMMING', 'EMULATION'].\n"
        "(EngineCore pid=1) INFO 08-25 [unquantized.py:213] Using FlashInfer CUTLASS Unquantized MoE backend out of potential backends: ['FlashInfer TRTLLM', 'FlashInfer CUTLASS', 'TRITON', 'BATCHED_TRITON'].\n";
    struct mp_logscan *s = scan(t);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_string_equal(r->moe_backend, "VLLM_CUTLASS");
    assert_int_equal(r->n_moe_candidates, 8);
    assert_string_equal(r->unquantized_moe_backend, "FlashInfer CUTLASS");
    assert_int_equal(r->unquantized_moe_backend_line, 2);
    assert_int_equal(r->n_unquantized_moe_candidates, 4);
    assert_string_equal(r->unquantized_moe_candidates[0], "FlashInfer TRTLLM");
    mp_logscan_free(s);
}

/* Current vLLM with swiglu_limit prints the auto list minus
 * FLASHINFER_CUTEDSL_BATCHED: seven entries, all applying the clamp. */
static void test_swiglu_clamp_seven(void **st)
{
    (void)st;
    const char *t =
        "(EngineCore pid=1) INFO 09-10 [nvfp4.py:291] Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN', 'HUMMING', 'EMULATION'].\n";
    struct mp_logscan *s = scan(t);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_true(has_finding(r, "swiglu-clamp"));
    assert_false(has_finding(r, "moe-list-unknown"));
    mp_logscan_free(s);
}

/* A genuine v0.19.1 prints the five-entry list: not "a fork". */
static void test_v0191_five_entries(void **st)
{
    (void)st;
    const char *t =
        "(APIServer pid=1) INFO 04-24 [utils.py:299]  \xe2\x96\x84\xe2\x96\x84 \xe2\x96\x88  version 0.19.1\n"
        "(EngineCore pid=1) INFO 04-24 [nvfp4.py:256] Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN'].\n";
    struct mp_logscan *s = scan(t);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_true(has_finding(r, "moe-list-era"));
    assert_false(has_finding(r, "moe-list-version-mismatch"));
    mp_logscan_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_names),
        cmocka_unit_test(test_image_tag_version_only_upstream),
        cmocka_unit_test(test_any_package_and_launch_site),
        cmocka_unit_test(test_cuda_error_forms),
        cmocka_unit_test(test_xid_then_cuda_error),
        cmocka_unit_test(test_framings),
        cmocka_unit_test(test_wrapped_lines),
        cmocka_unit_test(test_attention_lines),
        cmocka_unit_test(test_dump_without_banner),
        cmocka_unit_test(test_serving_excerpt),
        cmocka_unit_test(test_engine_dead_alone),
        cmocka_unit_test(test_dev_version_in_prose),
        cmocka_unit_test(test_moe_backend_flag_auto),
        cmocka_unit_test(test_linear_kernels),
        cmocka_unit_test(test_unquantized_moe_beside_nvfp4),
        cmocka_unit_test(test_swiglu_clamp_seven),
        cmocka_unit_test(test_v0191_five_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
