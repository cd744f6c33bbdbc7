/* srv_fail.c - refengine's engine death (srv_int.h): the CUDA error and
 * the traceback at one of the world's sites (rotated between starts), the
 * in-band error event for open streams and 500 for the rest, then vLLM's
 * shutdown a second later; and where CUDA mode's real faults surface. */
#include "srv_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *cuda_enum(const char *err)
{
    if (strstr(err, "illegal memory access"))
        return "cudaErrorIllegalAddress";
    if (strstr(err, "misaligned address"))
        return "cudaErrorMisalignedAddress";
    if (strstr(err, "illegal instruction"))
        return "cudaErrorIllegalInstruction";
    if (strstr(err, "unspecified launch failure"))
        return "cudaErrorLaunchFailure";
    return NULL;
}

void re_server_site_frames(struct buf *b, const char *site)
{
    static const struct {
        const char *site, *frames;
    } known[] = {
        {"flashinfer_prefill",
         "  File \"" PY "/v1/attention/backends/flashinfer.py\", line 1925, in forward\n"
         "    prefill_wrapper.run(\n"
         "  File \"/usr/local/lib/python3.12/dist-packages/flashinfer/prefill.py\", line 2563, in run\n"
         "    self._cached_module.paged_run(*run_args)\n"},
        {"scaled_fp8_quant",
         "  File \"" PY "/_custom_ops.py\", line 1719, in scaled_fp8_quant\n"
         "    torch.ops._C.dynamic_scaled_fp8_quant(output, input, scale)\n"},
        {"FlashInferFP8ScaledMMLinearKernel",
         "  File \"" PY "/model_executor/layers/quantization/kernels/scaled_mm/flashinfer.py\", line 98, in apply_weights\n"
         "    return flashinfer_scaled_fp8_mm(\n"},
        {"get_output",
         "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 313, in get_output\n"
         "    self.async_copy_ready_event.synchronize()\n"},
        {"item",
         "  File \"" PY "/v1/sample/sampler.py\", line 112, in forward\n"
         "    num_logprobs = int(max_num_logprobs.item())\n"},
        {"synchronize",
         "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 2981, in execute_model\n"
         "    torch.cuda.synchronize()\n"},
        {"flashinfer_cutlass_fused_moe",
         "  File \"" PY "/model_executor/layers/fused_moe/experts/flashinfer_cutlass_moe.py\", line 301, in apply\n"
         "    flashinfer_cutlass_fused_moe(\n"},
        {"cutlass_moe_fp4",
         "  File \"" PY "/model_executor/layers/fused_moe/experts/cutlass_moe.py\", line 877, in apply\n"
         "    run_cutlass_moe_fp4(\n"},
        {"prepare_inputs",
         "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 1432, in _prepare_inputs\n"
         "    self.input_ids.copy_to_gpu(total_num_scheduled_tokens)\n"},
        {"fused_topk",
         "  File \"" PY "/model_executor/layers/fused_moe/router/fused_topk_router.py\", line 92, in fused_topk\n"
         "    ops.topk_softmax(\n"},
        {"moe_wait_stream",
         "  File \"" PY "/model_executor/layers/fused_moe/layer.py\", line 1711, in forward_impl\n"
         "    torch.cuda.current_stream().wait_stream(self.routing_stream)\n"},
        {"expert_load",
         "  File \"" PY "/model_executor/layers/fused_moe/layer.py\", line 1893, in forward_impl\n"
         "    expert_load = topk_ids.flatten().bincount(minlength=self.global_num_experts).cpu()\n"},
        {"moe_sum",
         "  File \"" PY "/model_executor/layers/fused_moe/fused_moe.py\", line 1630, in fused_experts_impl\n"
         "    ops.moe_sum(\n"},
        {"async_copy",
         "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 278, in __init__\n"
         "    self.sampled_token_ids_cpu = self._sampled_token_ids.to(\n"},
        {"nvfp4_moe_apply",
         "  File \"" PY "/model_executor/layers/fused_moe/experts/nvfp4_moe.py\", line 212, in apply\n"
         "    torch.ops._C.nvfp4_moe_apply(\n"},
        {"fused_marlin_moe",
         "  File \"" PY "/model_executor/layers/fused_moe/fused_marlin_moe.py\", line 244, in fused_marlin_moe\n"
         "    ops.moe_wna16_marlin_gemm(\n"},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(known); i++)
        if (!strcmp(site, known[i].site)) {
            buf_adds(b, known[i].frames);
            return;
        }
    buf_printf(b,
               "  File \"" PY "/model_executor/layers/utils.py\", line 214, in %s\n"
               "    torch.ops._C.%s(out, x)\n",
               site, site);
}

enum moe_cuda_path re_server_cuda_path(enum world_backend b, const struct world_backend_cfg *cfg)
{
    if (cfg->cuda_path >= 0 && cfg->cuda_path < MOE_CUDA_PATH_COUNT)
        return (enum moe_cuda_path)cfg->cuda_path;
    if (cfg->failure == WF_ASYNC_RACE)
        return MOE_CUDA_RACY;
    if (cfg->failure == WF_KERNEL_FAULT)
        return MOE_CUDA_FAULTY;
    return b == WB_MARLIN ? MOE_CUDA_MARLIN : MOE_CUDA_TWO_STREAM;
}

/* rotate the site between attempts: a per-world counter in $TMPDIR */
static unsigned next_site(unsigned nsites)
{
    uint64_t st = srv.cfg->seed ^ 0x5173u;
    unsigned base = (unsigned)(re_gen_mix(&st) % nsites);
    const char *tmp = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof(path), "%s/refengine-sites-%u-%016llx", tmp && *tmp ? tmp : "/tmp",
             (unsigned)getuid(),
             (unsigned long long)re_gen_hash(srv.cfg->site_key, strlen(srv.cfg->site_key), 0));
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    unsigned k;
    if (fd >= 0) {
        struct stat sb;
        if (write(fd, "x", 1) == 1 && fstat(fd, &sb) == 0)
            k = (unsigned)((sb.st_size - 1) % 1000000);
        else
            k = (unsigned)getpid();
        close(fd);
    } else {
        k = (unsigned)getpid();
    }
    return (base + k) % nsites;
}

/* the engine dies: site NULL = pick one of the world's sites */
void re_srv_engine_die(const char *site, const char *why)
{
    if (re_srv_cd_fault())
        return; /* the driver aborted the EngineCore: no traceback (srv_coredump.c) */
    const struct world_backend_cfg *b = srv.be;
    if (!site)
        site = b->sites[next_site(b->nsites)];
    MP_UNUSED(why);
    re_srv_engine_die_err(site, b->error, cuda_enum(b->error));
}

void re_server_cuda_fail(const struct moe_cuda_err *e)
{
    if (srv.dead)
        return;
    re_log(srv.cfg->log, RE_PROC_ENGINE, RE_DEBUG, "refengine_cuda.py", 1,
           "%s returned %s (%s) at site %s", e->call, e->name, e->text,
           moe_cuda_site_name(e->site));
    re_srv_engine_die_err(re_srv_cuda_site(e->site), e->text, e->name);
}

/* CUDA mode: where the host noticed the error, as a vLLM call site */
const char *re_srv_cuda_site(enum moe_cuda_site site)
{
    switch (site) {
    case MOE_SITE_INPUT:
        return "prepare_inputs";
    case MOE_SITE_ROUTE:
        return "fused_topk";
    case MOE_SITE_EVENT:
        return "moe_wait_stream";
    case MOE_SITE_DEQUANT:
        return "fused_marlin_moe";
    case MOE_SITE_EXPERTS:
        switch (srv.cfg->res->backend) {
        case WB_MARLIN:
            return "fused_marlin_moe";
        case WB_FLASHINFER_CUTLASS:
            return "flashinfer_cutlass_fused_moe";
        case WB_VLLM_CUTLASS:
            return "cutlass_moe_fp4";
        default:
            return "nvfp4_moe_apply";
        }
    case MOE_SITE_COMBINE:
        return "moe_sum";
    case MOE_SITE_OUTPUT:
        return "async_copy";
    case MOE_SITE_STATS:
        return "expert_load";
    case MOE_SITE_SYNC:
    default:
        return "get_output";
    }
}

/* After engine death: every in-flight stream gets vLLM's in-band error event
 * and ends, every non-streaming request a 500; nothing is scheduled any
 * more. lg (or NULL) logs the per-stream "Error in ... stream generator". */
void re_srv_fail_in_flight(struct re_log *lg)
{
    for (struct conn *c = srv.conns, *nx; c; c = nx) {
        nx = c->next;
        struct stream *s = c->s;
        if (!s)
            continue;
        if (s->req.stream) {
            if (lg)
                re_log(lg, RE_PROC_API, RE_ERROR, s->req.chat ? "serving_chat.py" : "serving_completion.py",
                       s->req.chat ? 1223 : 386, "Error in %s stream generator.",
                       s->req.chat ? "chat completion" : "completion");
            struct buf e = BUF_INIT;
            re_api_stream_error(&e, &srv.shape,
                                "EngineCore encountered an issue. See stack trace (above) for the "
                                "root cause.");
            re_srv_sse_event(c, e.data, e.len);
            buf_release(&e);
            re_srv_sse_end(c);
        } else {
            re_srv_respond_dead(c);
        }
        re_srv_stream_done(s, 3);
        re_srv_flush(c);
    }
    srv.nactive = srv.nwaiting = 0;
    re_srv_arm_at(srv.tfd, 0);
}

/* the engine dies of a CUDA error with the runtime's text and enum name (may be NULL) */
void re_srv_engine_die_err(const char *site, const char *text, const char *en)
{
    const struct re_server_cfg *cfg = srv.cfg;
    struct re_log *lg = cfg->log;
    srv.dead = true;
    struct buf t = BUF_INIT;
    buf_adds(&t, "EngineCore encountered a fatal error.\nTraceback (most recent call last):\n"
                 "  File \"" PY "/v1/engine/core.py\", line 937, in run_engine_core\n"
                 "    engine_core.run_busy_loop()\n"
                 "  File \"" PY "/v1/engine/core.py\", line 964, in run_busy_loop\n"
                 "    self._process_engine_step()\n"
                 "  File \"" PY "/v1/engine/core.py\", line 993, in _process_engine_step\n"
                 "    outputs, model_executed = self.step_fn()\n"
                 "  File \"" PY "/v1/engine/core.py\", line 388, in step\n"
                 "    model_output = self.model_executor.execute_model(scheduler_output)\n"
                 "  File \"" PY "/v1/worker/gpu_worker.py\", line 612, in execute_model\n"
                 "    output = self.model_runner.execute_model(scheduler_output, intermediate_tensors)\n");
    re_server_site_frames(&t, site);
    buf_printf(&t, "torch.AcceleratorError: CUDA error: %s\n", text);
    if (en)
        buf_printf(&t,
                   "Search for `%s' in "
                   "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for "
                   "more information.\n",
                   en);
    buf_adds(&t, "CUDA kernel errors might be asynchronously reported at some other API call, so "
                 "the stacktrace below might be incorrect.\n"
                 "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
                 "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.");
    re_log(lg, RE_PROC_ENGINE, RE_ERROR, "core.py", 946, "%s", t.data);
    buf_release(&t);
    re_log(lg, RE_PROC_API, RE_ERROR, "async_llm.py", 708,
           "AsyncLLM output_handler failed.\nTraceback (most recent call last):\n"
           "  File \"" PY "/v1/engine/async_llm.py\", line 664, in output_handler\n"
           "    outputs = await engine_core.get_output_async()\n"
           "  File \"" PY "/v1/engine/core_client.py\", line 914, in get_output_async\n"
           "    raise self._format_exception(outputs) from None\n"
           "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
           "trace (above) for the root cause.");
    re_srv_fail_in_flight(lg);
    re_srv_stop_child();
    re_srv_start_shutdown_timer(1.0); /* vLLM's watchdog then stops the server */
}
