/* inspect.h - what in a Hugging Face checkpoint folder decides MoE backend
 * support, read without loading weights: config.json (architecture, MoE
 * shape under each family's key names, activation, swiglu_limit, hybrid
 * Mamba/attention layout), the quantization config (ModelOpt
 * hf_quant_config.json or compressed-tensors / modelopt quantization_config
 * in config.json) and the safetensors headers (only the 8-byte length and
 * the JSON header of each file are read).
 *
 * Errors follow err.h: 0 or a negative code (-errno, MP_EPARSE for
 * malformed input, MP_ELIMIT for a header over the size bound) with the
 * diag's file set to the offending file. Pure apart from reading files. */
#ifndef MP_INSPECT_H
#define MP_INSPECT_H

#include "compat.h"

#include <stdint.h>

#include "buf.h"
#include "err.h"

/* Hard bound on a safetensors JSON header (the format's own limit). */
#define MP_ST_MAX_HEADER (100u * 1024 * 1024)
#define MP_ST_MAX_DTYPES 24

/* Accumulated over one or more safetensors files. */
struct mp_st_summary {
    unsigned long files;
    unsigned long long tensors, bytes;
    struct {
        char name[16];
        unsigned long long count, bytes;
    } dtypes[MP_ST_MAX_DTYPES];
    size_t ndtypes;
    unsigned long long fp4_weights; /* packed FP4 weights (U8 "...weight"/"weight_packed") */
    unsigned long long fp8_scales;  /* F8_E4M3 "...scale" tensors (block scales) */
    unsigned long long f32_scales;  /* F32 "...scale_2"/"global_scale"/"input_scale" */
};

/* Parse one safetensors JSON header (len bytes, not NUL-terminated) whose
 * data section is data_len bytes, adding to *acc. Checks: a JSON object;
 * every tensor has a known-format dtype, a shape of non-negative integers
 * and data_offsets [begin, end] inside the data section, sized
 * dtype x shape for fixed-size dtypes, not overlapping another tensor.
 * 0 or MP_EPARSE (d->msg says why; d->file untouched). */
int mp_st_parse_header(const char *json, size_t len, uint64_t data_len, struct mp_st_summary *acc,
                       struct mp_diag *d);
/* A whole safetensors file in memory (length prefix + header + data). */
int mp_st_parse_buffer(const unsigned char *p, size_t n, struct mp_st_summary *acc,
                       struct mp_diag *d);
/* Read the header of the file at path (two reads, never the data). 0,
 * -errno, MP_EPARSE or MP_ELIMIT; d->file = path. */
int mp_st_read_file(const char *path, struct mp_st_summary *acc, struct mp_diag *d);

struct mp_inspect {
    char *dir;
    char *architecture, *model_type;
    bool multimodal;              /* the text model sits under text_config / llm_config */
    bool hybrid;
    char *layer_pattern;          /* the family's pattern string, or NULL */
    long mamba_layers, attention_layers, moe_layers, num_layers; /* -1 unknown */
    long hidden_size;
    bool moe;
    long experts, experts_per_token, shared_experts, intermediate_size; /* -1 unknown */
    char *experts_key;            /* which config key held the expert count */
    char *activation;
    bool gated;                   /* activation is gated (act_and_mul) */
    bool has_swiglu_limit;
    double swiglu_limit;
    /* quantization */
    bool quantized;
    char *producer;               /* "modelopt" | "compressed-tensors" | quant_method */
    char *quant_file;             /* "hf_quant_config.json" or "config.json" */
    char *algo;                   /* "NVFP4", "FP8", "W4A16_NVFP4"... */
    long group_size;              /* -1 unknown */
    int weight_only;              /* 1, 0, -1 unknown */
    char *kv_cache;               /* "FP8" or NULL */
    char **exclude;
    size_t nexclude;
    struct mp_st_summary st;
    char **notes;
    size_t nnotes;
};

/* Inspect a checkpoint folder. *out is overwritten (release it even on
 * error). 0, or <0 with d naming the file and the problem. */
int mp_inspect_dir(const char *dir, struct mp_inspect *out, struct mp_diag *d);
void mp_inspect_release(struct mp_inspect *in);
/* "producer (algo)" (e.g. "modelopt (NVFP4)"), or NULL when the checkpoint
 * is not quantized; caller frees. */
char *mp_inspect_quantization(const struct mp_inspect *in);
/* The --json object (see docs; "notes" included), pretty-printed + "\n". */
void mp_inspect_to_json(const struct mp_inspect *in, struct buf *out);
/* Human-readable summary. */
void mp_inspect_to_text(const struct mp_inspect *in, struct buf *out);

#endif
