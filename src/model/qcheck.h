/* qcheck.h - the result of the output check across candidates (computed by
 * quality/, held by the report model). Plain data. */
#ifndef MP_MODEL_QCHECK_H
#define MP_MODEL_QCHECK_H

#include "compat.h"

enum mp_qres {
    MP_Q_MISSING = 0,   /* no answer (not run, or the request failed) */
    MP_Q_PASS,
    MP_Q_WRONG,         /* printable, varied, but none of the expected answers */
    MP_Q_DEGENERATE,    /* empty, non-printable or one token repeated */
};
enum mp_qstatus {
    MP_QC_NOT_RUN = 0,
    MP_QC_OK,                  /* nothing degenerate, every answerable prompt passed */
    MP_QC_GARBAGE,
};

struct mp_qcand_out {
    enum mp_qstatus status;
    enum mp_qres *res;         /* per prompt */
    const char **res_why;      /* per prompt, static strings */
    size_t passed, wrong, degenerate;
    char *why;                 /* garbage: the first offending prompt, quoted */
    /* agreement with the reference candidate (not for the reference itself) */
    long ref;                  /* index of the reference, -1 none */
    size_t identical, compared;
    long diff_prompt, diff_token;  /* -1 = none */
    char *diff_this, *diff_ref;
};

struct mp_qcheck {
    struct mp_qcand_out *c;
    size_t n, nprompts;
    bool *answerable;          /* per prompt: some candidate passed it */
    long ref;                  /* reference candidate for agreement, -1 none */
    const char *status;        /* "ok" | "inconclusive" | "partly-inconclusive" | "not-run" */
    char *note;                /* sentence for the report, or NULL */
};

void mp_qcheck_release(struct mp_qcheck *q);

#endif
