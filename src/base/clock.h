/* clock.h - monotonic and wall clocks. */
#ifndef MP_CLOCK_H
#define MP_CLOCK_H

#include "compat.h"

/* CLOCK_MONOTONIC in nanoseconds. Async-signal-safe. */
int64_t mp_now_ns(void);
/* Wall clock (CLOCK_REALTIME) in nanoseconds since the epoch. */
int64_t mp_wall_ns(void);
/* Format wall time as ISO 8601 UTC ("2026-12-02T09:23:03Z") into out. */
void mp_iso8601(int64_t wall_ns, char *out, size_t outsz);

#endif
