/* fuzz_jsoncheck.c - the RFC 8259 validator (http/jsoncheck.h) under
 * arbitrary input. Invariants: an error's position lies within the input and
 * has a reason; the copy is changed only at lone-surrogate escapes, each
 * rewritten to the 6 bytes "\ufffd"; what the validator accepts, cJSON reads
 * (after that rewrite), so no valid event is ever judged by cJSON's own
 * rules; and the verdict does not depend on the fix buffer. */
#include "compat.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "http/jsoncheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    const char *s = (const char *)d;
    char *fix = malloc(n + 1);
    if (!fix)
        return 0;
    memcpy(fix, s, n);
    struct mp_json_err e = {0, NULL, 0}, e2 = {0, NULL, 0};
    size_t lone = 0, lone2 = 0;
    int rc = mp_json_check(s, n, fix, &lone, &e);
    int rc2 = mp_json_check(s, n, NULL, &lone2, &e2);
    if (rc != rc2 || (rc == 0 && lone != lone2))
        abort();
    if (rc != 0 && rc != MP_EPARSE)
        abort();
    if (rc < 0 && (e.pos > n || !e.why || e.pos != e2.pos))
        abort();
    size_t changed = 0;
    for (size_t i = 0; i < n; i++) {
        if (fix[i] == s[i])
            continue;
        /* inside a rewritten escape: "\ufffd" starts 0..5 bytes before */
        bool ok = false;
        for (size_t k = 0; k < 6 && k <= i && !ok; k++)
            ok = i - k + 6 <= n && !memcmp(fix + i - k, "\\ufffd", 6) && s[i - k] == '\\';
        if (!ok)
            abort();
        changed++;
    }
    if (rc == 0 && lone == 0 && changed)
        abort();
    if (rc == 0) {
        cJSON *j = cJSON_ParseWithLength(fix, n);
        if (!j)
            abort(); /* valid by RFC 8259, yet cJSON could not read it */
        cJSON_Delete(j);
    }
    free(fix);
    return 0;
}
