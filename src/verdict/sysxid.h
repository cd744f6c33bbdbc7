/* sysxid.h - the verdict when the driver reported a hardware or driver Xid
 * (#24): a GPU that fell off the bus, a double-bit ECC error, a GSP timeout
 * (data/gpufault.json's causes "hardware" and "driver") makes a failure no
 * evidence about the kernel, so the candidate's verdict must not blame its
 * backend. Pure; applied by mp_verdict_finalize right after
 * mp_verdict_decide. */
#ifndef MP_VERDICT_SYSXID_H
#define MP_VERDICT_SYSXID_H

#include "compat.h"

#include "model/report.h"

/* The first Xid of cause hardware or driver in any attempt of c, and that
 * attempt (*in, may be NULL); NULL when there is none. */
const struct mp_xid_record *mp_verdict_system_xid(const struct mp_cand_report *c,
                                                  const struct mp_attempt_result **in);

/* c's verdict v with sentence why (borrowed), given its Xids:
 *  - no hardware or driver Xid: v, *why_out NULL;
 *  - async-race or kernel-fault: crashed (the diagnosis is void: the GPU
 *    failed, not the kernel), *why_out saying so and what it would have been;
 *  - crashed, hang, server-error, startup-failure: v, the Xid said first;
 *  - stable: v, the Xid noted after why;
 *  - no verdict: v, *why_out NULL. */
enum mp_verdict mp_verdict_sysxid(const struct mp_cand_report *c, enum mp_verdict v,
                                  const char *why, char **why_out);

#endif
