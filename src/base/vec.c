/* vec.c - the one growth rule behind vec.h. */
#include "vec.h"

#include <stdint.h>

#include "xalloc.h"

void *mp_vec__grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 8;
    while (c < need)
        c = c > SIZE_MAX / 2 ? need : c * 2;
    p = xreallocarray(p, c, size); /* aborts when c * size overflows */
    *cap = c;
    return p;
}
