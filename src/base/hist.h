/* hist.h - latency histograms with bounded memory.
 *
 * struct mp_hist is a log-linear histogram of millisecond samples: values are counted in
 * 10-nanosecond units, exactly below 1.28 us and with 64 sub-buckets per power of two above, so
 * any percentile it reports is within 1% (relative) of a sample of that rank (bucket midpoint:
 * <= 0.8%), clamped to the exact min and max. Count, mean, min, max and the standard deviation
 * are exact (up to floating-point rounding).
 *
 * Memory is bounded and sparse: the 3008 buckets are kept in 47 blocks of 64 (one power of two
 * each, 512 bytes), allocated when a sample first lands in them, plus a 376-byte table of the
 * blocks allocated on the first sample. A latency distribution that spans a few powers of two
 * costs 1-3 KiB whatever the number of samples; the worst case is 24.4 KiB.
 *
 *   struct mp_hist h = MP_HIST_INIT;
 *   mp_hist_add(&h, 12.5);
 *   double p99 = mp_hist_percentile(&h, 99);
 *   mp_hist_free(&h);
 *
 * Percentile rule (histogram): nearest rank, the smallest sample with at least p% of the samples
 * at or below it. For small exact sets, mp_hist_percentile_sorted() uses numpy.percentile's
 * default linear interpolation.
 *
 * Storage (store/): a histogram is its non-empty buckets (mp_hist_next_bucket, index and count;
 * the index layout is fixed: MP_HIST_NBUCKETS buckets, see hist.c) and its summary fields
 * (n, sum, m2, min, max); mp_hist_add_bucket and the public fields rebuild it. */
#ifndef MP_BASE_HIST_H
#define MP_BASE_HIST_H

#include "compat.h"

#define MP_HIST_NBUCKETS 3008u /* bucket indices are 0 .. MP_HIST_NBUCKETS - 1 */

struct mp_hist {
    uint64_t **blocks; /* owned; NULL until the first sample, then 47 pointers, each NULL or
                        * 64 counts */
    uint64_t n;        /* samples; equals the sum of the bucket counts */
    double sum, min, max;
    double m2;         /* sum of squared deviations from the mean (Welford), for the stddev */
};
#define MP_HIST_INIT { NULL, 0, 0.0, 0.0, 0.0, 0.0 }

/* Add one sample in milliseconds. Negative values count as 0; NaN is ignored. */
void mp_hist_add(struct mp_hist *h, double ms);
/* p in [0, 100]. Returns 0 for an empty histogram. */
double mp_hist_percentile(const struct mp_hist *h, double p);
/* Mean of the samples; 0 for an empty histogram. */
double mp_hist_mean(const struct mp_hist *h);
/* Population standard deviation of the samples (numpy.std with ddof = 0, what `vllm bench
 * serve` reports as std); 0 for fewer than two samples. */
double mp_hist_stddev(const struct mp_hist *h);
/* dst += src (src unchanged): bucket-wise, and the summary (n, sum, min, max, m2) exactly. */
void mp_hist_merge(struct mp_hist *dst, const struct mp_hist *src);
/* Release memory; h becomes empty (MP_HIST_INIT). Accepts an empty histogram. */
void mp_hist_free(struct mp_hist *h);

/* Find the first non-empty bucket at index >= *idx: true with *idx and *count set, false when
 * there is none. Iterate with `for (unsigned i = 0; mp_hist_next_bucket(h, &i, &c); i++)`. */
bool mp_hist_next_bucket(const struct mp_hist *h, unsigned *idx, uint64_t *count);
/* Add count to bucket idx (a stored histogram read back) without touching n, sum, min, max or
 * m2, which the caller sets from the stored summary. 0, or -EINVAL for idx >=
 * MP_HIST_NBUCKETS. */
int mp_hist_add_bucket(struct mp_hist *h, unsigned idx, uint64_t count);
/* k evenly spaced quantiles (the values at ranks (i + 0.5) / k, i < k) into out, ascending, for
 * drawing the distribution's shape; returns how many were written: MIN(k, n). */
size_t mp_hist_quantiles(const struct mp_hist *h, double *out, size_t k);

/* numpy.percentile(v, p) with linear interpolation over an ascending array v of n values;
 * 0 when n == 0. */
double mp_hist_percentile_sorted(const double *v, size_t n, double p);
/* Sort v ascending in place (qsort helper for the above). */
void mp_hist_sort(double *v, size_t n);

#endif
