/* att_core.c - what every file of an attempt uses (att_internal.h): raising
 * an event, the state's timers, a progress line, the evidence files'
 * failure, what the log resolved. The bottom of run/'s attempt files: it
 * uses none of them. */
#include "run/att_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "escape.h"
#include "logs/logscan.h"

void att_raise(struct att *a, enum att_event ev)
{
    a->pending |= 1u << ev;
}

static void on_timer(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    struct att *a = ud;
    (void)l;
    att_raise(a, t == &a->t_state     ? EV_DEADLINE
                 : t == &a->t_probe   ? EV_PROBE
                 : t == &a->t_stall   ? EV_STALL
                                      : EV_MISMATCH);
}

void att_timers_init(struct att *a)
{
    mp_loop_timer_init(&a->t_state, on_timer, a);
    mp_loop_timer_init(&a->t_probe, on_timer, a);
    mp_loop_timer_init(&a->t_mismatch, on_timer, a);
    mp_loop_timer_init(&a->t_stall, on_timer, a);
}

/* progress_lines: one line per state change, stamped with the local time
 * (a log read hours later, a soak under nohup). */
void mp_att_note(struct att *a, const char *fmt, ...)
{
    if (!a->o->progress_lines)
        return;
    char msg[600], when[16] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    time_t t = time(NULL);
    struct tm tm;
    if (localtime_r(&t, &tm))
        strftime(when, sizeof(when), "%H:%M:%S", &tm);
    /* engine words: no control character (C0, DEL, C1, bidi) to the terminal */
    char *shown = mp_term_dup(msg);
    fprintf(stderr, "moeprobe: %s [%s] %s\n", when, a->o->label ? a->o->label : "", shown);
    free(shown);
    a->last_beat = mp_now_ns();
}


/* Note the first failed write of an evidence file (server.log,
 * server.times, requests.jsonl: a full disk, a file-size limit, an I/O
 * error): the attempt stops, later writes to its files are skipped, and it
 * ends as "evidence-incomplete" (never clean over a cut log). Returns ok. */
bool mp_att_ev_ok(struct att *a, bool ok, const char *name)
{
    if (!ok && !a->ev_errno) {
        a->ev_errno = errno ? errno : EIO;
        a->ev_file = name;
        mp_att_io_error(a);
    }
    return ok;
}

void mp_att_io_error(struct att *a)
{
    if (!a->io_err)
        att_raise(a, EV_IO_ERROR);
    a->io_err = true;
}

void mp_att_copy_resolved(struct att *a)
{
    mp_resolved_release(&a->r->res);
    mp_resolved_from_log(&a->r->res, mp_logscan_result(a->ls));
}

