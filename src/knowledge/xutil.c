/* xutil.c - the small helpers every part of explain uses (xint.h); uses
 * no other file of src/knowledge. */
#include "compat.h"

#include <string.h>

#include "knowledge/xint.h"
#include "xalloc.h"

char *mp_xn_norm_value(const char *v)
{
    char *s = xstrdup(v);
    for (char *p = s; *p; p++) {
        if (*p == '-')
            *p = '_';
        else if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    }
    return s;
}

const char *mp_xn_map_get(const struct mp_kn_pair *m, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(m[i].key, key))
            return m[i].value;
    return NULL;
}
