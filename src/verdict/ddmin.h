/* ddmin.h - Zeller's delta debugging (ddmin) over item indices 0..n-1.
 *
 * Finds a 1-minimal subset for which the caller's test says "interesting":
 * removing any single element of the result makes it uninteresting (every
 * such subset was tested). In moeprobe the items are the knob differences
 * between a failing --from configuration and a working --to configuration;
 * "interesting" means: --from plus this subset WORKS.
 *
 * Pure and generic: no I/O; the test function does the expensive work
 * (start an engine...). Every subset is tested at most once (results are
 * cached by subset). The full set is assumed interesting (the caller
 * verified it) and is never tested; the empty set is tested only when the
 * search is down to one element. Non-monotone test functions are fine:
 * the result is still 1-minimal with respect to the answers given. */
#ifndef MP_DDMIN_H
#define MP_DDMIN_H

#include "compat.h"

/* Test one subset: subset[0..n-1] are distinct item indices in ascending
 * order (borrowed, valid during the call). Returns 1 interesting, 0 not,
 * < 0 an error that aborts mp_ddmin with that code. */
typedef int (*mp_ddmin_test_fn)(void *ud, const size_t *subset, size_t n);

/* Optional progress report, called after each test actually run: tests
 * run so far and the smallest interesting subset known at that point
 * (borrowed, ascending). */
typedef void (*mp_ddmin_progress_fn)(void *ud, unsigned tests, const size_t *subset, size_t n);

struct mp_ddmin_stats {
    unsigned tests_run;       /* calls of the test function */
    unsigned cache_hits;      /* subsets asked for again and answered from the cache */
};

/* Reduce {0..n-1} to a 1-minimal interesting subset.
 * On success returns 0, *out (caller frees; NULL when *nout == 0) holds the
 * subset in ascending order, *nout its size. n == 0 gives the empty set
 * without a test. stats and progress may be NULL; ud is passed to both
 * callbacks. Returns the test's negative code if it failed (nothing is
 * returned in *out then), -EINVAL for bad arguments. */
int mp_ddmin(size_t n, mp_ddmin_test_fn test, void *ud, size_t **out, size_t *nout,
             struct mp_ddmin_stats *stats, mp_ddmin_progress_fn progress);

#endif
