/* comparable.c - "Are the numbers comparable?" (internal.h): the GPU's
 * reasons (clocks, throttling, no telemetry) and the server metrics' flagged
 * phases (srvm.c), one list for report.md, report.html and report.json.
 * Above common.c and srvm.c, which it uses. */
#include "compat.h"

#include <math.h>

#include "xalloc.h"

#include "report/internal.h"
#include "report/srvm.h"

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

void mp_rep_comparability(const struct mp_report *rep, struct mp_strv *out)
{
    mp_rep_gpu_comparability(rep, out);
    mp_rep_srvm_flags(rep, out); /* phases that measured the KV cache or scheduler (srvm.c) */
}
