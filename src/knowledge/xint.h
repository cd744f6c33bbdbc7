/* xint.h - what the parts of mp_kn_explain share (src/knowledge only):
 * explain.c walks the knobs, xvalues.c judges their values, xsummary.c
 * draws the prediction, the closing sentence and the verdict. */
#ifndef MP_KNOWLEDGE_XINT_H
#define MP_KNOWLEDGE_XINT_H

#include "knowledge/knowledge.h"

struct flagkv {
    const char *name; /* points into the caller's words */
    size_t namelen;
    const char *value; /* NULL: boolean flag */
};

/* The state of one mp_kn_explain call. */
struct xctx {
    const struct mp_knowledge *k;
    struct mp_kn_ver v;
    struct mp_explain *out;
    size_t cap;
    char **env;
    size_t nenv;
    struct flagkv *fl;
    size_t nfl;
    /* the explicit MoE choice (normalised) */
    const struct mp_kn_knob *moe_knob;
    const struct mp_kn_era *moe_era;
    char *explicit_val;
    const char *explicit_src;
    bool explicit_invalid; /* not a choice of the version */
    bool explicit_active;  /* a choice, and the flag exists in the version */
    /* what the knobs decide */
    const char *env_predict;
    char *env_predict_knob;
    const char *sum_unknown, *sum_removed, *sum_overridden, *sum_nya;
    char *sum_nya_note;
    bool any_moe;
};

/* explain.c */
char *mp_xn_norm_value(const char *v); /* lower case, '-' -> '_'; caller frees */
const char *mp_xn_map_get(const struct mp_kn_pair *m, size_t n, const char *key);
char *mp_xn_era_note(const struct mp_kn_era *era); /* "uncertain ...: note [source]" */

/* xvalues.c */
/* Is v one of the values the knob takes in this era (the era's list, else
 * the knob's)? */
bool mp_xn_in_values(const struct mp_kn_knob *kb, const struct mp_kn_era *era, const char *v);
bool mp_xn_env_has(char **env, size_t nenv, const char *assign);
/* An environment value the era's parser rejects: status "rejected" with
 * stops/fix (era->error), else a note that the value is not one it takes. */
void mp_xn_env_value(struct xctx *x, const struct mp_kn_knob *kb, const struct mp_kn_era *era,
                     const char *name, const char *value, struct mp_kn_knob_report *r);
/* A flag's value: an argparse choice (normalised first where the knob says
 * so), then what it selects. */
void mp_xn_flag_value(struct xctx *x, const struct mp_kn_knob *kb, const struct mp_kn_era *era,
                      const char *name, const char *value, struct mp_kn_knob_report *r);
/* A flag the version does not have: argparse stops the server. */
void mp_xn_flag_missing(struct xctx *x, const struct mp_kn_knob *kb, const char *name,
                        struct mp_kn_knob_report *r);
/* The note for a VLLM_* variable no vLLM release has, by the version's
 * unknown-variable behaviour. */
char *mp_xn_unknown_env_note(const struct xctx *x, const char *name);

/* xsummary.c */
/* Prediction, summary, will_not_start and verdict of x->out. */
void mp_xn_conclude(struct xctx *x);

#endif
