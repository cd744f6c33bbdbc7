/* inherit.c - the inherited environment's data (model/inherit.h). */
#include "model/inherit.h"

#include <stdlib.h>
#include <string.h>

#include "secret.h"
#include "xalloc.h"

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

bool mp_inherit_is_tracked(const char *name)
{
    return has_prefix(name, "VLLM_") || has_prefix(name, "CUDA_") ||
           has_prefix(name, "FLASHINFER_");
}

bool mp_inherit_keep(const char *name)
{
    static const char *const keep[] = {
        "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT",
        "CUDA_CACHE_PATH", "CUDA_CACHE_MAXSIZE", "VLLM_CACHE_ROOT", "VLLM_CONFIG_ROOT",
        "VLLM_ASSETS_CACHE", "VLLM_HOST_IP", "FLASHINFER_WORKSPACE_BASE",
    };
    size_t len = strcspn(name, "=");
    for (size_t i = 0; i < MP_ARRAY_SIZE(keep); i++)
        if (strlen(keep[i]) == len && !strncmp(keep[i], name, len))
            return true;
    if (has_prefix(name, "CUDA_MPS_"))
        return true;
    return mp_is_secret_name(name, len);
}

void mp_inherited_add(struct mp_inherited *in, const char *name, const char *value, bool passed)
{
    in->v = xreallocarray(in->v, in->n + 1, sizeof(*in->v));
    struct mp_inh_var *v = &in->v[in->n++];
    memset(v, 0, sizeof(*v));
    v->name = xstrdup(name);
    v->value = xstrdup(mp_is_secret_name(name, strlen(name)) ? "***" : value);
    v->passed = passed;
    v->acts = MP_INH_NO;
}

size_t mp_inherited_nacting(const struct mp_inherited *in)
{
    size_t n = 0;
    for (size_t i = 0; i < in->n; i++)
        n += in->v[i].passed && in->v[i].acts != MP_INH_NO;
    return n;
}

void mp_inherited_copy(struct mp_inherited *dst, const struct mp_inherited *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->clean_env = src->clean_env;
    for (size_t i = 0; i < src->n; i++) {
        mp_inherited_add(dst, src->v[i].name, src->v[i].value, src->v[i].passed);
        struct mp_inh_var *v = &dst->v[dst->n - 1];
        v->acts = src->v[i].acts;
        v->affects = src->v[i].affects ? xstrdup(src->v[i].affects) : NULL;
        v->note = src->v[i].note ? xstrdup(src->v[i].note) : NULL;
    }
}

void mp_inherited_release(struct mp_inherited *in)
{
    for (size_t i = 0; i < in->n; i++) {
        free(in->v[i].name);
        free(in->v[i].value);
        free(in->v[i].affects);
        free(in->v[i].note);
    }
    free(in->v);
    memset(in, 0, sizeof(*in));
}
