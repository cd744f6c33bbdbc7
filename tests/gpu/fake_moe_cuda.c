/* fake_moe_cuda.c - a CPU stand-in for moe_cuda.cu with the same ABI, for
 * checking refengine's CUDA-mode plumbing (batching, error sites, engine
 * death, verdicts) on a machine without a GPU. It is NOT the GPU check: the
 * race and the fault here are decided by flags, not by real kernels.
 * moe_cuda_hidden (the logits' GPU term, refengine/cuda_lm.h) is computed
 * on the CPU with the same weights' recipe and the paths' roundings
 * emulated (FP16 for Marlin, BF16, block scales one block off), so the
 * correctness step of gpu-check dry-runs with numbers of the right size;
 * sums run in another order than the GPU's.
 *   make -C refengine/cuda fake   ->  build/cuda/refengine-fake */
#include "compat.h"

#include "cuda/moe_cuda.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct moe_cuda {
    struct moe_cuda_cfg c;
    bool blocking;
    uint64_t n;
    int deq_path;      /* the path the dequantised weights are for, -1 = none yet */
    float *up, *down;  /* [E][2I][H], [E][H][I] as that path reads them */
    float *router;     /* [E][H] */
};

static int err(struct moe_cuda_err *e, enum moe_cuda_site site);

/* ------------------------------------------------ the CPU model (hidden) */

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static float unif(uint64_t *s) /* [-1, 1) */
{
    return (float)((double)(mix(s) >> 11) / 4503599627370496.0 - 1.0);
}

static float e2m1_value(unsigned nib)
{
    static const float mag[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    return (nib & 8u) ? -mag[nib & 7u] : mag[nib & 7u];
}

static float e4m3_value(unsigned b)
{
    unsigned e = (b >> 3) & 15u, m = b & 7u;
    float v = e == 0 ? ldexpf((float)m / 8.f, -6) : ldexpf(1.f + (float)m / 8.f, (int)e - 7);
    return (b & 0x80u) ? -v : v;
}

static unsigned e4m3_encode(float x)
{
    unsigned lo = 0, hi = 0x7e;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (e4m3_value(mid) < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && x - e4m3_value(lo - 1) <= e4m3_value(lo) - x ? lo - 1 : lo;
}

static unsigned e2m1_encode(float x)
{
    static const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.f};
    float a = fabsf(x);
    unsigned m = 0;
    while (m < 7 && a > mid[m])
        m++;
    return (x < 0 && m ? 8u : 0u) | m;
}

/* round to nearest even, dropping the low `drop` bits of a float's
 * mantissa (BF16: 16; FP16: 13, within FP16's normal range) */
static float round_bits(float v, int drop)
{
    uint32_t b;
    memcpy(&b, &v, sizeof(b));
    if ((b & 0x7f800000u) == 0x7f800000u)
        return v;
    b += ((1u << (drop - 1)) - 1u) + ((b >> drop) & 1u);
    b &= ~((1u << drop) - 1u);
    memcpy(&v, &b, sizeof(v));
    return v;
}

/* FP16: below its normal range (2^-14) the step is 2^-24 */
static float h16(float v)
{
    return fabsf(v) >= 6.103515625e-05f ? round_bits(v, 13) : rintf(v * 16777216.f) / 16777216.f;
}
#define H16(v) h16(v)
#define B16(v) round_bits((v), 16)

/* one matrix [rows][cols]: the recipe of moe_cuda.cu's quantize(), then
 * dequantised as path reads it into out */
static void make_matrix(uint64_t *st, int rows, int cols, float fan, int path, float *out)
{
    float *w = xmalloc(sizeof(float) * (size_t)rows * cols), amax = 0;
    for (size_t i = 0; i < (size_t)rows * cols; i++) {
        w[i] = unif(st) * (mix(st) % 64 == 0 ? 4.f : 1.f) / sqrtf(fan);
        amax = fmaxf(amax, fabsf(w[i]));
    }
    float gs = amax > 0 ? amax / (6.f * 448.f) : 1.f;
    int nb = cols / 16;
    unsigned *sb = xmalloc(sizeof(unsigned) * (size_t)nb);
    for (int r = 0; r < rows; r++) {
        const float *row = w + (size_t)r * cols;
        for (int b = 0; b < nb; b++) {
            float bm = 0;
            for (int i = 0; i < 16; i++)
                bm = fmaxf(bm, fabsf(row[b * 16 + i]));
            sb[b] = e4m3_encode(bm / (6.f * gs));
        }
        for (int b = 0; b < nb; b++) {
            float sc = e4m3_value(sb[b]) * gs;
            int rb = path == MOE_CUDA_WRONG_SCALE ? (b + 1) % nb : b;
            for (int i = 0; i < 16; i++) {
                unsigned nib = sc > 0 ? e2m1_encode(row[b * 16 + i] / sc) : 0;
                float v = e2m1_value(nib) * e4m3_value(sb[rb]) * gs;
                out[(size_t)r * cols + b * 16 + i] = path == MOE_CUDA_MARLIN ? H16(v) : v;
            }
        }
    }
    free(sb);
    free(w);
}

static void make_weights(struct moe_cuda *h, int path)
{
    const int H = h->c.hidden, I = h->c.inter, E = h->c.experts;
    free(h->up);
    free(h->down);
    free(h->router);
    h->up = xmalloc(sizeof(float) * (size_t)E * 2 * I * H);
    h->down = xmalloc(sizeof(float) * (size_t)E * H * I);
    h->router = xmalloc(sizeof(float) * (size_t)E * H);
    uint64_t st = h->c.seed ^ 0x6d6f6563756461ULL;
    for (int ex = 0; ex < E; ex++) {
        make_matrix(&st, 2 * I, H, (float)H, path, h->up + (size_t)ex * 2 * I * H);
        make_matrix(&st, H, I, (float)I, path, h->down + (size_t)ex * H * I);
    }
    for (size_t i = 0; i < (size_t)E * H; i++)
        h->router[i] = unif(&st) * 3.f / sqrtf((float)H);
    h->deq_path = path;
}

static void route(const struct moe_cuda *h, const float *x, int *ids, float *wts)
{
    const int H = h->c.hidden, E = h->c.experts, K = h->c.top_k;
    float lg[256], mx = -INFINITY, den = 0, psum = 0, p[16];
    bool taken[256] = {false};
    for (int ex = 0; ex < E; ex++) {
        float s = 0;
        for (int i = 0; i < H; i++)
            s += h->router[(size_t)ex * H + i] * x[i];
        lg[ex] = s;
        mx = fmaxf(mx, s);
    }
    for (int ex = 0; ex < E; ex++)
        den += expf(lg[ex] - mx);
    for (int k = 0; k < K; k++) {
        int b = -1;
        for (int ex = 0; ex < E; ex++)
            if (!taken[ex] && (b < 0 || lg[ex] > lg[b]))
                b = ex;
        taken[b] = true;
        ids[k] = b;
        p[k] = expf(lg[b] - mx) / den;
        psum += p[k];
    }
    for (int k = 0; k < K; k++)
        wts[k] = p[k] / psum;
}

/* one layer for one token, x updated in place (residual) */
static void layer_cpu(const struct moe_cuda *h, int path, float *x, float *act, float *sum)
{
    const int H = h->c.hidden, I = h->c.inter, K = h->c.top_k;
    bool bf = path == MOE_CUDA_BF16, m16 = path == MOE_CUDA_MARLIN;
    int ids[16];
    float wts[16];
    route(h, x, ids, wts);
    memset(sum, 0, sizeof(float) * (size_t)H);
    for (int k = 0; k < K; k++) {
        const float *up = h->up + (size_t)ids[k] * 2 * I * H, *dn = h->down + (size_t)ids[k] * H * I;
        for (int j = 0; j < I; j++) {
            float a[2];
            for (int half = 0; half < 2; half++) {
                const float *w = up + (size_t)(half ? I + j : j) * H;
                float s = 0;
                for (int i = 0; i < H; i++)
                    s += m16 ? H16(w[i] * H16(x[i])) : w[i] * (bf ? B16(x[i]) : x[i]);
                a[half] = bf ? B16(s) : s;
            }
            float v = a[0] / (1.f + expf(-a[0])) * a[1];
            act[j] = bf ? B16(v) : v;
        }
        for (int r = 0; r < H; r++) {
            const float *w = dn + (size_t)r * I;
            float s = 0;
            for (int j = 0; j < I; j++)
                s += w[j] * (m16 ? H16(act[j]) : act[j]);
            float v = s * wts[k];
            sum[r] += bf ? B16(v) : v;
        }
    }
    for (int r = 0; r < H; r++)
        x[r] = bf ? B16(B16(x[r]) + B16(sum[r])) : x[r] + sum[r];
}

int moe_cuda_hidden(struct moe_cuda *h, enum moe_cuda_path path, const uint64_t *seeds, int n,
                    float *out, struct moe_cuda_err *e)
{
    const int H = h->c.hidden;
    if (n < 1 || n > MOE_CUDA_MAX_TOKENS || (unsigned)path >= MOE_CUDA_PATH_COUNT)
        return err(e, MOE_SITE_INPUT);
    if (h->deq_path != (int)path)
        make_weights(h, path);
    float *act = xmalloc(sizeof(float) * (size_t)h->c.inter), *sum = xmalloc(sizeof(float) * (size_t)H);
    for (int t = 0; t < n; t++) {
        float *x = out + (size_t)t * H;
        uint64_t s = seeds[t];
        for (int i = 0; i < H; i++)
            x[i] = unif(&s);
        for (int l = 0; l < h->c.layers; l++)
            layer_cpu(h, path, x, act, sum);
    }
    free(act);
    free(sum);
    return 0;
}

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
    h->deq_path = -1;
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
    if (!h)
        return;
    free(h->up);
    free(h->down);
    free(h->router);
    free(h);
}

const char *moe_cuda_site_name(enum moe_cuda_site s)
{
    static const char *const names[MOE_SITE_COUNT] = {
        "init", "input", "route", "event", "dequant", "experts", "combine", "output", "sync", "stats"};
    return (unsigned)s < MOE_SITE_COUNT ? names[s] : "?";
}
