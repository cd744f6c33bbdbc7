/* inspect.c - config.json, quantization config and notes; see inspect.h. */
#include "inspect/inspect.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "file.h"
#include "strv.h"
#include "xalloc.h"

#define CONFIG_MAX (16u * 1024 * 1024)
#define MAX_SHARDS 4096

/* Keys per family, first found wins. */
static const char *const experts_keys[] = { "num_experts", "n_routed_experts", "num_local_experts",
                                            "moe_num_experts", "num_routed_experts", NULL };
static const char *const topk_keys[] = { "num_experts_per_tok", "experts_per_token",
                                         "num_experts_per_token", "moe_topk", "moe_k", "top_k", NULL };
static const char *const inter_keys[] = { "moe_intermediate_size", "expert_intermediate_size",
                                          "intermediate_size", NULL };
static const char *const shared_keys[] = { "n_shared_experts", "num_shared_experts",
                                           "shared_expert_count", NULL };
static const char *const act_keys[] = { "mlp_hidden_act", "moe_hidden_act", "hidden_act",
                                        "hidden_activation", "activation_function", NULL };

static int slurp(const char *path, size_t max, char **out, size_t *len, struct mp_diag *d)
{
    struct buf b = BUF_INIT;
    *out = NULL;
    int rc = mp_read_regular_file(path, max, &b, d); /* a FIFO there is an error, not a wait */
    if (rc) {
        buf_release(&b);
        return rc;
    }
    *out = buf_detach(&b, len);
    return 0;
}

/* Parse a JSON object file; line of the error in d. */
static int load_json(const char *path, cJSON **out, struct mp_diag *d)
{
    char *txt;
    size_t len;
    *out = NULL;
    int rc = slurp(path, CONFIG_MAX, &txt, &len, d);
    if (rc)
        return rc;
    cJSON *j = cJSON_ParseWithLength(txt, len);
    if (!j || !cJSON_IsObject(j)) {
        size_t line = 1;
        const char *e = j ? NULL : cJSON_GetErrorPtr();
        for (const char *q = txt; e && q < e && q < txt + len; q++)
            line += *q == '\n';
        rc = mp_diag_set(d, MP_EPARSE, j ? 0 : line, j ? "not a JSON object" : "malformed JSON");
        cJSON_Delete(j);
    } else {
        *out = j;
    }
    free(txt);
    return rc;
}

static const cJSON *get(const cJSON *const *objs, size_t nobj, const char *key)
{
    for (size_t i = 0; i < nobj; i++) {
        const cJSON *v = objs[i] ? cJSON_GetObjectItemCaseSensitive(objs[i], key) : NULL;
        if (v && !cJSON_IsNull(v))
            return v;
    }
    return NULL;
}

static long get_long(const cJSON *const *objs, size_t nobj, const char *const *keys,
                     const char **which)
{
    for (size_t k = 0; keys[k]; k++) {
        const cJSON *v = get(objs, nobj, keys[k]);
        if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e15) {
            if (which)
                *which = keys[k];
            return (long)v->valuedouble;
        }
    }
    return -1;
}

static char *get_str(const cJSON *const *objs, size_t nobj, const char *const *keys)
{
    for (size_t k = 0; keys[k]; k++) {
        const cJSON *v = get(objs, nobj, keys[k]);
        if (cJSON_IsString(v) && v->valuestring[0])
            return mp_utf8_clean(v->valuestring, strlen(v->valuestring));
    }
    return NULL;
}

static void add_note(struct mp_inspect *in, char *owned)
{
    in->notes = xreallocarray(in->notes, in->nnotes + 1, sizeof(*in->notes));
    in->notes[in->nnotes++] = owned;
}

static void add_exclude(struct mp_inspect *in, const cJSON *arr)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (!cJSON_IsString(e) || in->nexclude >= 4096)
            continue;
        in->exclude = xreallocarray(in->exclude, in->nexclude + 1, sizeof(*in->exclude));
        in->exclude[in->nexclude++] = mp_utf8_clean(e->valuestring, strlen(e->valuestring));
    }
}

void mp_inspect_release(struct mp_inspect *in)
{
    free(in->dir);
    free(in->architecture);
    free(in->model_type);
    free(in->layer_pattern);
    free(in->experts_key);
    free(in->activation);
    free(in->producer);
    free(in->quant_file);
    free(in->algo);
    free(in->kv_cache);
    for (size_t i = 0; i < in->nexclude; i++)
        free(in->exclude[i]);
    free(in->exclude);
    for (size_t i = 0; i < in->nnotes; i++)
        free(in->notes[i]);
    free(in->notes);
    memset(in, 0, sizeof(*in));
}

/* Hybrid layouts: Nemotron-H "hybrid_override_pattern" (M mamba, * attention,
 * E MoE, - MLP), "layers_block_type" / "layer_types" arrays (Jamba,
 * Qwen3-Next linear attention), Jamba's attn_layer_period. */
static void parse_layers(const cJSON *const *objs, size_t nobj, struct mp_inspect *in)
{
    in->mamba_layers = in->attention_layers = in->moe_layers = -1;
    const cJSON *pat = get(objs, nobj, "hybrid_override_pattern");
    if (cJSON_IsString(pat)) {
        in->layer_pattern = mp_utf8_clean(pat->valuestring, strlen(pat->valuestring));
        in->mamba_layers = in->attention_layers = in->moe_layers = 0;
        for (const char *p = pat->valuestring; *p; p++) {
            in->mamba_layers += *p == 'M';
            in->attention_layers += *p == '*';
            in->moe_layers += *p == 'E';
        }
    }
    const char *arrkeys[] = { "layers_block_type", "layer_types", NULL };
    for (size_t k = 0; arrkeys[k] && !in->layer_pattern; k++) {
        const cJSON *a = get(objs, nobj, arrkeys[k]);
        if (!cJSON_IsArray(a))
            continue;
        struct buf b = BUF_INIT;
        in->mamba_layers = in->attention_layers = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, a)
        {
            const char *s = cJSON_IsString(e) ? e->valuestring : "";
            bool mamba = strstr(s, "mamba") || strstr(s, "linear") || strstr(s, "ssm");
            bool attn = !mamba && strstr(s, "attention");
            in->mamba_layers += mamba;
            in->attention_layers += attn;
            buf_addc(&b, mamba ? 'M' : attn ? '*' : '-');
        }
        in->layer_pattern = buf_detach(&b, NULL);
    }
    const cJSON *period = get(objs, nobj, "attn_layer_period");
    if (!in->layer_pattern && cJSON_IsNumber(period) && period->valuedouble > 1)
        in->hybrid = true;
    if (in->mamba_layers > 0 && in->attention_layers > 0)
        in->hybrid = true;
    in->num_layers = get_long(objs, nobj, (const char *const[]){ "num_hidden_layers", "n_layers",
                                                                 "num_layers", NULL }, NULL);
}

static bool gated_activation(const char *a)
{
    if (!a)
        return true; /* unknown: assume the common SwiGLU */
    static const char *const non_gated[] = { "relu2", "relu", "gelu", "gelu_new", "gelu_pytorch_tanh",
                                             "squared_relu", "relu_squared", NULL };
    for (size_t i = 0; non_gated[i]; i++)
        if (!strcasecmp(a, non_gated[i]))
            return false;
    return true;
}

static void parse_config(const cJSON *cfg, struct mp_inspect *in)
{
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
    if (!cJSON_IsObject(text))
        text = cJSON_GetObjectItemCaseSensitive(cfg, "llm_config");
    if (!cJSON_IsObject(text))
        text = NULL;
    in->multimodal = text != NULL;
    const cJSON *objs[2] = { text, cfg }; /* the text model's keys first */
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(cfg, "architectures");
    if (cJSON_IsArray(arch) && cJSON_IsString(cJSON_GetArrayItem(arch, 0)))
        in->architecture = mp_utf8_clean(cJSON_GetArrayItem(arch, 0)->valuestring,
                                         strlen(cJSON_GetArrayItem(arch, 0)->valuestring));
    in->model_type = get_str((const cJSON *const[]){ cfg, text }, text ? 2 : 1,
                             (const char *const[]){ "model_type", NULL });
    in->hidden_size = get_long(objs, 2, (const char *const[]){ "hidden_size", "d_model", NULL }, NULL);
    const char *which = NULL;
    in->experts = get_long(objs, 2, experts_keys, &which);
    if (which)
        in->experts_key = xstrdup(which);
    in->experts_per_token = get_long(objs, 2, topk_keys, NULL);
    in->shared_experts = get_long(objs, 2, shared_keys, NULL);
    in->moe = in->experts > 1;
    /* without experts, intermediate_size is the dense MLP's: still reported */
    in->intermediate_size = get_long(objs, 2, inter_keys, NULL);
    in->activation = get_str(objs, 2, act_keys);
    in->gated = gated_activation(in->activation);
    const cJSON *sl = get(objs, 2, "swiglu_limit");
    if (cJSON_IsNumber(sl)) {
        in->has_swiglu_limit = true;
        in->swiglu_limit = sl->valuedouble;
    }
    parse_layers(objs, 2, in);
}

/* ModelOpt hf_quant_config.json:
 * {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4",
 *  "kv_cache_quant_algo": "FP8", "group_size": 16, "exclude_modules": [...]}} */
static void parse_modelopt(const cJSON *q, const char *producer, const char *file,
                           struct mp_inspect *in)
{
    in->quantized = true;
    free(in->producer);
    in->producer = xstrdup(producer);
    free(in->quant_file);
    in->quant_file = xstrdup(file);
    const cJSON *o[1] = { q };
    in->algo = get_str(o, 1, (const char *const[]){ "quant_algo", NULL });
    in->kv_cache = get_str(o, 1, (const char *const[]){ "kv_cache_quant_algo", NULL });
    in->group_size = get_long(o, 1, (const char *const[]){ "group_size", NULL }, NULL);
    add_exclude(in, get(o, 1, "exclude_modules"));
    if (!in->nexclude)
        add_exclude(in, get(o, 1, "ignore"));
    if (in->algo) {
        /* ModelOpt names weight-only FP4 W4A16_NVFP4 / NVFP4_W4A16 ("AWQ" is W4A4) */
        bool wo = strstr(in->algo, "W4A16") || strstr(in->algo, "WEIGHT_ONLY");
        in->weight_only = wo ? 1 : strstr(in->algo, "FP4") ? 0 : -1;
    } else {
        in->weight_only = -1;
    }
}

/* compressed-tensors quantization_config: config_groups.*.weights /
 * input_activations, "format", "ignore", "kv_cache_scheme". */
static void parse_ct(const cJSON *q, struct mp_inspect *in)
{
    in->quantized = true;
    in->producer = xstrdup("compressed-tensors");
    in->quant_file = xstrdup("config.json");
    in->weight_only = -1;
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(q, "config_groups");
    const cJSON *g;
    cJSON_ArrayForEach(g, groups)
    {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(g, "weights");
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(g, "input_activations");
        const cJSON *bits = cJSON_GetObjectItemCaseSensitive(w, "num_bits");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(w, "type");
        const cJSON *gs = cJSON_GetObjectItemCaseSensitive(w, "group_size");
        if (cJSON_IsNumber(gs) && in->group_size < 0)
            in->group_size = (long)gs->valuedouble;
        bool fp = cJSON_IsString(type) && !strcmp(type->valuestring, "float");
        int nb = cJSON_IsNumber(bits) ? (int)bits->valuedouble : 0;
        if (!in->algo && nb) {
            const cJSON *abits = cJSON_GetObjectItemCaseSensitive(a, "num_bits");
            int an = cJSON_IsNumber(abits) ? (int)abits->valuedouble : 0;
            if (nb == 4 && fp)
                in->algo = xstrdup(an ? "NVFP4" : "W4A16_NVFP4");
            else
                in->algo = xasprintf("W%dA%d%s", nb, an ? an : 16, fp ? "_FLOAT" : "_INT");
            in->weight_only = (!a || cJSON_IsNull(a)) ? 1 : 0;
        }
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(q, "format");
    if (!in->algo && cJSON_IsString(fmt))
        in->algo = mp_utf8_clean(fmt->valuestring, strlen(fmt->valuestring));
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(q, "kv_cache_scheme");
    if (cJSON_IsObject(kv)) {
        const cJSON *kb = cJSON_GetObjectItemCaseSensitive(kv, "num_bits");
        const cJSON *kt = cJSON_GetObjectItemCaseSensitive(kv, "type");
        in->kv_cache = xasprintf("%s%d", cJSON_IsString(kt) && !strcmp(kt->valuestring, "float")
                                             ? "FP" : "INT",
                                 cJSON_IsNumber(kb) ? (int)kb->valuedouble : 8);
    }
    add_exclude(in, cJSON_GetObjectItemCaseSensitive(q, "ignore"));
}

static void parse_quant_config(const cJSON *cfg, struct mp_inspect *in)
{
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(cfg, "quantization_config");
    if (!cJSON_IsObject(q))
        return;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
    const char *method = cJSON_IsString(m) ? m->valuestring : "";
    if (!strcmp(method, "compressed-tensors")) {
        parse_ct(q, in);
    } else if (!strcmp(method, "modelopt") || cJSON_GetObjectItemCaseSensitive(q, "quant_algo")) {
        parse_modelopt(q, "modelopt", "config.json", in);
    } else if (method[0]) {
        in->quantized = true;
        in->producer = mp_utf8_clean(method, strlen(method));
        in->quant_file = xstrdup("config.json");
        in->weight_only = -1;
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_shards(const char *dir, struct mp_inspect *in, struct mp_diag *d)
{
    DIR *dp = opendir(dir);
    if (!dp) {
        snprintf(d->file, sizeof(d->file), "%s", dir);
        return mp_diag_set(d, -errno, 0, "%s", strerror(errno));
    }
    struct mp_strv names = MP_STRV_INIT;
    struct dirent *de;
    while ((de = readdir(dp)) && names.n < MAX_SHARDS) {
        size_t l = strlen(de->d_name);
        if (l > 12 && !strcmp(de->d_name + l - 12, ".safetensors"))
            mp_strv_push(&names, de->d_name);
    }
    closedir(dp);
    if (names.n > 1)
        qsort(names.v, names.n, sizeof(*names.v), cmp_str);
    int rc = 0;
    for (size_t i = 0; i < names.n && !rc; i++) {
        char *path = xasprintf("%s/%s", dir, names.v[i]);
        rc = mp_st_read_file(path, &in->st, d);
        free(path);
    }
    mp_strv_release(&names);
    return rc;
}

static const char *dim_alignment(long v, char *tmp, size_t n)
{
    long best = 0;
    for (long a = 256; a >= 16; a /= 2)
        if (v % a == 0) {
            best = a;
            break;
        }
    if (best == 256)
        snprintf(tmp, n, "a multiple of 256");
    else if (best)
        snprintf(tmp, n, "a multiple of %ld but not of %ld", best, best * 2);
    else
        snprintf(tmp, n, "not a multiple of 16");
    return tmp;
}

/* Facts that decide backend support (reference/vllm-knobs.md §3). */
static void derive_notes(struct mp_inspect *in)
{
    if (!in->moe)
        add_note(in, xstrdup("no expert count in config.json: not a MoE model (the MoE backend "
                             "knobs do not apply)"));
    if (in->has_swiglu_limit)
        add_note(in, xasprintf("swiglu_limit=%g: vLLM filters the NvFp4 MoE auto list to backends "
                               "that apply the SwiGLU clamp, and an explicitly requested backend "
                               "without it fails with 'Model sets swiglu_limit=%g, but the "
                               "explicitly requested moe_backend=...'; on SM12x no backend "
                               "qualified before vLLM PR #46492 (June 2026)",
                               in->swiglu_limit, in->swiglu_limit));
    if (in->quantized && in->weight_only == 1 && in->algo && strstr(in->algo, "FP4"))
        add_note(in, xstrdup("weight-only NVFP4 (W4A16): FLASHINFER_CUTLASS and VLLM_CUTLASS take "
                             "W4A4 only ('quantization scheme' rejection, vllm #31085); auto "
                             "resolves to MARLIN on SM12x"));
    else if (in->quantized && in->weight_only == 0 && in->algo && strstr(in->algo, "FP4"))
        add_note(in, xstrdup("W4A4 NVFP4 (weights and activations): FLASHINFER_CUTLASS, "
                             "VLLM_CUTLASS and MARLIN all accept the scheme"));
    if (in->moe && in->activation && !in->gated)
        add_note(in, xasprintf("activation %s is not gated (no act_and_mul MLP): kernels that need "
                               "a gated MLP reject it with '... no act_and_mul MLP layer'",
                               in->activation));
    if (in->activation && strstr(in->activation, "swigluoai"))
        add_note(in, xstrdup("activation swigluoai: FlashInfer needs SWIGLUOAI_UNINTERLEAVE "
                             "support for it (flashinfer #3732)"));
    if (in->moe && in->experts >= 512)
        add_note(in, xasprintf("%ld experts: FLASHINFER_B12X was reported to hit illegal memory "
                               "accesses with 512-expert shapes on SM120 (flashinfer #5446)",
                               in->experts));
    char tmp[64];
    if (in->moe && in->intermediate_size > 0)
        add_note(in, xasprintf("MoE intermediate size %ld is %s (per tensor-parallel rank it is "
                               "divided by the TP size; grouped-GEMM tiles need the shard aligned)",
                               in->intermediate_size,
                               dim_alignment(in->intermediate_size, tmp, sizeof(tmp))));
    if (in->hidden_size > 0 && in->hidden_size % 128)
        add_note(in, xasprintf("hidden size %ld is %s", in->hidden_size,
                               dim_alignment(in->hidden_size, tmp, sizeof(tmp))));
    if (in->group_size > 0 && in->algo && strstr(in->algo, "FP4") && in->group_size != 16)
        add_note(in, xasprintf("FP4 group size %ld: NVFP4 kernels expect blocks of 16",
                               in->group_size));
    if (in->hybrid)
        add_note(in, xasprintf("hybrid Mamba/attention model (%ld Mamba, %ld attention layers): "
                               "the attention backend serves only part of the layers",
                               in->mamba_layers, in->attention_layers));
    if (in->kv_cache)
        add_note(in, xasprintf("KV cache quantized to %s: the attention backend must support it",
                               in->kv_cache));
    for (size_t i = 0; i < in->nexclude; i++) {
        if (strstr(in->exclude[i], "expert")) {
            add_note(in, xasprintf("some expert modules are excluded from quantization "
                                   "(\"%s\"): those layers run unquantized MoE kernels",
                                   in->exclude[i]));
            break;
        }
    }
    if (in->st.files && in->quantized && in->algo && strstr(in->algo, "FP4") && !in->st.fp4_weights)
        add_note(in, xstrdup("the quantization config says FP4 but no packed U8 weight tensors "
                             "were found in the safetensors headers"));
    if (in->multimodal)
        add_note(in, xstrdup("multimodal checkpoint: MoE settings read from text_config"));
}

int mp_inspect_dir(const char *dir, struct mp_inspect *in, struct mp_diag *d)
{
    memset(in, 0, sizeof(*in));
    in->dir = xstrdup(dir);
    in->experts = in->experts_per_token = in->intermediate_size = in->shared_experts = -1;
    in->hidden_size = in->num_layers = in->group_size = -1;
    in->mamba_layers = in->attention_layers = in->moe_layers = -1;
    in->weight_only = -1;
    in->gated = true;
    struct mp_diag local = MP_DIAG_INIT;
    if (!d)
        d = &local;
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(d->file, sizeof(d->file), "%s", dir);
        return mp_diag_set(d, MP_EPARSE, 0, "not a directory");
    }
    char *path = xasprintf("%s/config.json", dir);
    cJSON *cfg = NULL;
    int rc = load_json(path, &cfg, d);
    free(path);
    if (rc == -ENOENT)
        mp_diag_set(d, rc, 0, "no config.json: not a Hugging Face checkpoint folder");
    if (rc)
        return rc;
    parse_config(cfg, in);
    parse_quant_config(cfg, in);
    cJSON_Delete(cfg);

    path = xasprintf("%s/hf_quant_config.json", dir);
    cJSON *hq = NULL;
    rc = access(path, F_OK) == 0 ? load_json(path, &hq, d) : 0;
    free(path);
    if (rc)
        return rc;
    if (hq) {
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(hq, "quantization");
        const cJSON *prod = cJSON_GetObjectItemCaseSensitive(hq, "producer");
        const cJSON *pn = cJSON_GetObjectItemCaseSensitive(prod, "name");
        if (cJSON_IsObject(q)) {
            free(in->algo);
            in->algo = NULL;
            free(in->kv_cache);
            in->kv_cache = NULL;
            for (size_t i = 0; i < in->nexclude; i++)
                free(in->exclude[i]);
            in->nexclude = 0;
            in->group_size = -1;
            parse_modelopt(q, cJSON_IsString(pn) ? pn->valuestring : "modelopt",
                           "hf_quant_config.json", in);
        }
        cJSON_Delete(hq);
    }
    rc = read_shards(dir, in, d);
    if (rc)
        return rc;
    derive_notes(in);
    return 0;
}

/* ---- rendering ---- */

static cJSON *jlong(long v)
{
    return v < 0 ? cJSON_CreateNull() : cJSON_CreateNumber((double)v);
}

static cJSON *jstr(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

void mp_inspect_to_json(const struct mp_inspect *in, struct buf *out)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "architecture", jstr(in->architecture));
    cJSON_AddItemToObject(o, "model_type", jstr(in->model_type));
    cJSON_AddBoolToObject(o, "hybrid", in->hybrid);
    cJSON *l = cJSON_AddObjectToObject(o, "layers");
    cJSON_AddItemToObject(l, "total", jlong(in->num_layers));
    cJSON_AddItemToObject(l, "mamba", jlong(in->mamba_layers));
    cJSON_AddItemToObject(l, "attention", jlong(in->attention_layers));
    cJSON_AddItemToObject(l, "moe", jlong(in->moe_layers));
    cJSON_AddItemToObject(l, "pattern", jstr(in->layer_pattern));
    cJSON_AddItemToObject(o, "hidden_size", jlong(in->hidden_size));
    if (in->moe) {
        cJSON *m = cJSON_AddObjectToObject(o, "moe");
        cJSON_AddItemToObject(m, "experts", jlong(in->experts));
        cJSON_AddItemToObject(m, "experts_key", jstr(in->experts_key));
        cJSON_AddItemToObject(m, "experts_per_token", jlong(in->experts_per_token));
        cJSON_AddItemToObject(m, "shared_experts", jlong(in->shared_experts));
        cJSON_AddItemToObject(m, "intermediate_size", jlong(in->intermediate_size));
        cJSON_AddItemToObject(m, "activation", jstr(in->activation));
        cJSON_AddBoolToObject(m, "gated", in->gated);
        if (in->has_swiglu_limit)
            cJSON_AddNumberToObject(m, "swiglu_limit", in->swiglu_limit);
        else
            cJSON_AddNullToObject(m, "swiglu_limit");
    } else {
        cJSON_AddNullToObject(o, "moe");
    }
    if (in->quantized) {
        cJSON *q = cJSON_AddObjectToObject(o, "quantization");
        cJSON_AddItemToObject(q, "producer", jstr(in->producer));
        cJSON_AddItemToObject(q, "source", jstr(in->quant_file));
        cJSON_AddItemToObject(q, "algo", jstr(in->algo));
        cJSON_AddItemToObject(q, "group_size", jlong(in->group_size));
        if (in->weight_only < 0)
            cJSON_AddNullToObject(q, "weight_only");
        else
            cJSON_AddBoolToObject(q, "weight_only", in->weight_only == 1);
        cJSON_AddItemToObject(q, "kv_cache", jstr(in->kv_cache));
        cJSON *ex = cJSON_AddArrayToObject(q, "exclude");
        for (size_t i = 0; i < in->nexclude; i++)
            cJSON_AddItemToArray(ex, cJSON_CreateString(in->exclude[i]));
    } else {
        cJSON_AddNullToObject(o, "quantization");
    }
    cJSON *t = cJSON_AddObjectToObject(o, "tensors");
    cJSON_AddNumberToObject(t, "files", (double)in->st.files);
    cJSON_AddNumberToObject(t, "count", (double)in->st.tensors);
    cJSON_AddNumberToObject(t, "bytes", (double)in->st.bytes);
    cJSON *dt = cJSON_AddObjectToObject(t, "dtypes");
    for (size_t i = 0; i < in->st.ndtypes; i++)
        cJSON_AddNumberToObject(dt, in->st.dtypes[i].name, (double)in->st.dtypes[i].count);
    cJSON_AddNumberToObject(t, "fp4_weights", (double)in->st.fp4_weights);
    cJSON_AddNumberToObject(t, "fp8_scales", (double)in->st.fp8_scales);
    cJSON *n = cJSON_AddArrayToObject(o, "notes");
    for (size_t i = 0; i < in->nnotes; i++)
        cJSON_AddItemToArray(n, cJSON_CreateString(in->notes[i]));
    char *s = cJSON_Print(o);
    buf_adds(out, s);
    buf_addc(out, '\n');
    free(s);
    cJSON_Delete(o);
}

static void txt_long(struct buf *b, long v)
{
    if (v < 0)
        buf_adds(b, "?");
    else
        buf_printf(b, "%ld", v);
}

void mp_inspect_to_text(const struct mp_inspect *in, struct buf *b)
{
    buf_printf(b, "checkpoint:   %s\n", in->dir);
    buf_printf(b, "architecture: %s (model_type %s)%s\n", in->architecture ? in->architecture : "?",
               in->model_type ? in->model_type : "?", in->hybrid ? ", hybrid Mamba/attention" : "");
    if (in->moe) {
        buf_adds(b, "MoE:          ");
        txt_long(b, in->experts);
        buf_adds(b, " experts, ");
        txt_long(b, in->experts_per_token);
        buf_adds(b, " per token, intermediate size ");
        txt_long(b, in->intermediate_size);
        buf_printf(b, ", activation %s%s", in->activation ? in->activation : "?",
                   in->gated ? "" : " (not gated)");
        if (in->has_swiglu_limit)
            buf_printf(b, ", swiglu_limit %g", in->swiglu_limit);
        buf_adds(b, "\n");
    } else {
        buf_adds(b, "MoE:          no\n");
    }
    if (in->quantized) {
        buf_printf(b, "quantization: %s %s (from %s)", in->producer ? in->producer : "?",
                   in->algo ? in->algo : "?", in->quant_file ? in->quant_file : "?");
        if (in->group_size > 0)
            buf_printf(b, ", group size %ld", in->group_size);
        if (in->weight_only >= 0)
            buf_adds(b, in->weight_only ? ", weight-only" : ", weights and activations");
        if (in->kv_cache)
            buf_printf(b, ", KV cache %s", in->kv_cache);
        if (in->nexclude)
            buf_printf(b, ", %zu excluded module pattern%s", in->nexclude, in->nexclude == 1 ? "" : "s");
        buf_adds(b, "\n");
    } else {
        buf_adds(b, "quantization: none found\n");
    }
    buf_printf(b, "tensors:      %llu in %lu file%s, %llu bytes", in->st.tensors, in->st.files,
               in->st.files == 1 ? "" : "s", in->st.bytes);
    for (size_t i = 0; i < in->st.ndtypes; i++)
        buf_printf(b, "%s%s %llu", i ? ", " : " (", in->st.dtypes[i].name, in->st.dtypes[i].count);
    buf_adds(b, in->st.ndtypes ? ")\n" : "\n");
    for (size_t i = 0; i < in->nnotes; i++)
        buf_printf(b, "note: %s\n", in->notes[i]);
}

char *mp_inspect_quantization(const struct mp_inspect *in)
{
    if (!in->quantized || (!in->producer && !in->algo))
        return NULL;
    if (in->producer && in->algo)
        return xasprintf("%s (%s)", in->producer, in->algo);
    return xstrdup(in->producer ? in->producer : in->algo);
}
