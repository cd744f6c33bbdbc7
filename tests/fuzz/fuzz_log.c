/* fuzz_log.c - the log scanner on arbitrary bytes, in chunks chosen by the
 * input: the first byte seeds the chunk sizes. Invariants: the result view
 * is consistent and renders to JSON; nothing leaks. */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "knowledge/knowledge.h"
#include "logs/logscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mp_logscan *s = mp_logscan_new(mp_knowledge_builtin());
    unsigned seed = size ? data[0] : 1;
    size_t i = 0;
    while (i < size) {
        seed = seed * 1103515245u + 12345u;
        size_t n = 1 + (seed >> 16) % 97;
        if (n > size - i)
            n = size - i;
        mp_logscan_feed(s, (const char *)data + i, n);
        i += n;
    }
    mp_logscan_finish(s);
    const struct mp_logresult *r = mp_logscan_result(s);
    if (r->nfindings > MP_LOGSCAN_MAX_FINDINGS + 1 || r->crash.nsites > MP_LOGSCAN_MAX_SITES)
        abort();
    if (r->has_crash && (!r->crash.cls || !r->crash.message))
        abort();
    struct buf b = BUF_INIT;
    mp_logresult_to_json(r, "fuzz", &b);
    mp_logresult_to_text(r, "fuzz", &b);
    buf_release(&b);
    mp_logscan_free(s);
    return 0;
}
