// moe_cuda.cu - see moe_cuda.h. A small NVFP4 MoE layer on the GPU with
// the paths refengine's CUDA mode uses (Marlin-like, two streams, racy two
// streams, faulty kernel, BF16 activations, block scales one block off).
#include "moe_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POISON_ID 0x00ffff00u      // routing index while the routing kernel recomputes
#define FAULT_OFFSET (1LL << 40)   // the faulty kernel's stray scale index (bytes)

// ------------------------------------------------------------------ formats

__host__ __device__ static inline float e2m1_value(unsigned nib)
{
    // E2M1: sign bit 3, magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6
    unsigned m = nib & 7u;
    float v = m < 4 ? 0.5f * (float)m : (m == 4 ? 2.f : (m == 5 ? 3.f : (m == 6 ? 4.f : 6.f)));
    return (nib & 8u) ? -v : v;
}

__host__ __device__ static inline float e4m3_value(unsigned b)
{
    // FP8 E4M3 (fn): bias 7, no infinities, 0x7f/0xff NaN
    unsigned e = (b >> 3) & 15u, m = b & 7u;
    float v;
    if ((b & 0x7fu) == 0x7fu)
        v = NAN;
    else if (e == 0)
        v = ldexpf((float)m / 8.f, -6);
    else
        v = ldexpf(1.f + (float)m / 8.f, (int)e - 7);
    return (b & 0x80u) ? -v : v;
}

static unsigned e4m3_encode(float x) // x >= 0, nearest (codes 0..0x7e increase)
{
    unsigned lo = 0, hi = 0x7e;
    while (lo < hi) { // first code with value >= x
        unsigned mid = (lo + hi) / 2;
        if (e4m3_value(mid) < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && x - e4m3_value(lo - 1) <= e4m3_value(lo) - x)
        return lo - 1;
    return lo;
}

static unsigned e2m1_encode(float x) // nearest; ties to the lower magnitude
{
    static const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.f};
    float a = fabsf(x);
    unsigned m = 0;
    while (m < 7 && a > mid[m])
        m++;
    return (x < 0 && m ? 8u : 0u) | m;
}

// ------------------------------------------------------------------ handle

struct moe_cuda {
    struct moe_cuda_cfg c;
    bool dead;
    // host weights
    uint8_t *h_up_q, *h_down_q, *h_up_s, *h_down_s;
    float *h_up_g, *h_down_g, *h_router;
    float *h_x, *h_out; // pinned
    unsigned *h_ids;    // pinned: the mid-step expert-load read-back
    // device
    uint8_t *up_q, *down_q, *up_s, *down_s;
    float *up_g, *down_g, *router;
    __half *w16_up, *w16_down;
    float *x, *out, *act, *y, *wts, *tmp;
    unsigned *ids;
    cudaStream_t sr, se;
    cudaEvent_t ev_route, ev_comb, ev_done;
    struct moe_cuda_host_weights hw;
};

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static float unif(uint64_t *s) // [-1, 1)
{
    return (float)((double)(mix(s) >> 11) / 4503599627370496.0 - 1.0);
}

static const char *const site_names[MOE_SITE_COUNT] = {
    "init", "input", "route", "event", "dequant", "experts", "combine", "output", "sync", "stats"};

extern "C" const char *moe_cuda_site_name(enum moe_cuda_site s)
{
    return (unsigned)s < MOE_SITE_COUNT ? site_names[s] : "?";
}

extern "C" bool moe_cuda_compiled(void)
{
    return true;
}

static int fail(struct moe_cuda *h, struct moe_cuda_err *e, cudaError_t rc, enum moe_cuda_site site,
                const char *call)
{
    if (h && rc != cudaErrorMemoryAllocation && rc != cudaErrorInvalidValue)
        h->dead = true;
    if (e) {
        e->code = (int)rc;
        e->site = site;
        snprintf(e->name, sizeof(e->name), "%s", cudaGetErrorName(rc));
        snprintf(e->text, sizeof(e->text), "%s", cudaGetErrorString(rc));
        snprintf(e->call, sizeof(e->call), "%s", call);
    }
    return (int)rc;
}

#define CK(call, site, name)                                                                       \
    do {                                                                                           \
        cudaError_t rc_ = (call);                                                                  \
        if (rc_ != cudaSuccess)                                                                    \
            return fail(h, e, rc_, site, name);                                                    \
    } while (0)
// like C10_CUDA_KERNEL_LAUNCH_CHECK after every launch
#define LAUNCHED(site)                                                                             \
    do {                                                                                           \
        cudaError_t rc_ = cudaGetLastError();                                                      \
        if (rc_ != cudaSuccess)                                                                    \
            return fail(h, e, rc_, site, "cudaLaunchKernel");                                      \
    } while (0)

// ------------------------------------------------------------------ kernels

__device__ static inline uint64_t globaltimer()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ static inline float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// one block per token: logits = router . x, softmax, top-k, renormalise.
// With delay_ns > 0 the block first publishes poison indices and holds
// them for delay_ns before writing the real ones (the race window).
__global__ void route_kernel(const float *__restrict__ x, const float *__restrict__ router,
                             int H, int E, int K, unsigned *ids, float *wts, uint32_t delay_ns)
{
    extern __shared__ float logits[];
    int t = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const float *xt = x + (size_t)t * H;
    for (int ex = warp; ex < E; ex += blockDim.x / 32) {
        const float *r = router + (size_t)ex * H;
        float s = 0;
        for (int i = lane; i < H; i += 32)
            s += r[i] * xt[i];
        s = warp_sum(s);
        if (lane == 0)
            logits[ex] = s;
    }
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    float mx = -INFINITY;
    for (int i = 0; i < E; i++)
        mx = fmaxf(mx, logits[i]);
    float den = 0;
    for (int i = 0; i < E; i++)
        den += expf(logits[i] - mx);
    unsigned sel[16];
    float p[16], psum = 0;
    for (int k = 0; k < K; k++) {
        int b = -1;
        for (int i = 0; i < E; i++) {
            bool taken = false;
            for (int j = 0; j < k; j++)
                taken |= sel[j] == (unsigned)i;
            if (!taken && (b < 0 || logits[i] > logits[b]))
                b = i;
        }
        sel[k] = (unsigned)b;
        p[k] = expf(logits[b] - mx) / den;
        psum += p[k];
    }
    volatile unsigned *vids = ids + (size_t)t * K;
    if (delay_ns) {
        for (int k = 0; k < K; k++)
            vids[k] = POISON_ID;
        __threadfence();
        uint64_t t0 = globaltimer();
        while (globaltimer() - t0 < delay_ns)
            ;
    }
    for (int k = 0; k < K; k++) {
        wts[(size_t)t * K + k] = p[k] / psum;
        vids[k] = sel[k];
    }
    __threadfence();
}

// fused NVFP4 gate/up: block (pair p = token*K + k, 8 rows), warp per row j:
// act[p][j] = silu(gate_j . x) * (up_j . x). bad != 0 only in the faulty
// kernel's faulting step: its scale index is not bounds-checked.
__global__ void up_kernel(const float *__restrict__ x, const unsigned *ids, int H, int I, int K,
                          const uint8_t *__restrict__ q, const uint8_t *__restrict__ s,
                          const float *__restrict__ g, float *act, long long bad)
{
    int pair = blockIdx.x, t = pair / K;
    int j = blockIdx.y * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (j >= I)
        return;
    unsigned ex = *(volatile const unsigned *)(ids + pair);
    const float *xt = x + (size_t)t * H;
    float acc[2];
    for (int half = 0; half < 2; half++) {
        size_t row = (size_t)ex * 2 * I + (size_t)(half ? I + j : j);
        const uint32_t *qr = (const uint32_t *)(q + row * (H / 2));
        const uint8_t *sr = s + row * (H / 16);
        float a = 0;
        for (int c8 = lane; c8 < H / 8; c8 += 32) {
            uint32_t w = qr[c8];
            float sc = e4m3_value(sr[(c8 * 8) / 16 + bad]);
            const float *xx = xt + c8 * 8;
            float d = 0;
            for (int n = 0; n < 8; n++)
                d += e2m1_value((w >> (4 * n)) & 15u) * xx[n];
            a += d * sc;
        }
        acc[half] = warp_sum(a) * g[ex];
    }
    if (lane == 0) {
        float gt = acc[0];
        act[(size_t)pair * I + j] = gt / (1.f + expf(-gt)) * acc[1];
    }
}

// fused NVFP4 down: y[p][r] = wts[p] * (down_r . act[p])
__global__ void down_kernel(const float *act, const unsigned *ids, const float *wts, int H, int I,
                            const uint8_t *__restrict__ q, const uint8_t *__restrict__ s,
                            const float *__restrict__ g, float *y)
{
    int pair = blockIdx.x;
    int r = blockIdx.y * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= H)
        return;
    unsigned ex = *(volatile const unsigned *)(ids + pair);
    size_t row = (size_t)ex * H + r;
    const uint32_t *qr = (const uint32_t *)(q + row * (I / 2));
    const uint8_t *sr = s + row * (I / 16);
    const float *a = act + (size_t)pair * I;
    float acc = 0;
    for (int c8 = lane; c8 < I / 8; c8 += 32) {
        uint32_t w = qr[c8];
        float sc = e4m3_value(sr[(c8 * 8) / 16]);
        float d = 0;
        for (int n = 0; n < 8; n++)
            d += e2m1_value((w >> (4 * n)) & 15u) * a[c8 * 8 + n];
        acc += d * sc;
    }
    acc = warp_sum(acc);
    if (lane == 0)
        y[(size_t)pair * H + r] = acc * g[ex] * wts[pair];
}

// the BF16 and WRONG_SCALE paths' expert kernels (the FP32 ones above stay
// as they are: the fault checks name up_kernel). bf16: inputs read rounded
// to BF16, every value written rounded to BF16 (FP32 products and sums);
// shift: block b of a row uses the scale of block b + 1 (the last block the
// first one's): one block off, always in bounds.
__device__ static inline float bf16r(float v)
{
    return __bfloat162float(__float2bfloat16_rn(v));
}

__device__ static inline int scale_block(int b, int nb, int shift)
{
    return shift ? (b + 1 == nb ? 0 : b + 1) : b;
}

__global__ void up_var_kernel(const float *__restrict__ x, const unsigned *ids, int H, int I, int K,
                              const uint8_t *__restrict__ q, const uint8_t *__restrict__ s,
                              const float *__restrict__ g, float *act, int bf16, int shift)
{
    int pair = blockIdx.x, t = pair / K;
    int j = blockIdx.y * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (j >= I)
        return;
    unsigned ex = ids[pair];
    const float *xt = x + (size_t)t * H;
    float acc[2];
    for (int half = 0; half < 2; half++) {
        size_t row = (size_t)ex * 2 * I + (size_t)(half ? I + j : j);
        const uint32_t *qr = (const uint32_t *)(q + row * (H / 2));
        const uint8_t *sr = s + row * (H / 16);
        float a = 0;
        for (int c8 = lane; c8 < H / 8; c8 += 32) {
            uint32_t w = qr[c8];
            float sc = e4m3_value(sr[scale_block((c8 * 8) / 16, H / 16, shift)]);
            const float *xx = xt + c8 * 8;
            float d = 0;
            for (int n = 0; n < 8; n++)
                d += e2m1_value((w >> (4 * n)) & 15u) * (bf16 ? bf16r(xx[n]) : xx[n]);
            a += d * sc;
        }
        acc[half] = warp_sum(a) * g[ex];
    }
    if (lane == 0) {
        float gt = bf16 ? bf16r(acc[0]) : acc[0], u = bf16 ? bf16r(acc[1]) : acc[1];
        float v = gt / (1.f + expf(-gt)) * u;
        act[(size_t)pair * I + j] = bf16 ? bf16r(v) : v;
    }
}

__global__ void down_var_kernel(const float *act, const unsigned *ids, const float *wts, int H, int I,
                                const uint8_t *__restrict__ q, const uint8_t *__restrict__ s,
                                const float *__restrict__ g, float *y, int bf16, int shift)
{
    int pair = blockIdx.x;
    int r = blockIdx.y * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= H)
        return;
    unsigned ex = ids[pair];
    size_t row = (size_t)ex * H + r;
    const uint32_t *qr = (const uint32_t *)(q + row * (I / 2));
    const uint8_t *sr = s + row * (I / 16);
    const float *a = act + (size_t)pair * I;
    float acc = 0;
    for (int c8 = lane; c8 < I / 8; c8 += 32) {
        uint32_t w = qr[c8];
        float sc = e4m3_value(sr[scale_block((c8 * 8) / 16, I / 16, shift)]);
        float d = 0;
        for (int n = 0; n < 8; n++)
            d += e2m1_value((w >> (4 * n)) & 15u) * a[c8 * 8 + n];
        acc += d * sc;
    }
    acc = warp_sum(acc);
    if (lane == 0) {
        float v = acc * g[ex] * wts[pair];
        y[(size_t)pair * H + r] = bf16 ? bf16r(v) : v;
    }
}

// combine in BF16: the sum rounded, the residual stream kept in BF16
__global__ void combine_bf16_kernel(const float *y, int H, int K, float *out, float *x, int residual)
{
    int t = blockIdx.x;
    for (int r = threadIdx.x; r < H; r += blockDim.x) {
        float s = 0;
        for (int k = 0; k < K; k++)
            s += y[((size_t)t * K + k) * H + r];
        s = bf16r(s);
        out[(size_t)t * H + r] = s;
        if (residual)
            x[(size_t)t * H + r] = bf16r(bf16r(x[(size_t)t * H + r]) + s);
    }
}

// Marlin-like: dequantise every expert some token uses to FP16.
// grid (E, chunks); each block covers a slice of that expert's rows.
__global__ void dequant_kernel(const unsigned *ids, int n_ids, int H, int I,
                               const uint8_t *uq, const uint8_t *us, const float *ug,
                               const uint8_t *dq, const uint8_t *ds, const float *dg,
                               __half *w16_up, __half *w16_down)
{
    int ex = blockIdx.x;
    int used = 0;
    for (int i = threadIdx.x; i < n_ids; i += blockDim.x)
        used |= ids[i] == (unsigned)ex;
    if (!__syncthreads_or(used))
        return;
    size_t up_n = (size_t)2 * I * H, down_n = (size_t)H * I;
    size_t total = up_n + down_n;
    size_t per = (total + gridDim.y - 1) / gridDim.y;
    size_t lo = (size_t)blockIdx.y * per, hi = lo + per < total ? lo + per : total;
    for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        if (i < up_n) {
            size_t k = (size_t)ex * up_n + i;
            unsigned nib = (uq[k / 2] >> (4 * (k & 1))) & 15u;
            size_t row = k / H, col = k % H;
            float v = e2m1_value(nib) * e4m3_value(us[row * (H / 16) + col / 16]) * ug[ex];
            w16_up[k] = __float2half_rn(v);
        } else {
            size_t k = (size_t)ex * down_n + (i - up_n);
            unsigned nib = (dq[k / 2] >> (4 * (k & 1))) & 15u;
            size_t row = k / I, col = k % I;
            float v = e2m1_value(nib) * e4m3_value(ds[row * (I / 16) + col / 16]) * dg[ex];
            w16_down[k] = __float2half_rn(v);
        }
    }
}

// FP16 GEMM rows (FP16 operands, FP32 accumulation), warp per output row
__global__ void up16_kernel(const float *x, const unsigned *ids, int H, int I, int K,
                            const __half *w16, float *act)
{
    int pair = blockIdx.x, t = pair / K;
    int j = blockIdx.y * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (j >= I)
        return;
    unsigned ex = ids[pair];
    const float *xt = x + (size_t)t * H;
    float acc[2];
    for (int half = 0; half < 2; half++) {
        const __half2 *w = (const __half2 *)(w16 + ((size_t)ex * 2 * I + (half ? I + j : j)) * H);
        float a = 0;
        for (int c = lane; c < H / 2; c += 32) {
            __half2 xv = __floats2half2_rn(xt[2 * c], xt[2 * c + 1]);
            float2 pr = __half22float2(__hmul2(w[c], xv));
            a += pr.x + pr.y;
        }
        acc[half] = warp_sum(a);
    }
    if (lane == 0)
        act[(size_t)pair * I + j] = acc[0] / (1.f + expf(-acc[0])) * acc[1];
}

__global__ void down16_kernel(const float *act, const unsigned *ids, const float *wts, int H, int I,
                              const __half *w16, float *y)
{
    int pair = blockIdx.x;
    int r = blockIdx.y * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= H)
        return;
    unsigned ex = ids[pair];
    const __half2 *w = (const __half2 *)(w16 + ((size_t)ex * H + r) * I);
    const float *a = act + (size_t)pair * I;
    float acc = 0;
    for (int c = lane; c < I / 2; c += 32) {
        float2 wv = __half22float2(w[c]);
        float2 av = __half22float2(__floats2half2_rn(a[2 * c], a[2 * c + 1]));
        acc += wv.x * av.x + wv.y * av.y;
    }
    acc = warp_sum(acc);
    if (lane == 0)
        y[(size_t)pair * H + r] = acc * wts[pair];
}

// out[t] = sum_k y[t*K+k]; x[t] += out[t] when residual
__global__ void combine_kernel(const float *y, int H, int K, float *out, float *x, int residual)
{
    int t = blockIdx.x;
    for (int r = threadIdx.x; r < H; r += blockDim.x) {
        float s = 0;
        for (int k = 0; k < K; k++)
            s += y[((size_t)t * K + k) * H + r];
        out[(size_t)t * H + r] = s;
        if (residual)
            x[(size_t)t * H + r] += s;
    }
}

__global__ void dequant_one_kernel(const uint8_t *q, const uint8_t *s, float g, int rows, int cols,
                                   int as_fp16, float *out)
{
    size_t n = (size_t)rows * cols;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (size_t)gridDim.x * blockDim.x) {
        unsigned nib = (q[k / 2] >> (4 * (k & 1))) & 15u;
        size_t row = k / cols, col = k % cols;
        float v = e2m1_value(nib) * e4m3_value(s[row * (cols / 16) + col / 16]) * g;
        out[k] = as_fp16 ? __half2float(__float2half_rn(v)) : v;
    }
}

// a hang: one warp spins until a flag no one sets is set (a kernel that
// never ends, as a deadlocked pipeline would); the globaltimer read keeps
// the loop from being optimised into a trap
__global__ void moe_spin_kernel(volatile const unsigned *flag, unsigned long long *sink)
{
    unsigned long long t = 0;
    while (*flag == 0)
        t += globaltimer() & 1;
    if (threadIdx.x == 0)
        *sink = t;
}

// ------------------------------------------------------------------ host

static void quantize(const float *w, int rows, int cols, uint8_t *q, uint8_t *s, float *g)
{
    float amax = 0;
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        amax = fmaxf(amax, fabsf(w[i]));
    float gs = amax > 0 ? amax / (6.f * 448.f) : 1.f;
    *g = gs;
    memset(q, 0, (size_t)rows * cols / 2);
    for (int r = 0; r < rows; r++)
        for (int b = 0; b < cols / 16; b++) {
            const float *blk = w + (size_t)r * cols + b * 16;
            float bm = 0;
            for (int i = 0; i < 16; i++)
                bm = fmaxf(bm, fabsf(blk[i]));
            unsigned sb = e4m3_encode(bm / (6.f * gs));
            s[(size_t)r * (cols / 16) + b] = (uint8_t)sb;
            float sc = e4m3_value(sb) * gs;
            for (int i = 0; i < 16; i++) {
                unsigned nib = sc > 0 ? e2m1_encode(blk[i] / sc) : 0;
                size_t k = (size_t)r * cols + b * 16 + i;
                q[k / 2] |= (uint8_t)(nib << (4 * (k & 1)));
            }
        }
}

extern "C" const struct moe_cuda_host_weights *moe_cuda_weights(const struct moe_cuda *h)
{
    return &h->hw;
}

static int init_dev(struct moe_cuda *h, char *desc, size_t desclen, struct moe_cuda_err *e);

extern "C" int moe_cuda_init(const struct moe_cuda_cfg *cfg, struct moe_cuda **out, char *desc,
                             size_t desclen, struct moe_cuda_err *e)
{
    *out = NULL;
    if (e)
        memset(e, 0, sizeof(*e));
    struct moe_cuda *h = (struct moe_cuda *)calloc(1, sizeof(*h));
    if (!h)
        abort();
    h->c = *cfg;
    int H = cfg->hidden, I = cfg->inter, E = cfg->experts, K = cfg->top_k;
    if (H % 64 || I % 64 || H <= 0 || I <= 0 || E < 2 || E > 256 || K < 1 || K > 16 || K > E ||
        cfg->layers < 1) {
        free(h);
        return fail(NULL, e, cudaErrorInvalidValue, MOE_SITE_INIT, "moe_cuda_init");
    }
    int rc = init_dev(h, desc, desclen, e);
    if (rc) {
        moe_cuda_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

static int init_dev(struct moe_cuda *h, char *desc, size_t desclen, struct moe_cuda_err *e)
{
    const struct moe_cuda_cfg *cfg = &h->c;
    int H = cfg->hidden, I = cfg->inter, E = cfg->experts, K = cfg->top_k;
    CK(cudaSetDevice(0), MOE_SITE_INIT, "cudaSetDevice");
    if (desc) {
        cudaDeviceProp p;
        int drv = 0, rt = 0;
        CK(cudaGetDeviceProperties(&p, 0), MOE_SITE_INIT, "cudaGetDeviceProperties");
        cudaDriverGetVersion(&drv);
        cudaRuntimeGetVersion(&rt);
        snprintf(desc, desclen, "%s (sm_%d%d, %d SMs, %.0f GiB), driver API %d.%d, runtime %d.%d",
                 p.name, p.major, p.minor, p.multiProcessorCount,
                 (double)p.totalGlobalMem / 1073741824.0, drv / 1000, drv % 1000 / 10, rt / 1000,
                 rt % 1000 / 10);
    }
    size_t up_n = (size_t)E * 2 * I * H, down_n = (size_t)E * H * I;
    h->h_up_q = (uint8_t *)malloc(up_n / 2);
    h->h_down_q = (uint8_t *)malloc(down_n / 2);
    h->h_up_s = (uint8_t *)malloc(up_n / 16);
    h->h_down_s = (uint8_t *)malloc(down_n / 16);
    h->h_up_g = (float *)malloc(sizeof(float) * E);
    h->h_down_g = (float *)malloc(sizeof(float) * E);
    h->h_router = (float *)malloc(sizeof(float) * (size_t)E * H);
    float *tmp = (float *)malloc(sizeof(float) * (size_t)2 * I * H);
    if (!h->h_up_q || !h->h_down_q || !h->h_up_s || !h->h_down_s || !h->h_up_g || !h->h_down_g ||
        !h->h_router || !tmp)
        abort();
    uint64_t st = cfg->seed ^ 0x6d6f6563756461ULL;
    for (int ex = 0; ex < E; ex++) {
        // a few outliers per expert so block scales differ
        for (size_t i = 0; i < (size_t)2 * I * H; i++)
            tmp[i] = unif(&st) * (mix(&st) % 64 == 0 ? 4.f : 1.f) / sqrtf((float)H);
        quantize(tmp, 2 * I, H, h->h_up_q + (size_t)ex * I * H, h->h_up_s + (size_t)ex * 2 * I * H / 16,
                 &h->h_up_g[ex]);
        for (size_t i = 0; i < (size_t)H * I; i++)
            tmp[i] = unif(&st) * (mix(&st) % 64 == 0 ? 4.f : 1.f) / sqrtf((float)I);
        quantize(tmp, H, I, h->h_down_q + (size_t)ex * H * I / 2, h->h_down_s + (size_t)ex * H * I / 16,
                 &h->h_down_g[ex]);
    }
    for (size_t i = 0; i < (size_t)E * H; i++)
        h->h_router[i] = unif(&st) * 3.f / sqrtf((float)H);
    free(tmp);

    const int T = MOE_CUDA_MAX_TOKENS;
    CK(cudaMalloc(&h->up_q, up_n / 2), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->down_q, down_n / 2), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->up_s, up_n / 16), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->down_s, down_n / 16), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->up_g, sizeof(float) * E), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->down_g, sizeof(float) * E), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->router, sizeof(float) * (size_t)E * H), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->w16_up, sizeof(__half) * up_n), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->w16_down, sizeof(__half) * down_n), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->x, sizeof(float) * (size_t)T * H), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->out, sizeof(float) * (size_t)T * H), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->act, sizeof(float) * (size_t)T * K * I), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->y, sizeof(float) * (size_t)T * K * H), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->wts, sizeof(float) * (size_t)T * K), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->ids, sizeof(unsigned) * (size_t)T * K), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMalloc(&h->tmp, sizeof(float) * (size_t)2 * I * H), MOE_SITE_INIT, "cudaMalloc");
    CK(cudaMallocHost(&h->h_x, sizeof(float) * (size_t)T * H), MOE_SITE_INIT, "cudaMallocHost");
    CK(cudaMallocHost(&h->h_out, sizeof(float) * (size_t)T * H), MOE_SITE_INIT, "cudaMallocHost");
    CK(cudaMallocHost(&h->h_ids, sizeof(unsigned) * (size_t)T * K), MOE_SITE_INIT, "cudaMallocHost");
    CK(cudaMemset(h->ids, 0, sizeof(unsigned) * (size_t)T * K), MOE_SITE_INIT, "cudaMemset");
    CK(cudaMemset(h->wts, 0, sizeof(float) * (size_t)T * K), MOE_SITE_INIT, "cudaMemset");
    CK(cudaMemcpy(h->up_q, h->h_up_q, up_n / 2, cudaMemcpyHostToDevice), MOE_SITE_INIT, "cudaMemcpy");
    CK(cudaMemcpy(h->down_q, h->h_down_q, down_n / 2, cudaMemcpyHostToDevice), MOE_SITE_INIT, "cudaMemcpy");
    CK(cudaMemcpy(h->up_s, h->h_up_s, up_n / 16, cudaMemcpyHostToDevice), MOE_SITE_INIT, "cudaMemcpy");
    CK(cudaMemcpy(h->down_s, h->h_down_s, down_n / 16, cudaMemcpyHostToDevice), MOE_SITE_INIT, "cudaMemcpy");
    CK(cudaMemcpy(h->up_g, h->h_up_g, sizeof(float) * E, cudaMemcpyHostToDevice), MOE_SITE_INIT, "cudaMemcpy");
    CK(cudaMemcpy(h->down_g, h->h_down_g, sizeof(float) * E, cudaMemcpyHostToDevice), MOE_SITE_INIT, "cudaMemcpy");
    CK(cudaMemcpy(h->router, h->h_router, sizeof(float) * (size_t)E * H, cudaMemcpyHostToDevice),
       MOE_SITE_INIT, "cudaMemcpy");
    CK(cudaStreamCreateWithFlags(&h->sr, cudaStreamNonBlocking), MOE_SITE_INIT, "cudaStreamCreate");
    CK(cudaStreamCreateWithFlags(&h->se, cudaStreamNonBlocking), MOE_SITE_INIT, "cudaStreamCreate");
    CK(cudaEventCreateWithFlags(&h->ev_route, cudaEventDisableTiming), MOE_SITE_INIT, "cudaEventCreate");
    CK(cudaEventCreateWithFlags(&h->ev_comb, cudaEventDisableTiming), MOE_SITE_INIT, "cudaEventCreate");
    CK(cudaEventCreateWithFlags(&h->ev_done, cudaEventDisableTiming), MOE_SITE_INIT, "cudaEventCreate");
    CK(cudaDeviceSynchronize(), MOE_SITE_INIT, "cudaDeviceSynchronize");
    h->hw.up_q = h->h_up_q;
    h->hw.down_q = h->h_down_q;
    h->hw.up_s = h->h_up_s;
    h->hw.down_s = h->h_down_s;
    h->hw.up_g = h->h_up_g;
    h->hw.down_g = h->h_down_g;
    h->hw.router = h->h_router;
    return 0;
}

static int finish_from(struct moe_cuda *h, enum moe_cuda_path path, int ntok, const float *src,
                       float *dst, struct moe_cuda_err *e);

// one layer on h->x (ntok tokens); results in h->out (and h->x += out when residual)
static int layer(struct moe_cuda *h, enum moe_cuda_path path, int ntok, bool first,
                 uint32_t delay_ns, bool fault, bool residual, struct moe_cuda_err *e)
{
    const int H = h->c.hidden, I = h->c.inter, E = h->c.experts, K = h->c.top_k;
    int pairs = ntok * K;
    dim3 gup(pairs, (I + 7) / 8), gdown(pairs, (H + 7) / 8);
    if (path != MOE_CUDA_MARLIN && !first)
        CK(cudaStreamWaitEvent(h->sr, h->ev_comb, 0), MOE_SITE_EVENT, "cudaStreamWaitEvent");
    route_kernel<<<ntok, 256, sizeof(float) * E, h->sr>>>(h->x, h->router, H, E, K, h->ids, h->wts,
                                                           delay_ns);
    LAUNCHED(MOE_SITE_ROUTE);
    if (path == MOE_CUDA_MARLIN) {
        dequant_kernel<<<dim3(E, 8), 256, 0, h->sr>>>(h->ids, pairs, H, I, h->up_q, h->up_s, h->up_g,
                                                      h->down_q, h->down_s, h->down_g, h->w16_up,
                                                      h->w16_down);
        LAUNCHED(MOE_SITE_DEQUANT);
        up16_kernel<<<gup, 256, 0, h->sr>>>(h->x, h->ids, H, I, K, h->w16_up, h->act);
        LAUNCHED(MOE_SITE_EXPERTS);
        down16_kernel<<<gdown, 256, 0, h->sr>>>(h->act, h->ids, h->wts, H, I, h->w16_down, h->y);
        LAUNCHED(MOE_SITE_EXPERTS);
        combine_kernel<<<ntok, 256, 0, h->sr>>>(h->y, H, K, h->out, h->x, residual);
        LAUNCHED(MOE_SITE_COMBINE);
        return 0;
    }
    if (path != MOE_CUDA_RACY) {
        CK(cudaEventRecord(h->ev_route, h->sr), MOE_SITE_EVENT, "cudaEventRecord");
        CK(cudaStreamWaitEvent(h->se, h->ev_route, 0), MOE_SITE_EVENT, "cudaStreamWaitEvent");
    }
    if (path == MOE_CUDA_BF16 || path == MOE_CUDA_WRONG_SCALE) {
        int bf16 = path == MOE_CUDA_BF16, shift = path == MOE_CUDA_WRONG_SCALE;
        up_var_kernel<<<gup, 256, 0, h->se>>>(h->x, h->ids, H, I, K, h->up_q, h->up_s, h->up_g,
                                              h->act, bf16, shift);
        LAUNCHED(MOE_SITE_EXPERTS);
        down_var_kernel<<<gdown, 256, 0, h->se>>>(h->act, h->ids, h->wts, H, I, h->down_q,
                                                  h->down_s, h->down_g, h->y, bf16, shift);
        LAUNCHED(MOE_SITE_EXPERTS);
        if (bf16)
            combine_bf16_kernel<<<ntok, 256, 0, h->se>>>(h->y, H, K, h->out, h->x, residual);
        else
            combine_kernel<<<ntok, 256, 0, h->se>>>(h->y, H, K, h->out, h->x, residual);
        LAUNCHED(MOE_SITE_COMBINE);
    } else {
        long long bad = path == MOE_CUDA_FAULTY && fault ? FAULT_OFFSET : 0;
        up_kernel<<<gup, 256, 0, h->se>>>(h->x, h->ids, H, I, K, h->up_q, h->up_s, h->up_g,
                                          h->act, bad);
        LAUNCHED(MOE_SITE_EXPERTS);
        down_kernel<<<gdown, 256, 0, h->se>>>(h->act, h->ids, h->wts, H, I, h->down_q, h->down_s,
                                              h->down_g, h->y);
        LAUNCHED(MOE_SITE_EXPERTS);
        combine_kernel<<<ntok, 256, 0, h->se>>>(h->y, H, K, h->out, h->x, residual);
        LAUNCHED(MOE_SITE_COMBINE);
    }
    CK(cudaEventRecord(h->ev_comb, h->se), MOE_SITE_EVENT, "cudaEventRecord");
    return 0;
}

static int finish(struct moe_cuda *h, enum moe_cuda_path path, int ntok, float *dst,
                  struct moe_cuda_err *e)
{
    return finish_from(h, path, ntok, h->out, dst, e);
}

extern "C" int moe_cuda_hidden(struct moe_cuda *h, enum moe_cuda_path path, const uint64_t *seeds,
                               int n, float *out, struct moe_cuda_err *e)
{
    if (e)
        memset(e, 0, sizeof(*e));
    if (n < 1 || n > MOE_CUDA_MAX_TOKENS || (unsigned)path >= MOE_CUDA_PATH_COUNT)
        return fail(NULL, e, cudaErrorInvalidValue, MOE_SITE_INPUT, "moe_cuda_hidden");
    const int H = h->c.hidden;
    for (int t = 0; t < n; t++) {
        uint64_t s = seeds[t];
        for (int i = 0; i < H; i++)
            h->h_x[(size_t)t * H + i] = unif(&s);
    }
    CK(cudaMemcpyAsync(h->x, h->h_x, sizeof(float) * (size_t)n * H, cudaMemcpyHostToDevice, h->sr),
       MOE_SITE_INPUT, "cudaMemcpyAsync");
    for (int l = 0; l < h->c.layers; l++) {
        int rc = layer(h, path, n, l == 0, 0, false, true, e);
        if (rc)
            return rc;
    }
    return finish_from(h, path, n, h->x, out, e); // the residual stream
}

static int finish_from(struct moe_cuda *h, enum moe_cuda_path path, int ntok, const float *src,
                       float *dst, struct moe_cuda_err *e)
{
    cudaStream_t f = path == MOE_CUDA_MARLIN ? h->sr : h->se;
    size_t n = sizeof(float) * (size_t)ntok * h->c.hidden;
    CK(cudaMemcpyAsync(h->h_out, src, n, cudaMemcpyDeviceToHost, f), MOE_SITE_OUTPUT,
       "cudaMemcpyAsync");
    CK(cudaEventRecord(h->ev_done, f), MOE_SITE_OUTPUT, "cudaEventRecord");
    CK(cudaEventSynchronize(h->ev_done), MOE_SITE_SYNC, "cudaEventSynchronize");
    if (dst)
        memcpy(dst, h->h_out, n);
    return 0;
}

extern "C" int moe_cuda_step(struct moe_cuda *h, enum moe_cuda_path path,
                             const struct moe_cuda_step *st, struct moe_cuda_err *e)
{
    if (e)
        memset(e, 0, sizeof(*e));
    int ntok = st->ntok < 1 ? 1 : (st->ntok > MOE_CUDA_MAX_TOKENS ? MOE_CUDA_MAX_TOKENS : st->ntok);
    const int H = h->c.hidden;
    uint64_t s = st->input_seed;
    for (size_t i = 0; i < (size_t)ntok * H; i++)
        h->h_x[i] = unif(&s);
    CK(cudaMemcpyAsync(h->x, h->h_x, sizeof(float) * (size_t)ntok * H, cudaMemcpyHostToDevice, h->sr),
       MOE_SITE_INPUT, "cudaMemcpyAsync");
    // the window opens in one layer of the step, chosen by the seed
    int wl = (int)(st->input_seed % (uint64_t)h->c.layers);
    int fl = (int)((st->input_seed >> 8) % (uint64_t)h->c.layers);
    for (int l = 0; l < h->c.layers; l++) {
        int rc = layer(h, path, ntok, l == 0, l == wl ? st->route_delay_ns : 0,
                       st->fault && l == fl, true, e);
        if (rc)
            return rc;
        if (l == (h->c.layers - 1) / 2) {
            // half-way: read the routing back for expert-load statistics
            // (a synchronising host read, like a .cpu() in the forward pass)
            cudaStream_t f = path == MOE_CUDA_MARLIN ? h->sr : h->se;
            CK(cudaMemcpyAsync(h->h_ids, h->ids, sizeof(unsigned) * (size_t)ntok * h->c.top_k,
                               cudaMemcpyDeviceToHost, f),
               MOE_SITE_STATS, "cudaMemcpyAsync");
            CK(cudaStreamSynchronize(f), MOE_SITE_STATS, "cudaStreamSynchronize");
        }
    }
    return finish(h, path, ntok, NULL, e);
}

extern "C" int moe_cuda_forward(struct moe_cuda *h, enum moe_cuda_path path, const float *x,
                                int ntok, float *out, int *ids, float *wts, struct moe_cuda_err *e)
{
    if (e)
        memset(e, 0, sizeof(*e));
    if (ntok < 1 || ntok > MOE_CUDA_MAX_TOKENS)
        return fail(NULL, e, cudaErrorInvalidValue, MOE_SITE_INPUT, "moe_cuda_forward");
    const int H = h->c.hidden, K = h->c.top_k;
    memcpy(h->h_x, x, sizeof(float) * (size_t)ntok * H);
    CK(cudaMemcpyAsync(h->x, h->h_x, sizeof(float) * (size_t)ntok * H, cudaMemcpyHostToDevice, h->sr),
       MOE_SITE_INPUT, "cudaMemcpyAsync");
    int rc = layer(h, path, ntok, true, 0, false, false, e);
    if (rc)
        return rc;
    rc = finish(h, path, ntok, out, e);
    if (rc)
        return rc;
    CK(cudaDeviceSynchronize(), MOE_SITE_SYNC, "cudaDeviceSynchronize");
    if (ids) {
        unsigned *tmp = (unsigned *)malloc(sizeof(unsigned) * (size_t)ntok * K);
        if (!tmp)
            abort();
        CK(cudaMemcpy(tmp, h->ids, sizeof(unsigned) * (size_t)ntok * K, cudaMemcpyDeviceToHost),
           MOE_SITE_OUTPUT, "cudaMemcpy");
        for (int i = 0; i < ntok * K; i++)
            ids[i] = (int)tmp[i];
        free(tmp);
    }
    if (wts)
        CK(cudaMemcpy(wts, h->wts, sizeof(float) * (size_t)ntok * K, cudaMemcpyDeviceToHost),
           MOE_SITE_OUTPUT, "cudaMemcpy");
    return 0;
}

extern "C" int moe_cuda_dequant(struct moe_cuda *h, int ex, int which, bool as_fp16, float *out,
                                struct moe_cuda_err *e)
{
    if (e)
        memset(e, 0, sizeof(*e));
    const int H = h->c.hidden, I = h->c.inter;
    int rows = which ? H : 2 * I, cols = which ? I : H;
    if (ex < 0 || ex >= h->c.experts)
        return fail(NULL, e, cudaErrorInvalidValue, MOE_SITE_DEQUANT, "moe_cuda_dequant");
    size_t n = (size_t)rows * cols;
    const uint8_t *q = (which ? h->down_q : h->up_q) + (size_t)ex * n / 2;
    const uint8_t *s = (which ? h->down_s : h->up_s) + (size_t)ex * n / 16;
    float g = which ? h->h_down_g[ex] : h->h_up_g[ex];
    dequant_one_kernel<<<264, 256, 0, h->sr>>>(q, s, g, rows, cols, as_fp16, h->tmp);
    LAUNCHED(MOE_SITE_DEQUANT);
    CK(cudaStreamSynchronize(h->sr), MOE_SITE_SYNC, "cudaStreamSynchronize");
    CK(cudaMemcpy(out, h->tmp, sizeof(float) * n, cudaMemcpyDeviceToHost), MOE_SITE_OUTPUT,
       "cudaMemcpy");
    return 0;
}

extern "C" int moe_cuda_spin(struct moe_cuda *h)
{
    struct moe_cuda_err *e = NULL;
    // flag: ids[0] stays as it is (0 after the memset at init is not
    // guaranteed once steps ran): a zeroed scratch word of tmp is used
    CK(cudaMemsetAsync(h->tmp, 0, sizeof(unsigned), h->sr), MOE_SITE_EVENT, "cudaMemsetAsync");
    moe_spin_kernel<<<1, 32, 0, h->sr>>>((const unsigned *)h->tmp,
                                         (unsigned long long *)(h->tmp + 2));
    LAUNCHED(MOE_SITE_EXPERTS);
    h->dead = true; // never synchronize with it again: free leaves the device alone
    return 0;
}

extern "C" void moe_cuda_free(struct moe_cuda *h)
{
    if (!h)
        return;
    if (!h->dead) {
        cudaDeviceSynchronize();
        void *dev[] = {h->up_q, h->down_q, h->up_s, h->down_s, h->up_g, h->down_g, h->router,
                       h->w16_up, h->w16_down, h->x, h->out, h->act, h->y, h->wts, h->ids, h->tmp};
        for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
            cudaFree(dev[i]);
        cudaFreeHost(h->h_x);
        cudaFreeHost(h->h_out);
        cudaFreeHost(h->h_ids);
        cudaStreamDestroy(h->sr);
        cudaStreamDestroy(h->se);
        cudaEventDestroy(h->ev_route);
        cudaEventDestroy(h->ev_comb);
        cudaEventDestroy(h->ev_done);
    }
    free(h->h_up_q);
    free(h->h_down_q);
    free(h->h_up_s);
    free(h->h_down_s);
    free(h->h_up_g);
    free(h->h_down_g);
    free(h->h_router);
    free(h);
}
