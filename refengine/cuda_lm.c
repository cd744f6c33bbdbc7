/* cuda_lm.c - see cuda_lm.h. */
#include "compat.h"

#include "cuda_lm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "xalloc.h"

#define CTX_SLOTS 2048 /* cached hidden vectors (contexts) */
#define ROW_SLOTS 512  /* cached readout rows (tokens) */

struct re_cuda_lm {
    struct re_cuda_lm_cfg cfg;
    struct re_lm_term term;
    bool failed;
    uint64_t ctx_key[CTX_SLOTS];
    bool ctx_ok[CTX_SLOTS];
    float *ctx_y;               /* [CTX_SLOTS][H]: RMS-normalised hidden vectors */
    uint64_t row_key[ROW_SLOTS];
    bool row_ok[ROW_SLOTS];
    float *row;                 /* [ROW_SLOTS][H] */
};

static void row_of(uint64_t th, uint64_t seed, int hidden, float *row)
{
    uint64_t st = th ^ (seed * 0x9e3779b97f4a7c15ULL) ^ 0x726561646f7574ULL;
    double a = sqrt(3.0 / hidden);
    for (int i = 0; i < hidden; i++)
        row[i] = (float)(a * ((double)(re_gen_mix(&st) >> 11) / 4503599627370496.0 - 1.0));
}

/* y / rms(y) into out; false when y is 0 (or not finite) */
static bool normalise(const float *y, int hidden, float *out)
{
    double ss = 0;
    for (int i = 0; i < hidden; i++)
        ss += (double)y[i] * y[i];
    double rms = sqrt(ss / hidden);
    if (!(rms > 0) || !isfinite(rms))
        return false;
    for (int i = 0; i < hidden; i++)
        out[i] = (float)(y[i] / rms);
    return true;
}

static double dot(const float *a, const float *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

double re_cuda_lm_readout(const float *y, int hidden, uint64_t th, uint64_t seed, double scale)
{
    float *yn = xmalloc(sizeof(float) * (size_t)hidden), *row = xmalloc(sizeof(float) * (size_t)hidden);
    double v = 0;
    if (normalise(y, hidden, yn)) {
        row_of(th, seed, hidden, row);
        v = scale * dot(row, yn, hidden);
    }
    free(yn);
    free(row);
    return v;
}

/* the normalised hidden vector of ctx (NULL: the GPU failed, or y is 0) */
static const float *hidden_of(struct re_cuda_lm *c, uint64_t ctx)
{
    size_t H = (size_t)c->cfg.hidden, slot = (size_t)(ctx % CTX_SLOTS);
    float *y = c->ctx_y + slot * H;
    if (c->ctx_ok[slot] && c->ctx_key[slot] == ctx)
        return y;
    if (c->failed)
        return NULL;
    uint64_t seed = ctx ^ c->cfg.seed ^ 0x68696464656eULL;
    struct moe_cuda_err e;
    c->ctx_ok[slot] = false;
    if (moe_cuda_hidden(c->cfg.gpu, c->cfg.path, &seed, 1, y, &e) != 0) {
        c->failed = true;
        if (c->cfg.fail)
            c->cfg.fail(&e);
        return NULL;
    }
    if (!normalise(y, c->cfg.hidden, y))
        return NULL;
    c->ctx_key[slot] = ctx;
    c->ctx_ok[slot] = true;
    return y;
}

static const float *row_cached(struct re_cuda_lm *c, uint64_t th)
{
    size_t H = (size_t)c->cfg.hidden, slot = (size_t)(th % ROW_SLOTS);
    float *r = c->row + slot * H;
    if (!c->row_ok[slot] || c->row_key[slot] != th) {
        row_of(th, c->cfg.seed, c->cfg.hidden, r);
        c->row_key[slot] = th;
        c->row_ok[slot] = true;
    }
    return r;
}

static double term_fn(void *arg, uint64_t ctx, uint64_t th)
{
    struct re_cuda_lm *c = arg;
    const float *y = hidden_of(c, ctx);
    return y ? c->cfg.scale * dot(row_cached(c, th), y, c->cfg.hidden) : 0;
}

struct re_cuda_lm *re_cuda_lm_new(const struct re_cuda_lm_cfg *cfg)
{
    struct re_cuda_lm *c = xcalloc(1, sizeof(*c));
    c->cfg = *cfg;
    c->ctx_y = xcalloc((size_t)CTX_SLOTS * (size_t)cfg->hidden, sizeof(float));
    c->row = xcalloc((size_t)ROW_SLOTS * (size_t)cfg->hidden, sizeof(float));
    c->term = (struct re_lm_term){.fn = term_fn, .arg = c};
    return c;
}

const struct re_lm_term *re_cuda_lm_term(struct re_cuda_lm *c)
{
    return &c->term;
}

void re_cuda_lm_free(struct re_cuda_lm *c)
{
    if (!c)
        return;
    free(c->ctx_y);
    free(c->row);
    free(c);
}
