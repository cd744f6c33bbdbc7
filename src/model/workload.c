/* workload.c - the workload's phases and prompts (model/workload.h). */
#include "model/workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "xalloc.h"

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

/* The notes a long prompt is made of: plain, varied sentences (tokenizers
 * give them the usual ~4 bytes a token), cycled in order. */
static const char *const notes[] = {
    "The committee met on a Tuesday to review the budget for the coming year.",
    "Rainfall in the northern valleys was twice the average for the season.",
    "A new bridge connects the old town with the industrial district by the river.",
    "The library extended its opening hours and added a reading room for children.",
    "Engineers replaced the signalling system on the eastern railway line.",
    "Local farmers reported an early harvest of apples, pears and plums.",
    "The museum opened an exhibition of maps drawn by sailors in the last century.",
    "Volunteers planted four hundred trees along the new cycling path.",
};

char *mp_prompt_sized(size_t i, int tokens)
{
    const char *q = mp_prompts[i % MP_NPROMPTS];
    if (tokens <= 0)
        return xstrdup(q);
    static const char head[] = "Read these notes, then answer the question after them.\n\n";
    size_t want = (size_t)tokens * 4, ql = strlen(q), hl = sizeof(head) - 1;
    /* shorter than the preamble and the question together: the question
     * alone, or with the preamble when that is nearer; shorter than the
     * question: the question cut at the end of the word that reaches want
     * bytes (its first word at least), so a small N is honoured instead of
     * growing to the preamble's ~30 tokens */
    if (want <= ql) {
        size_t n = want;
        while (n < ql && q[n] != ' ')
            n++;
        return xstrndup(q, n);
    }
    if (want < hl + 2 + ql && want - ql <= hl + 2 + ql - want)
        return xstrdup(q);
    struct buf b = BUF_INIT;
    buf_adds(&b, head);
    for (size_t k = i; b.len + ql + 2 < want; k++) {
        buf_adds(&b, notes[k % MP_ARRAY_SIZE(notes)]);
        buf_addc(&b, ' ');
    }
    if (b.len + ql + 2 > want && b.len > hl) {
        size_t keep = want > ql + 2 + hl ? want - ql - 2 : hl;
        if (keep < b.len)
            b.len = keep, b.data[b.len] = '\0';
    }
    buf_adds(&b, "\n\n");
    buf_adds(&b, q);
    return buf_detach(&b, NULL);
}

int mp_workload_add_prefill(struct mp_workload *w, int tokens, int requests)
{
    if (tokens < 1 || tokens > 1000000 || requests < 1 || w->nphases >= MP_MAX_PHASES)
        return MP_EUSAGE;
    struct mp_phase_spec *p = &w->phases[w->nphases++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "prefill-%d", tokens);
    p->level = 1;
    p->requests = requests;
    p->input_tokens = tokens;
    return 0;
}

void mp_workload_default(struct mp_workload *w)
{
    memset(w, 0, sizeof(*w));
    w->max_tokens = 256;
    w->ready_timeout_s = 1800;
    w->stall_timeout_s = 120;
    w->grace_s = 10;
    w->ignore_eos = true;
    w->temperature = 0;
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

