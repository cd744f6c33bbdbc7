/* score.h - the requests of the scoring pass and the parsers of what the
 * engine answers (docs/quality.md "Correctness"). Pure: no I/O.
 *
 * Requests (POST /v1/completions, non-streaming, temperature 0):
 *   - a reference passage as the prompt, max_tokens 1, prompt_logprobs K
 *     (vLLM's extension: the logprob of every prompt token given the ones
 *     before it, with the K most likely tokens at each position);
 *   - a greedy continuation, logprobs K (the chosen token's logprob and the
 *     K most likely ones at each step);
 *   - a task problem (quality/task.h), stop at the next "Question:".
 *
 * Parsers take a response body as the engine sent it (any bytes, any
 * length; a body cut anywhere is malformed). Each returns 0 on success,
 * MP_SCORE_ABSENT when the body is a well-formed completion without the
 * asked-for field (an engine that ignores it), or MP_EPARSE with a message
 * naming what is wrong in err (never a crash; nothing is kept then). */
#ifndef MP_QUALITY_SCORE_H
#define MP_QUALITY_SCORE_H

#include "compat.h"

#include <stddef.h>

#include "err.h"
#include "model/score.h"

#define MP_SCORE_K 5             /* top-K asked for by default */
#define MP_SCORE_GREEDY_TOKENS 32
#define MP_SCORE_ABSENT 1

/* The built-in reference passages / greedy prompts (static; *n set). */
const char *const *mp_score_passages(size_t *n);
const char *const *mp_score_greedy_prompts(size_t *n);

/* Request bodies (caller frees). model may be NULL (the engine's default).
 * stop: NULL-terminated stop strings or NULL. */
char *mp_score_plp_body(const char *model, const char *passage, int k);
char *mp_score_greedy_body(const char *model, const char *prompt, int max_tokens, int k);
char *mp_score_text_body(const char *model, const char *prompt, int max_tokens,
                         const char *const *stop);

/* choices[0].prompt_logprobs of a completion: one position per non-null
 * entry (the first entry of each is the prompt's own token, vLLM's order;
 * the top-1 is the entry of rank 1, else the most likely one). A null or
 * absent field is MP_SCORE_ABSENT. */
int mp_score_parse_plp(const char *body, size_t len, struct mp_lp_seq *out, char *err,
                       size_t errn);
/* choices[0].logprobs of a completion: tokens, token_logprobs and
 * top_logprobs; *k_out gets the largest number of alternatives listed at a
 * step (0 when the engine listed none). */
int mp_score_parse_gen(const char *body, size_t len, struct mp_gen_seq *out, int *k_out,
                       char *err, size_t errn);
/* choices[0].text of a completion (caller frees *text); *completion_tokens
 * gets usage.completion_tokens, -1 when absent. */
int mp_score_parse_text(const char *body, size_t len, char **text, int *completion_tokens,
                        char *err, size_t errn);
/* The N of an engine's "... which is greater than max allowed: N" (vLLM's
 * refusal of too many logprobs), or -1 when msg does not say. */
int mp_score_max_allowed(const char *msg);

#endif
