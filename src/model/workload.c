/* workload.c - the workload's phases and prompts (model/workload.h). */
#include "model/workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

const char *const mp_prompts[MP_NPROMPTS + 1] = {
    "Explain in detail how a mixture-of-experts layer routes tokens to experts.",
    "Write a short story about a lighthouse keeper who discovers a new star.",
    "Describe the water cycle to a ten-year-old, step by step.",
    "List the main differences between TCP and UDP and when to use each.",
    "Summarise the history of the printing press and its effects on Europe.",
    "Give a recipe for a simple vegetable soup with exact quantities.",
    "Explain why the sky is blue, including Rayleigh scattering.",
    "Write a product description for a solar-powered bicycle lamp.",
    NULL,
};

void mp_workload_default(struct mp_workload *w)
{
    memset(w, 0, sizeof(*w));
    w->max_tokens = 256;
    w->ready_timeout_s = 1800;
    w->stall_timeout_s = 120;
    w->grace_s = 10;
    snprintf(w->phases[0].name, sizeof(w->phases[0].name), "warmup");
    w->phases[0].level = 1;
    w->phases[0].requests = 1;
    snprintf(w->phases[1].name, sizeof(w->phases[1].name), "sequential");
    w->phases[1].level = 1;
    w->phases[1].requests = 10;
    w->nphases = 2;
}

int mp_workload_add_conc(struct mp_workload *w, const char *spec)
{
    char *end = NULL;
    errno = 0;
    long level = strtol(spec, &end, 10);
    if (errno || end == spec || *end != ':' || level < 1 || level > 100000)
        return MP_EUSAGE;
    const char *r = end + 1;
    long reqs = strtol(r, &end, 10);
    if (errno || end == r || *end || reqs < 1 || reqs > 10000000)
        return MP_EUSAGE;
    if (w->nphases >= MP_MAX_PHASES)
        return MP_EUSAGE;
    struct mp_phase_spec *p = &w->phases[w->nphases++];
    snprintf(p->name, sizeof(p->name), "concurrency-%ld", level);
    p->level = (int)level;
    p->requests = (int)reqs;
    return 0;
}

