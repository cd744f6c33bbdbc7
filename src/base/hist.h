/* hist.h - latency histograms with bounded memory.
 *
 * struct mp_hist is a log-linear histogram of millisecond samples: values are counted in
 * 10-nanosecond units, exactly below 1.28 us and with 64 sub-buckets per power of two above, so
 * any percentile it reports is within 1% (relative) of a sample of that rank (bucket midpoint:
 * <= 0.8%), clamped to the exact min and max. Memory: one 24 KiB array allocated on the first
 * sample, whatever the number of samples. Use it for long runs (soak); mean, min, max and count
 * are exact.
 *
 *   struct mp_hist h = MP_HIST_INIT;
 *   mp_hist_add(&h, 12.5);
 *   double p99 = mp_hist_percentile(&h, 99);
 *   mp_hist_free(&h);
 *
 * Percentile rule (histogram): nearest rank, the smallest sample with at least p% of the samples
 * at or below it. For small exact sets, mp_hist_percentile_sorted() uses numpy.percentile's
 * default linear interpolation, which is what `vllm bench serve` reports. */
#ifndef MP_BASE_HIST_H
#define MP_BASE_HIST_H

#include "compat.h"

struct mp_hist {
    uint64_t *counts; /* owned; NULL until the first sample */
    uint64_t n;
    double sum, min, max;
};
#define MP_HIST_INIT { NULL, 0, 0.0, 0.0, 0.0 }

/* Add one sample in milliseconds. Negative values count as 0; NaN is ignored. */
void mp_hist_add(struct mp_hist *h, double ms);
/* p in [0, 100]. Returns 0 for an empty histogram. */
double mp_hist_percentile(const struct mp_hist *h, double p);
double mp_hist_mean(const struct mp_hist *h);
/* dst += src (src unchanged). */
void mp_hist_merge(struct mp_hist *dst, const struct mp_hist *src);
/* Release memory; h becomes empty (MP_HIST_INIT). Accepts an empty histogram. */
void mp_hist_free(struct mp_hist *h);

/* numpy.percentile(v, p) with linear interpolation over an ascending array v of n values;
 * 0 when n == 0. */
double mp_hist_percentile_sorted(const double *v, size_t n, double p);
/* Sort v ascending in place (qsort helper for the above). */
void mp_hist_sort(double *v, size_t n);

#endif
