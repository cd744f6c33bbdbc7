/* fake_moe_cuda.c - a CPU stand-in for moe_cuda.cu with the same ABI, for
 * checking refengine's CUDA-mode plumbing (batching, error sites, engine
 * death, verdicts) on a machine without a GPU. It is NOT the GPU check: the
 * race and the fault here are decided by flags, not by real kernels.
 *   make -C refengine/cuda fake   ->  build/cuda/refengine-fake */
#include "compat.h"

#include "cuda/moe_cuda.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct moe_cuda {
    struct moe_cuda_cfg c;
    bool blocking;
    uint64_t n;
};

static int err(struct moe_cuda_err *e, enum moe_cuda_site site)
{
    memset(e, 0, sizeof(*e));
    e->code = 700;
    e->site = site;
    snprintf(e->name, sizeof(e->name), "cudaErrorIllegalAddress");
    snprintf(e->text, sizeof(e->text), "an illegal memory access was encountered");
    snprintf(e->call, sizeof(e->call), "fake");
    return 700;
}

bool moe_cuda_compiled(void)
{
    return true;
}

int moe_cuda_init(const struct moe_cuda_cfg *cfg, struct moe_cuda **out, char *desc,
                  size_t desclen, struct moe_cuda_err *e)
{
    MP_UNUSED(e);
    struct moe_cuda *h = xcalloc(1, sizeof(*h));
    h->c = *cfg;
    const char *b = getenv("CUDA_LAUNCH_BLOCKING");
    h->blocking = b && !strcmp(b, "1");
    snprintf(desc, desclen, "fake CPU device");
    *out = h;
    return 0;
}

int moe_cuda_step(struct moe_cuda *h, enum moe_cuda_path path, const struct moe_cuda_step *st,
                  struct moe_cuda_err *e)
{
    static const enum moe_cuda_site racy_sites[] = {MOE_SITE_ROUTE, MOE_SITE_EXPERTS,
                                                    MOE_SITE_STATS, MOE_SITE_SYNC};
    h->n++;
    if (path == MOE_CUDA_FAULTY && st->fault)
        return err(e, h->blocking ? MOE_SITE_EXPERTS : MOE_SITE_SYNC);
    if (path == MOE_CUDA_RACY && st->route_delay_ns && !h->blocking)
        return err(e, racy_sites[st->input_seed % MP_ARRAY_SIZE(racy_sites)]);
    return 0;
}

int moe_cuda_forward(struct moe_cuda *h, enum moe_cuda_path path, const float *x, int ntok,
                     float *out, int *ids, float *wts, struct moe_cuda_err *e)
{
    MP_UNUSED(h), MP_UNUSED(path), MP_UNUSED(x), MP_UNUSED(ntok), MP_UNUSED(out);
    MP_UNUSED(ids), MP_UNUSED(wts);
    return err(e, MOE_SITE_INPUT);
}

int moe_cuda_dequant(struct moe_cuda *h, int ex, int which, bool as_fp16, float *out,
                     struct moe_cuda_err *e)
{
    MP_UNUSED(h), MP_UNUSED(ex), MP_UNUSED(which), MP_UNUSED(as_fp16), MP_UNUSED(out);
    return err(e, MOE_SITE_DEQUANT);
}

const struct moe_cuda_host_weights *moe_cuda_weights(const struct moe_cuda *h)
{
    MP_UNUSED(h);
    return NULL;
}

int moe_cuda_spin(struct moe_cuda *h)
{
    MP_UNUSED(h);
    return 0; /* nothing spins here: the fake has no kernels */
}

void moe_cuda_free(struct moe_cuda *h)
{
    free(h);
}

const char *moe_cuda_site_name(enum moe_cuda_site s)
{
    static const char *const names[MOE_SITE_COUNT] = {
        "init", "input", "route", "event", "dequant", "experts", "combine", "output", "sync", "stats"};
    return (unsigned)s < MOE_SITE_COUNT ? names[s] : "?";
}
