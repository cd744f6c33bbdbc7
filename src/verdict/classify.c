/* classify.c - an attempt's failure from its observations (classify.h). */
#include "verdict/classify.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "buf.h"
#include "knowledge/knowledge.h"
#include "xalloc.h"

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

/* Why the engine was not ready when its main process exited: its exit; for
 * a status 0 with processes of it left running outside its group, or its
 * log going on after the exit, that it daemonized (#30 item 10). */
static char *exit_before_ready(const struct mp_attempt_result *r)
{
    const struct mp_attempt_obs *o = &r->obs;
    const char *desc = r->exit_desc ? r->exit_desc : "exited";
    bool zero = o->died_early && o->exit_status != -1 && WIFEXITED(o->exit_status) &&
                WEXITSTATUS(o->exit_status) == 0;
    long after = o->lines_after_exit;
    if (!zero || (r->escapees_killed == 0 && after <= 0))
        return xasprintf("the engine %s before it became ready", desc);
    struct buf b = BUF_INIT;
    buf_adds(&b, "the engine's main process exited with status 0 before it became ready, while");
    if (r->escapees_killed > 0)
        buf_printf(&b, " %d process%s it started kept running outside its process group "
                       "(killed at teardown)%s",
                   r->escapees_killed, r->escapees_killed == 1 ? "" : "es", after > 0 ? " and" : "");
    if (after > 0)
        buf_printf(&b, " its log went on (%ld line%s after the exit)", after, after == 1 ? "" : "s");
    buf_adds(&b, ": it daemonized, or a wrapper such as `docker run -d` returned at once; "
                 "moeprobe supervises the process it starts, so run the engine in the foreground");
    return buf_detach(&b, NULL);
}

static void clear(struct mp_attempt_result *r)
{
    free(r->fail_class);
    free(r->fail_message);
    free(r->launch_site);
    mp_strv_release(&r->sites);
    r->fail_class = r->fail_message = r->launch_site = NULL;
    r->fail_line = 0;
    r->engine_dead = r->cuda_fault = r->engine_died = false;
}

/* Never ready: the log's own words where it has them. */
static void startup(struct mp_attempt_result *r, enum mp_seen seen, const char *seen_msg)
{
    const struct mp_attempt_obs *o = &r->obs;
    if (seen == MP_SEEN_PORT_MISMATCH) {
        r->fail_class = xstrdup(mp_seen_name(seen));
        r->fail_message = dup_or_null(seen_msg);
        r->fail_line = o->announce_line;
        return;
    }
    if (o->startup_error) {
        r->fail_message = xstrdup(o->startup_error);
        r->fail_line = o->startup_error_line;
    } else if (o->crash && o->crash_message) {
        r->fail_message = xstrdup(o->crash_message);
        r->fail_line = o->crash_line;
    } else if (o->error_quote) { /* nothing recognised: quote what it said last */
        r->fail_message = xasprintf("%s; its last error lines: %s",
                                    seen_msg ? seen_msg : "the engine never became ready",
                                    o->error_quote);
        r->fail_line = o->last_error_line;
    }
    r->fail_class = xstrdup(o->crash && o->crash_class ? o->crash_class : "startup");
    if (!r->fail_message && seen_msg)
        r->fail_message = xstrdup(seen_msg);
}

/* Failed after ready: only a CUDA fault in the log may be diagnosed with
 * launch blocking; without one, an engine that died crashed, and one that
 * stayed up answered wrongly (the first bad response is the evidence). */
static void after_ready(struct mp_attempt_result *r, enum mp_seen seen, const char *seen_msg)
{
    const struct mp_attempt_obs *o = &r->obs;
    r->cuda_fault = o->crash && mp_kn_class_name_is_cuda_fault(o->crash_class);
    r->engine_died = o->died_early || (o->crash && o->crash_engine_dead);
    if (r->outcome == MP_OUT_CRASH && o->crash && (r->cuda_fault || r->engine_died)) {
        r->fail_class = xstrdup(o->crash_class ? o->crash_class : "cuda-other");
        r->fail_message = dup_or_null(o->crash_message);
        r->fail_line = o->crash_line;
        r->engine_dead = o->crash_engine_dead;
        for (size_t i = 0; i < o->crash_sites.n; i++)
            mp_strv_push(&r->sites, o->crash_sites.v[i]);
        r->launch_site = dup_or_null(o->crash_launch_site);
    } else {
        r->fail_class = dup_or_null(mp_seen_name(seen));
        r->fail_message = dup_or_null(seen_msg);
    }
    if (!r->fail_message && seen_msg)
        r->fail_message = xstrdup(seen_msg);
    if (!r->fail_class && seen != MP_SEEN_NONE)
        r->fail_class = xstrdup(mp_seen_name(seen));
}

void mp_verdict_classify(struct mp_attempt_result *r)
{
    if (!r->obs.recorded || (r->outcome != MP_OUT_STARTUP_FAILURE && r->outcome != MP_OUT_CRASH &&
                             r->outcome != MP_OUT_HANG))
        return;
    enum mp_seen seen = r->obs.seen;
    char *msg = dup_or_null(r->obs.seen_message);
    if (r->outcome == MP_OUT_STARTUP_FAILURE && r->obs.exited && !msg) {
        seen = MP_SEEN_PROCESS_EXIT;
        msg = exit_before_ready(r);
    }
    clear(r);
    if (r->outcome == MP_OUT_STARTUP_FAILURE)
        startup(r, seen, msg);
    else
        after_ready(r, seen, msg);
    free(msg);
}
