/* logprobs.h - prompt_logprobs, logprobs and echo of /v1/completions in
 * vLLM's shapes (docs/refengine.md "Logprobs"), from the model of lm.h.
 *
 * Request side (re_lp_new): the fields are read from the body; vLLM's
 * refusals are imitated with its messages per era:
 *   - prompt_logprobs with "stream": true -> 400, a request-validation error
 *     (vllm/entrypoints/openai/protocol.py CompletionRequest.check_logprobs;
 *     param "prompt_logprobs" from v0.13, PR #30134);
 *   - logprobs / prompt_logprobs above --max-logprobs (default 20) -> 400
 *     "Requested sample|prompt logprobs of N, which is greater than max
 *     allowed: M" (the engine's input processor; from v0.15, PR #31870, with
 *     " (parameter=..., value=N)" and param set).
 * Response side: "prompt_logprobs": [null, {"<id>": {"logprob", "rank",
 * "decoded_token"}, ...}, ...] with the prompt's own token first and the
 * top K after it; "logprobs": {"text_offset", "token_logprobs", "tokens",
 * "top_logprobs"} with the chosen token first in each top map (K entries
 * when it is the most likely, K + 1 otherwise); echo puts the prompt's
 * tokens first (the very first with null). Chat requests get no logprobs
 * (not imitated). */
#ifndef RE_LOGPROBS_H
#define RE_LOGPROBS_H

#include "compat.h"

#include <stddef.h>

#include "buf.h"
#include "gen.h"
#include "world.h"

#define RE_DEFAULT_MAX_LOGPROBS 20

struct re_lp; /* one request's logprobs state (opaque) */

/* Read a completion request's logprobs fields. Returns the state, or NULL:
 * *status 0 when the request asks for nothing of this, 400 with vLLM's
 * message, error type and param in msg/type/param when vLLM refuses it. */
struct re_lp *re_lp_new(const char *body, size_t len, bool chat, bool stream,
                        const struct world *w, long max_logprobs, int *status, char *msg,
                        size_t msgcap, char *type, size_t typecap, char *param, size_t paramcap);
void re_lp_free(struct re_lp *lp); /* accepts NULL */

/* echo: the prompt goes before the generated text (NULL: no echo). */
bool re_lp_echo(const struct re_lp *lp);
/* Token i was just produced by g (re_gen_token): note its step. */
void re_lp_token(struct re_lp *lp, const struct re_gen *g);
/* The choice's "logprobs" value for the tokens noted so far ("null" when
 * not asked), appended to b; the prompt's tokens first with echo (prompt
 * of len bytes, seen from g's model). since: the first noted token to
 * include (streaming deltas), 0 for all. */
void re_lp_logprobs_json(struct buf *b, struct re_lp *lp, const struct re_gen *g,
                         const char *prompt, size_t len, size_t since);
/* Streaming: the "logprobs" value of the tokens noted since the last call. */
void re_lp_delta_json(struct buf *b, struct re_lp *lp, const struct re_gen *g, const char *prompt,
                      size_t len);
/* The choice's "prompt_logprobs" value ("null" when not asked). */
void re_lp_prompt_json(struct buf *b, const struct re_lp *lp, const struct re_gen *g,
                       const char *prompt, size_t len);
/* Python's repr of a float (the shortest text that reads back the same;
 * "-2.0" for an integer), as json.dumps writes it. */
void re_py_float(struct buf *b, double v);

#endif
