/* resolve.h - NvFp4 MoE backend resolution per vLLM era (pure).
 *
 * Given a world (version, device, backends, fork knobs), the command-line
 * choices and the environment, decide what vLLM of that era would do:
 * which MoE backend it selects, which candidate list it prints, which dense
 * NVFP4 GEMM kernel and attention backend it reports, which warnings it
 * prints about the environment, or which error stops it.
 *
 * Order (DESIGN.md): explicit --moe-backend (0.17+; an argparse error
 * before) -> world [knob] mappings -> VLLM_* environment with that era's
 * semantics -> the era's auto list, skipping unsupported backends.
 *
 * The result owns its lines; release with re_resolution_free(). Nothing
 * here prints or reads the real environment. */
#ifndef RE_RESOLVE_H
#define RE_RESOLVE_H

#include "compat.h"
#include "world.h"

enum re_proc { RE_PROC_API, RE_PROC_ENGINE };
/* RE_FI_*: FlashInfer's own logger ("YYYY-MM-DD HH:MM:SS,mmm - INFO - file:line -
 * flashinfer.jit: text", after the process prefix, on stderr). */
enum re_level { RE_DEBUG, RE_INFO, RE_WARNING, RE_ERROR, RE_RAW, RE_FI_INFO, RE_FI_WARNING };

/* One log line: printed as "(<proc> pid=N) LEVEL MM-DD HH:MM:SS [file:line] text"
 * or, for RE_RAW, as "(<proc> pid=N) text" on stderr (Python warnings). */
struct re_line {
    enum re_proc proc;
    enum re_level level;
    char file[40];
    int lineno;
    char *text; /* owned */
};

struct re_lines {
    struct re_line *v;
    size_t n, cap;
};

struct re_inputs {
    const char *moe_backend;      /* --moe-backend value (or kernel-config's), NULL = none */
    bool moe_backend_from_flag;   /* it came from --moe-backend (argparse-visible) */
    const char *linear_backend;   /* --linear-backend value or NULL */
    const char *attention_backend;/* --attention-backend value or NULL */
    const char *const *env;       /* NULL-terminated "NAME=VALUE" list; may be NULL */
    bool autotune_off;            /* --kernel-config '{"enable_flashinfer_autotune": false}' */
};

enum re_status {
    RE_OK,
    RE_ERR_ARGPARSE, /* error = argparse message after "vllm serve: error: " */
    RE_ERR_STARTUP,  /* error = Python exception line, raised in the engine at load */
};

struct re_resolution {
    enum re_status status;
    enum world_backend backend;   /* WB_NONE unless RE_OK */
    enum world_backend requested; /* explicitly requested backend, WB_NONE if auto */
    const char *road;             /* "flag", "knob", "env" or "auto" */
    enum world_backend candidates[WB_COUNT]; /* the list the era prints */
    unsigned ncandidates;
    bool selection_line;          /* the era printed an oracle selection line */
    char dense_kernel[64];        /* as printed in the NVFP4 GEMM line */
    char attention[64];           /* attention backend name */
    struct re_lines api_lines;    /* API server, before the engine starts */
    struct re_lines engine_lines; /* EngineCore, during model load */
    struct re_lines load_lines;   /* EngineCore, right after the target's weights loaded (before
                                     a drafter, drafter.c): the prepare/finalize line */
    struct re_lines tune_lines;   /* EngineCore, the warm-up after the KV cache: the FlashInfer
                                     autotuner */
    char error[1024];
    const char *frames;           /* RE_ERR_STARTUP: the traceback frames (static text, each
                                     line ending in '\n') from run_engine_core to the raise;
                                     NULL: the NvFp4 MoE oracle's */
};

/* Traceback frames of an EngineCore start, as vLLM prints them. */
#define RE_TB_PY "/usr/local/lib/python3.12/dist-packages/vllm"
#define RE_TB_HEAD                                                                              \
    "  File \"" RE_TB_PY "/v1/engine/core.py\", line 1090, in run_engine_core\n"                \
    "    engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)\n"
#define RE_TB_LOAD                                                                              \
    RE_TB_HEAD "  File \"" RE_TB_PY "/v1/engine/core.py\", line 112, in __init__\n"              \
               "    self.model_executor = executor_class(vllm_config)\n"                        \
               "  File \"" RE_TB_PY "/v1/worker/gpu_model_runner.py\", line 4735, in load_model\n" \
               "    self.model = model_loader.load_model(\n"

/* The lines after the model's selection lines (refengine/stages.c): the
 * target's prepare/finalize (load_lines), the FlashInfer autotuner in the
 * warm-up (tune_lines); a speculative drafter is drafter.c's. Called by re_resolve when the
 * engine starts (RE_OK). */
void re_resolve_stages(const struct world *w, const struct re_inputs *in, struct re_resolution *r);

/* Version helpers on a world's parsed version. */
bool re_ver_ge(const struct world *w, int maj, int min, int pat);

/* Resolve. Always fills out (free it with re_resolution_free) and returns
 * 0; out->status says whether the engine would start. */
int re_resolve(const struct world *w, const struct re_inputs *in, struct re_resolution *out);
void re_resolution_free(struct re_resolution *r);

/* Would this era's envs.py know the variable? (world knobs count as known:
 * the fork registered them.) */
bool re_env_known(const struct world *w, const char *name);

/* Is value (normalised: lower case, '-' as '_') a --moe-backend choice of
 * the world's version (the MoEBackend literal argparse checks)? */
bool re_moe_choice(const struct world *w, const char *value);

/* Find NAME in a "NAME=VALUE" list; NULL when absent. */
const char *re_env_get(const char *const *env, const char *name);

/* Process tag of the era: "APIServer"/"EngineCore"/"EngineCore_DP0"/...;
 * NULL when the era prints no process prefix. */
const char *re_proc_tag(const struct world *w, enum re_proc p);

void re_lines_add(struct re_lines *l, enum re_proc proc, enum re_level level, const char *file,
                  int lineno, const char *fmt, ...) MP_PRINTF(6, 7);
void re_lines_free(struct re_lines *l);

#endif
