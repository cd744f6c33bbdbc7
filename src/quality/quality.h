/* quality.h - the output check: greedy sanity prompts and how their answers
 * are judged (verdict garbage-output).
 *
 * The prompt set is data (data/sanity-prompts.json, compiled in; format in
 * docs/quality.md). Each answer is judged on its own (degenerate: empty,
 * non-printable, one token repeated; wrong: none of the expected answers in
 * it) and then across candidates (mp_qcheck_run): a candidate is garbage
 * when an answer is degenerate, or when it fails a prompt that another
 * candidate passes. A prompt no candidate passes is "inconclusive for this
 * model" and counts against nobody. Pure: no I/O, no printing. */
#ifndef MP_QUALITY_H
#define MP_QUALITY_H

#include "compat.h"

#include "err.h"
#include "model/qcheck.h"

struct mp_sanity_prompt {
    char *id, *kind, *prompt;
    char **expect;          /* answers, any of which passes */
    size_t nexpect;
};

struct mp_sanity_set {
    struct mp_sanity_prompt *p;
    size_t n;
    int max_tokens;
    const char **prompts;   /* p[i].prompt, for mp_quality_prompts */
};

/* Parse a prompt set. 0, or MP_EPARSE with d filled. On success *out owns
 * its memory: release with mp_sanity_release. */
int mp_sanity_parse(const char *json, size_t len, struct mp_sanity_set *out, struct mp_diag *d);
void mp_sanity_release(struct mp_sanity_set *s);
/* The built-in set (parsed once, static; aborts if the compiled-in data is
 * malformed, which the unit tests rule out). */
const struct mp_sanity_set *mp_sanity_builtin(void);

/* The sanity prompts sent after a clean workload (borrowed, static, *n set). */
const char *const *mp_quality_prompts(size_t *n);

const char *mp_qres_name(enum mp_qres r);

/* NULL when text looks like language, else a static reason ("empty",
 * "one token repeated", "non-printable"). */
const char *mp_quality_degenerate(const char *text);
/* Judge one answer to one prompt; *why (may be NULL) gets a static reason. */
enum mp_qres mp_quality_judge(const struct mp_sanity_prompt *p, const char *text, const char **why);
/* A quoted, escaped (\n, \xNN, \" and \\), UTF-8-safe excerpt of text of at
 * most max bytes of the original, "…" when cut (caller frees). */
char *mp_quality_quote(const char *text, size_t max);
/* Split into tokens (optional leading whitespace + a non-space run) and
 * return the index of the first token that differs, or -1 when identical.
 * When they differ and ta/tb are non-NULL they get the two tokens (quoted
 * with mp_quality_quote; "(end)" for a missing one; caller frees). */
long mp_quality_first_diff(const char *a, const char *b, char **ta, char **tb);

/* ---- across candidates ---- */

struct mp_qcand_in {
    const char *name;
    const char *const *texts;  /* per prompt of the set, NULL = missing */
    size_t ntexts;             /* 0 = the check did not run for it */
};

/* Judge every candidate against the set. *out is overwritten; release with
 * mp_qcheck_release. */
void mp_qcheck_run(const struct mp_sanity_set *s, const struct mp_qcand_in *in, size_t n,
                   struct mp_qcheck *out);

#endif
