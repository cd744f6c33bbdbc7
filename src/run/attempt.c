/* attempt.c - one start of the engine for a candidate, as a state machine
 * on one event loop. Read this first.
 *
 * An attempt is one object (struct att, att_internal.h) in one state. Its
 * one loop (base/loop.h) watches everything that can happen: the engine's
 * output (every line goes to server.log at once), its exit (pidfd,
 * SIGCHLD), the signalfd, the load generator's sockets and timers (HTTP
 * results), the teardown's pidfds and the attempt's own timers. The loop's
 * callbacks only record facts and raise events; at the start of every turn
 * the dispatcher (att_dispatch, the loop's before-sleep hook) serves the
 * pending events through the table below, one cell at a time: each cell is
 * a small named function that may change the state. The outcome is set in
 * one place (set_outcome, through att_stop), and nothing else waits or
 * polls: no state has a loop of its own, and no cell waits for a helper
 * (a container's inspect runs on the loop: VERIFYING).
 *
 * States (what each waits for; its timer, if any, raises EV_DEADLINE):
 *   STARTING     spawned (or attached): probes /health, then /v1/models,
 *                every 250 ms (at once when the log says it is ready);
 *                timer: --ready-timeout from spawn. The log's kernel
 *                selections may end it early (resolve, same configuration).
 *   LAST_WORDS   never ready: the engine finishes saying why (it exits and
 *                its output ends); timer: 3 s.
 *   VERIFYING    ready (or stopped once resolved), a container engine with
 *                environment knobs: `<client> container inspect` runs on
 *                the loop for the knob-delivery check (engine/delivery.h);
 *                then the work (or the stop). No state timer: the
 *                inspect's own 15 s timeout ends it too (EV_VERIFIED). The
 *                engine's exit or fatal line meanwhile is served after it.
 *   OPENING      a load phase's first /metrics scrape (observe/srvmetrics.h).
 *   SERVING      a load phase's requests, `level` at a time; timer: the
 *                phase's duration (soak); a stall timer (EV_STALL).
 *   CLOSING      a load phase's last /metrics scrape.
 *   CHECKING     after the load phases, before teardown: the passes of
 *                phases.c's mp_att_passes[] (the output check; a scoring
 *                pass is one more row there), one request at a time.
 *   HANGING      no token for --stall-timeout in SERVING or CHECKING: the
 *                hang's evidence (run/crashhang.h), in steps: /health and
 *                /metrics twice, 2 s apart, through the load generator;
 *                then a GPU core dump through the engine's pipes, the
 *                dumps awaited, cuda-gdb on each (its output and exit
 *                watched). timer: the step's deadline (3 s per look, 2 s
 *                between them, 5 s for the pipes, 0.5 s between looks at
 *                the dumps up to 60 s, 60 s per cuda-gdb). Then the phase
 *                or pass ends as a hang. A signal ends it at once, with
 *                the evidence found so far.
 *   SETTLING     after a failure: until the engine has said what happened:
 *                it exited and its output ended, or its log says the engine
 *                died and nothing is in flight, or /health answers 200 (it
 *                stayed up: no crash is coming) and nothing is in flight;
 *                timer: 10 s, the most it waits. A state line says how
 *                long it took and which of these ended it.
 *   STOPPING     teardown (proc/proc.h mp_proc_stop_begin): TERM+CONT, the
 *                grace runs (--grace); the engine's last words are still
 *                read. A second signal KILLs at once (#30 item 6).
 *   KILLING      teardown: KILL sent to the group.
 *   SCANNING     teardown: escapees, the container's stop and rm.
 *   DONE         the summary is written (att_summarise).
 *
 * Events (att_internal.h enum att_event) are served in that enum's order
 * when several are pending: results first, then signals, I/O errors, the
 * log's fatal line, the exit, ... Timers of a state are stopped when it is
 * left, and their pending events dropped: a cell never sees another state's
 * deadline.
 *
 * Hooks for later work: a pass after the load phases (correctness
 * scoring): a row of mp_att_passes[] (phases.c). On a hang, before
 * teardown (a dump of the engine's stacks): a step of run/crashhang.c,
 * entered by begin_hang() below. Stopping at
 * the selection lines: starting_selected() below. What the engine is given
 * at launch (core-dump variables): engine/launch.c. */
#include "run/att_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "logs/logscan.h"
#include "observe/srvmetrics.h"
#include "observe/telemetry.h"
#include "proc/proc.h"
#include "xalloc.h"

typedef void (*att_cell)(struct att *a);

static void enter(struct att *a, enum att_state st);

/* ---------- the outcome: set here and nowhere else ---------- */

static void set_outcome(struct att *a, enum mp_outcome out)
{
    a->r->outcome = out;
}

/* The attempt's active part is over with this outcome: tear down. */
static void att_stop(struct att *a, enum mp_outcome out)
{
    set_outcome(a, out);
    mp_att_clear_progress(a);
    enter(a, ST_STOPPING);
}

/* ---------- state entries ---------- */

static void arm(struct att *a, int64_t at)
{
    mp_loop_timer_start(a->loop, &a->t_state, at);
}

static void on_step(void *ud, enum mp_stop_step step)
{
    (void)step;
    att_raise(ud, EV_STOP_STEP);
}

static void begin_teardown(struct att *a)
{
    a->died_early = a->exited;
    a->t_teardown = mp_now_ns();
    if (a->t_work)
        a->r->workload_s = (double)(a->t_teardown - a->t_work) / 1e9;
    mp_att_unwatch_engine(a);
    if (!a->proc) {
        mp_att_follow_log(a); /* attached: the server is not ours to stop */
        enter(a, ST_DONE);
        return;
    }
    a->stop = mp_proc_stop_begin(a->proc, a->loop, a->o->wl->grace_s, mp_att_on_line, a, on_step, a);
}

/* The first load phase, or the passes, or a clean end. */
static void next_work(struct att *a)
{
    if (mp_att_next_phase(a)) {
        enter(a, ST_OPENING);
        return;
    }
    for (; a->pass < mp_att_npasses; a->pass++)
        if (mp_att_passes[a->pass].wanted(a))
            break;
    if (a->pass < mp_att_npasses)
        enter(a, ST_CHECKING);
    else
        att_stop(a, MP_OUT_CLEAN);
}

static void hang_wake(void *ud)
{
    att_raise(ud, EV_RECHECK);
}

/* Entering HANGING: the first look at /health and /metrics goes out. */
static void begin_hang(struct att *a)
{
    struct mp_hang_in in = {a->o->dir, a->crash.pipes};
    int64_t at;
    mp_att_note(a, "hang: /health and /metrics twice, 2 s apart, then a GPU core dump");
    a->hanging = mp_hang_begin(&in, a->lg, &a->r->fault, hang_wake, a, &at);
    arm(a, at);
}

/* Leaving HANGING, whatever the way: the evidence (complete or cut short)
 * joins the failure's message. */
static void end_hang(struct att *a)
{
    const char *ev = mp_hang_end(a->hanging);
    a->hanging = NULL;
    if (ev && a->seen_msg) {
        char *m = xasprintf("%s; %s", a->seen_msg, ev);
        free(a->seen_msg);
        a->seen_msg = m;
    }
}

static void enter(struct att *a, enum att_state st)
{
    if (a->hanging && st != ST_HANGING)
        end_hang(a);
    if (a->dlv_run && st != ST_VERIFYING)
        att_delivery_done(a); /* left early: the check says it was cut short */
    mp_loop_timer_stop(a->loop, &a->t_state);
    a->pending &= ~(1u << EV_DEADLINE);
    if (st != ST_SERVING && st != ST_CHECKING) {
        mp_loop_timer_stop(a->loop, &a->t_stall);
        a->pending &= ~(1u << EV_STALL);
    }
    a->state = st;
    switch (st) {
    case ST_STARTING:
        arm(a, a->t_spawn + (int64_t)(a->o->wl->ready_timeout_s * 1e9));
        mp_att_probe(a);
        break;
    case ST_LAST_WORDS:
        arm(a, mp_now_ns() + LAST_WORDS_NS);
        break;
    case ST_OPENING:
        mp_srvm_phase_begin(a->srvm);
        if (!mp_srvm_waiting(a->srvm))
            enter(a, ST_SERVING);
        break;
    case ST_SERVING:
        a->t_phase = mp_now_ns();
        mp_gpu_set_load(a->gpu, true);
        if (a->sp.duration_s > 0)
            arm(a, a->t_phase + (int64_t)(a->sp.duration_s * 1e9));
        mp_att_arm_stall(a);
        mp_att_fill(a);
        if (a->failed || mp_att_phase_complete(a))
            att_raise(a, EV_RECHECK); /* nothing to wait for: close it on the next dispatch */
        break;
    case ST_CHECKING:
        mp_att_passes[a->pass].begin(a);
        mp_att_arm_stall(a);
        if (a->failed || mp_att_passes[a->pass].complete(a))
            att_raise(a, EV_RECHECK);
        break;
    case ST_HANGING:
        begin_hang(a);
        break;
    case ST_SETTLING:
        mp_att_note(a, "settling: up to %.0f s for the engine to say what happened",
                    (double)SETTLE_NS / 1e9);
        a->t_settle = mp_now_ns();
        arm(a, a->t_settle + SETTLE_NS);
        a->settle_up = false;
        mp_lg_get(a->lg, "/health", 2.0, TAG_SETTLE); /* did it stay up? */
        break;
    case ST_STOPPING:
        begin_teardown(a);
        break;
    case ST_DONE:
        mp_loop_stop(a->loop); /* this turn does not wait */
        break;
    case ST_VERIFYING:
    case ST_CLOSING:
    case ST_KILLING:
    case ST_SCANNING:
    case ST_COUNT:
        break;
    }
}

/* ---------- cells: STARTING, LAST_WORDS ---------- */

static void never_ready(struct att *a)
{
    a->r->ready_s = (double)(mp_now_ns() - a->t_spawn) / 1e9; /* its start-up: to the failure */
    if (a->seen) { /* it said why already (an unreachable port) */
        att_stop(a, MP_OUT_STARTUP_FAILURE);
        return;
    }
    enter(a, ST_LAST_WORDS);
    if (a->exited && a->eof)
        att_raise(a, EV_EOF);
}

/* The work begins: the load phases, the passes, or a clean end. */
static void start_work(struct att *a)
{
    if (!mp_att_watch_procs(a)) /* its processes now, before the load (a fault names one) */
        mp_att_io_error(a);
    a->t_work = mp_now_ns();
    next_work(a);
}

/* Did the knobs arrive? Then the work, or the stop with out (stop). A
 * container's inspect runs in VERIFYING first. */
static void verify_then(struct att *a, bool stop, enum mp_outcome out)
{
    if (att_check_delivery(a)) {
        a->dlv_stop = stop;
        a->dlv_outcome = out;
        enter(a, ST_VERIFYING);
    } else if (stop) {
        att_stop(a, out);
    } else {
        start_work(a);
    }
}

static void ready(struct att *a)
{
    a->ready = true;
    a->r->ready_s = (double)(mp_now_ns() - a->t_spawn) / 1e9;
    mp_att_say_resolved(a);
    mp_att_note(a, "ready in %.1f s", a->r->ready_s);
    mp_att_copy_resolved(a);
    verify_then(a, false, MP_OUT_CLEAN);
}

/* Stopped once resolved: resolve asks for nothing more, a same
 * configuration as one tested already has nothing more to teach. */
static bool stop_if_resolved(struct att *a)
{
    double now_s = (double)(mp_now_ns() - a->t_spawn) / 1e9;
    if (a->o->resolve_only) {
        a->r->ready_s = now_s; /* its start-up: to the stop */
        verify_then(a, true, MP_OUT_RESOLVED); /* which road, if the knobs arrived */
        return true;
    }
    if (mp_att_check_same(a)) {
        a->r->ready_s = now_s;
        verify_then(a, true, MP_OUT_SAME_CONFIG); /* ... but did it run the candidate's knobs? */
        return true;
    }
    return false;
}

/* The log shows the kernel selections: report them; stop here when that is
 * all the attempt asks for (the place for other "stop at selection" rules). */
static void starting_selected(struct att *a)
{
    a->selected = true;
    a->r->selected_s = (double)(mp_now_ns() - a->t_spawn) / 1e9;
    mp_att_say_resolved(a);
    stop_if_resolved(a);
}

static void starting_result(struct att *a)
{
    if (mp_att_probe_result(a, &a->res) == 1 && !stop_if_resolved(a))
        ready(a);
}

static void starting_ready_line(struct att *a)
{
    if (!a->probing) /* ask now rather than at the next 250 ms probe */
        mp_att_probe(a);
}

static void starting_probe(struct att *a)
{
    if (!a->probing)
        mp_att_probe(a);
}

static void starting_port_elsewhere(struct att *a)
{
    mp_loop_timer_start(a->loop, &a->t_mismatch, mp_now_ns() + MISMATCH_GRACE_NS);
}

static void starting_mismatch(struct att *a)
{
    if (a->seen)
        return;
    a->seen = MP_SEEN_PORT_MISMATCH;
    a->seen_msg = xstrdup(a->mismatch_why);
    never_ready(a);
}

static void starting_signal(struct att *a)
{
    att_stop(a, MP_OUT_INTERRUPTED);
}

static void any_io_error(struct att *a)
{
    att_stop(a, MP_OUT_ERROR);
}

static void last_words_over(struct att *a)
{
    if (!a->seen && !a->exited && !(a->events & MP_LOGEV_FATAL)) {
        a->seen = MP_SEEN_READY_TIMEOUT;
        a->seen_msg = xasprintf("the engine did not become ready within %.0f s",
                                    a->o->wl->ready_timeout_s);
    }
    att_stop(a, MP_OUT_STARTUP_FAILURE);
}

static void last_words_check(struct att *a)
{
    if (a->exited && a->eof)
        last_words_over(a);
}

/* ---------- cells: VERIFYING ---------- */

static void verifying_over(struct att *a)
{
    att_delivery_done(a);
    uint32_t again = a->dlv_deferred;
    a->dlv_deferred = 0;
    if (a->dlv_stop)
        att_stop(a, a->dlv_outcome);
    else
        start_work(a);
    for (int ev = 0; ev < EV_COUNT; ev++) /* for the state it went on to */
        if (again & (1u << ev))
            att_raise(a, (enum att_event)ev);
}

static void verifying_exit(struct att *a)
{
    a->dlv_deferred |= 1u << EV_EXIT;
}

static void verifying_eof(struct att *a)
{
    a->dlv_deferred |= 1u << EV_EOF;
}

static void verifying_fatal(struct att *a)
{
    a->dlv_deferred |= 1u << EV_FATAL;
}

/* A signal: the inspect is given up (the check says so); a stop that was
 * due keeps its outcome. */
static void verifying_signal(struct att *a)
{
    att_stop(a, a->dlv_stop ? a->dlv_outcome : MP_OUT_INTERRUPTED);
}

/* ---------- cells: the load phases ---------- */

/* After a phase's last scrape: its numbers, then what comes next. */
static void phase_closed(struct att *a)
{
    struct mp_phase_result *ph = &a->r->phases[a->cur_phase];
    mp_srvm_result(a->srvm, &ph->srv);
    mp_att_note(a, "phase %s: %d ok, %d failed, %.1f tok/s in %.1f s", ph->name, ph->ok, ph->failed,
                ph->tok_s, ph->wall_s);
    if (a->hang)
        att_stop(a, MP_OUT_HANG);
    else if (a->failed)
        enter(a, ST_SETTLING);
    else
        next_work(a);
}

static void close_phase(struct att *a)
{
    mp_att_finish_phase(a);
    mp_srvm_phase_end(a->srvm);
    if (mp_srvm_waiting(a->srvm))
        enter(a, ST_CLOSING);
    else
        phase_closed(a);
}

/* Interrupted or cut short by an I/O error in a phase: its numbers so far,
 * no closing scrape (nothing waits). */
static void phase_abandon(struct att *a, enum mp_outcome out)
{
    mp_att_finish_phase(a);
    mp_srvm_phase_end(a->srvm);
    att_stop(a, out);
}

static void serving_result(struct att *a)
{
    if (a->res.kind != MP_LG_GEN)
        return;
    mp_att_handle_result(a, &a->res);
    a->done++;
    if (!a->failed)
        mp_att_fill(a);
    if (a->failed || mp_att_phase_complete(a))
        close_phase(a);
}

static void serving_time_up(struct att *a)
{
    a->expired = true;
    if (mp_att_phase_complete(a))
        close_phase(a);
}

static void serving_fatal(struct att *a)
{
    mp_att_set_fail(a, MP_SEEN_ENGINE_FATAL, "the engine logged a fatal error");
    close_phase(a);
}

static void serving_exit(struct att *a)
{
    mp_att_set_fail(a, MP_SEEN_PROCESS_EXIT, "the engine exited during the workload");
    close_phase(a);
}

static void serving_stall(struct att *a)
{
    if (!mp_att_stalled(a, a->r->phases[a->cur_phase].name)) {
        mp_att_arm_stall(a);
        return;
    }
    a->hang_from = ST_SERVING;
    enter(a, ST_HANGING);
}

static void serving_signal(struct att *a)
{
    phase_abandon(a, MP_OUT_INTERRUPTED);
}

static void serving_io_error(struct att *a)
{
    phase_abandon(a, MP_OUT_ERROR);
}

static void opening_scraped(struct att *a)
{
    enter(a, ST_SERVING);
}

static void opening_failure(struct att *a)
{
    mp_att_set_fail(a, (a->events & MP_LOGEV_FATAL) && !a->exited ? MP_SEEN_ENGINE_FATAL : MP_SEEN_PROCESS_EXIT,
                    (a->events & MP_LOGEV_FATAL) && !a->exited ? "the engine logged a fatal error"
                                                               : "the engine exited during the workload");
    close_phase(a);
}

static void serving_recheck(struct att *a)
{
    if (a->failed || mp_att_phase_complete(a))
        close_phase(a);
}

static void closing_result(struct att *a)
{
    if (a->res.kind == MP_LG_GEN)
        mp_att_handle_result(a, &a->res); /* in flight when the phase was closed */
}

static void closing_scraped(struct att *a)
{
    phase_closed(a);
}

static void closing_fatal(struct att *a)
{
    mp_att_set_fail(a, MP_SEEN_ENGINE_FATAL, "the engine logged a fatal error");
}

static void closing_exit(struct att *a)
{
    mp_att_set_fail(a, MP_SEEN_PROCESS_EXIT, "the engine exited during the workload");
}

/* A signal while a phase closes: what was found stands. */
static void closing_signal(struct att *a)
{
    att_stop(a, a->hang ? MP_OUT_HANG : a->failed ? MP_OUT_CRASH : MP_OUT_INTERRUPTED);
}

/* ---------- cells: CHECKING (the passes after the load phases) ---------- */

static void pass_over(struct att *a)
{
    mp_att_finish_phase(a);
    if (a->hang) {
        att_stop(a, MP_OUT_HANG);
    } else if (a->failed) {
        enter(a, ST_SETTLING);
    } else {
        for (a->pass++; a->pass < mp_att_npasses; a->pass++)
            if (mp_att_passes[a->pass].wanted(a))
                break;
        if (a->pass < mp_att_npasses)
            enter(a, ST_CHECKING);
        else
            att_stop(a, MP_OUT_CLEAN);
    }
}

static void checking_result(struct att *a)
{
    if (a->res.kind != MP_LG_GEN && a->res.kind != MP_LG_POST) /* POST: the scoring pass */
        return;
    mp_att_passes[a->pass].on_result(a, &a->res);
    if (a->failed || mp_att_passes[a->pass].complete(a))
        pass_over(a);
}

static void checking_recheck(struct att *a)
{
    if (a->failed || mp_att_passes[a->pass].complete(a))
        pass_over(a);
}

static void checking_fatal(struct att *a)
{
    mp_att_set_fail(a, MP_SEEN_ENGINE_FATAL, "the engine logged a fatal error");
    pass_over(a);
}

static void checking_exit(struct att *a)
{
    mp_att_set_fail(a, MP_SEEN_PROCESS_EXIT, "the engine exited during the workload");
    pass_over(a);
}

static void checking_stall(struct att *a)
{
    if (!mp_att_stalled(a, mp_att_passes[a->pass].name)) {
        mp_att_arm_stall(a);
        return;
    }
    a->hang_from = ST_CHECKING;
    enter(a, ST_HANGING);
}

static void checking_signal(struct att *a)
{
    mp_att_finish_phase(a);
    att_stop(a, MP_OUT_INTERRUPTED);
}

/* ---------- cells: HANGING ---------- */

/* The next step of the evidence, or, once it is all in, the phase or pass
 * ends as a hang (leaving the state adds the evidence to the message). */
static void hanging_step(struct att *a)
{
    int64_t at = mp_hang_step(a->hanging);
    if (at)
        arm(a, at);
    else if (a->hang_from == ST_CHECKING)
        pass_over(a);
    else
        close_phase(a);
}

static void hanging_result(struct att *a)
{
    if (!mp_hang_take(a->hanging, &a->res) && a->res.kind == MP_LG_GEN)
        mp_att_handle_result(a, &a->res); /* a stalled request ended after all */
    hanging_step(a);
}

static void hanging_gone(struct att *a)
{
    if (a->exited)
        mp_hang_engine_gone(a->hanging);
    hanging_step(a);
}

/* Interrupted, or an evidence file failed: the hang stands, with the
 * evidence found so far; nothing more is waited for. */
static void hanging_cut(struct att *a, enum mp_outcome out)
{
    if (a->hang_from == ST_CHECKING) {
        mp_att_finish_phase(a);
        att_stop(a, out);
    } else {
        phase_abandon(a, out);
    }
}

static void hanging_signal(struct att *a)
{
    hanging_cut(a, MP_OUT_HANG);
}

static void hanging_io_error(struct att *a)
{
    hanging_cut(a, MP_OUT_ERROR);
}

/* ---------- cells: SETTLING ---------- */

/* Settling is over: say how long it took and what ended it (#27: the
 * evidence, the bound only as the last resort). */
static void settled(struct att *a, const char *why)
{
    mp_att_note(a, "settled in %.1f s: %s", (double)(mp_now_ns() - a->t_settle) / 1e9, why);
    att_stop(a, MP_OUT_CRASH);
}

/* Is the engine's account of the failure in? */
static void settling_check(struct att *a)
{
    const struct mp_logresult *lr = mp_logscan_result(a->ls);
    bool quiet = mp_lg_inflight_gen(a->lg) == 0;
    if (a->exited && a->eof)
        settled(a, "the engine exited");
    else if (lr->has_crash && lr->crash.engine_dead && quiet)
        settled(a, "its log says the engine died");
    else if (a->settle_up && quiet && !lr->has_crash && !(a->events & MP_LOGEV_FATAL))
        settled(a, "it stayed up (/health 200, nothing in flight)");
}

static void settling_result(struct att *a)
{
    if (a->res.kind == MP_LG_GEN)
        mp_att_handle_result(a, &a->res);
    else if (a->res.user_tag == TAG_SETTLE)
        a->settle_up = a->res.outcome == MP_LG_OK && a->res.http_status == 200;
    settling_check(a);
}

static void settling_over(struct att *a)
{
    att_stop(a, MP_OUT_CRASH); /* a signal too: the failure stands */
}

static void settling_bound(struct att *a)
{
    settled(a, "the bound, without the engine's account");
}

/* ---------- cells: teardown ---------- */

static void teardown_step(struct att *a)
{
    switch (mp_proc_stop_step(a->stop)) {
    case MP_STOP_TERM:
        a->state = ST_STOPPING;
        break;
    case MP_STOP_KILL:
        a->state = ST_KILLING;
        break;
    case MP_STOP_ESCAPEES:
    case MP_STOP_CONTAINER:
        a->state = ST_SCANNING;
        break;
    case MP_STOP_DONE:
        enter(a, ST_DONE);
        break;
    }
}

/* A signal during teardown: the first of the attempt is recorded (the
 * dispatcher did: the run stops after this attempt, never "finished");
 * another means now: KILL the group at once. */
static void teardown_signal(struct att *a)
{
    if (a->nsignals == 1) {
        mp_att_note(a, "interrupted (signal %d): stopping after this teardown; another signal "
                       "kills the engine now", a->signo);
        return;
    }
    if (a->second_signal)
        return;
    a->second_signal = true;
    mp_att_note(a, "second signal: killing the engine now");
    mp_proc_stop_now(a->stop);
}

/* ---------- the table ---------- */

#define S(state) [ST_##state]
static const att_cell table[ST_COUNT][EV_COUNT] = {
    S(STARTING) = {
        [EV_RESULT] = starting_result,
        [EV_SIGNAL] = starting_signal,
        [EV_IO_ERROR] = any_io_error,
        [EV_FATAL] = never_ready,
        [EV_EXIT] = never_ready,
        [EV_DEADLINE] = never_ready,
        [EV_SELECTED] = starting_selected,
        [EV_PORT_ELSEWHERE] = starting_port_elsewhere,
        [EV_MISMATCH] = starting_mismatch,
        [EV_READY_LINE] = starting_ready_line,
        [EV_PROBE] = starting_probe,
    },
    S(LAST_WORDS) = {
        [EV_SIGNAL] = last_words_over,
        [EV_EXIT] = last_words_check,
        [EV_EOF] = last_words_check,
        [EV_DEADLINE] = last_words_over,
    },
    S(VERIFYING) = {
        [EV_VERIFIED] = verifying_over,
        [EV_SIGNAL] = verifying_signal,
        [EV_IO_ERROR] = any_io_error,
        [EV_FATAL] = verifying_fatal,
        [EV_EXIT] = verifying_exit,
        [EV_EOF] = verifying_eof,
    },
    S(OPENING) = {
        [EV_SIGNAL] = serving_signal,
        [EV_IO_ERROR] = serving_io_error,
        [EV_FATAL] = opening_failure,
        [EV_EXIT] = opening_failure,
        [EV_SCRAPED] = opening_scraped,
    },
    S(SERVING) = {
        [EV_RESULT] = serving_result,
        [EV_SIGNAL] = serving_signal,
        [EV_IO_ERROR] = serving_io_error,
        [EV_FATAL] = serving_fatal,
        [EV_EXIT] = serving_exit,
        [EV_DEADLINE] = serving_time_up,
        [EV_STALL] = serving_stall,
        [EV_RECHECK] = serving_recheck,
    },
    S(CLOSING) = {
        [EV_RESULT] = closing_result,
        [EV_SIGNAL] = closing_signal,
        [EV_IO_ERROR] = serving_io_error,
        [EV_FATAL] = closing_fatal,
        [EV_EXIT] = closing_exit,
        [EV_SCRAPED] = closing_scraped,
    },
    S(CHECKING) = {
        [EV_RESULT] = checking_result,
        [EV_SIGNAL] = checking_signal,
        [EV_IO_ERROR] = any_io_error,
        [EV_FATAL] = checking_fatal,
        [EV_EXIT] = checking_exit,
        [EV_STALL] = checking_stall,
        [EV_RECHECK] = checking_recheck,
    },
    S(HANGING) = {
        [EV_RESULT] = hanging_result,
        [EV_SIGNAL] = hanging_signal,
        [EV_IO_ERROR] = hanging_io_error,
        [EV_EXIT] = hanging_gone,
        [EV_EOF] = hanging_gone,
        [EV_DEADLINE] = hanging_step,
        [EV_RECHECK] = hanging_step,
    },
    S(SETTLING) = {
        [EV_RESULT] = settling_result,
        [EV_SIGNAL] = settling_over,
        [EV_IO_ERROR] = settling_over,
        [EV_FATAL] = settling_check,
        [EV_EXIT] = settling_check,
        [EV_EOF] = settling_check,
        [EV_DEADLINE] = settling_bound,
    },
    S(STOPPING) = {[EV_SIGNAL] = teardown_signal, [EV_STOP_STEP] = teardown_step},
    S(KILLING) = {[EV_SIGNAL] = teardown_signal, [EV_STOP_STEP] = teardown_step},
    S(SCANNING) = {[EV_SIGNAL] = teardown_signal, [EV_STOP_STEP] = teardown_step},
    S(DONE) = {[EV_RESULT] = NULL},
};
#undef S

/* ---------- the dispatcher ---------- */

static void fire(struct att *a, enum att_event ev)
{
    att_cell cell = table[a->state][ev];
    if (cell)
        cell(a);
}

/* The next pending event other than a result, in enum order; EV_COUNT when
 * none. A signal is served once per signal that came. */
static enum att_event next_event(struct att *a)
{
    for (int ev = EV_SIGNAL; ev < EV_COUNT; ev++) {
        if (!(a->pending & (1u << ev)))
            continue;
        if (ev == EV_SIGNAL) {
            int signo = a->sig_q[0];
            memmove(a->sig_q, a->sig_q + 1, (a->nsig_q - 1) * sizeof(a->sig_q[0]));
            if (--a->nsig_q == 0)
                a->pending &= ~(1u << EV_SIGNAL);
            a->nsignals++;
            if (!a->signo)
                a->signo = signo; /* the interruption, recorded whatever the state */
            return EV_SIGNAL;
        }
        a->pending &= ~(1u << ev);
        return (enum att_event)ev;
    }
    return EV_COUNT;
}

void att_dispatch(struct att *a)
{
    for (;;) {
        if (a->state != ST_DONE && mp_lg_next_result(a->lg, &a->res) == 1) {
            if (mp_srvm_take(a->srvm, &a->res)) {
                if (!mp_srvm_waiting(a->srvm))
                    att_raise(a, EV_SCRAPED);
            } else {
                fire(a, EV_RESULT);
            }
            mp_lg_result_release(&a->res);
            continue;
        }
        enum att_event ev = next_event(a);
        if (ev == EV_COUNT)
            break;
        fire(a, ev);
    }
}

/* Before each wait: the evidence of the last turn goes to disk and the live
 * line is redrawn first, then the events are served - so requests the
 * cells start go out right after, not behind a file write. */
static void hook(struct mp_loop *l, void *ud)
{
    struct att *a = ud;
    (void)l;
    mp_att_flush(a);
    mp_att_draw_progress(a);
    att_dispatch(a);
}

int mp_attempt_run(const struct mp_attempt_opts *o, struct mp_attempt_result *r, int *signo_out)
{
    struct att a;
    bool spawn_failed = false;
    int rc = att_open(&a, o, r, &spawn_failed);
    if (rc < 0) {
        set_outcome(&a, MP_OUT_ERROR);
        if (spawn_failed) {
            r->fail_class = xstrdup(MP_FAIL_SPAWN); /* stored: the record says why */
            rc = MP_ECOMMAND;
        }
    } else {
        mp_loop_hook_add(a.loop, hook, &a);
        enter(&a, ST_STARTING);
        while (a.state != ST_DONE) {
            int lr = mp_loop_run_once(a.loop, -1);
            if (lr < 0) { /* the loop itself failed: stop as cleanly as possible */
                a.io_err = true;
                if (a.state < ST_STOPPING)
                    att_stop(&a, MP_OUT_ERROR);
                else
                    mp_proc_stop_now(a.stop);
            }
        }
        att_summarise(&a);
        if (a.ev_errno || a.io_err)
            set_outcome(&a, MP_OUT_ERROR); /* a cut evidence file or store: no verdict */
    }
    rc = att_close(&a, rc);
    if (signo_out)
        *signo_out = a.signo;
    return rc;
}
