/* srvmetrics.c - see srvmetrics.h. */
#include "compat.h"

#include "model/srvmetrics.h"

#include <math.h>
#include <string.h>

double mp_srvm_quantile(const double *le, const double *cum, size_t n, double q)
{
    if (n == 0)
        return 0;
    double total = cum[n - 1];
    if (!(total > 0))
        return 0;
    if (q < 0)
        q = 0;
    if (q > 1)
        q = 1;
    double rank = q * total;
    size_t i = 0;
    while (i < n - 1 && cum[i] < rank)
        i++;
    if (isinf(le[i]))
        return i > 0 ? le[i - 1] : 0; /* only +Inf: nothing finite to say */
    double lo = i > 0 ? le[i - 1] : 0, below = i > 0 ? cum[i - 1] : 0;
    if (i == 0 && le[0] <= 0)
        return le[0];
    double inb = cum[i] - below;
    if (!(inb > 0))
        return le[i];
    return lo + (le[i] - lo) * ((rank - below) / inb);
}

bool mp_srvm_lat_delta(struct mp_srvm_lat *l, const double *le, const double *cum_a,
                       const double *cum_b, size_t n, double sum_a, double sum_b,
                       double count_a, double count_b)
{
    memset(l, 0, sizeof(*l));
    double d[64];
    if (n > 64)
        n = 64;
    for (size_t i = 0; i < n; i++) {
        d[i] = cum_b[i] - cum_a[i];
        if (!(d[i] >= 0) || !isfinite(d[i]))
            return false; /* went back, or NaN/Inf counts: no delta */
    }
    double dc = count_b - count_a, ds = sum_b - sum_a;
    if (!(dc >= 0) || !isfinite(dc) || !isfinite(ds))
        return false;
    if (dc == 0)
        return true;
    l->n = dc;
    l->mean_ms = ds / dc * 1e3;
    l->p50_ms = mp_srvm_quantile(le, d, n, 0.50) * 1e3;
    l->p99_ms = mp_srvm_quantile(le, d, n, 0.99) * 1e3;
    return true;
}

bool mp_srvm_queued_rule(int scrapes, int waiting_scrapes)
{
    return waiting_scrapes >= MP_SRVM_QUEUED_MIN_SCRAPES && waiting_scrapes <= scrapes &&
           (long long)waiting_scrapes * MP_SRVM_QUEUED_SHARE_DIV >= (long long)scrapes;
}

void mp_srvm_set_flags(struct mp_server_metrics *m)
{
    m->preempted = m->state == MP_SRVM_OK && m->preemptions > 0;
    m->queued = m->state == MP_SRVM_OK && m->waiting_max > 0 &&
                (!m->waiting_counted || mp_srvm_queued_rule(m->scrapes, m->waiting_scrapes));
}

const char *mp_srvm_state_name(enum mp_srvm_state s)
{
    switch (s) {
    case MP_SRVM_OK:
        return "ok";
    case MP_SRVM_UNREADABLE:
        return "unreadable";
    default:
        return "not scraped";
    }
}
