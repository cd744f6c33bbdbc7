/* world.h - the reference engine's world file (INI), parsed purely.
 *
 * A world describes the engine being imitated: its vLLM version (era), the
 * device, the model, and how each NvFp4 MoE backend behaves (speed and
 * failure mode). The format is a public contract, see DESIGN.md and
 * docs/refengine.md.
 *
 * struct world is a value type made of fixed-size arrays: nothing to free.
 * world_parse() never prints; on error it fills the mp_diag with
 * "file:line: message" parts and returns MP_EPARSE or MP_ELIMIT. */
#ifndef RE_WORLD_H
#define RE_WORLD_H

#include "compat.h"
#include "err.h"

/* Every NvFp4 MoE backend vLLM has had (oracle names). */
enum world_backend {
    WB_FLASHINFER_TRTLLM,
    WB_FLASHINFER_CUTEDSL,
    WB_FLASHINFER_CUTEDSL_BATCHED,
    WB_FLASHINFER_CUTLASS,
    WB_VLLM_CUTLASS,
    WB_MARLIN,
    WB_HUMMING,
    WB_EMULATION,
    WB_FLASHINFER_B12X,
    WB_B12X,
    WB_COUNT,
    WB_NONE = -1
};

enum world_device { WD_SM90, WD_SM100, WD_SM120, WD_SM121 };

enum world_failure {
    WF_NONE,
    WF_ASYNC_RACE,
    WF_KERNEL_FAULT,
    WF_STARTUP_CRASH,
    WF_HANG,
    WF_GARBAGE
};

#define WORLD_MAX_SITES 16
#define WORLD_MAX_KNOBS 16
#define WORLD_MAX_KNOB_VALUES 32
#define WORLD_STR 256
#define WORLD_MAX_FILE (1u << 20) /* bytes */

struct world_backend_cfg {
    bool present;        /* a [backend NAME] section exists */
    bool supported;      /* default true */
    double tokens_per_second; /* default 50 */
    double contention;   /* default 0.1 */
    enum world_failure failure; /* default none */
    unsigned crash_after_requests; /* 0 = unset */
    double race_probability;       /* <0 = unset */
    unsigned fault_after_requests; /* 0 = unset */
    unsigned hang_after_requests;  /* 0 = unset */
    unsigned nsites;
    char sites[WORLD_MAX_SITES][64];
    char error[WORLD_STR];         /* CUDA error text */
    char startup_error[WORLD_STR * 2];
    double blocking_slowdown;      /* default 0.6 */
    char failure_when[WORLD_STR];  /* "NAME=VALUE": the failure happens only when the
                                    * engine's environment has it ("" = always) */
    char kernel[1024];             /* the CUDA kernel a core dump names when it faults
                                    * (or spins: hang), "" = the backend's default
                                    * (refengine/coredump.c) */
    unsigned nxid;                 /* the Xids the fake driver logs at its fault, 0 = by */
    int xid[4];                    /* the error (13, and 31 for an illegal address) */
    /* correctness (refengine/lm.h): how this backend's numbers differ from
     * the model's own */
    double logit_noise;            /* nats, sd of a per-(context, token) perturbation; default 0 */
    double logit_error;            /* nats, a systematic error on half the contexts that
                                    * changes the greedy token; default 0 */
    double accuracy;               /* share of task problems answered right; default 1 */
    int cuda_path;                 /* CUDA mode: enum moe_cuda_path this backend runs, -1 =
                                    * by its failure and name (re_server_cuda_path) */
};

struct world_knob_value {
    char value[64];
    enum world_backend backend;
};

struct world_knob {
    char name[64];
    unsigned nvalues;
    struct world_knob_value values[WORLD_MAX_KNOB_VALUES];
};

struct world {
    char version[64];
    int ver_major, ver_minor, ver_patch; /* parsed from version */
    enum world_device device;
    char model[WORLD_STR];
    char quantization[64];  /* default modelopt_fp4 */
    double load_seconds;    /* start -> ready, default 0.5 */
    double select_seconds;  /* start -> the kernel selection lines, default 0, <= load_seconds */
    uint64_t seed;          /* default 0 */
    bool child_ignores_sigterm;
    bool child_escapes_group;
    /* the scheduler (vLLM v1, FCFS): KV-cache capacity in tokens (blocks of
     * 16), default 843392; the most requests running at once, default 256.
     * A request that finds no room waits; a running one that needs a block
     * when none is free preempts the newest running request (recompute). */
    unsigned long kv_cache_tokens;
    unsigned max_num_seqs;
    /* CUDA mode (refengine-cuda only): every generated token runs a real
     * NVFP4 MoE layer stack on the GPU; failures are real CUDA errors. */
    bool cuda;
    unsigned cuda_hidden;       /* default 1024 */
    unsigned cuda_intermediate; /* default 512 (per expert) */
    unsigned cuda_experts;      /* default 32 */
    unsigned cuda_top_k;        /* default 4 */
    unsigned cuda_layers;       /* MoE layers per token, default 8 */
    double cuda_route_jitter;   /* per-step probability that routing runs slow, default 0.02 */
    double cuda_logit_scale;    /* nats: the logits get a term read out of the GPU MoE stack's
                                 * hidden state with this standard deviation (cuda_lm.h);
                                 * 0 (default) = none */
    /* a speculative drafter (--speculative-config, drafter.c): what vLLM's
     * unquantized MoE oracle picks for its MoE under auto on this device,
     * as the oracle names it ("TRITON", "FlashInfer CUTLASS", ...; "" =
     * drafter.c's default), and the error its profile run raises ("" =
     * none) */
    char drafter_moe[64];
    char drafter_startup_error[WORLD_STR];
    /* the FlashInfer autotuner's "Skipped N unsupported tactic(s)" in the
     * warm-up (0 = none) */
    unsigned autotuner_unsupported_tactics;
    struct world_backend_cfg backends[WB_COUNT];
    unsigned nknobs;
    struct world_knob knobs[WORLD_MAX_KNOBS];
};

/* Parse a world file's text (len bytes; need not be NUL-terminated).
 * filename only labels diagnostics. Returns 0, MP_EPARSE (malformed) or
 * MP_ELIMIT (too big); d gets file, line and message. Pure. */
int world_parse(const char *text, size_t len, const char *filename, struct world *out,
                struct mp_diag *d);

/* Read and parse a file. Returns 0, -errno (d says which file), or the
 * world_parse codes. */
int world_load(const char *path, struct world *out, struct mp_diag *d);

/* Fill a backend config with the documented defaults (present = false). */
void world_backend_defaults(struct world_backend_cfg *b);

/* "FLASHINFER_CUTLASS" etc.; NULL for an out-of-range value. */
const char *world_backend_name(enum world_backend b);
/* Exact (upper-case) oracle name -> enum; WB_NONE when unknown. */
enum world_backend world_backend_from_name(const char *name);
const char *world_device_name(enum world_device d);
const char *world_failure_name(enum world_failure f);

/* Parse "0.19.2rc1.dev8+g4b7f5ea1a" -> 0,19,2. Returns 0 or MP_EPARSE. */
int world_parse_version(const char *s, int *maj, int *min, int *pat);

#endif
