/* main.c - refengine: a stand-in for `vllm serve` driven by a world file.
 *
 *   refengine [serve] [MODEL] --world FILE [--port N] [--host H] [--seed N]
 *             [--moe-backend X] [--any-other-flag [VALUE]] ...
 *
 * This file parses the command line, prints the API server's start-up
 * lines, binds the port, forks the EngineCore child, prints the engine's
 * model-loading lines (from resolve.c) and hands over to server.c. */
#include "compat.h"

#include "buf.h"
#include "err.h"
#include "logfmt.h"
#include "logprobs.h"
#include "resolve.h"
#include "drafter.h"
#include "server.h"
#include "world.h"
#include "xalloc.h"
#include "cuda/moe_cuda.h"
#include "cuda_lm.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PY "/usr/local/lib/python3.12/dist-packages/vllm"

static const char usage_text[] =
    "usage: refengine [serve] [MODEL] --world FILE [--port N] [--host H] [--seed N]\n"
    "                 [--moe-backend X] [--served-model-name NAME] [--any-flag [VALUE]] ...\n"
    "\n"
    "A reference engine that behaves like `vllm serve` seen from outside: vLLM's log\n"
    "lines of the world's era, an OpenAI-compatible HTTP API (/health, /v1/models,\n"
    "/version, /v1/completions, /v1/chat/completions with SSE, /metrics), an\n"
    "EngineCore child process, and the failure modes the world file describes.\n"
    "\n"
    "Flags:\n"
    "  --world FILE        world file (required; see docs/refengine.md)\n"
    "  --port N            port (default 8000; 0 = any free port, printed in the\n"
    "                      'Starting vLLM ... server ... on http://HOST:PORT' line)\n"
    "  --host H            address to bind (default 127.0.0.1)\n"
    "  --seed N            overrides the world's seed (text, race draws)\n"
    "  --moe-backend X     vLLM >= 0.17 only, like vLLM (an argparse error before)\n"
    "  --linear-backend X, --attention-backend X, --kernel-config JSON: as in vLLM\n"
    "  --served-model-name NAME, --max-model-len N: as in vLLM\n"
    "  --max-logprobs N    more logprobs or prompt_logprobs are refused, as vLLM does (20)\n"
    "  --disable-log-stats  no vllm:* series on /metrics (vLLM builds no stat logger)\n"
    "  --speculative-config JSON  a speculative drafter ({\"method\": \"mtp\"}): its MoE selection\n"
    "                      after the weights, before 'Model loading took'\n"
    "  other --flag [VALUE]: accepted and echoed in 'non-default args'\n"
    "Environment: CUDA_LAUNCH_BLOCKING=1 (no async races; throughput x blocking_slowdown),\n"
    "VLLM_* with the era's semantics, VLLM_LOGGING_LEVEL=DEBUG.\n"
    "\n"
    "World file (INI):\n"
    "  [engine]            version, device (sm90|sm100|sm120|sm121), model, quantization,\n"
    "                      load_seconds, select_seconds, seed, child_ignores_sigterm, child_escapes_group,\n"
    "                      kv_cache_tokens, max_num_seqs (the scheduler: waiting, preemption)\n"
    "  [backend NAME]      supported, tokens_per_second, contention, failure\n"
    "                      (none|async-race|kernel-fault|startup-crash|hang|garbage),\n"
    "                      crash_after_requests, race_probability, fault_after_requests,\n"
    "                      hang_after_requests, sites, error, startup_error, blocking_slowdown,\n"
    "                      logit_noise, logit_error, accuracy (correctness: docs/refengine.md)\n"
    "  [knob NAME]         value = BACKEND   (a fork's environment knob)\n";

struct arg {
    char key[128];  /* python name: --max-model-len -> max_model_len */
    char *value;    /* NULL for a boolean flag */
};

struct cli {
    const char *world_path;
    const char *model_tag;
    const char *host;
    int port;
    bool have_seed;
    uint64_t seed;
    const char *moe_backend;
    bool moe_from_flag;
    char *kc_moe_backend;   /* from --kernel-config (owned) */
    bool autotune_off;      /* --kernel-config '{"enable_flashinfer_autotune": false}' */
    const char *linear_backend;
    const char *attention_backend;
    const char *served_model_name;
    long max_model_len;
    long max_logprobs;
    bool disable_log_stats;
    struct re_drafter drafter; /* --speculative-config */
    struct arg *args;
    size_t nargs;
};

static void cli_free(struct cli *c)
{
    free(c->args);
    free(c->kc_moe_backend);
}

static void kernel_config(struct cli *c, const char *val)
{
    cJSON *j = cJSON_Parse(val);
    const cJSON *mb = j ? cJSON_GetObjectItemCaseSensitive(j, "moe_backend") : NULL;
    if (cJSON_IsString(mb)) {
        free(c->kc_moe_backend);
        c->kc_moe_backend = xstrdup(mb->valuestring);
    }
    const cJSON *at = j ? cJSON_GetObjectItemCaseSensitive(j, "enable_flashinfer_autotune") : NULL;
    if (cJSON_IsBool(at))
        c->autotune_off = cJSON_IsFalse(at);
    cJSON_Delete(j);
}

static bool is_int(const char *s)
{
    if (*s == '-')
        s++;
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

static bool is_float(const char *s)
{
    char *e;
    if (!*s)
        return false;
    strtod(s, &e);
    return *e == 0 && strchr(s, '.');
}

static int parse_cli(int argc, char **argv, struct cli *c)
{
    memset(c, 0, sizeof(*c));
    c->port = 8000;
    c->host = "127.0.0.1";
    c->max_model_len = 131072;
    c->max_logprobs = RE_DEFAULT_MAX_LOGPROBS;
    c->args = xcalloc((size_t)argc + 1, sizeof(*c->args));
    int i = 1;
    if (i < argc && !strcmp(argv[i], "serve"))
        i++;
    for (; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            exit(0);
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == 0) {
            if (c->model_tag)
                return mp_error("unexpected argument '%s' (see --help)", a);
            c->model_tag = a;
            continue;
        }
        char *name = a + 2;
        char *val = NULL;
        char *eq = strchr(name, '=');
        char key[128];
        size_t kn = eq ? (size_t)(eq - name) : strlen(name);
        if (kn == 0 || kn >= sizeof(key))
            return mp_error("bad flag '%s'", a);
        for (size_t k = 0; k < kn; k++)
            key[k] = name[k] == '-' ? '_' : name[k];
        key[kn] = 0;
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
            val = argv[++i];
        if (!strcmp(key, "world")) {
            if (!val)
                return mp_error("--world needs a file");
            c->world_path = val;
            continue; /* refengine's own flag: not echoed */
        }
        if (!strcmp(key, "port")) {
            char *e;
            long p = val ? strtol(val, &e, 10) : -1;
            if (!val || *e || p < 0 || p > 65535)
                return mp_error("--port needs a number in 0..65535");
            c->port = (int)p;
        } else if (!strcmp(key, "host")) {
            if (!val)
                return mp_error("--host needs an address");
            c->host = val;
        } else if (!strcmp(key, "seed")) {
            char *e;
            errno = 0;
            unsigned long long s = val ? strtoull(val, &e, 10) : 0;
            if (!val || *e || errno || *val == '-')
                return mp_error("--seed needs a non-negative integer");
            c->seed = s;
            c->have_seed = true;
        } else if (!strcmp(key, "moe_backend")) {
            if (!val)
                return mp_error("--moe-backend needs a value");
            c->moe_backend = val;
            c->moe_from_flag = true;
        } else if (!strcmp(key, "linear_backend")) {
            c->linear_backend = val;
        } else if (!strcmp(key, "attention_backend")) {
            c->attention_backend = val;
        } else if (!strcmp(key, "served_model_name")) {
            c->served_model_name = val;
        } else if (!strcmp(key, "max_model_len")) {
            char *e;
            long m = val ? strtol(val, &e, 10) : 0;
            if (!val || *e || m < 16)
                return mp_error("--max-model-len needs a number >= 16");
            c->max_model_len = m;
        } else if (!strcmp(key, "max_logprobs")) {
            char *e;
            long m = val ? strtol(val, &e, 10) : -2;
            if (!val || *e || m < -1)
                return mp_error("--max-logprobs needs a number >= -1");
            c->max_logprobs = m < 0 ? 1000000 : m; /* -1: the whole vocabulary */
        } else if (!strcmp(key, "disable_log_stats")) {
            c->disable_log_stats = true;
        } else if (!strcmp(key, "speculative_config")) {
            char e[160];
            if (re_drafter_parse(val, &c->drafter, e, sizeof(e)) < 0)
                return mp_error("%s", e);
        } else if (!strcmp(key, "kernel_config") && val) {
            kernel_config(c, val);
        }
        struct arg *g = &c->args[c->nargs++];
        snprintf(g->key, sizeof(g->key), "%s", key);
        g->value = val;
    }
    if (!c->world_path)
        return mp_error("--world FILE is required (see --help)");
    if (!c->moe_backend && c->kc_moe_backend)
        c->moe_backend = c->kc_moe_backend;
    return 0;
}

/* repr() of a flat JSON object as Python prints the dict json.loads gives;
 * false (nothing written) when v is not one. */
static bool py_dict(struct buf *b, const char *v)
{
    cJSON *j = cJSON_Parse(v);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return false;
    }
    buf_adds(b, "{");
    const cJSON *it;
    bool first = true;
    cJSON_ArrayForEach(it, j)
    {
        buf_printf(b, "%s'%s': ", first ? "" : ", ", it->string);
        first = false;
        if (cJSON_IsString(it))
            buf_printf(b, "'%s'", it->valuestring);
        else if (cJSON_IsBool(it))
            buf_adds(b, cJSON_IsTrue(it) ? "True" : "False");
        else if (cJSON_IsNumber(it) && it->valuedouble == (double)(long long)it->valuedouble)
            buf_printf(b, "%lld", (long long)it->valuedouble);
        else if (cJSON_IsNumber(it))
            buf_printf(b, "%g", it->valuedouble);
        else
            buf_adds(b, "None");
    }
    buf_adds(b, "}");
    cJSON_Delete(j);
    return true;
}

/* Python repr of a value as vLLM's argparse would have typed it */
static void py_value(struct buf *b, const char *key, const char *v)
{
    if (!v) {
        buf_adds(b, "True");
    } else if (!strcmp(key, "served_model_name")) {
        buf_printf(b, "['%s']", v);
    } else if (is_int(v) || is_float(v)) {
        buf_adds(b, v);
    } else if ((!strcmp(key, "speculative_config") || !strcmp(key, "kernel_config")) &&
               py_dict(b, v)) {
        /* argparse's json.loads: a dict */
    } else if (!strcmp(key, "moe_backend") || !strcmp(key, "linear_backend")) {
        buf_adds(b, "'");
        for (const char *p = v; *p; p++)
            buf_addc(b, *p == '-' ? '_' : (char)tolower((unsigned char)*p));
        buf_adds(b, "'");
    } else {
        buf_printf(b, "'%s'", v);
    }
}

static bool frontend_key(const char *k)
{
    static const char *const fk[] = {"host", "port", "api_key", "tool_call_parser",
                                     "enable_auto_tool_choice", "uvicorn_log_level",
                                     "disable_uvicorn_access_log", "allowed_origins",
                                     "chat_template", "response_role", "root_path",
                                     "enable_log_requests", "disable_log_requests"};
    for (size_t i = 0; i < MP_ARRAY_SIZE(fk); i++)
        if (!strcmp(k, fk[i]))
            return true;
    return false;
}

static void non_default_args(const struct cli *c, const char *model, struct buf *b)
{
    bool first = true;
    buf_adds(b, "{");
#define SEP() (first ? (first = false, "") : ", ")
    if (c->model_tag)
        buf_printf(b, "%s'model_tag': '%s'", SEP(), c->model_tag);
    for (size_t i = 0; i < c->nargs; i++)
        if (frontend_key(c->args[i].key)) {
            buf_printf(b, "%s'%s': ", SEP(), c->args[i].key);
            py_value(b, c->args[i].key, c->args[i].value);
        }
    if (c->model_tag)
        buf_printf(b, "%s'model': '%s'", SEP(), model);
    for (size_t i = 0; i < c->nargs; i++)
        if (!frontend_key(c->args[i].key) && strcmp(c->args[i].key, "model") != 0) {
            buf_printf(b, "%s'%s': ", SEP(), c->args[i].key);
            py_value(b, c->args[i].key, c->args[i].value);
        }
#undef SEP
    buf_adds(b, "}");
}

static const char *architecture(const char *model)
{
    if (strcasestr(model, "nemotron"))
        return "NemotronHForCausalLM";
    if (strcasestr(model, "mistral"))
        return "Mistral3ForConditionalGeneration";
    if (strcasestr(model, "qwen"))
        return "Qwen3MoeForCausalLM";
    if (strcasestr(model, "glm"))
        return "Glm4MoeForCausalLM";
    if (strcasestr(model, "gemma"))
        return "Gemma4ForConditionalGeneration";
    if (strcasestr(model, "minimax"))
        return "MiniMaxM2ForCausalLM";
    return "MixtralForCausalLM";
}

static void print_api_start(const struct re_log *lg, const struct world *w, const struct cli *c,
                            const char *model)
{
    if (re_ver_ge(w, 0, 16, 0)) {
        /* the ASCII banner of v0.16+ (bytes as in real logs) */
        re_log(lg, RE_PROC_API, RE_INFO, "utils.py", 299,
               "       \xe2\x96\x88     \xe2\x96\x88     \xe2\x96\x88\xe2\x96\x84   \xe2\x96\x84\xe2\x96\x88");
        re_log(lg, RE_PROC_API, RE_INFO, "utils.py", 299,
               " \xe2\x96\x84\xe2\x96\x84 \xe2\x96\x84\xe2\x96\x88 \xe2\x96\x88     \xe2\x96\x88     "
               "\xe2\x96\x88 \xe2\x96\x80\xe2\x96\x84\xe2\x96\x80 \xe2\x96\x88  version %s",
               w->version);
        re_log(lg, RE_PROC_API, RE_INFO, "utils.py", 299,
               "  \xe2\x96\x88\xe2\x96\x84\xe2\x96\x88\xe2\x96\x80 \xe2\x96\x88     \xe2\x96\x88     "
               "\xe2\x96\x88     \xe2\x96\x88  model   %s",
               model);
        re_log(lg, RE_PROC_API, RE_INFO, "utils.py", 299,
               "   \xe2\x96\x80\xe2\x96\x80  \xe2\x96\x80\xe2\x96\x80\xe2\x96\x80\xe2\x96\x80\xe2\x96\x80 "
               "\xe2\x96\x80\xe2\x96\x80\xe2\x96\x80\xe2\x96\x80\xe2\x96\x80 \xe2\x96\x80     \xe2\x96\x80");
    } else {
        re_log(lg, RE_PROC_API, RE_INFO, "api_server.py", 1869, "vLLM API server version %s",
               w->version);
    }
    struct buf b = BUF_INIT;
    non_default_args(c, model, &b);
    re_log(lg, RE_PROC_API, RE_INFO, "utils.py", re_ver_ge(w, 0, 16, 0) ? 233 : 253,
           "non-default args: %s", b.data);
    buf_release(&b);
}

static void print_model_lines(const struct re_log *lg, const struct world *w, const struct cli *c,
                              const char *model)
{
    re_log(lg, RE_PROC_API, RE_INFO, "model.py", 549, "Resolved architecture: %s",
           architecture(model));
    re_log(lg, RE_PROC_API, RE_INFO, "model.py", 1678, "Using max model len %ld", c->max_model_len);
    if (!strncmp(w->quantization, "modelopt", 8))
        re_log(lg, RE_PROC_API, RE_WARNING, "modelopt.py", 998,
               "Detected ModelOpt NVFP4 checkpoint. Please note that the format is experimental "
               "and could change in future.");
}

static void print_engine_init(const struct re_log *lg, const struct world *w, const struct cli *c,
                              const char *model, const char *served, uint64_t seed)
{
    struct buf b = BUF_INIT;
    buf_printf(&b, "Initializing a V1 LLM engine (v%s) with config: model='%s', speculative_config=",
               w->version, model);
    re_drafter_config_repr(&c->drafter, model, &b);
    buf_printf(&b,
               ", tokenizer='%s', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
               "tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, "
               "max_seq_len=%ld, download_dir=None, load_format=auto, tensor_parallel_size=1, "
               "pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, "
               "quantization=%s, enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, "
               "seed=%llu, served_model_name=%s, enable_prefix_caching=True, "
               "enable_chunked_prefill=True",
               model, c->max_model_len, w->quantization,
               (unsigned long long)seed, served);
    if (re_ver_ge(w, 0, 17, 0)) {
        char mb[64] = "auto";
        if (c->moe_backend) {
            size_t i = 0;
            for (; c->moe_backend[i] && i + 1 < sizeof(mb); i++)
                mb[i] = c->moe_backend[i] == '-' ? '_'
                                                 : (char)tolower((unsigned char)c->moe_backend[i]);
            mb[i] = 0;
        }
        buf_printf(&b, ", kernel_config=KernelConfig(%senable_flashinfer_autotune=%s, moe_backend='%s'%s)",
                   re_ver_ge(w, 0, 19, 1) ? "ir_op_priority=IrOpPriorityConfig(rms_norm=['native']), " : "",
                   c->autotune_off ? "False" : "True", mb,
                   re_ver_ge(w, 0, 22, 0) ? ", linear_backend='auto'" : ""); /* PR #39538: v0.22.0 */
    }
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "core.py",
           !re_ver_ge(w, 0, 15, 0) ? 93 : (!re_ver_ge(w, 0, 19, 1) ? 105 : 107), "%s", b.data);
    buf_release(&b);
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "parallel_state.py", 1400,
           "world_size=1 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:47805 "
           "backend=nccl");
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "gpu_model_runner.py", 4735, "Starting to load model %s...",
           model);
}

static void sleep_seconds(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* vLLM's traceback for an exception escaping `vllm serve` (stderr) */
static void print_cli_traceback(const struct re_log *lg, const char *tail_frames, const char *exc)
{
    re_log_raw(lg, RE_PROC_API, "Traceback (most recent call last):");
    re_log_raw(lg, RE_PROC_API, "  File \"/usr/local/bin/vllm\", line 10, in <module>");
    re_log_raw(lg, RE_PROC_API, "    sys.exit(main())");
    re_log_raw(lg, RE_PROC_API, "  File \"" PY "/entrypoints/cli/main.py\", line 73, in main");
    re_log_raw(lg, RE_PROC_API, "    args.dispatch_function(args)");
    re_log_raw(lg, RE_PROC_API, "  File \"" PY "/entrypoints/cli/serve.py\", line 111, in cmd");
    re_log_raw(lg, RE_PROC_API, "    uvloop.run(run_server(args))");
    const char *p = tail_frames;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        re_log_raw(lg, RE_PROC_API, "%.*s", (int)n, p);
        p = nl ? nl + 1 : NULL;
    }
    re_log_raw(lg, RE_PROC_API, "%s", exc);
}

static int bind_port(const char *host, int port, int *out_fd, int *out_port, int *err)
{
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc != 0) {
        *err = EADDRNOTAVAIL;
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err = errno;
        freeaddrinfo(ai);
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        *err = errno;
        close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *out_port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                         : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    *out_fd = fd;
    return 0;
}

/* The EngineCore child: it holds no sockets and waits for its parent. A
 * hostile one (ignores SIGTERM / leaves the process group) lingers after
 * the parent is gone, until killed (at most 10 minutes, a safety net). */
MP_NORETURN static void child_main(int rd, int listen_fd, const struct world *w)
{
    close(listen_fd);
    prctl(PR_SET_NAME, "VLLM::EngineCor", 0, 0, 0);
    if (w->child_escapes_group)
        setsid();
    signal(SIGTERM, w->child_ignores_sigterm ? SIG_IGN : SIG_DFL);
    signal(SIGINT, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct pollfd p = {.fd = rd, .events = POLLIN};
    for (;;) {
        int r = poll(&p, 1, -1);
        if (r < 0 && errno == EINTR)
            continue;
        char ch;
        ssize_t n = read(rd, &ch, 1);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            break;
    }
    bool hostile = w->child_ignores_sigterm || w->child_escapes_group;
    if (hostile) {
        const int64_t limit_ms = 600000;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            int64_t left = limit_ms - ((t1.tv_sec - t0.tv_sec) * 1000 +
                                       (t1.tv_nsec - t0.tv_nsec) / 1000000);
            if (left <= 0)
                break;
            poll(NULL, 0, (int)left); /* waits for a signal or the deadline */
        }
    }
    _exit(0);
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* The engine's traceback and the API server's for a resolution that
 * fails at start-up (res->status RE_ERR_STARTUP). */
static void print_startup_failure(struct re_log *lg, const struct world *w,
                                  const struct re_resolution *res)
{
    /* the frames where vLLM raised: the NvFp4 oracle's unless the
     * resolution names others (an environment value, a dense kernel) */
    char oracle[1400];
    snprintf(oracle, sizeof(oracle),
             RE_TB_LOAD
             "  File \"" PY "/model_executor/layers/quantization/modelopt.py\", line 1402, in __init__\n"
             "    self.nvfp4_backend = select_nvfp4_moe_backend(self.moe_config)\n"
             "  File \"" PY "/model_executor/layers/fused_moe/oracle/nvfp4.py\", line 230, in select_nvfp4_moe_backend\n"
             "    raise %s(\n",
             !strncmp(res->error, "NotImplementedError", 19) ? "NotImplementedError" : "ValueError");
    re_log(lg, RE_PROC_ENGINE, RE_ERROR, "core.py", 1100,
           "EngineCore failed to start.\nTraceback (most recent call last):\n%s%s",
           res->frames ? res->frames : oracle, res->error);
    const char *tag = re_proc_tag(w, RE_PROC_ENGINE);
    char exc[200];
    snprintf(exc, sizeof(exc),
             "RuntimeError: Engine core initialization failed. See root cause above. Failed "
             "core proc(s): {'%s': 1}",
             tag ? tag : "EngineCore_DP0");
    print_cli_traceback(lg,
                        "  File \"" PY "/v1/engine/utils.py\", line 1066, in wait_for_engine_startup\n"
                        "    raise RuntimeError(",
                        exc);
}

/* Stop the EngineCore child unless the world makes it hostile (the
 * harness then has to), after closing the pipe and the listening socket. */
static void stop_child(pid_t child, int pipe_fd, int lfd, bool hostile)
{
    close(pipe_fd);
    close(lfd);
    if (!hostile) {
        kill(child, SIGTERM);
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
            ;
    }
}

/* CUDA mode (after the fork: the EngineCore child never touches CUDA):
 * the device, the path the resolved backend takes; on failure the
 * engine's start-up traceback and -1. */
static int cuda_start(struct re_log *lg, const struct world *w, const struct re_resolution *res,
                      uint64_t seed, struct moe_cuda **gpu, enum moe_cuda_path *gpu_path)
{
    /* after the fork: the EngineCore child never touches CUDA */
    static const char *const path_names[] = {
        "marlin (route, dequantise to FP16, FP16 GEMM; one stream)",
        "two-stream (routing and experts on two streams, ordered by an event)",
        "racy two-stream (routing and experts on two streams, no event)",
        "faulty (two-stream with an unchecked block-scale index)",
        "bf16 (two-stream, BF16 activations and outputs, FP32 products and sums)",
        "wrong-scale (two-stream whose expert kernels read each block scale one block off)"};
    _Static_assert(MP_ARRAY_SIZE(path_names) == MOE_CUDA_PATH_COUNT, "a name per CUDA path");
    *gpu_path = re_server_cuda_path(res->backend, &w->backends[res->backend]);
    struct moe_cuda_cfg mc = {
        .hidden = (int)w->cuda_hidden, .inter = (int)w->cuda_intermediate,
        .experts = (int)w->cuda_experts, .top_k = (int)w->cuda_top_k,
        .layers = (int)w->cuda_layers, .seed = seed,
    };
    char desc[256];
    struct moe_cuda_err ce;
    if (moe_cuda_init(&mc, gpu, desc, sizeof(desc), &ce) != 0) {
        re_log(lg, RE_PROC_ENGINE, RE_ERROR, "core.py", 1100,
               "EngineCore failed to start.\nTraceback (most recent call last):\n"
               "  File \"" PY "/v1/engine/core.py\", line 1090, in run_engine_core\n"
               "    engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)\n"
               "  File \"" PY "/v1/worker/gpu_worker.py\", line 244, in init_device\n"
               "    torch.cuda.set_device(self.device)\n"
               "torch.AcceleratorError: CUDA error: %s (%s in %s)",
               ce.text, ce.name, ce.call);
        const char *tag = re_proc_tag(w, RE_PROC_ENGINE);
        re_log_raw(lg, RE_PROC_API,
                   "RuntimeError: Engine core initialization failed. See root cause above. "
                   "Failed core proc(s): {'%s': 1}",
                   tag ? tag : "EngineCore_DP0");
        return -1;
    }
    re_log(lg, RE_PROC_ENGINE, RE_INFO, "refengine_cuda.py", 1,
           "refengine CUDA mode on %s: %u MoE layers per step, %u experts (top-%u), hidden "
           "%u, intermediate %u, NVFP4 weights (E2M1, E4M3 scale per 16, FP32 global); %s "
           "path: %s",
           desc, w->cuda_layers, w->cuda_experts, w->cuda_top_k, w->cuda_hidden,
           w->cuda_intermediate, world_backend_name(res->backend), path_names[*gpu_path]);
    return 0;
}

/* The API server's traceback when its socket cannot bind. */
static void print_bind_failure(struct re_log *lg, int berr)
{
    char exc[128];
    snprintf(exc, sizeof(exc), "OSError: [Errno %d] %s", berr, strerror(berr));
    print_cli_traceback(lg,
                        "  File \"" PY "/entrypoints/openai/api_server.py\", line 2055, in run_server\n"
                        "    sock = create_server_socket(sock_addr)\n"
                        "  File \"" PY "/entrypoints/openai/api_server.py\", line 2013, in create_server_socket\n"
                        "    sock.bind(addr)",
                        exc);
}

/* The EngineCore child behind a pipe (pfd[1] the parent's end; it exits
 * when that closes). Returns its pid, or -1 (said) when it cannot start. */
static pid_t start_child(int pfd[2], int lfd, const struct world *w)
{
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        mp_error("pipe: %s", strerror(errno));
        return -1;
    }
    pid_t child = fork();
    if (child < 0) {
        mp_error("fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (child == 0) {
        close(pfd[1]);
        child_main(pfd[0], lfd, w);
    }
    close(pfd[0]);
    return child;
}

/* "REALPATH|BACKEND": what a crash site is keyed on across attempts. */
static void site_key_of(char *out, size_t n, const char *world_path, const char *backend)
{
    char *rp = realpath(world_path, NULL);
    snprintf(out, n, "%s|%s", rp ? rp : world_path, backend);
    free(rp);
}

/* What the resolution reads: the flags and this process' environment. */
static void inputs_of(const struct cli *c, struct re_inputs *in)
{
    *in = (struct re_inputs){
        .moe_backend = c->moe_backend,
        .moe_backend_from_flag = c->moe_from_flag,
        .linear_backend = c->linear_backend,
        .attention_backend = c->attention_backend,
        .env = (const char *const *)environ,
        .autotune_off = c->autotune_off,
    };
}

int main(int argc, char **argv)
{
    mp_progname = "refengine";
    int rc = MP_EXIT_USAGE;
    struct cli c;
    struct world w;
    struct re_resolution res;
    bool have_res = false;
    if (parse_cli(argc, argv, &c) != 0)
        goto out;
    struct mp_diag d = MP_DIAG_INIT;
    if (world_load(c.world_path, &w, &d) != 0) {
        char m[600];
        mp_diag_format(&d, m, sizeof(m));
        mp_error("%s", m);
        goto out;
    }
    if (w.cuda && !moe_cuda_compiled()) {
        mp_error("%s: [engine] cuda = true needs the CUDA build of refengine "
                 "(refengine/refengine-cuda, made by `make cuda` where nvcc exists); this "
                 "binary was built without CUDA support",
                 c.world_path);
        rc = MP_EXIT_USAGE;
        goto out;
    }
    uint64_t seed = c.have_seed ? c.seed : w.seed;
    const char *model = c.model_tag ? c.model_tag : w.model;
    const char *served = c.served_model_name ? c.served_model_name : model;

    struct re_inputs in;
    inputs_of(&c, &in);
    re_resolve(&w, &in, &res);
    have_res = true;
    re_drafter_resolve(&w, c.moe_backend, &c.drafter);
    if (res.status == RE_ERR_ARGPARSE) {
        fprintf(stderr, "usage: vllm serve [model_tag] [options]\nvllm serve: error: %s\n", res.error);
        rc = 2;
        goto out;
    }
    raise_nofile();

    struct re_log lg = {.tag = {re_proc_tag(&w, RE_PROC_API), re_proc_tag(&w, RE_PROC_ENGINE)},
                        .pid = {(int)getpid(), 0}};
    const char *lvl = getenv("VLLM_LOGGING_LEVEL");
    lg.debug = lvl && !strcasecmp(lvl, "DEBUG");
    print_api_start(&lg, &w, &c, model);
    re_log_lines(&lg, &res.api_lines);
    print_model_lines(&lg, &w, &c, model);

    int lfd = -1, port = 0, berr = 0;
    if (bind_port(c.host, c.port, &lfd, &port, &berr) != 0) {
        print_bind_failure(&lg, berr);
        rc = 1;
        goto out;
    }

    int pfd[2];
    pid_t child = start_child(pfd, lfd, &w);
    if (child < 0) {
        rc = MP_EXIT_INTERNAL;
        close(lfd);
        goto out;
    }
    lg.pid[RE_PROC_ENGINE] = (int)child;
    bool hostile = w.child_ignores_sigterm || w.child_escapes_group;

    print_engine_init(&lg, &w, &c, model, served, seed);
    /* model construction: the kernel selection lines come select_seconds after
     * start (a signal here ends the process; the child sees the pipe close) */
    sleep_seconds(w.select_seconds);
    re_log_lines(&lg, &res.engine_lines);
    if (res.status == RE_ERR_STARTUP) {
        print_startup_failure(&lg, &w, &res);
        stop_child(child, pfd[1], lfd, hostile);
        rc = 1;
        goto out;
    }

    struct moe_cuda *gpu = NULL;
    enum moe_cuda_path gpu_path = MOE_CUDA_TWO_STREAM;
    if (w.cuda && cuda_start(&lg, &w, &res, seed, &gpu, &gpu_path) != 0) {
        stop_child(child, pfd[1], lfd, hostile);
        rc = 1;
        goto out;
    }

    char site_key[1200];
    site_key_of(site_key, sizeof(site_key), c.world_path, world_backend_name(res.backend));
    const char *clb = getenv("CUDA_LAUNCH_BLOCKING");
    struct re_server_cfg cfg = {
        .w = &w,
        .res = &res,
        .log = &lg,
        .listen_fd = lfd,
        .host = c.host,
        .port = port,
        .served_model = served,
        .max_model_len = c.max_model_len,
        .max_logprobs = c.max_logprobs,
        .seed = seed,
        .blocking = clb && !strcmp(clb, "1"),
        .disable_log_stats = c.disable_log_stats,
        .child = child,
        .child_pipe = pfd[1],
        .child_hostile = hostile,
        .site_key = site_key,
        .cuda = gpu,
        .cuda_path = gpu_path,
        .drafter = &c.drafter,
    };
    struct re_cuda_lm *clm = NULL; /* the logits' GPU term (cuda_lm.h) */
    if (gpu && w.cuda_logit_scale > 0) {
        clm = re_cuda_lm_new(&(struct re_cuda_lm_cfg){
            .gpu = gpu, .path = gpu_path, .hidden = (int)w.cuda_hidden,
            .scale = w.cuda_logit_scale, .seed = seed, .fail = re_server_cuda_fail});
        cfg.lm_term = re_cuda_lm_term(clm);
    }
    rc = re_server_run(&cfg);
    re_cuda_lm_free(clm);
    moe_cuda_free(gpu);
out:
    if (have_res)
        re_resolution_free(&res);
    cli_free(&c);
    return rc;
}
