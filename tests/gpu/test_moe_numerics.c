/* test_moe_numerics.c - refengine's GPU MoE against a CPU reference in
 * double precision, on random data (needs a GPU; run by scripts/gpu-check.sh).
 *
 *   1. dequantisation: the GPU's FP32 decode of every expert's NVFP4 matrices
 *      matches this file's own decoder (in double) within one FP32 rounding
 *      (2^-24 relative: E2M1 x E4M3 is exact, the product with the FP32 global
 *      scale rounds once); the Marlin path's FP16 values within one FP16
 *      rounding (2^-11 relative; absolute below FP16's normal range).
 *   2. routing: top-k experts equal the CPU's (a swap only where the CPU's
 *      k-th and (k+1)-th logits are within 1e-4), weights within 1e-5.
 *   3. MoE output of one layer: relative L2 error against the double
 *      reference (using the GPU's routing) <= 1e-4 for the FP32 fused
 *      kernels (two-stream, faulty without its fault) and <= 1e-2 for the
 *      Marlin path (FP16 weights and activations), per token <= 4x that;
 *      the BF16 path (BF16 activations and outputs) <= 2e-2; the
 *      wrong-scale path (block scales one block off) <= 1e-4 against a
 *      reference that reads the scales one block off too (it computes
 *      exactly that, no fault) and >= 0.1 against the right one (how wrong).
 *   4. moe_cuda_hidden (the logits' term, refengine/cuda_lm.h): the same
 *      seeds give the same bits twice on every path; the relative L2
 *      distance of each path's final hidden state from the FP32 path's is
 *      printed (the sizes behind the logprob differences of gpu-correct.sh)
 *      and bounded: FP16 and BF16 below 2e-2, wrong-scale above 1e-2.
 *
 * Prints one line per check and "numerics: PASS" / "numerics: FAIL";
 * exit 0 / 1 (77 when no GPU is present). */
#include "compat.h"

#include "cuda/moe_cuda.h"
#include "xalloc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check(bool ok, const char *fmt, ...) MP_PRINTF(2, 3);
static void check(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures += !ok;
}

/* independent decoders (not the .cu ones) */
static double ref_e2m1(unsigned nib)
{
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    return (nib & 8) ? -mag[nib & 7] : mag[nib & 7];
}

static double ref_e4m3(unsigned b)
{
    int e = (int)((b >> 3) & 15), m = (int)(b & 7);
    double v = e == 0 ? ldexp(m / 8.0, -6) : ldexp(1.0 + m / 8.0, e - 7);
    return (b & 0x80) ? -v : v;
}

/* element (r, c) of a [rows][cols] NVFP4 matrix; shift: with the scale of
 * the next block of the row (the last block's: the first one's) */
static double ref_w_at(const uint8_t *q, const uint8_t *s, float g, int cols, size_t r, size_t c,
                       bool shift)
{
    size_t k = r * (size_t)cols + c, nb = (size_t)cols / 16, b = c / 16;
    unsigned nib = (q[k / 2] >> (4 * (k & 1))) & 15u;
    if (shift)
        b = b + 1 == nb ? 0 : b + 1;
    return ref_e2m1(nib) * ref_e4m3(s[r * nb + b]) * (double)g;
}

static double ref_w(const uint8_t *q, const uint8_t *s, float g, int cols, size_t r, size_t c)
{
    return ref_w_at(q, s, g, cols, r, c, false);
}

static uint64_t rng = 0x1234567;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

struct dims {
    int H, I, E, K;
};

static void test_dequant(struct moe_cuda *h, const struct dims *d)
{
    const struct moe_cuda_host_weights *w = moe_cuda_weights(h);
    size_t n = (size_t)2 * d->I * d->H;
    float *out = xmalloc(sizeof(float) * n);
    for (int which = 0; which < 2; which++)
        for (int fp16 = 0; fp16 < 2; fp16++) {
            double worst = 0;
            size_t nonzero = 0, total = 0;
            int err = 0;
            for (int ex = 0; ex < d->E && !err; ex++) {
                struct moe_cuda_err ce;
                err = moe_cuda_dequant(h, ex, which, fp16, out, &ce);
                if (err) {
                    check(false, "dequant expert %d: %s", ex, ce.text);
                    break;
                }
                int rows = which ? d->H : 2 * d->I, cols = which ? d->I : d->H;
                size_t m = (size_t)rows * cols;
                const uint8_t *q = (which ? w->down_q : w->up_q) + (size_t)ex * m / 2;
                const uint8_t *s = (which ? w->down_s : w->up_s) + (size_t)ex * m / 16;
                float g = which ? w->down_g[ex] : w->up_g[ex];
                for (size_t k = 0; k < m; k++) {
                    double ref = ref_w(q, s, g, cols, k / cols, k % cols);
                    double diff = fabs((double)out[k] - ref);
                    /* FP16: half an ulp relative, or its subnormal step */
                    double rel = diff / fmax(fabs(ref), 6.1e-5);
                    worst = fmax(worst, rel);
                    nonzero += ref != 0;
                    total++;
                }
            }
            if (err)
                continue;
            /* one rounding: FP32 (the product with the global scale) or FP16 */
            double bound = ldexp(1.0, fp16 ? -11 : -24) * (1 + 1e-9);
            check(worst <= bound && nonzero > total / 4,
                  "dequant %s %s: %zu values (%zu non-zero), max relative error %.3g (bound %.3g)",
                  which ? "down" : "gate/up", fp16 ? "-> FP16 (Marlin path)" : "-> FP32 (fused)",
                  total, nonzero, worst, bound);
        }
    free(out);
}

/* CPU routing: softmax over E, top-k, renormalised */
static void ref_route(const struct moe_cuda_host_weights *w, const struct dims *d, const float *x,
                      int *ids, double *wts, double *gap)
{
    double logits[256], mx = -INFINITY, den = 0;
    for (int e = 0; e < d->E; e++) {
        double s = 0;
        for (int i = 0; i < d->H; i++)
            s += (double)w->router[(size_t)e * d->H + i] * x[i];
        logits[e] = s;
        mx = fmax(mx, s);
    }
    for (int e = 0; e < d->E; e++)
        den += exp(logits[e] - mx);
    bool taken[256] = {false};
    double psum = 0, p[16];
    for (int k = 0; k <= d->K && k < d->E; k++) {
        int b = -1;
        for (int e = 0; e < d->E; e++)
            if (!taken[e] && (b < 0 || logits[e] > logits[b]))
                b = e;
        if (k == d->K) { /* the runner-up: how close was the call? */
            *gap = logits[ids[d->K - 1]] - logits[b];
            return;
        }
        taken[b] = true;
        ids[k] = b;
        p[k] = exp(logits[b] - mx) / den;
        psum += p[k];
        if (k == d->K - 1) {
            for (int j = 0; j < d->K; j++)
                wts[j] = p[j] / psum;
            *gap = INFINITY;
        }
    }
}

/* all experts decoded once, in double: [E][2I][H] and [E][H][I]; [1]: with
 * the block scales one block off (the wrong-scale path's reading) */
static double *ref_ups[2], *ref_dns[2], *ref_up, *ref_dn;

static void decode_all(const struct moe_cuda_host_weights *w, const struct dims *d, bool shift)
{
    size_t up_m = (size_t)2 * d->I * d->H, dn_m = (size_t)d->H * d->I;
    double *up = ref_ups[shift] = xmalloc(sizeof(double) * up_m * d->E);
    double *dn = ref_dns[shift] = xmalloc(sizeof(double) * dn_m * d->E);
    for (int e = 0; e < d->E; e++) {
        const uint8_t *uq = w->up_q + (size_t)e * up_m / 2, *us = w->up_s + (size_t)e * up_m / 16;
        const uint8_t *dq = w->down_q + (size_t)e * dn_m / 2, *ds = w->down_s + (size_t)e * dn_m / 16;
        for (size_t k = 0; k < up_m; k++)
            up[(size_t)e * up_m + k] = ref_w_at(uq, us, w->up_g[e], d->H, k / d->H, k % d->H, shift);
        for (size_t k = 0; k < dn_m; k++)
            dn[(size_t)e * dn_m + k] = ref_w_at(dq, ds, w->down_g[e], d->I, k / d->I, k % d->I, shift);
    }
}

/* CPU layer for one token with the given routing */
static void ref_layer(const struct dims *d, const float *x, const int *ids, const float *wts,
                      double *out)
{
    double *act = xmalloc(sizeof(double) * (size_t)d->I);
    for (int r = 0; r < d->H; r++)
        out[r] = 0;
    for (int k = 0; k < d->K; k++) {
        int e = ids[k];
        const double *up = ref_up + (size_t)e * 2 * d->I * d->H;
        const double *dn = ref_dn + (size_t)e * d->H * d->I;
        for (int j = 0; j < d->I; j++) {
            double g = 0, u = 0;
            for (int i = 0; i < d->H; i++) {
                g += up[(size_t)j * d->H + i] * x[i];
                u += up[(size_t)(d->I + j) * d->H + i] * x[i];
            }
            act[j] = g / (1.0 + exp(-g)) * u;
        }
        for (int r = 0; r < d->H; r++) {
            double s = 0;
            for (int j = 0; j < d->I; j++)
                s += dn[(size_t)r * d->I + j] * act[j];
            out[r] += (double)wts[k] * s;
        }
    }
    free(act);
}

/* bound > 0: relative L2 error at most bound (per token 4x); bound < 0:
 * at least -bound (a path that is meant to be wrong) */
static void test_forward(struct moe_cuda *h, const struct dims *d, enum moe_cuda_path path,
                         const char *name, double bound, int ntok)
{
    const struct moe_cuda_host_weights *w = moe_cuda_weights(h);
    float *x = xmalloc(sizeof(float) * (size_t)ntok * d->H);
    float *out = xmalloc(sizeof(float) * (size_t)ntok * d->H);
    int *ids = xmalloc(sizeof(int) * (size_t)ntok * d->K);
    float *wts = xmalloc(sizeof(float) * (size_t)ntok * d->K);
    double *ref = xmalloc(sizeof(double) * (size_t)d->H);
    for (size_t i = 0; i < (size_t)ntok * d->H; i++)
        x[i] = (float)urand();
    struct moe_cuda_err ce;
    if (moe_cuda_forward(h, path, x, ntok, out, ids, wts, &ce) != 0) {
        check(false, "%s forward (%d tokens): %s at %s (%s)", name, ntok, ce.text,
              moe_cuda_site_name(ce.site), ce.call);
        goto out;
    }
    double num = 0, den = 0, worst_tok = 0, worst_w = 0;
    int swaps = 0, bad_routes = 0;
    for (int t = 0; t < ntok; t++) {
        const float *xt = x + (size_t)t * d->H;
        int cids[16];
        double cw[16], gap = 0;
        ref_route(w, d, xt, cids, cw, &gap);
        bool same = true;
        for (int k = 0; k < d->K; k++)
            same = same && cids[k] == ids[t * d->K + k];
        if (!same) {
            if (gap < 1e-4)
                swaps++;
            else
                bad_routes++;
        } else {
            for (int k = 0; k < d->K; k++)
                worst_w = fmax(worst_w, fabs(cw[k] - (double)wts[t * d->K + k]));
        }
        ref_layer(d, xt, ids + t * d->K, wts + t * d->K, ref);
        double tn = 0, td = 0;
        for (int r = 0; r < d->H; r++) {
            double diff = (double)out[(size_t)t * d->H + r] - ref[r];
            tn += diff * diff;
            td += ref[r] * ref[r];
        }
        num += tn;
        den += td;
        worst_tok = fmax(worst_tok, sqrt(tn / fmax(td, 1e-300)));
    }
    double rel = sqrt(num / fmax(den, 1e-300));
    check(bad_routes == 0 && worst_w <= 1e-5,
          "%s routing (%d tokens, top-%d of %d): %d mismatches, %d near-tie swaps, max weight "
          "error %.2g",
          name, ntok, d->K, d->E, bad_routes, swaps, worst_w);
    if (bound < 0)
        check(rel >= -bound && den > 0,
              "%s output (%d tokens): relative L2 error %.3g (worst token %.3g), at least %.0e",
              name, ntok, rel, worst_tok, -bound);
    else
        check(rel <= bound && worst_tok <= 4 * bound && den > 0,
              "%s output (%d tokens): relative L2 error %.3g (worst token %.3g), bound %.0e",
              name, ntok, rel, worst_tok, bound);
out:
    free(x);
    free(out);
    free(ids);
    free(wts);
    free(ref);
}

/* moe_cuda_hidden: bitwise repeatable per path; each path's distance from
 * the FP32 path over n contexts of cfg.layers layers */
static void test_hidden(const struct dims *d, int layers)
{
    struct moe_cuda_cfg cfg = {.hidden = d->H, .inter = d->I, .experts = d->E, .top_k = d->K,
                               .layers = layers, .seed = 42};
    struct moe_cuda *h = NULL;
    struct moe_cuda_err ce;
    if (moe_cuda_init(&cfg, &h, NULL, 0, &ce) != 0) {
        check(false, "hidden: init: %s", ce.text);
        return;
    }
    enum { N = 64 };
    static const struct {
        enum moe_cuda_path path;
        const char *name;
        double lo, hi;
    } p[] = {{MOE_CUDA_TWO_STREAM, "FP32 (two-stream)", 0, 0},
             {MOE_CUDA_MARLIN, "FP16 (marlin)", 0, 2e-2},
             {MOE_CUDA_BF16, "BF16", 0, 2e-2},
             {MOE_CUDA_WRONG_SCALE, "wrong-scale", 1e-2, 1e9}};
    uint64_t seeds[N];
    for (int i = 0; i < N; i++)
        seeds[i] = 0x5eed0000u + (uint64_t)i * 7919;
    size_t n = (size_t)N * d->H;
    float *ref = xmalloc(sizeof(float) * n), *a = xmalloc(sizeof(float) * n),
          *b = xmalloc(sizeof(float) * n);
    for (size_t k = 0; k < MP_ARRAY_SIZE(p); k++) {
        if (moe_cuda_hidden(h, p[k].path, seeds, N, a, &ce) != 0 ||
            moe_cuda_hidden(h, p[k].path, seeds, N, b, &ce) != 0) {
            check(false, "hidden %s: %s at %s", p[k].name, ce.text, moe_cuda_site_name(ce.site));
            break;
        }
        if (k == 0)
            memcpy(ref, a, sizeof(float) * n);
        double num = 0, den = 0;
        for (size_t i = 0; i < n; i++) {
            num += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
            den += (double)ref[i] * ref[i];
        }
        double rel = sqrt(num / fmax(den, 1e-300));
        check(!memcmp(a, b, sizeof(float) * n) && (k == 0 || (rel > p[k].lo && rel <= p[k].hi)),
              "hidden %s (%d contexts, %d layers, residual): the same bits twice; relative L2 "
              "distance from FP32 %.3g", p[k].name, N, layers, rel);
    }
    free(ref);
    free(a);
    free(b);
    moe_cuda_free(h);
}

int main(void)
{
    struct dims d = {.H = 512, .I = 256, .E = 16, .K = 4};
    struct moe_cuda_cfg cfg = {
        .hidden = d.H, .inter = d.I, .experts = d.E, .top_k = d.K, .layers = 1, .seed = 42};
    struct moe_cuda *h = NULL;
    char desc[256];
    struct moe_cuda_err ce;
    if (moe_cuda_init(&cfg, &h, desc, sizeof(desc), &ce) != 0) {
        printf("numerics: no usable GPU (%s: %s)\n", ce.call, ce.text);
        return ce.code == 100 /* cudaErrorNoDevice */ || ce.code == 35 ? 77 : 1;
    }
    printf("device: %s\nlayer: hidden %d, intermediate %d, %d experts, top-%d, NVFP4\n", desc, d.H,
           d.I, d.E, d.K);
    test_dequant(h, &d);
    decode_all(moe_cuda_weights(h), &d, false);
    decode_all(moe_cuda_weights(h), &d, true);
    static const int ntoks[] = {1, 7, 64, 256};
    for (size_t i = 0; i < MP_ARRAY_SIZE(ntoks); i++) {
        ref_up = ref_ups[0];
        ref_dn = ref_dns[0];
        test_forward(h, &d, MOE_CUDA_TWO_STREAM, "two-stream", 1e-4, ntoks[i]);
        test_forward(h, &d, MOE_CUDA_FAULTY, "faulty (no fault)", 1e-4, ntoks[i]);
        test_forward(h, &d, MOE_CUDA_MARLIN, "marlin", 1e-2, ntoks[i]);
        test_forward(h, &d, MOE_CUDA_BF16, "bf16", 2e-2, ntoks[i]);
        test_forward(h, &d, MOE_CUDA_WRONG_SCALE, "wrong-scale vs the right scales", -0.1, ntoks[i]);
        ref_up = ref_ups[1];
        ref_dn = ref_dns[1];
        test_forward(h, &d, MOE_CUDA_WRONG_SCALE, "wrong-scale vs scales one block off", 1e-4,
                     ntoks[i]);
    }
    moe_cuda_free(h);
    for (int i = 0; i < 2; i++) {
        free(ref_ups[i]);
        free(ref_dns[i]);
    }
    test_hidden(&d, 4);
    printf("numerics: %s (%d failed)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
