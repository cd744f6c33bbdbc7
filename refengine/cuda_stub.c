/* cuda_stub.c - moe_cuda.h without CUDA: the normal refengine build (and CI)
 * links this; refengine/cuda/Makefile links moe_cuda.cu instead to make
 * refengine-cuda. A CUDA world fails at start-up with this stub. */
#include "compat.h"

#include "cuda/moe_cuda.h"

#include <stdio.h>
#include <string.h>

static int not_built(struct moe_cuda_err *e)
{
    if (e) {
        memset(e, 0, sizeof(*e));
        e->code = MOE_CUDA_ENOTBUILT;
        e->site = MOE_SITE_INIT;
        snprintf(e->name, sizeof(e->name), "NotBuilt");
        snprintf(e->text, sizeof(e->text), "this refengine was built without CUDA support");
        snprintf(e->call, sizeof(e->call), "moe_cuda_init");
    }
    return MOE_CUDA_ENOTBUILT;
}

bool moe_cuda_compiled(void)
{
    return false;
}

int moe_cuda_init(const struct moe_cuda_cfg *cfg, struct moe_cuda **out, char *desc,
                  size_t desclen, struct moe_cuda_err *e)
{
    MP_UNUSED(cfg);
    *out = NULL;
    if (desc && desclen)
        desc[0] = 0;
    return not_built(e);
}

int moe_cuda_step(struct moe_cuda *h, enum moe_cuda_path path, const struct moe_cuda_step *st,
                  struct moe_cuda_err *e)
{
    MP_UNUSED(h);
    MP_UNUSED(path);
    MP_UNUSED(st);
    return not_built(e);
}

int moe_cuda_hidden(struct moe_cuda *h, enum moe_cuda_path path, const uint64_t *seeds, int n,
                    float *out, struct moe_cuda_err *e)
{
    MP_UNUSED(h);
    MP_UNUSED(path);
    MP_UNUSED(seeds);
    MP_UNUSED(n);
    MP_UNUSED(out);
    return not_built(e);
}

int moe_cuda_forward(struct moe_cuda *h, enum moe_cuda_path path, const float *x, int ntok,
                     float *out, int *ids, float *wts, struct moe_cuda_err *e)
{
    MP_UNUSED(h);
    MP_UNUSED(path);
    MP_UNUSED(x);
    MP_UNUSED(ntok);
    MP_UNUSED(out);
    MP_UNUSED(ids);
    MP_UNUSED(wts);
    return not_built(e);
}

int moe_cuda_dequant(struct moe_cuda *h, int ex, int which, bool as_fp16, float *out,
                     struct moe_cuda_err *e)
{
    MP_UNUSED(h);
    MP_UNUSED(ex);
    MP_UNUSED(which);
    MP_UNUSED(as_fp16);
    MP_UNUSED(out);
    return not_built(e);
}

const struct moe_cuda_host_weights *moe_cuda_weights(const struct moe_cuda *h)
{
    MP_UNUSED(h);
    return NULL;
}

int moe_cuda_spin(struct moe_cuda *h)
{
    MP_UNUSED(h);
    return MOE_CUDA_ENOTBUILT;
}

void moe_cuda_free(struct moe_cuda *h)
{
    MP_UNUSED(h);
}

const char *moe_cuda_site_name(enum moe_cuda_site s)
{
    static const char *const names[MOE_SITE_COUNT] = {
        "init", "input", "route", "event", "dequant", "experts", "combine", "output", "sync", "stats"};
    return (unsigned)s < MOE_SITE_COUNT ? names[s] : "?";
}
