#include "secret.h"

#include <string.h>
#include <strings.h>

#include "xalloc.h"

bool mp_is_secret_name(const char *name, size_t len)
{
    static const char *const marks[] = {"TOKEN", "KEY", "SECRET", "PASSWORD", "AUTH"};
    for (size_t m = 0; m < MP_ARRAY_SIZE(marks); m++) {
        size_t ml = strlen(marks[m]);
        for (size_t i = 0; i + ml <= len; i++) {
            if (strncasecmp(name + i, marks[m], ml) == 0)
                return true;
        }
    }
    return false;
}

char *mp_redact_assignment(const char *assign)
{
    const char *eq = strchr(assign, '=');
    if (!eq || !mp_is_secret_name(assign, (size_t)(eq - assign)))
        return xstrdup(assign);
    return xasprintf("%.*s=***", (int)(eq - assign), assign);
}
