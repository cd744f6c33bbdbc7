/* drafter.h - a speculative drafter (`--speculative-config '{"method":
 * "mtp", "num_speculative_tokens": 1}'`) as vLLM builds one, seen from its
 * log: the engine's config line carries `speculative_config=
 * SpeculativeConfig(method='mtp', model='M', num_spec_tokens=N)` instead
 * of `None`; after the main model's weights, gpu_model_runner.load_model
 * prints "Loading drafter model..." and builds the drafter, whose own
 * (unquantized, bf16) MoE layer resolves its backend through
 * oracle/unquantized.py: "Using FlashInfer CUTLASS Unquantized MoE backend
 * out of potential backends: [...]" (a real v0.23 log), or, with a
 * `--moe-backend` value that oracle does not take (the flag is global:
 * `marlin`, `cutlass`, `flashinfer_b12x`), "ValueError: moe_backend='marlin'
 * is not supported for unquantized MoE. Expected one of [...]" and the
 * engine fails to start (reference/vllm-knobs.md section 1.1); then
 * "Model loading took" (after the drafter, same function). Before the
 * unquantized oracle (vLLM 0.17.0, PR #33807) the drafter prints no MoE
 * line. The drafter does not change how requests are served here. */
#ifndef RE_DRAFTER_H
#define RE_DRAFTER_H

#include "compat.h"

#include "buf.h"
#include "world.h"

struct re_drafter {
    bool on;                /* a drafter was asked for */
    char method[32];        /* "mtp", "eagle3", ... */
    char model[256];        /* the drafter's model ("" = the served model: MTP) */
    int num_spec_tokens;
    /* its MoE selection (re_drafter_resolve) */
    bool has_moe_line;      /* the era prints the unquantized oracle's line */
    const char *moe;        /* "FlashInfer CUTLASS", ...; NULL with error set */
    char error[300];        /* the ValueError line, "" when none */
};

/* Read --speculative-config's JSON value. Returns 0, or -1 (with a message
 * in err, n bytes) when it is not a JSON object naming a method. */
int re_drafter_parse(const char *json, struct re_drafter *d, char *err, size_t n);

/* Append the config line's value: "None" or "SpeculativeConfig(method='mtp',
 * model='M', num_spec_tokens=N)" (model: the served model when the config
 * names none, as vLLM fills it for MTP). */
void re_drafter_config_repr(const struct re_drafter *d, const char *model, struct buf *b);

/* Resolve the drafter's MoE backend in world w with the --moe-backend value
 * (NULL: auto). */
void re_drafter_resolve(const struct world *w, const char *moe_backend, struct re_drafter *d);

/* The drafter's selection line, without the log prefix (static or in d);
 * NULL when the era prints none. Its file and line number: *file, *lineno. */
const char *re_drafter_line(const struct world *w, const struct re_drafter *d, char *out, size_t n,
                            const char **file, int *lineno);

#endif
