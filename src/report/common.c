/* common.c - numbers and checks the report writers share (internal.h). */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "quality/quality.h"
#include "secret.h"
#include "version.h"
#include "verdict/recommend.h"
#include "verdict/stats.h"
#include "xalloc.h"

#include "report/internal.h"

/* the numbers the recommendation ranks by (verdict/recommend.h) */
double mp_rep_seq_tok_s(const struct mp_attempt_result *a)
{
    return mp_verdict_seq_tok_s(a);
}

double mp_rep_best_conc_tok_s(const struct mp_attempt_result *a)
{
    return mp_verdict_best_conc_tok_s(a);
}

double mp_rep_median_req_rate(const struct mp_attempt_result *a)
{
    struct mp_phase_metrics m;
    mp_attempt_metrics(a, &m);
    double v = m.req_tok_s.n ? mp_hist_percentile(&m.req_tok_s, 50) : -1;
    mp_phase_metrics_release(&m);
    return v;
}


struct mp_rep_cost mp_rep_cand_cost(const struct mp_cand_report *c)
{
    struct mp_rep_cost k = {0, 0, 0};
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->outcome == MP_OUT_ERROR && a->wall_s <= 0)
            continue; /* never started */
        k.starts++;
        k.engine_s += a->wall_s > 0 ? a->wall_s : 0;
        k.workload_s += a->workload_s > 0 ? a->workload_s : 0;
    }
    return k;
}

/* Seconds between two ISO 8601 times of the report, <0 when unknown. */
double mp_rep_iso_span(const char *a, const char *b)
{
    struct tm ta, tb;
    memset(&ta, 0, sizeof(ta));
    memset(&tb, 0, sizeof(tb));
    if (!a || !b || !strptime(a, "%Y-%m-%dT%H:%M:%S", &ta) || !strptime(b, "%Y-%m-%dT%H:%M:%S", &tb))
        return -1;
    return difftime(timegm(&tb), timegm(&ta));
}

bool mp_rep_is_same_config(const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    return p && p->outcome == MP_OUT_SAME_CONFIG;
}

/* The attempt whose numbers a candidate shows: its own first normal
 * attempt, or for a shared result its representative's. */
const struct mp_attempt_result *mp_rep_numbers_attempt(const struct mp_report *rep,
                                                       const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    if (!p || p->outcome != MP_OUT_SAME_CONFIG || !p->same_as)
        return p;
    for (size_t j = 0; j < rep->n; j++) {
        if (&rep->c[j] != c && !strcmp(rep->c[j].cand.name, p->same_as) && !mp_rep_is_same_config(&rep->c[j]))
            return mp_cand_primary(&rep->c[j]) ? mp_cand_primary(&rep->c[j]) : p;
    }
    return p;
}

/* What makes the candidates' numbers not comparable: first attempts whose
 * median SM clocks differ by more than 5 %, throttling, or no telemetry at
 * all (sentences into out). */
void mp_rep_gpu_comparability(const struct mp_report *rep, struct mp_strv *out)
{
    size_t sampled = 0, ran = 0;
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *a = mp_cand_primary(&rep->c[i]);
        if (!a || a->workload_s <= 0)
            continue;
        ran++;
        sampled += a->gpu.samples > 0;
        if (a->gpu.throttle_reasons) {
            char words[256];
            mp_gpu_reasons_str(a->gpu.throttle_reasons, words, sizeof(words));
            mp_strv_push_owned(out, xasprintf("%s: the GPU throttled its clocks (%s) while it ran",
                                              rep->c[i].cand.name, words));
        }
        for (size_t j = 0; j < i; j++) {
            const struct mp_attempt_result *b = mp_cand_primary(&rep->c[j]);
            if (!b || b->workload_s <= 0 || !a->gpu.sm_clock_mhz.n || !b->gpu.sm_clock_mhz.n)
                continue;
            double x = a->gpu.sm_clock_mhz.median, y = b->gpu.sm_clock_mhz.median;
            double d = fabs(x - y) / MP_MAX(x, y);
            if (d > 0.05)
                mp_strv_push_owned(
                    out, xasprintf("%s (%.0f MHz median SM clock) and %s (%.0f MHz) ran at clocks "
                                   "%.0f %% apart: their throughput is not directly comparable",
                                   rep->c[j].cand.name, y, rep->c[i].cand.name, x, d * 100));
        }
    }
    if (ran && !sampled)
        mp_strv_push(out, "GPU clocks were not sampled (no NVML): throughput comparisons assume "
                          "the GPU ran at the same clocks for every candidate");
}
