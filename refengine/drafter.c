/* drafter.c - a speculative drafter as vLLM builds one (drafter.h). */
#include "drafter.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "resolve.h"

/* oracle/unquantized.py: the --moe-backend values it takes and the enum
 * value each selects (reference/vllm-knobs.md 1.1: "Expected one of
 * ['triton', 'batched_triton', 'flashinfer_trtllm', 'flashinfer_cutlass',
 * 'aiter']"; fidelity audit: the enum values 'FlashInfer TRTLLM',
 * 'FlashInfer CUTLASS', 'ROCm AITER', 'TRITON', 'BATCHED_TRITON'). */
static const struct {
    const char *flag, *value;
} unquantized[] = {
    {"triton", "TRITON"},
    {"batched_triton", "BATCHED_TRITON"},
    {"flashinfer_trtllm", "FlashInfer TRTLLM"},
    {"flashinfer_cutlass", "FlashInfer CUTLASS"},
    {"aiter", "ROCm AITER"},
};

/* The candidate list the oracle prints (a real v0.23 log on Blackwell). */
#define UNQUANTIZED_LIST "['FlashInfer TRTLLM', 'FlashInfer CUTLASS', 'TRITON', 'BATCHED_TRITON']"

int re_drafter_parse(const char *json, struct re_drafter *d, char *err, size_t n)
{
    memset(d, 0, sizeof(*d));
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "method");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "num_speculative_tokens");
    int rc = 0;
    if (!cJSON_IsObject(j) || !cJSON_IsString(m) || !m->valuestring[0] ||
        strlen(m->valuestring) >= sizeof(d->method)) {
        snprintf(err, n, "--speculative-config: expected a JSON object with a \"method\", got '%.80s'",
                 json ? json : "");
        rc = -1;
    } else {
        d->on = true;
        snprintf(d->method, sizeof(d->method), "%s", m->valuestring);
        if (cJSON_IsString(model))
            snprintf(d->model, sizeof(d->model), "%s", model->valuestring);
        d->num_spec_tokens = cJSON_IsNumber(k) && k->valueint > 0 ? k->valueint : 1;
    }
    cJSON_Delete(j);
    return rc;
}

void re_drafter_config_repr(const struct re_drafter *d, const char *model, struct buf *b)
{
    if (!d || !d->on) {
        buf_adds(b, "None");
        return;
    }
    buf_printf(b, "SpeculativeConfig(method='%s', model='%s', num_spec_tokens=%d)", d->method,
               d->model[0] ? d->model : model, d->num_spec_tokens);
}

void re_drafter_resolve(const struct world *w, const char *moe_backend, struct re_drafter *d)
{
    d->moe = NULL;
    d->error[0] = '\0';
    d->has_moe_line = d->on && re_ver_ge(w, 0, 17, 0); /* the unquantized oracle, PR #33807 */
    if (!d->has_moe_line)
        return;
    /* auto: the world can say what the oracle picks on its device (after
     * vllm PR #39825 Triton on SM121, for example) */
    const char *auto_pick = w->drafter_moe[0] ? w->drafter_moe : "FlashInfer CUTLASS";
    if (!moe_backend) {
        d->moe = auto_pick;
        return;
    }
    char v[64];
    size_t i = 0;
    for (; moe_backend[i] && i + 1 < sizeof(v); i++)
        v[i] = moe_backend[i] == '-' ? '_' : (char)tolower((unsigned char)moe_backend[i]);
    v[i] = '\0';
    if (!strcmp(v, "auto")) {
        d->moe = auto_pick;
        return;
    }
    for (i = 0; i < MP_ARRAY_SIZE(unquantized); i++) {
        if (!strcmp(v, unquantized[i].flag)) {
            d->moe = unquantized[i].value;
            return;
        }
    }
    snprintf(d->error, sizeof(d->error),
             "ValueError: moe_backend='%s' is not supported for unquantized MoE. Expected one of "
             "['triton', 'batched_triton', 'flashinfer_trtllm', 'flashinfer_cutlass', 'aiter'].",
             v);
}

const char *re_drafter_line(const struct world *w, const struct re_drafter *d, char *out, size_t n,
                            const char **file, int *lineno)
{
    if (!d || !d->has_moe_line || !d->moe)
        return NULL;
    *file = "unquantized.py";
    *lineno = re_ver_ge(w, 0, 23, 0) ? 282 : 213;
    snprintf(out, n, "Using %s Unquantized MoE backend out of potential backends: %s.", d->moe,
             UNQUANTIZED_LIST);
    return out;
}
