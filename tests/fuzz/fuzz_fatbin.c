/* fuzz_fatbin.c - the CUDA binary reader (inspect/fatbin.h) on arbitrary
 * bytes: as a whole file (mp_cu_scan: ELF, cubin or bare fat binary) and as
 * a fat binary section alone (mp_fatbin_parse), chosen by the first byte.
 *
 * Invariants (the header's partial-input contract): it never reads outside
 * the input (ASan) or crashes; targets are distinct, sorted and within the
 * bound; success leaves truncated unset; MP_EPARSE sets truncated and a
 * message; no other return value. */
#include "compat.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "inspect/fatbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    struct mp_cu_targets t = {0};
    struct mp_diag d = MP_DIAG_INIT;
    int rc = data[0] & 1 ? mp_fatbin_parse(data + 1, size - 1, &t, &d)
                         : mp_cu_scan(data + 1, size - 1, &t, &d);
    if (rc == 0 && t.truncated)
        abort();
    if (rc != 0 && (rc != MP_EPARSE || !t.truncated || !d.msg[0]))
        abort();
    if (t.n > MP_CU_MAX_TARGETS || t.n > t.entries)
        abort();
    for (size_t i = 1; i < t.n; i++)
        if (memcmp(&t.v[i - 1], &t.v[i], sizeof(t.v[i])) == 0)
            abort();
    mp_cu_targets_release(&t);
    return 0;
}
