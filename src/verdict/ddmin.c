/* ddmin.c - delta debugging, after Zeller & Hildebrandt, "Simplifying and
 * Isolating Failure-Inducing Input" (TSE 2002), algorithm ddmin:
 *
 *   c = all items, g = 2 (number of parts)
 *   loop while |c| >= 2:
 *     split c into g parts d_1..d_g of near-equal size
 *     some d_i interesting          -> c = d_i, g = 2
 *     else some c - d_i interesting -> c = c - d_i, g = max(g - 1, 2)
 *     else g < |c|                  -> g = min(2g, |c|)
 *     else stop: with g == |c| every c - {x} was found uninteresting
 *   |c| == 1: test the empty set as well (1-minimality needs it)
 *
 * Subsets are kept as sorted index arrays; the cache maps a subset (as a
 * bit set over n items) to its answer. Tests are few and expensive (each
 * one starts an engine), so a linear cache with a hash pre-check is plenty. */
#include "compat.h"
#include "verdict/ddmin.h"
#include "xalloc.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    uint64_t hash;
    uint64_t *bits;        /* words bit set, owned */
    int result;            /* 0 or 1 */
};

struct dd {
    size_t n;              /* items */
    size_t words;          /* uint64 words per bit set */
    mp_ddmin_test_fn test;
    mp_ddmin_progress_fn progress;
    void *ud;
    struct entry *cache;
    size_t ncache, capcache;
    uint64_t *scratch;     /* bit set being looked up */
    struct mp_ddmin_stats st;
};

static uint64_t hash_bits(const uint64_t *b, size_t words)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over the words */
    for (size_t i = 0; i < words; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void to_bits(const struct dd *dd, const size_t *s, size_t k, uint64_t *bits)
{
    memset(bits, 0, dd->words * sizeof(*bits));
    for (size_t i = 0; i < k; i++)
        bits[s[i] / 64] |= (uint64_t)1 << (s[i] % 64);
}

/* Test subset s (ascending, k items) through the cache.
 * best/nbest: current smallest interesting set, for progress reports. */
static int run_test(struct dd *dd, const size_t *s, size_t k, const size_t *best, size_t nbest)
{
    uint64_t h;
    int r;

    to_bits(dd, s, k, dd->scratch);
    h = hash_bits(dd->scratch, dd->words);
    for (size_t i = 0; i < dd->ncache; i++) {
        if (dd->cache[i].hash == h && memcmp(dd->cache[i].bits, dd->scratch, dd->words * sizeof(uint64_t)) == 0) {
            dd->st.cache_hits++;
            return dd->cache[i].result;
        }
    }
    r = dd->test(dd->ud, s, k);
    dd->st.tests_run++;
    if (r < 0)
        return r;
    r = r ? 1 : 0;
    if (dd->ncache == dd->capcache) {
        dd->capcache = dd->capcache ? dd->capcache * 2 : 32;
        dd->cache = xreallocarray(dd->cache, dd->capcache, sizeof(*dd->cache));
    }
    dd->cache[dd->ncache].hash = h;
    dd->cache[dd->ncache].bits = xmalloc(dd->words * sizeof(uint64_t));
    memcpy(dd->cache[dd->ncache].bits, dd->scratch, dd->words * sizeof(uint64_t));
    dd->cache[dd->ncache].result = r;
    dd->ncache++;
    if (dd->progress)
        dd->progress(dd->ud, dd->st.tests_run, r ? s : best, r ? k : nbest);
    return r;
}

/* Seed the cache with a known answer (the full set, by precondition). */
static void remember(struct dd *dd, const size_t *s, size_t k, int result)
{
    if (dd->ncache == dd->capcache) {
        dd->capcache = dd->capcache ? dd->capcache * 2 : 32;
        dd->cache = xreallocarray(dd->cache, dd->capcache, sizeof(*dd->cache));
    }
    struct entry *e = &dd->cache[dd->ncache++];
    e->bits = xmalloc(dd->words * sizeof(uint64_t));
    to_bits(dd, s, k, e->bits);
    e->hash = hash_bits(e->bits, dd->words);
    e->result = result;
}

/* Part i of g of c (|c| = k): start and length, sizes differing by <= 1. */
static void part(size_t k, size_t g, size_t i, size_t *start, size_t *len)
{
    size_t base = k / g, extra = k % g;
    *start = i * base + (i < extra ? i : extra);
    *len = base + (i < extra ? 1 : 0);
}

int mp_ddmin(size_t n, mp_ddmin_test_fn test, void *ud, size_t **out, size_t *nout,
             struct mp_ddmin_stats *stats, mp_ddmin_progress_fn progress)
{
    struct dd dd;
    size_t *c = NULL, *tmp = NULL, k, g = 2;
    int rc = 0;

    if (!test || !out || !nout)
        return -EINVAL;
    *out = NULL;
    *nout = 0;
    memset(&dd, 0, sizeof(dd));
    if (stats)
        memset(stats, 0, sizeof(*stats));
    if (n == 0)
        return 0;
    dd.n = n;
    dd.words = (n + 63) / 64;
    dd.test = test;
    dd.progress = progress;
    dd.ud = ud;
    dd.scratch = xcalloc(dd.words, sizeof(uint64_t));
    c = xcalloc(n, sizeof(*c));
    tmp = xcalloc(n, sizeof(*tmp));
    for (size_t i = 0; i < n; i++)
        c[i] = i;
    k = n;
    remember(&dd, c, k, 1);

    while (k >= 2) {
        bool reduced = false;
        size_t start, len;

        if (g > k)
            g = k;
        /* 1. a part alone */
        for (size_t i = 0; i < g && !reduced; i++) {
            part(k, g, i, &start, &len);
            rc = run_test(&dd, c + start, len, c, k);
            if (rc < 0)
                goto out;
            if (rc == 1) {
                memmove(c, c + start, len * sizeof(*c));
                k = len;
                g = 2;
                reduced = true;
            }
        }
        /* 2. a complement (with g == 2 the complements are the parts) */
        for (size_t i = 0; i < g && !reduced && g > 2; i++) {
            size_t m = 0;
            part(k, g, i, &start, &len);
            memcpy(tmp, c, start * sizeof(*c));
            m = start;
            memcpy(tmp + m, c + start + len, (k - start - len) * sizeof(*c));
            m += k - start - len;
            rc = run_test(&dd, tmp, m, c, k);
            if (rc < 0)
                goto out;
            if (rc == 1) {
                memcpy(c, tmp, m * sizeof(*c));
                k = m;
                g = g - 1 > 2 ? g - 1 : 2;
                reduced = true;
            }
        }
        if (reduced)
            continue;
        /* 3. finer granularity, or done */
        if (g >= k)
            break;
        g = 2 * g < k ? 2 * g : k;
    }
    if (k == 1) {
        /* is the one remaining item needed at all? */
        rc = run_test(&dd, c, 0, c, k);
        if (rc < 0)
            goto out;
        if (rc == 1)
            k = 0;
    }
    rc = 0;
    if (k > 0) {
        *out = xmalloc(k * sizeof(**out));
        memcpy(*out, c, k * sizeof(**out));
    }
    *nout = k;

out:
    if (stats)
        *stats = dd.st;
    for (size_t i = 0; i < dd.ncache; i++)
        free(dd.cache[i].bits);
    free(dd.cache);
    free(dd.scratch);
    free(c);
    free(tmp);
    return rc;
}
