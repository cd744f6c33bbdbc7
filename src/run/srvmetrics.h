/* srvmetrics.h - the engine's /metrics around each load phase: scraped at
 * the phase's start, about once a second during it and at its end, turned
 * into a struct mp_server_metrics (model/srvmetrics.h) of deltas and
 * maxima. Loop-thread only, like the NVML sampler (run/telemetry.h): the
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

/* A scraper of base_url + "/metrics" (base_url without a trailing '/');
 * api_key may be NULL. Returns NULL only when libcurl cannot make a
 * handle (phases then stay MP_SRVM_NONE). */
struct mp_srvm *mp_srvm_open(const char *base_url, const char *api_key);
/* A phase starts: one blocking scrape. NULL accepted (does nothing). */
void mp_srvm_phase_begin(struct mp_srvm *s);
/* During a phase, every turn of the loop: starts a scrape when the last one
 * is over a second old, advances a running one without waiting. */
void mp_srvm_tick(struct mp_srvm *s);
/* The phase is over: one blocking scrape, then *out (overwritten): OK with
 * the deltas, or UNREADABLE with the reason when either end could not be
 * read. NULL s: *out is left as it is. */
void mp_srvm_phase_end(struct mp_srvm *s, struct mp_server_metrics *out);
void mp_srvm_close(struct mp_srvm *s); /* accepts NULL */

#endif
