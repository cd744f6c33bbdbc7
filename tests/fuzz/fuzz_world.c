/* fuzz_world.c - libFuzzer target for the refengine world parser: any input
 * must parse or fail with a diagnostic, never crash. */
#include "compat.h"

#include <string.h>

#include "world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct world w;
    struct mp_diag d = MP_DIAG_INIT;
    int rc = world_parse((const char *)data, size, "fuzz.ini", &w, &d);
    if (rc != 0 && d.msg[0] == 0)
        __builtin_trap(); /* every failure must say why */
    return 0;
}
