/* secret.h - which environment variables hold secrets, and their redaction.
 *
 * One rule for every file and message moeprobe writes: a variable whose
 * name contains TOKEN, KEY, SECRET, PASSWORD or AUTH (any case) is a secret,
 * and its value is shown as ***. */
#ifndef MP_SECRET_H
#define MP_SECRET_H

#include "compat.h"

/* True when an environment variable NAME (len bytes) holds a secret. */
bool mp_is_secret_name(const char *name, size_t len);
/* Copy of "NAME=VALUE" with VALUE replaced by *** when NAME is secret
 * (caller frees). */
char *mp_redact_assignment(const char *assign);

#endif
