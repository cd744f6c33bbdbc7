/* srv_startup.c - refengine's start-up and shutdown timeline (srv_int.h):
 * after the selection lines (main.c), weights loaded, KV cache and ready
 * (or a start-up crash during the profile run), each with vLLM's log lines
 * at the times the world implies; the shutdown lines of each era. Driven by
 * the misc timer. */
#include "srv_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

void re_srv_arm_misc(double seconds)
{
    struct itimerspec its;
    memset(&its, 0, sizeof(its));
    long long ns = (long long)(seconds * 1e9);
    if (ns < 1)
        ns = 1;
    its.it_value.tv_sec = ns / 1000000000;
    its.it_value.tv_nsec = ns % 1000000000;
    timerfd_settime(srv.mfd, 0, &its, NULL);
}

void re_srv_start_shutdown_timer(double seconds)
{
    srv.misc = MISC_SHUTDOWN;
    re_srv_arm_misc(seconds);
}

/* The start-up timeline a world implies (seconds from start): the selection
 * lines at select_seconds (model construction), weights loaded at
 * weights_done, ready at load_seconds; a startup-crash during the profile
 * run, a quarter into the init-engine phase. */
double re_srv_weights_done(const struct world *w)
{
    return w->select_seconds + 0.45 * (w->load_seconds - w->select_seconds);
}

static bool has_drafter(void)
{
    return srv.cfg->drafter && srv.cfg->drafter->on;
}

/* A drafter (an MTP head: one layer of the model) is built and loaded in a
 * small fraction of the main weights' time: its MoE line about 1 % of it
 * after "Loading drafter model..." (a real v0.23 log: 1 s after 128 s of
 * weights), its weights 2 % more. */
void re_srv_drafter_times(const struct world *w, double *to_line, double *to_loaded)
{
    double weights = re_srv_weights_done(w) - w->select_seconds;
    *to_line = has_drafter() ? 0.01 * weights : 0;
    *to_loaded = has_drafter() ? 0.02 * weights : 0;
}

static void print_model_loaded(void)
{
    const struct world *w = srv.cfg->w;
    double d1, d2;
    re_srv_drafter_times(w, &d1, &d2);
    re_log(srv.cfg->log, RE_PROC_ENGINE, RE_INFO, "gpu_model_runner.py", 3659,
           "Model loading took 61.3264 GiB memory and %.6f seconds", re_srv_weights_done(w) + d1 + d2);
}

/* The main model's weights are in; "Model loading took" comes after the
 * drafter, when there is one (gpu_model_runner.py load_model). */
static void print_weights_loaded(void)
{
    const struct world *w = srv.cfg->w;
    double tw = re_srv_weights_done(w);
    re_log(srv.cfg->log, RE_PROC_ENGINE, RE_INFO, "default_loader.py", 291,
           "Loading weights took %.2f seconds", tw - w->select_seconds);
    re_log_lines(srv.cfg->log, &srv.cfg->res->load_lines); /* the target's prepare/finalize */
    if (has_drafter())
        re_log(srv.cfg->log, RE_PROC_ENGINE, RE_INFO, "gpu_model_runner.py", 5184,
               "Loading drafter model...");
    else
        print_model_loaded();
}

/* The drafter's MoE layer is built: its oracle's line, or the ValueError
 * of a --moe-backend value the unquantized oracle does not take (the
 * engine fails to start). Returns false when it failed. */
static bool print_drafter_built(void)
{
    const struct re_drafter *d = srv.cfg->drafter;
    if (d->error[0]) {
        re_log(srv.cfg->log, RE_PROC_ENGINE, RE_ERROR, "core.py", 1100,
               "EngineCore failed to start.\nTraceback (most recent call last):\n"
               "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 5185, in load_model\n"
               "    self.drafter.load_model(self.model)\n"
               "  File \"" PY "/model_executor/layers/fused_moe/oracle/unquantized.py\", line 160, in "
               "select_unquantized_moe_backend\n"
               "    raise ValueError(\n"
               "%s",
               d->error);
        re_srv_print_startup_failed();
        srv.exit_code = 1;
        srv.stopping = true;
        return false;
    }
    char text[300];
    const char *file = NULL;
    int lineno = 0;
    if (re_drafter_line(srv.cfg->w, d, text, sizeof(text), &file, &lineno))
        re_log(srv.cfg->log, RE_PROC_ENGINE, RE_INFO, file, lineno, "%s", text);
    return true;
}

static void print_ready(void)
{
    const struct re_server_cfg *cfg = srv.cfg;
    struct re_log *lg = cfg->log;
    const struct world *w = cfg->w;
    double ld = w->load_seconds, d1, d2;
    re_srv_drafter_times(w, &d1, &d2);
    /* the KV cache the world gives (843,392 tokens in 38.61 GiB by default) */
    unsigned long kvt = srv.blocks_total * KV_BLOCK;
    char kvs[32];
    snprintf(kvs, sizeof(kvs), "%lu", kvt);
    char grouped[48];
    size_t gl = 0, kl = strlen(kvs);
    for (size_t i = 0; i < kl && gl + 2 < sizeof(grouped); i++) {
        if (i && (kl - i) % 3 == 0)
            grouped[gl++] = ',';
        grouped[gl++] = kvs[i];
    }
    grouped[gl] = '\0';
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "gpu_worker.py", 375, "Available KV cache memory: %.2f GiB",
           38.61 * (double)kvt / 843392.0);
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "kv_cache_utils.py", 1291, "GPU KV cache size: %s tokens",
           grouped);
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "kv_cache_utils.py", 1296,
           "Maximum concurrency for %ld tokens per request: %.2fx", cfg->max_model_len,
           (double)kvt / (double)cfg->max_model_len);
    re_log_lines(lg, &cfg->res->tune_lines); /* the FlashInfer autotuner in the warm-up */
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "core.py", 259,
           "init engine (profile, create kv cache, warmup model) took %.2f seconds",
           ld - re_srv_weights_done(w) - d1 - d2);
    re_log(lg, RE_PROC_API, RE_INFO, "api_server.py", 1102, "Supported tasks: ['generate']");
    char addr[300];
    snprintf(addr, sizeof(addr), "http://%s:%d", cfg->host, cfg->port);
    if (re_ver_ge(w, 0, 18, 0))
        re_log(lg, RE_PROC_API, RE_INFO, "api_server.py", 2086, "Starting vLLM server on %s", addr);
    else
        re_log(lg, RE_PROC_API, RE_INFO, "api_server.py", 1428, "Starting vLLM API server 0 on %s",
               addr);
    static const char *const routes[][2] = {
        {"/openapi.json", "GET, HEAD"}, {"/docs", "GET, HEAD"}, {"/health", "GET"},
        {"/ping", "GET, POST"},         {"/version", "GET"},    {"/v1/models", "GET"},
        {"/v1/chat/completions", "POST"}, {"/v1/completions", "POST"}, {"/metrics", "GET"},
    };
    re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 46, "Available routes are:");
    for (size_t i = 0; i < MP_ARRAY_SIZE(routes); i++)
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 54, "Route: %s, Methods: %s", routes[i][0],
               routes[i][1]);
    re_log_uvicorn(lg, false, "INFO", "Started server process [%d]", (int)getpid());
    re_log_uvicorn(lg, false, "INFO", "Waiting for application startup.");
    re_log_uvicorn(lg, false, "INFO", "Application startup complete.");
}

/* The MTP drafter's own MoE fails in the profile run (the world's
 * drafter_startup_error, e.g. FlashInfer CUTLASS without the activation on
 * SM121: "RuntimeError: Invalid activation type.", vllm PR #39825); the
 * frames below the dummy run are not imitated. */
static bool drafter_fails(void)
{
    return has_drafter() && srv.cfg->w->drafter_startup_error[0];
}

static void drafter_crash(void)
{
    re_log(srv.cfg->log, RE_PROC_ENGINE, RE_ERROR, "core.py", 1100,
           "EngineCore failed to start.\nTraceback (most recent call last):\n"
           "  File \"" PY "/v1/engine/core.py\", line 1090, in run_engine_core\n"
           "    engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)\n"
           "  File \"" PY "/v1/engine/core.py\", line 124, in __init__\n"
           "    num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(\n"
           "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 4188, in profile_run\n"
           "    hidden_states, last_hidden_states = self._dummy_run(\n"
           "%s",
           srv.cfg->w->drafter_startup_error);
}

static void startup_crash(void)
{
    struct re_log *lg = srv.cfg->log;
    const char *e = srv.be->startup_error[0] ? srv.be->startup_error
                                           : "RuntimeError: Error: Failed to initialize the TMA descriptor 1";
    /* "Foo.BarError: msg" already names its class; otherwise RuntimeError */
    const char *colon = strstr(e, ": ");
    bool named = false;
    if (colon) {
        const char *k = colon;
        while (k > e && (k[-1] == '.' || k[-1] == '_' || (k[-1] >= 'A' && k[-1] <= 'Z') ||
                         (k[-1] >= 'a' && k[-1] <= 'z') || (k[-1] >= '0' && k[-1] <= '9')))
            k--;
        named = k == e && colon - e > 5 &&
                (!strncmp(colon - 5, "Error", 5) || !strncmp(colon - 5, "ption", 5));
    }
    re_log(lg, RE_PROC_ENGINE, RE_ERROR, "core.py", 1100,
           "EngineCore failed to start.\nTraceback (most recent call last):\n"
           "  File \"" PY "/v1/engine/core.py\", line 1090, in run_engine_core\n"
           "    engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)\n"
           "  File \"" PY "/v1/engine/core.py\", line 124, in __init__\n"
           "    num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(\n"
           "  File \"" PY "/v1/engine/core.py\", line 243, in _initialize_kv_caches\n"
           "    available_gpu_memory = self.model_executor.determine_available_memory()\n"
           "  File \"" PY "/v1/worker/gpu_model_runner.py\", line 4188, in profile_run\n"
           "    hidden_states, last_hidden_states = self._dummy_run(\n"
           "  File \"/usr/local/lib/python3.12/dist-packages/flashinfer/autotuner.py\", line 598, in __call__\n"
           "    return self._run_tactic(inputs, tactic)\n"
           "%s%s",
           named ? "" : "RuntimeError: ", e);
}

void re_srv_print_startup_failed(void)
{
    const char *tag = re_proc_tag(srv.cfg->w, RE_PROC_ENGINE);
    re_log_raw(srv.cfg->log, RE_PROC_API,
               "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
               "proc(s): {'%s': 1}",
               tag ? tag : "EngineCore_DP0");
}

void re_srv_shutdown_lines(bool after_signal)
{
    struct re_log *lg = srv.cfg->log;
    const struct world *w = srv.cfg->w;
    if (after_signal && re_ver_ge(w, 0, 22, 0)) {
        re_log(lg, RE_PROC_ENGINE, RE_INFO, "core.py", 1150,
               "[shutdown] EngineCore: trigger received signal=SIGTERM");
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 100, "[shutdown] API server: shutdown triggered");
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 116,
               "[shutdown] API server: stopping engine client mode=abort timeout=0s");
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 125, "[shutdown] API server: engine client stopped");
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 149,
               "[shutdown] API server: shutting down FastAPI HTTP server");
    } else if (after_signal) {
        re_log(lg, RE_PROC_API, RE_INFO, "launcher.py", 110, "Shutting down FastAPI HTTP server.");
    }
    re_log_uvicorn(lg, false, "INFO", "Shutting down");
    re_log_uvicorn(lg, false, "INFO", "Waiting for application shutdown.");
    re_log_uvicorn(lg, false, "INFO", "Application shutdown complete.");
    if (re_ver_ge(w, 0, 22, 0))
        re_log_uvicorn(lg, false, "INFO", "Finished server process [%d]", (int)getpid());
}

void re_srv_on_misc(void)
{
    uint64_t exp;
    if (read(srv.mfd, &exp, sizeof(exp)) < 0)
        return;
    const struct world *w = srv.cfg->w;
    double d1, d2;
    re_srv_drafter_times(w, &d1, &d2);
    if (srv.misc == MISC_WEIGHTS) {
        print_weights_loaded();
        srv.misc = has_drafter() ? MISC_DRAFTER : MISC_LOADING;
        double rest = w->load_seconds - re_srv_weights_done(w) - d1 - d2;
        re_srv_arm_misc(has_drafter() ? d1 : srv.be->failure == WF_STARTUP_CRASH ? rest * 0.25 : rest);
    } else if (srv.misc == MISC_DRAFTER) {
        if (!print_drafter_built())
            return;
        srv.misc = MISC_DRAFTED;
        re_srv_arm_misc(d2);
    } else if (srv.misc == MISC_DRAFTED) {
        print_model_loaded();
        srv.misc = MISC_LOADING;
        double rest = w->load_seconds - re_srv_weights_done(w) - d1 - d2;
        re_srv_arm_misc(srv.be->failure == WF_STARTUP_CRASH || drafter_fails() ? rest * 0.25 : rest);
    } else if (srv.misc == MISC_LOADING) {
        if (srv.be->failure == WF_STARTUP_CRASH || drafter_fails()) {
            if (drafter_fails())
                drafter_crash();
            else
                startup_crash();
            re_srv_print_startup_failed();
            srv.exit_code = 1;
            srv.stopping = true;
            return;
        }
        print_ready();
        if (listen(srv.cfg->listen_fd, 4096) != 0) {
            re_log_raw(srv.cfg->log, RE_PROC_API, "OSError: [Errno %d] %s", errno, strerror(errno));
            srv.exit_code = 1;
            srv.stopping = true;
            return;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &srv.tag_listen};
        epoll_ctl(srv.ep, EPOLL_CTL_ADD, srv.cfg->listen_fd, &ev);
        srv.ready = true;
        srv.misc = MISC_READY;
    } else if (srv.misc == MISC_SHUTDOWN) {
        re_srv_shutdown_lines(false);
        srv.exit_code = 0;
        srv.stopping = true;
    }
}
