/* xalloc.h - allocation that never returns NULL.
 *
 * moeprobe is a program, not a library: on allocation failure these print
 * "fatal: out of memory" to stderr and abort(). Sizes that come from outside
 * (network, logs, files) must be bounded by the caller before they get here.
 * Every returned pointer is owned by the caller and released with free(). */
#ifndef MP_XALLOC_H
#define MP_XALLOC_H

#include "compat.h"

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/* Reallocate an array of nmemb elements of size bytes; aborts on overflow. */
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
/* Copy at most n bytes of s and NUL-terminate. */
char *xstrndup(const char *s, size_t n);
/* printf into a fresh string. */
char *xasprintf(const char *fmt, ...) MP_PRINTF(1, 2);

#endif
