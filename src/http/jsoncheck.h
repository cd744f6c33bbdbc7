/* jsoncheck.h - is a text JSON by RFC 8259? A pure validator for what an
 * engine sends (an SSE event's data), so that moeprobe's judgement follows the
 * standard rather than its JSON library:
 *
 *  - the grammar of RFC 8259 section 2-7 (one value, whitespace around it;
 *    numbers without leading zeros, '+', bare '.', NaN; nothing after the
 *    value);
 *  - a \uXXXX escape is valid whatever it encodes, a lone surrogate
 *    (\ud800) included (section 7 allows it; what it means is the reader's
 *    business): mp_json_check counts them and, given a copy, rewrites each
 *    to \ufffd (the same 6 bytes, so byte offsets stay), which cJSON takes;
 *  - raw control bytes U+0000..U+001F inside a string (section 7: they MUST
 *    be escaped) and bytes that are not UTF-8 (section 8.1) are errors, with
 *    their own reasons: a protocol error of the engine, not of moeprobe.
 *
 * Partial input: a text cut anywhere is judged like any other (a cut value is
 * an error at its end, "the text ends inside ..."). Bounds: nesting deeper
 * than MP_JSON_MAX_DEPTH is an error; nothing is allocated. Fuzzed by
 * tests/fuzz/fuzz_jsoncheck.c. */
#ifndef MP_JSONCHECK_H
#define MP_JSONCHECK_H

#include "compat.h"

#define MP_JSON_MAX_DEPTH 512 /* below cJSON's own limit (1000) */

struct mp_json_err {
    size_t pos;       /* 0-based byte offset of the error */
    const char *why;  /* static text: "a raw control byte inside a string", "invalid UTF-8", ... */
    unsigned char byte; /* the offending byte (for the raw control / invalid UTF-8 reasons) */
};

/* Check s[0..n). fix (may be NULL): a writable copy of s of n bytes, in which
 * lone-surrogate escapes are rewritten to \ufffd. *lone (may be NULL) gets
 * their count. Returns 0 (valid JSON), or MP_EPARSE with *e (may be NULL)
 * saying where and why. */
int mp_json_check(const char *s, size_t n, char *fix, size_t *lone, struct mp_json_err *e);

#endif
