/* record.c - a finished request: one line of requests.jsonl and one row of
 * the store (never anything per token event), its phase's counts and
 * metric histograms (lgstats' one definition of each metric), and the
 * attempt's first failure (see att_internal.h). */
#include "run/att_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "escape.h"
#include "http/lgstats.h"
#include "store/store.h"
#include "xalloc.h"

static double mp_att_ms(int64_t ns)
{
    return (double)ns / 1e6;
}

void mp_att_set_fail(struct att *a, enum mp_seen seen, const char *msg)
{
    const char *cls = mp_seen_name(seen);
    if (a->failed)
        return;
    a->failed = true;
    a->t_fail = mp_now_ns();
    a->seen = seen;
    a->seen_msg = xstrdup(msg);
    char *shown = mp_term_mask(msg, strlen(msg), NULL); /* masked whole, then cut */
    mp_att_note(a, "failed: %s: %.300s", cls, shown);
    free(shown);
    a->r->ok_before_failure = a->r->req_ok;
    a->r->fail_request_line = a->fail_req_line;
    if (a->cur_phase >= 0 && (size_t)a->cur_phase < a->r->nphases)
        a->r->fail_phase = xstrdup(a->r->phases[a->cur_phase].name);
}

/* What a failed request's outcome was (its name is requests.jsonl's outcome). */
static enum mp_seen seen_of(enum mp_lg_outcome oc)
{
    switch (oc) {
    case MP_LG_HTTP_ERROR:
        return MP_SEEN_HTTP_ERROR;
    case MP_LG_STREAM_ERROR:
        return MP_SEEN_STREAM_ERROR;
    case MP_LG_CUT:
        return MP_SEEN_STREAM_CUT;
    case MP_LG_PROTOCOL:
        return MP_SEEN_PROTOCOL;
    case MP_LG_CONNECT:
        return MP_SEEN_CONNECT;
    case MP_LG_TIMEOUT:
        return MP_SEEN_TIMEOUT;
    default:
        return MP_SEEN_REQUEST_FAILED;
    }
}

static const char *mp_att_outcome_class(enum mp_lg_outcome oc)
{
    return mp_seen_name(seen_of(oc));
}

/* One finished request into requests.jsonl and the store: one line / row per request, never
 * anything per event. Its figures are lgstats' (one definition): e2e_ms of a request that
 * entered the metrics is its E2E latency (to the last token event); of any other, the time to
 * its end (the failure). */
void mp_att_write_request(struct att *a, const struct mp_lg_result *res, const char *phase)
{
    struct mp_lg_req_metrics q;
    mp_lg_request_metrics(res, &q);
    double e2e = q.ok ? q.e2el_ms : mp_att_ms(res->t_end_ns - res->t_start_ns);
    struct buf b = BUF_INIT;
    buf_printf(&b, "{\"id\":%ld,\"phase\":", res->id);
    buf_add_json_str(&b, phase, strlen(phase));
    buf_printf(&b, ",\"outcome\":\"%s\",\"http_status\":%d,\"start_s\":%.6f,\"ttft_ms\":%.3f,"
                   "\"e2e_ms\":%.3f,\"output_tokens\":%d,\"chunks\":%d",
               res->outcome == MP_LG_OK ? "ok" : mp_att_outcome_class(res->outcome), res->http_status,
               (double)(res->t_start_ns - a->t_spawn) / 1e9,
               res->t_first_token_ns ? mp_att_ms(res->t_first_token_ns - res->t_start_ns) : -1.0,
               e2e, res->output_tokens, res->chunks);
    if (res->prompt_tokens >= 0)
        buf_printf(&b, ",\"prompt_tokens\":%d", res->prompt_tokens);
    char *err = res->error[0] ? mp_store_mask_apply(a->mask, res->error, strlen(res->error), false, NULL)
                              : NULL;
    if (err) {
        buf_adds(&b, ",\"error\":");
        buf_add_json_str(&b, err, strlen(err));
    }
    buf_adds(&b, "}\n");
    if (!a->ev_errno)
        mp_att_ev_ok(a, fwrite(b.data, 1, b.len, a->reqf) == b.len && fflush(a->reqf) == 0,
              "requests.jsonl");
    a->req_lines++;
    buf_release(&b);
    if (a->o->store && !a->io_err) {
        struct mp_store_request rq = {
            .seq = ++a->nreq_stored,
            .req_id = res->id,
            .phase = phase,
            .outcome = res->outcome == MP_LG_OK ? "ok" : mp_att_outcome_class(res->outcome),
            .http_status = res->http_status,
            .start_s = (double)(res->t_start_ns - a->t_spawn) / 1e9,
            .ttft_ms = res->t_first_token_ns ? mp_att_ms(res->t_first_token_ns - res->t_start_ns) : -1.0,
            .e2e_ms = e2e,
            .output_tokens = res->output_tokens,
            .chunks = res->chunks,
            .req_tok_s = q.tok_s,
            .error = err,
        };
        if (mp_store_add_request(a->o->store, a->o->store_attempt, &rq) < 0)
            mp_att_io_error(a);
    }
    free(err);
}

void mp_att_handle_result(struct att *a, struct mp_lg_result *res)
{
    struct mp_attempt_result *r = a->r;
    struct mp_phase_result *ph = a->cur_phase >= 0 ? &r->phases[a->cur_phase] : NULL;
    mp_att_write_request(a, res, ph ? ph->name : "?");
    /* the phase's counts, span and histograms: lgstats' one path (bounded: nothing here grows
     * with the events) */
    if (ph)
        mp_lg_phase_add(ph, res);
    if (res->outcome == MP_LG_LOCAL) {
        /* moeprobe's own descriptors, memory or ports ran out: nothing about
         * the engine. The attempt stops (io_err) and draws no verdict. */
        if (!a->local_err)
            a->local_err = xstrdup(res->error);
        mp_att_io_error(a);
        return;
    }
    if (res->outcome == MP_LG_OK) {
        r->req_ok++;
        int pidx = res->user_tag;
        if (pidx >= 0 && (size_t)pidx < r->ntexts && !r->texts[pidx] && res->text)
            r->texts[pidx] = xstrndup(res->text, res->text_len);
    } else {
        r->req_failed++;
        if (!a->failed)
            a->fail_req_line = a->req_lines;
        char msg[640];
        if (res->http_status && res->outcome == MP_LG_HTTP_ERROR && strncmp(res->error, "HTTP ", 5))
            snprintf(msg, sizeof(msg), "HTTP %d: %s", res->http_status, res->error);
        else
            snprintf(msg, sizeof(msg), "%s", res->error[0] ? res->error : mp_att_outcome_class(res->outcome));
        mp_att_set_fail(a, seen_of(res->outcome), msg);
    }
}
