/* runinfo.h - the run's own set-up in the evidence store (schema v18,
 * store/runinfo.c): the inherited environment and --clean-env, the engine
 * version the preset was expressed for, candidates that do not apply to
 * it, why a run stopped early, the workload's timeouts. Every function is
 * a no-op returning 0 on a store older than v18 (read) and returns 0 or
 * MP_EDB. */
#ifndef MP_STORE_RUNINFO_H
#define MP_STORE_RUNINFO_H

#include "compat.h"

#include "model/candidate.h"
#include "model/inherit.h"
#include "model/workload.h"

#define MP_STORE_RUNINFO_VERSION 18

struct mp_store;
struct mp_report;

/* Replace the recorded inherited environment (values as given: masked by
 * the caller's model) and --clean-env. */
int mp_store_set_inherited(struct mp_store *s, const struct mp_inherited *in);
/* The engine version the preset's candidates were expressed for. */
int mp_store_set_preset_version(struct mp_store *s, const char *version);
/* Why the run stopped before its candidates were done (NULL clears). */
int mp_store_set_stop_reason(struct mp_store *s, const char *why);
/* Store candidate pos as c (inserted if new; its knobs replaced: the
 * preset's era expression) and its not-applicable reason (NULL: applies). */
int mp_store_candidate_update(struct mp_store *s, size_t pos, const struct mp_candidate *c,
                              const char *not_applicable);
/* The ready and stall timeouts of the recorded workload, inside the
 * transaction of mp_store_set_workload (store/metrics.c). */
int mp_store_put_timeouts(struct mp_store *s, const struct mp_workload *w);
/* Fill rep's inherited, preset_version, stop_reason, candidates'
 * not_applicable and the workload's timeouts (after the rest is loaded). */
int mp_store_load_runinfo(struct mp_store *s, struct mp_report *rep);

#endif
