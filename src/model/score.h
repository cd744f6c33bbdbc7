/* score.h - what the scoring pass measured on one attempt (run/score.c
 * collects it while the engine is up, store/ keeps it, quality/ and
 * verdict/ judge it across candidates; docs/quality.md):
 *   - the teacher-forced prompt logprobs of the reference passages, once
 *     sequentially and once more at the top concurrency (the repeat: the
 *     run-to-run noise of this engine);
 *   - greedy continuations of a few prompts with their top-K logprobs;
 *   - the answers to the task problems.
 * Plain data: every string is owned; release with mp_score_free. */
#ifndef MP_MODEL_SCORE_H
#define MP_MODEL_SCORE_H

#include "compat.h"

#include <stddef.h>

enum mp_sc_status {
    MP_SC_NOT_RUN = 0, /* not asked (turned off, or the attempt ended first) */
    MP_SC_OK,          /* the engine answered */
    MP_SC_REFUSED,     /* the engine refused the request (4xx) or left the field out */
    MP_SC_FAILED,      /* the request failed otherwise, or the answer did not parse */
};
/* "not-run", "ok", "refused", "failed". */
const char *mp_sc_status_name(enum mp_sc_status s);
/* The inverse; an unknown or NULL name is MP_SC_NOT_RUN. */
enum mp_sc_status mp_sc_status_from_name(const char *s);

/* One teacher-forced position of a passage. */
struct mp_lp_pos {
    char *token;      /* the passage's own token here (the engine's decoding) */
    double lp;        /* its logprob */
    char *top1;       /* the engine's most likely token here */
    double top1_lp;   /* its logprob */
};
/* One passage's positions (n = 0: missing). */
struct mp_lp_seq {
    struct mp_lp_pos *p;
    size_t n;
};

struct mp_lp_alt {
    char *token;
    double lp;
};
/* One generated token with the engine's top alternatives (the token itself
 * among them where the engine lists it). */
struct mp_gen_tok {
    char *token;
    double lp;
    struct mp_lp_alt *top;
    size_t ntop;
};
/* One greedy continuation (n = 0: missing). */
struct mp_gen_seq {
    struct mp_gen_tok *t;
    size_t n;
};

/* One task problem's answer. */
struct mp_task_ans {
    char *expected;   /* the answer key's number ("19", "-3.5") */
    char *got;        /* the last number of the reply; NULL: none, or no reply */
    bool answered;    /* a reply arrived */
    bool right;       /* got equals expected as numbers */
    char *reply;      /* the reply's beginning (evidence; at most MP_TASK_REPLY_KEEP bytes) */
};
#define MP_TASK_REPLY_KEEP 240

struct mp_score {
    int k;                       /* top-K asked for */
    /* prompt logprobs of the passages */
    enum mp_sc_status plp;
    char *plp_note;              /* refused / failed: why, in the engine's words */
    struct mp_lp_seq *pass;      /* per passage, scored one at a time */
    struct mp_lp_seq *repeat;    /* per passage, scored again at the top concurrency; NULL = not */
    size_t npass;
    /* greedy continuations */
    enum mp_sc_status greedy;
    int greedy_k;                /* the top-K the engine gave (< k when it allows fewer) */
    char *greedy_note;
    struct mp_gen_seq *gen;
    size_t ngen;
    /* the task gate */
    enum mp_sc_status task;
    char *task_note;
    char *task_source;           /* "built-in" or the --accuracy-file's name */
    struct mp_task_ans *ans;
    size_t nans;
    /* what it cost (wall seconds) */
    double score_s, task_s;
};

/* A zeroed score (never NULL). */
struct mp_score *mp_score_new(void);
/* Frees everything; accepts NULL. */
void mp_score_free(struct mp_score *s);
/* Deep copy (NULL for NULL). */
struct mp_score *mp_score_dup(const struct mp_score *s);
void mp_lp_seq_release(struct mp_lp_seq *q);
void mp_gen_seq_release(struct mp_gen_seq *q);
/* Answers counted: *answered replies, *right of them right. */
void mp_score_task_counts(const struct mp_score *s, size_t *answered, size_t *right);

#endif
