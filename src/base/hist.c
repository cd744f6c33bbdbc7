/* hist.c - log-linear latency histogram (see hist.h). */
#include "compat.h"

#include "hist.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define UNITS_PER_MS 1e5 /* 10 ns units */
#define SUB_BITS 6       /* 64 sub-buckets per octave */
#define LINEAR 128       /* values below 2*2^SUB_BITS are counted exactly */
#define MAX_EXP 52       /* values up to 2^52 units (~1.4 years) */
#define NBUCKETS (LINEAR + (MAX_EXP - 7) * (1 << SUB_BITS))
#define BLOCK (1u << SUB_BITS) /* buckets per allocated block */
#define NBLOCKS (NBUCKETS / BLOCK)

_Static_assert(NBUCKETS == MP_HIST_NBUCKETS, "bucket layout changed: stored histograms too");
_Static_assert(NBUCKETS % BLOCK == 0, "blocks tile the buckets");

static unsigned bucket_of(uint64_t u)
{
    if (u < LINEAR)
        return (unsigned)u;
    unsigned e = 63u - (unsigned)__builtin_clzll(u); /* >= 7 */
    if (e >= MAX_EXP)
        return NBUCKETS - 1;
    unsigned shift = e - SUB_BITS;
    unsigned sub = (unsigned)(u >> shift); /* 64..127 */
    return LINEAR + (e - 7) * (1u << SUB_BITS) + (sub - (1u << SUB_BITS));
}

/* midpoint of a bucket, in units */
static double bucket_mid(unsigned idx)
{
    if (idx < LINEAR)
        return (double)idx + 0.5;
    unsigned k = idx - LINEAR;
    unsigned e = 7 + k / (1u << SUB_BITS);
    unsigned sub = (1u << SUB_BITS) + k % (1u << SUB_BITS);
    unsigned shift = e - SUB_BITS;
    double lo = ldexp((double)sub, (int)shift);
    return lo + ldexp(1.0, (int)shift) / 2;
}

static uint64_t *slot(struct mp_hist *h, unsigned idx)
{
    if (!h->blocks)
        h->blocks = xcalloc(NBLOCKS, sizeof(*h->blocks));
    uint64_t **b = &h->blocks[idx / BLOCK];
    if (!*b)
        *b = xcalloc(BLOCK, sizeof(**b));
    return &(*b)[idx % BLOCK];
}

void mp_hist_add(struct mp_hist *h, double ms)
{
    if (isnan(ms))
        return;
    if (ms < 0)
        ms = 0;
    double u = ms * UNITS_PER_MS;
    uint64_t ui = u >= 0x1p62 ? ((uint64_t)1 << 62) : (uint64_t)u;
    (*slot(h, bucket_of(ui)))++;
    if (h->n == 0 || ms < h->min)
        h->min = ms;
    if (h->n == 0 || ms > h->max)
        h->max = ms;
    /* Welford: the mean before and after this sample */
    double before = h->n ? h->sum / (double)h->n : 0;
    h->n++;
    h->sum += ms;
    double after = h->sum / (double)h->n;
    h->m2 += (ms - before) * (ms - after);
}

bool mp_hist_next_bucket(const struct mp_hist *h, unsigned *idx, uint64_t *count)
{
    if (!h->blocks)
        return false;
    for (unsigned i = *idx; i < NBUCKETS; i++) {
        const uint64_t *b = h->blocks[i / BLOCK];
        if (!b) {
            i = (i / BLOCK + 1) * BLOCK - 1; /* skip the whole block */
            continue;
        }
        if (b[i % BLOCK]) {
            *idx = i;
            *count = b[i % BLOCK];
            return true;
        }
    }
    return false;
}

int mp_hist_add_bucket(struct mp_hist *h, unsigned idx, uint64_t count)
{
    if (idx >= NBUCKETS)
        return -EINVAL;
    if (count)
        *slot(h, idx) += count;
    return 0;
}

static double clamp(const struct mp_hist *h, double v)
{
    return v < h->min ? h->min : v > h->max ? h->max : v;
}

double mp_hist_percentile(const struct mp_hist *h, double p)
{
    if (!h->n || !h->blocks)
        return 0;
    if (p <= 0)
        return h->min;
    if (p >= 100)
        return h->max;
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->n);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0, c;
    for (unsigned i = 0; mp_hist_next_bucket(h, &i, &c); i++) {
        seen += c;
        if (seen >= rank)
            return clamp(h, bucket_mid(i) / UNITS_PER_MS);
    }
    return h->max;
}

size_t mp_hist_quantiles(const struct mp_hist *h, double *out, size_t k)
{
    if (!h->n || !h->blocks || !k)
        return 0;
    if ((uint64_t)k > h->n)
        k = (size_t)h->n;
    uint64_t seen = 0, c;
    unsigned i = 0;
    bool have = mp_hist_next_bucket(h, &i, &c);
    for (size_t q = 0; q < k; q++) {
        /* rank of quantile q, 1-based */
        uint64_t rank = (uint64_t)floor(((double)q + 0.5) / (double)k * (double)h->n) + 1;
        if (rank > h->n)
            rank = h->n;
        while (have && seen + c < rank) {
            seen += c;
            i++;
            have = mp_hist_next_bucket(h, &i, &c);
        }
        out[q] = have ? clamp(h, bucket_mid(i) / UNITS_PER_MS) : h->max;
    }
    return k;
}

double mp_hist_mean(const struct mp_hist *h)
{
    return h->n ? h->sum / (double)h->n : 0;
}

double mp_hist_stddev(const struct mp_hist *h)
{
    if (h->n < 2 || !(h->m2 > 0))
        return 0;
    return sqrt(h->m2 / (double)h->n);
}

void mp_hist_merge(struct mp_hist *dst, const struct mp_hist *src)
{
    if (!src->n)
        return;
    uint64_t c;
    for (unsigned i = 0; mp_hist_next_bucket(src, &i, &c); i++)
        *slot(dst, i) += c;
    if (dst->n == 0 || src->min < dst->min)
        dst->min = src->min;
    if (dst->n == 0 || src->max > dst->max)
        dst->max = src->max;
    /* Chan et al.: the squared deviations of the union */
    double na = (double)dst->n, nb = (double)src->n;
    double delta = mp_hist_mean(src) - mp_hist_mean(dst);
    dst->m2 += src->m2 + (dst->n ? delta * delta * na * nb / (na + nb) : 0);
    dst->n += src->n;
    dst->sum += src->sum;
}

void mp_hist_free(struct mp_hist *h)
{
    if (h->blocks) {
        for (unsigned i = 0; i < NBLOCKS; i++)
            free(h->blocks[i]);
        free(h->blocks);
    }
    memset(h, 0, sizeof(*h));
}

double mp_hist_percentile_sorted(const double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    if (p <= 0)
        return v[0];
    if (p >= 100)
        return v[n - 1];
    double pos = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    double frac = pos - (double)lo;
    return v[lo] + (v[hi] - v[lo]) * frac;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void mp_hist_sort(double *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_double);
}
