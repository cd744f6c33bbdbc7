/* evidence.h - reading an attempt's report evidence (model/evidence.h) back
 * from the store: the server.log lines its claims cite with their context
 * (log_events) and its last requests (requests), so that the HTML report
 * renders from the database alone, not from the attempt's files. */
#ifndef MP_STORE_EVIDENCE_H
#define MP_STORE_EVIDENCE_H

#include "compat.h"

#include "model/attempt.h"
#include "model/evidence.h"

struct mp_store;

/* Fill r->evidence (replacing what it held) for the stored attempt `attempt`
 * (attempts.id): every log_events line (cited unless its signature is
 * "context"; stores written before context lines were kept hold the cited
 * lines only), and the last MP_EV_MAX_REQS requests in completion order
 * with the attempt's total request count. 0, or MP_EDB (message in the
 * store; r->evidence is then NULL). */
int mp_store_load_evidence(struct mp_store *s, int64_t attempt, struct mp_attempt_result *r);

#endif
