/* test_classify.c - an attempt's failure judged from its observations
 * (verdict/classify.h): one row per rule - the port announced elsewhere,
 * the engine's own reason before ready (startup error, crash, last error
 * lines quoted), an exit before ready and a daemonizing engine, a crash
 * with CUDA-fault evidence, a death without it, a live engine answering
 * wrongly, a hang; observations not recorded (an older store) and other
 * outcomes leave the stored judgement alone; judging twice gives the same. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "model/attempt.h"
#include "verdict/classify.h"
#include "xalloc.h"

struct row {
    const char *what;
    enum mp_outcome outcome;
    enum mp_seen seen;
    const char *seen_msg;
    bool died_early, exited;
    int exit_code;             /* -1: unknown status */
    int escapees;
    long after;                /* log lines after the exit */
    const char *crash_class;   /* NULL: no crash in the log */
    bool engine_dead;
    const char *startup_error;
    const char *quote;
    /* want */
    const char *cls;
    const char *msg;           /* substring */
    long line;
    bool cuda_fault, engine_died;
    size_t nsites;
};

static const struct row rows[] = {
    {"port elsewhere", MP_OUT_STARTUP_FAILURE, MP_SEEN_PORT_MISMATCH, "listens on 9000", 0, 0, -1,
     0, 0, NULL, 0, NULL, NULL, "port-mismatch", "listens on 9000", 7, 0, 0, 0},
    {"startup error in the log", MP_OUT_STARTUP_FAILURE, MP_SEEN_NONE, NULL, 1, 1, 1, 0, 0, NULL, 0,
     "unrecognized arguments: --moe-backend", NULL, "startup", "unrecognized arguments", 20, 0, 0, 0},
    {"a crash before ready", MP_OUT_STARTUP_FAILURE, MP_SEEN_NONE, NULL, 1, 1, 1, 0, 0, "tma-descriptor",
     0, NULL, NULL, "tma-descriptor", "Failed to initialize the TMA descriptor", 30, 0, 0, 0},
    {"unrecognised, quoted", MP_OUT_STARTUP_FAILURE, MP_SEEN_READY_TIMEOUT, "not ready within 60 s",
     0, 0, -1, 0, 0, NULL, 0, NULL, "server.log:3: boom", "startup",
     "not ready within 60 s; its last error lines: server.log:3: boom", 3, 0, 0, 0},
    {"exited before ready", MP_OUT_STARTUP_FAILURE, MP_SEEN_NONE, NULL, 1, 1, 2, 0, 0, NULL, 0, NULL,
     NULL, "startup", "the engine exited with status 2 before it became ready", 0, 0, 0, 0},
    {"exited 0 quietly", MP_OUT_STARTUP_FAILURE, MP_SEEN_NONE, NULL, 1, 1, 0, 0, 0, NULL, 0, NULL,
     NULL, "startup", "the engine exited with status 0 before it became ready", 0, 0, 0, 0},
    {"daemonized", MP_OUT_STARTUP_FAILURE, MP_SEEN_NONE, NULL, 1, 1, 0, 2, 35, NULL, 0, NULL, NULL,
     "startup", "2 processes it started kept running outside its process group (killed at teardown) "
     "and its log went on (35 lines after the exit): it daemonized", 0, 0, 0, 0},
    {"a CUDA fault", MP_OUT_CRASH, MP_SEEN_STREAM_CUT, "cut", 1, 1, 1, 0, 0, "illegal-address", 1,
     NULL, NULL, "illegal-address", "illegal memory access", 30, 1, 1, 2},
    {"a CUDA fault, the engine up", MP_OUT_CRASH, MP_SEEN_HTTP_ERROR, "HTTP 500", 0, 0, -1, 0, 0,
     "illegal-address", 0, NULL, NULL, "illegal-address", "illegal memory access", 30, 1, 0, 2},
    {"died without CUDA", MP_OUT_CRASH, MP_SEEN_STREAM_CUT, "cut", 1, 1, 1, 0, 0, "python-error", 0,
     NULL, NULL, "python-error", "illegal memory access", 30, 0, 1, 2},
    {"up, answering wrongly", MP_OUT_CRASH, MP_SEEN_HTTP_ERROR, "HTTP 500: scheduler", 0, 0, -1, 0,
     0, NULL, 0, NULL, NULL, "http-error", "HTTP 500: scheduler", 0, 0, 0, 0},
    {"a hang", MP_OUT_HANG, MP_SEEN_HANG, "no token progress for 5 s", 0, 0, -1, 0, 0, NULL, 0, NULL,
     NULL, "hang", "no token progress", 0, 0, 0, 0},
};

static void fill(struct mp_attempt_result *r, const struct row *w)
{
    memset(r, 0, sizeof(*r));
    r->outcome = w->outcome;
    r->escapees_killed = w->escapees;
    if (w->exit_code >= 0)
        r->exit_desc = xasprintf("exited with status %d", w->exit_code);
    struct mp_attempt_obs *o = &r->obs;
    o->recorded = true;
    o->seen = w->seen;
    o->seen_message = w->seen_msg ? xstrdup(w->seen_msg) : NULL;
    o->announce_line = 7;
    o->died_early = w->died_early;
    o->exited = w->exited;
    o->exit_status = w->exit_code >= 0 ? (w->exit_code << 8) : -1; /* WIFEXITED form */
    o->lines_after_exit = w->after;
    if (w->crash_class) {
        o->crash = true;
        o->crash_class = xstrdup(w->crash_class);
        o->crash_message = xstrdup(!strcmp(w->crash_class, "tma-descriptor")
                                       ? "Failed to initialize the TMA descriptor"
                                       : "an illegal memory access was encountered");
        o->crash_line = 30;
        o->crash_engine_dead = w->engine_dead;
        mp_strv_push(&o->crash_sites, "a");
        mp_strv_push(&o->crash_sites, "b");
        o->crash_launch_site = xstrdup("a");
    }
    if (w->startup_error) {
        o->startup_error = xstrdup(w->startup_error);
        o->startup_error_line = 20;
    }
    if (w->quote) {
        o->error_quote = xstrdup(w->quote);
        o->last_error_line = 3;
    }
}

static void test_rows(void **st)
{
    (void)st;
    for (size_t k = 0; k < MP_ARRAY_SIZE(rows); k++) {
        const struct row *w = &rows[k];
        struct mp_attempt_result r;
        fill(&r, w);
        for (int pass = 0; pass < 2; pass++) { /* judging again gives the same */
            mp_verdict_classify(&r);
            if (!r.fail_class || strcmp(r.fail_class, w->cls) || !r.fail_message ||
                !strstr(r.fail_message, w->msg) || r.fail_line != w->line ||
                r.cuda_fault != w->cuda_fault || r.engine_died != w->engine_died ||
                r.sites.n != w->nsites)
                fail_msg("%s (pass %d): got %s '%s' line %ld cuda %d died %d sites %zu", w->what,
                         pass, r.fail_class, r.fail_message, r.fail_line, r.cuda_fault,
                         r.engine_died, r.sites.n);
        }
        mp_attempt_result_release(&r);
    }
}

/* An older store's attempt (no observations) and outcomes that are no
 * failure keep what was stored. */
static void test_left_alone(void **st)
{
    (void)st;
    struct mp_attempt_result r;
    memset(&r, 0, sizeof(r));
    r.outcome = MP_OUT_CRASH;
    r.fail_class = xstrdup("illegal-address");
    r.cuda_fault = true;
    mp_verdict_classify(&r); /* not recorded */
    assert_string_equal(r.fail_class, "illegal-address");
    assert_true(r.cuda_fault);
    r.obs.recorded = true;
    r.outcome = MP_OUT_ERROR; /* moeprobe's own failure: its record stands */
    mp_verdict_classify(&r);
    assert_string_equal(r.fail_class, "illegal-address");
    r.outcome = MP_OUT_CRASH; /* now judged: no crash in the log, nothing seen */
    mp_verdict_classify(&r);
    assert_null(r.fail_class);
    assert_false(r.cuda_fault);
    mp_attempt_result_release(&r);
}

static void test_seen_names(void **st)
{
    (void)st;
    for (int s = MP_SEEN_HTTP_ERROR; s <= MP_SEEN_PORT_MISMATCH; s++) {
        assert_non_null(mp_seen_name((enum mp_seen)s));
        assert_int_equal(mp_seen_from_name(mp_seen_name((enum mp_seen)s)), s);
    }
    assert_null(mp_seen_name(MP_SEEN_NONE));
    assert_int_equal(mp_seen_from_name("nonsense"), MP_SEEN_NONE);
    assert_int_equal(mp_seen_from_name(NULL), MP_SEEN_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_left_alone),
        cmocka_unit_test(test_seen_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
