/* srvmetrics.h - the engine's /metrics around each load phase: scraped at
 * the phase's start, about once a second during it and at its end, turned
 * into a struct mp_server_metrics (model/srvmetrics.h) of deltas and
 * maxima. Loop-thread only, like the NVML sampler (observe/telemetry.h): the
 * scrapes at a phase's ends block (short timeouts: they run between the
 * phase's requests, not during them); the ones during a phase never block:
 * their transfer advances a step on each turn of the attempt's loop
 * (mp_srvm_tick), so the load generator's timing is not disturbed.
 *
 * The API key (if any) goes in the Authorization header, as on the
 * generation requests; it is never logged or stored. A body is read up to
 * MP_PROM_MAX_INPUT bytes; a bigger one is cut and counts as unreadable. */
#ifndef MP_RUN_SRVMETRICS_H
#define MP_RUN_SRVMETRICS_H

#include "compat.h"

#include "http/prom.h"
#include "model/srvmetrics.h"

/* What one scrape read. NAN in a number: the series is absent. */
struct mp_srvm_snap {
    struct mp_prom_hist ttft, itl;
    bool has_ttft, has_itl;
    double gen, prompt, preempt, kv, waiting, running;
    char itl_metric[48], kv_metric[40], preempt_metric[40];
};

/* Read a /metrics body into *sn. Returns 0, or MP_EPARSE with why filled
 * when it holds no vllm:* series moeprobe uses (another engine, or vLLM
 * with --disable-log-stats). Pure. */
int mp_srvm_snap_read(struct mp_srvm_snap *sn, const char *body, size_t len, char *why,
                      size_t whyn);
/* Fold one snapshot taken during the phase into m's maxima. */
void mp_srvm_observe(struct mp_server_metrics *m, const struct mp_srvm_snap *sn);
/* The phase's numbers from its first and last snapshots (m's maxima are
 * kept and include both ends); state becomes OK, flags set. */
void mp_srvm_delta(struct mp_server_metrics *m, const struct mp_srvm_snap *a,
                   const struct mp_srvm_snap *b);

struct mp_srvm;
struct mp_lg;
struct mp_lg_result;

/* The user_tag of the scrapes' results. */
#define MP_SRVM_TAG (-1000000)

/* A scraper of lg's base URL + "/metrics" (borrowed lg: it must outlive
 * the scraper; its loop runs the timer). Never NULL. */
struct mp_srvm *mp_srvm_new(struct mp_lg *lg);
void mp_srvm_free(struct mp_srvm *s); /* accepts NULL; leaves lg's transfers to lg */

/* A phase starts: its first scrape is sent (wait for it: mp_srvm_waiting).
 * NULL accepted (does nothing). */
void mp_srvm_phase_begin(struct mp_srvm *s);
/* The phase is over: a scrape of the phase's middle still running is
 * dropped and its last scrape is sent (wait for it, then mp_srvm_result).
 * NULL accepted. */
void mp_srvm_phase_end(struct mp_srvm *s);
/* A phase's first or last scrape is in flight (false for NULL). */
bool mp_srvm_waiting(const struct mp_srvm *s);
/* Hand over a load-generator result: true when it was one of the
 * scraper's (user_tag MP_SRVM_TAG; consumed, the caller releases res),
 * false for any other. NULL s: false. */
bool mp_srvm_take(struct mp_srvm *s, const struct mp_lg_result *res);
/* After mp_srvm_phase_end and its scrape: *out (overwritten) is OK with
 * the deltas, or UNREADABLE with the reason when either end could not be
 * read. NULL s: *out is left as it is. */
void mp_srvm_result(struct mp_srvm *s, struct mp_server_metrics *out);

#endif
