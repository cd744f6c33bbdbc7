/* hist.c - log-linear latency histogram (see hist.h). */
#include "compat.h"

#include "hist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#define UNITS_PER_MS 1e5 /* 10 ns units */
#define SUB_BITS 6       /* 64 sub-buckets per octave */
#define LINEAR 128       /* values below 2*2^SUB_BITS are counted exactly */
#define MAX_EXP 52       /* values up to 2^52 units (~1.4 years) */
#define NBUCKETS (LINEAR + (MAX_EXP - 7) * (1 << SUB_BITS))

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

void mp_hist_add(struct mp_hist *h, double ms)
{
    if (isnan(ms))
        return;
    if (ms < 0)
        ms = 0;
    if (!h->counts)
        h->counts = xcalloc(NBUCKETS, sizeof(*h->counts));
    double u = ms * UNITS_PER_MS;
    uint64_t ui = u >= 0x1p62 ? ((uint64_t)1 << 62) : (uint64_t)u;
    h->counts[bucket_of(ui)]++;
    if (h->n == 0 || ms < h->min)
        h->min = ms;
    if (h->n == 0 || ms > h->max)
        h->max = ms;
    h->n++;
    h->sum += ms;
}

double mp_hist_percentile(const struct mp_hist *h, double p)
{
    if (!h->n || !h->counts)
        return 0;
    if (p <= 0)
        return h->min;
    if (p >= 100)
        return h->max;
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->n);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < NBUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            double v = bucket_mid(i) / UNITS_PER_MS;
            return v < h->min ? h->min : v > h->max ? h->max : v;
        }
    }
    return h->max;
}

double mp_hist_mean(const struct mp_hist *h)
{
    return h->n ? h->sum / (double)h->n : 0;
}

void mp_hist_merge(struct mp_hist *dst, const struct mp_hist *src)
{
    if (!src->n)
        return;
    if (!dst->counts)
        dst->counts = xcalloc(NBUCKETS, sizeof(*dst->counts));
    for (unsigned i = 0; i < NBUCKETS; i++)
        dst->counts[i] += src->counts[i];
    if (dst->n == 0 || src->min < dst->min)
        dst->min = src->min;
    if (dst->n == 0 || src->max > dst->max)
        dst->max = src->max;
    dst->n += src->n;
    dst->sum += src->sum;
}

void mp_hist_free(struct mp_hist *h)
{
    free(h->counts);
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
