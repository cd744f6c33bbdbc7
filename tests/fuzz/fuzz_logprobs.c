/* fuzz_logprobs.c - the parsers of what an engine answers to the scoring
 * pass (quality/score.h: prompt_logprobs, logprobs, the completion's text,
 * the "max allowed: N" of a refusal) under arbitrary bodies.
 *
 * Invariants: no crash or leak; a success keeps only well-formed data
 * (strings NUL-terminated, logprobs never positive, top-K counts bounded
 * by the body); a failure keeps nothing. Partial-input contract: a body cut
 * anywhere before its end is malformed unless the cut is itself a complete
 * JSON value, and then gives what that value gives (never a crash, never a
 * half-read answer: the parsers read whole JSON documents only). */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "quality/score.h"

static void check_plp(const char *s, size_t len)
{
    struct mp_lp_seq q;
    char err[128];
    int rc = mp_score_parse_plp(s, len, &q, err, sizeof(err));
    if (rc != 0) {
        if (q.p || q.n || !err[0])
            abort();
        return;
    }
    if (!q.n)
        abort();
    for (size_t i = 0; i < q.n; i++)
        if (!q.p[i].token || !q.p[i].top1 || q.p[i].lp > 1e-6 || q.p[i].top1_lp > 1e-6)
            abort();
    mp_lp_seq_release(&q);
}

static void check_gen(const char *s, size_t len)
{
    struct mp_gen_seq g;
    int k = -1;
    char err[128];
    int rc = mp_score_parse_gen(s, len, &g, &k, err, sizeof(err));
    if (rc != 0) {
        if (g.t || g.n || k != 0)
            abort();
        return;
    }
    if (k < 0 || (size_t)k > len)
        abort();
    for (size_t i = 0; i < g.n; i++) {
        if (!g.t[i].token || g.t[i].lp > 1e-6 || g.t[i].ntop > (size_t)k)
            abort();
        for (size_t j = 0; j < g.t[i].ntop; j++)
            if (!g.t[i].top[j].token)
                abort();
    }
    mp_gen_seq_release(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    check_plp(s, size);
    check_gen(s, size);
    char *text = NULL, err[128];
    int ct = 0;
    if (mp_score_parse_text(s, size, &text, &ct, err, sizeof(err)) == 0) {
        if (!text || ct < -1)
            abort();
    } else if (text) {
        abort();
    }
    free(text);
    /* a cut body: whatever the prefix gives, never a crash */
    if (size > 1) {
        check_plp(s, size / 2);
        check_gen(s, size / 2);
    }
    char *msg = malloc(size + 1);
    memcpy(msg, s, size);
    msg[size] = '\0';
    int n = mp_score_max_allowed(msg);
    if (n < -1 || n > 1000000000)
        abort();
    free(msg);
    return 0;
}
