/* classify.h - an attempt's failure judged from what was observed
 * (model/attempt.h struct mp_attempt_obs): its class, message, evidence
 * line, traceback sites, and the two facts the verdict rules branch on -
 * CUDA-fault evidence in the log (only then is a failure diagnosed with
 * CUDA_LAUNCH_BLOCKING=1) and whether the engine died (else it stayed up:
 * a server error). Pure: no I/O, no global state. Run on each attempt when
 * it ends (run/runner.c) and again on every loaded report
 * (verdict.h mp_verdict_finalize), so a changed rule re-judges old runs. */
#ifndef MP_VERDICT_CLASSIFY_H
#define MP_VERDICT_CLASSIFY_H

#include "compat.h"

#include "model/attempt.h"

/* For an attempt that failed (startup failure, crash, hang) whose
 * observations were recorded: replace fail_class, fail_message, fail_line,
 * sites, launch_site, engine_dead, cuda_fault and engine_died with the
 * judgement of r->obs:
 *  - never ready: the port it announced elsewhere; else the log's own
 *    reason (startup error, then crash message, then its last error lines
 *    quoted after moeprobe's words); class: the crash class or "startup".
 *    When the main process exited first: "the engine <exit> before it
 *    became ready", or - status 0 while processes it started kept running
 *    outside its group or its log went on - that it daemonized;
 *  - failed after ready: cuda_fault = the log's crash class is a CUDA fault
 *    (knowledge); engine_died = it exited before teardown or its log says
 *    the engine is dead; a crash with either takes the log's class,
 *    message, line and sites, anything else moeprobe's own first failure.
 * Any other outcome, or obs not recorded: r is left as it is. */
void mp_verdict_classify(struct mp_attempt_result *r);

#endif
