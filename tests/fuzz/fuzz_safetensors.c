/* fuzz_safetensors.c - the safetensors header parser on arbitrary files.
 *
 * Invariants: it never crashes or leaks; on success the summary is
 * consistent (tensors counted once per dtype, total bytes within the data
 * section); on failure the accumulator is left untouched and the message
 * is set. */
#include "compat.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "inspect/inspect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mp_st_summary acc, before;
    memset(&acc, 0, sizeof(acc));
    acc.files = 1; /* as if a previous shard had been read */
    before = acc;
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_st_parse_buffer(data, size, &acc, &d);
    if (rc == 0) {
        unsigned long long n = 0, bytes = 0;
        for (size_t i = 0; i < acc.ndtypes; i++) {
            n += acc.dtypes[i].count;
            bytes += acc.dtypes[i].bytes;
        }
        if (acc.files != 2 || n != acc.tensors || bytes != acc.bytes || acc.bytes > size)
            abort();
    } else {
        if (memcmp(&acc, &before, sizeof(acc)) != 0 || !d.msg[0])
            abort();
        if (rc != MP_EPARSE && rc != MP_ELIMIT)
            abort();
    }
    return 0;
}
