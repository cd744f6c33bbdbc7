/* compat.h - included first by every moeprobe/refengine source file.
 *
 * Feature-test macros, small portable helpers and attributes. Nothing here
 * allocates or has state. */
#ifndef MP_COMPAT_H
#define MP_COMPAT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MP_UNUSED(x) ((void)(x))
#define MP_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define MP_NORETURN __attribute__((noreturn))
#define MP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MP_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
