/* workload.h - what an attempt sends to the engine: the phases (warm-up,
 * sequential, concurrency steps, a soak's timed phase), the token budget,
 * the time limits and the fixed prompts. Plain data. */
#ifndef MP_MODEL_WORKLOAD_H
#define MP_MODEL_WORKLOAD_H

#include "compat.h"

#define MP_MAX_PHASES 16

struct mp_phase_spec {
    char name[32];  /* "warmup", "sequential", "concurrency-4", "extended" */
    int level;      /* requests in flight */
    int requests;   /* requests in the phase */
    double duration_s; /* > 0: also stop starting requests after this long (soak) */
    int input_tokens;  /* > 0: prompts of about this many tokens (mp_prompt_sized);
                        * 0: the workload's input_tokens */
};

struct mp_workload {
    struct mp_phase_spec phases[MP_MAX_PHASES];
    size_t nphases;
    /* After the phases, keep going at the highest level until this many
     * requests succeeded in total (diagnosis); 0 = no extension. */
    unsigned long min_total_ok;
    /* > 0: the extension starts no request once the attempt has run this
     * many seconds since spawn (the diagnosis budget); 0 = no limit. */
    double extend_budget_s;
    int max_tokens;
    int input_tokens;        /* --input-tokens: prompts of about this many tokens, 0 = the
                              * fixed short prompts (~15 tokens) */
    bool chat;               /* /v1/chat/completions, else /v1/completions */
    bool ignore_eos;         /* load requests ask the engine to ignore EOS (the default) */
    double temperature;      /* sampling temperature of the load requests (0: greedy) */
    double ready_timeout_s;
    double stall_timeout_s;
    double grace_s;          /* teardown grace period */
    const char *api_key;     /* borrowed; never logged */
};

/* The output check ("quality" phase, run/phases.c): greedy completions of the fixed quality
 * prompts, one at a time, of at most this many tokens, EOS honoured (not ignore_eos). */
#define MP_QUALITY_MAX_TOKENS 32

/* Default workload: warmup 1, sequential 10 (concurrency steps are added
 * with mp_workload_add_conc). */
void mp_workload_default(struct mp_workload *w);
/* Parse "LEVEL:REQUESTS" and append a concurrency phase. 0 or MP_EUSAGE. */
int mp_workload_add_conc(struct mp_workload *w, const char *spec);

/* The fixed prompts of the workload (NULL-terminated; request i sends
 * mp_prompts[i % MP_NPROMPTS]). */
#define MP_NPROMPTS 8
extern const char *const mp_prompts[MP_NPROMPTS + 1];

/* Prompt i of about `tokens` tokens (caller frees): mp_prompts[i %
 * MP_NPROMPTS] after a fixed preamble of notes, cut to 4 bytes a token (what
 * tokenizers give English text on average; the engine's usage says the real
 * count). A budget below preamble + question gives the question alone (or
 * with the preamble, whichever is nearer); one below the question gives the
 * question cut at the end of a word. The same i and tokens always give the same text, so healthy
 * backends still agree. tokens <= 0: the prompt itself. */
char *mp_prompt_sized(size_t i, int tokens);

/* Append the prefill check: one sequential phase "prefill-N" of `requests`
 * requests with prompts of about `tokens` tokens. 0 or MP_EUSAGE (no room
 * or a bad number). */
int mp_workload_add_prefill(struct mp_workload *w, int tokens, int requests);

#endif
