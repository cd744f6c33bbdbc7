/* score.c - the scoring pass of an attempt (run/score.h). */
#include "run/att_internal.h"
#include "run/score.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "http/loadgen.h"
#include "logs/logscan.h"
#include "quality/score.h"
#include "store/store.h"
#include "xalloc.h"

#define SETTLE_NS 10000000000LL /* after a failure, read the log this long at most */

struct sc;
/* What to do with one finished request (idx: its index in the batch). */
typedef void (*sc_fn)(struct sc *x, size_t idx, struct mp_lg_result *res);

struct sc {
    struct att *a;
    const struct mp_score_plan *p;
    struct mp_score *s;
    const char *phase;   /* "score" | "task" */
    bool repeat;         /* the passages' second scoring */
    bool stop;           /* start no more requests of this batch */
    int retry_k;         /* greedy: the engine allows only this many (-1: no retry) */
};

size_t mp_score_plan_requests(const struct mp_score_plan *p)
{
    if (!p)
        return 0;
    return p->npassages * (p->repeat ? 2 : 1) + p->ngreedy + (p->tasks ? p->tasks->n : 0);
}

/* A request the engine refused: what it asks for is not available. */
static bool refused(const struct mp_lg_result *res)
{
    return res->outcome == MP_LG_HTTP_ERROR &&
           ((res->http_status >= 400 && res->http_status < 500) || res->http_status == 501);
}

static char *note_of(const struct mp_lg_result *res)
{
    return xstrdup(res->error[0] ? res->error : mp_lg_outcome_name(res->outcome));
}

static enum mp_outcome sc_watch(struct sc *x)
{
    struct att *a = x->a;
    if (a->signo)
        return MP_OUT_INTERRUPTED;
    if (a->io_err)
        return MP_OUT_ERROR;
    if (a->events & MP_LOGEV_FATAL)
        mp_att_set_fail(a, "engine-fatal", "the engine logged a fatal error");
    if (a->exited)
        mp_att_set_fail(a, "process-exit", "the engine exited during the scoring pass");
    if (!a->failed)
        return MP_OUT_CLEAN;
    if (!a->r->fail_phase)
        a->r->fail_phase = xstrdup(x->phase);
    if (a->req_fail_class && !strcmp(a->req_fail_class, "request-timeout")) {
        free(a->req_fail_class);
        a->req_fail_class = xstrdup("hang");
        return MP_OUT_HANG; /* no answer within --stall-timeout */
    }
    return MP_OUT_CRASH;
}

/* The request into requests.jsonl and the attempt's counts; a failure that
 * is no refusal is the attempt's failure. */
static void record(struct sc *x, struct mp_lg_result *res)
{
    struct att *a = x->a;
    mp_att_write_request(a, res, x->phase);
    if (res->outcome == MP_LG_OK) {
        a->r->req_ok++;
    } else if (!refused(res)) {
        a->r->req_failed++;
        if (!a->failed)
            a->fail_req_line = a->req_lines;
        mp_att_set_fail(a, res->outcome == MP_LG_TIMEOUT ? "request-timeout" : "score-request",
                        res->error[0] ? res->error : mp_lg_outcome_name(res->outcome));
    }
}

/* After a failure: keep reading the engine's log until it has said what
 * happened (it exits, or logs its death), at most SETTLE_NS. */
static void settle(struct att *a)
{
    int64_t deadline = mp_now_ns() + SETTLE_NS;
    while (!a->signo && mp_now_ns() < deadline && !(a->exited && a->eof)) {
        const struct mp_logresult *lr = mp_logscan_result(a->ls);
        if (lr->has_crash && lr->crash.engine_dead)
            break;
        mp_att_pump(a, 50);
    }
}

/* Stop this batch's requests still in flight (never the /metrics scrapes
 * that share the load generator) and drop their results. */
static void cancel_batch(struct att *a, const long *ids, size_t started)
{
    for (size_t i = 0; i < started; i++)
        if (ids[i] > 0)
            mp_lg_cancel(a->lg, ids[i]);
    struct mp_lg_result res;
    while (mp_att_next_result(a, &res))
        mp_lg_result_release(&res);
}

/* Run n requests, level at a time. */
static enum mp_outcome batch(struct sc *x, char *const *bodies, size_t n, int level, sc_fn fn)
{
    struct att *a = x->a;
    size_t started = 0, done = 0;
    long *ids = xcalloc(n + 1, sizeof(*ids));
    double timeout = a->o->wl->stall_timeout_s;
    enum mp_outcome w = MP_OUT_CLEAN;
    x->stop = false;
    for (;;) {
        while (!x->stop && started < n && (int)(started - done) < level) {
            ids[started] = mp_lg_post(a->lg, "/v1/completions", bodies[started], timeout,
                                      (int)started);
            if (ids[started] < 0) {
                mp_att_set_fail(a, "client-error", "could not start a request");
                break;
            }
            started++;
        }
        if (done == started)
            break;
        mp_att_pump(a, 100);
        struct mp_lg_result res;
        while (mp_att_next_result(a, &res)) {
            if (res.kind == MP_LG_POST && res.user_tag >= 0 && (size_t)res.user_tag < n) {
                ids[res.user_tag] = 0;
                fn(x, (size_t)res.user_tag, &res);
                record(x, &res);
                done++;
            }
            mp_lg_result_release(&res);
        }
        mp_att_draw_progress(a, x->phase, (int)done, (int)n);
        if ((w = sc_watch(x)) != MP_OUT_CLEAN)
            break;
    }
    if (w != MP_OUT_CLEAN) {
        cancel_batch(a, ids, started);
        if (w == MP_OUT_CRASH)
            settle(a);
    }
    free(ids);
    return w;
}

/* ---- 1. the passages ---- */

static void on_passage(struct sc *x, size_t i, struct mp_lg_result *res)
{
    struct mp_score *s = x->s;
    if (res->outcome != MP_LG_OK) {
        if (refused(res) && !x->repeat && s->plp == MP_SC_OK) {
            s->plp = MP_SC_REFUSED;
            s->plp_note = note_of(res);
        }
        x->stop = true;
        return;
    }
    char err[256];
    struct mp_lp_seq *dst = x->repeat ? &s->repeat[i] : &s->pass[i];
    mp_lp_seq_release(dst);
    int rc = mp_score_parse_plp(res->text, res->text_len, dst, err, sizeof(err));
    if (rc != 0 && !x->repeat && s->plp == MP_SC_OK) {
        s->plp = rc == MP_SCORE_ABSENT ? MP_SC_REFUSED : MP_SC_FAILED;
        s->plp_note = rc == MP_SCORE_ABSENT
                          ? xstrdup("the engine answered without prompt_logprobs")
                          : xasprintf("passage %zu: %s", i + 1, err);
        x->stop = true;
    } else if (rc != 0) {
        x->stop = true; /* the repeat is dropped below */
    }
}

static char **bodies_of(struct sc *x, const char *const *prompts, size_t n, int what, int k)
{
    const char *model = x->a->model[0] ? x->a->model : NULL;
    char **b = xcalloc(n + 1, sizeof(*b));
    for (size_t i = 0; i < n; i++)
        b[i] = what == 0   ? mp_score_plp_body(model, prompts[i], k)
               : what == 1 ? mp_score_greedy_body(model, prompts[i], x->p->greedy_tokens, k)
                           : mp_score_text_body(model, prompts[i], x->p->tasks->max_tokens,
                                                mp_task_stop());
    return b;
}

static void bodies_free(char **b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(b[i]);
    free(b);
}

static enum mp_outcome passages(struct sc *x)
{
    const struct mp_score_plan *p = x->p;
    struct mp_score *s = x->s;
    s->npass = p->npassages;
    s->pass = xcalloc(p->npassages + 1, sizeof(*s->pass));
    s->plp = MP_SC_OK;
    char **b = bodies_of(x, p->passages, p->npassages, 0, p->k);
    enum mp_outcome w = batch(x, b, p->npassages, 1, on_passage);
    bool complete = true;
    for (size_t i = 0; i < s->npass; i++)
        complete = complete && s->pass[i].n;
    if (w == MP_OUT_CLEAN && s->plp == MP_SC_OK && !complete) {
        s->plp = MP_SC_FAILED;
        s->plp_note = xstrdup("a passage came back without positions");
    }
    if (w == MP_OUT_CLEAN && s->plp == MP_SC_OK && p->repeat) {
        s->repeat = xcalloc(p->npassages + 1, sizeof(*s->repeat));
        x->repeat = true;
        w = batch(x, b, p->npassages, p->level, on_passage);
        x->repeat = false;
        bool ok = w == MP_OUT_CLEAN;
        for (size_t i = 0; ok && i < s->npass; i++)
            ok = s->repeat[i].n > 0;
        if (!ok) { /* no run-to-run figure from this engine */
            for (size_t i = 0; i < s->npass; i++)
                mp_lp_seq_release(&s->repeat[i]);
            free(s->repeat);
            s->repeat = NULL;
        }
    }
    bodies_free(b, p->npassages);
    return w;
}

/* ---- 2. greedy continuations ---- */

static void on_greedy(struct sc *x, size_t i, struct mp_lg_result *res)
{
    struct mp_score *s = x->s;
    if (res->outcome != MP_LG_OK) {
        if (refused(res) && s->greedy == MP_SC_OK) {
            int n = mp_score_max_allowed(res->error);
            s->greedy = MP_SC_REFUSED;
            free(s->greedy_note);
            s->greedy_note = note_of(res);
            if (n >= 0 && n < x->p->k && x->retry_k < 0)
                x->retry_k = n;
        }
        x->stop = true;
        return;
    }
    char err[256];
    int k = 0;
    mp_gen_seq_release(&s->gen[i]);
    int rc = mp_score_parse_gen(res->text, res->text_len, &s->gen[i], &k, err, sizeof(err));
    if (rc == 0 && k > s->greedy_k)
        s->greedy_k = k;
    if (rc != 0 && s->greedy == MP_SC_OK) {
        s->greedy = rc == MP_SCORE_ABSENT ? MP_SC_REFUSED : MP_SC_FAILED;
        free(s->greedy_note);
        s->greedy_note = rc == MP_SCORE_ABSENT ? xstrdup("the engine answered without logprobs")
                                               : xasprintf("prompt %zu: %s", i + 1, err);
        x->stop = true;
    }
}

static enum mp_outcome greedy(struct sc *x)
{
    const struct mp_score_plan *p = x->p;
    struct mp_score *s = x->s;
    s->ngen = p->ngreedy;
    s->gen = xcalloc(p->ngreedy + 1, sizeof(*s->gen));
    int k = p->k;
    x->retry_k = -1;
    enum mp_outcome w = MP_OUT_CLEAN;
    for (int attempt = 0; attempt < 2 && w == MP_OUT_CLEAN; attempt++) {
        s->greedy = MP_SC_OK;
        s->greedy_k = 0;
        char **b = bodies_of(x, p->greedy, p->ngreedy, 1, k);
        w = batch(x, b, p->ngreedy, (int)MP_MIN((size_t)p->level, p->ngreedy), on_greedy);
        bodies_free(b, p->ngreedy);
        if (s->greedy != MP_SC_REFUSED || x->retry_k < 0)
            break;
        k = x->retry_k; /* "max allowed: N": ask again with N */
        free(s->greedy_note);
        s->greedy_note = xasprintf("the engine allows %d logprobs, not %d", k, p->k);
        x->retry_k = -2;
    }
    return w; /* a lowered K keeps its note */
}

/* ---- 3. the task gate ---- */

static void on_task(struct sc *x, size_t i, struct mp_lg_result *res)
{
    struct mp_score *s = x->s;
    if (res->outcome != MP_LG_OK) {
        if (refused(res) && s->task == MP_SC_OK) {
            s->task = MP_SC_REFUSED;
            s->task_note = note_of(res);
        }
        x->stop = true;
        return;
    }
    char err[256], *text = NULL;
    int ct = -1;
    if (mp_score_parse_text(res->text, res->text_len, &text, &ct, err, sizeof(err)) != 0) {
        if (s->task == MP_SC_OK) {
            s->task = MP_SC_FAILED;
            s->task_note = xasprintf("problem %zu: %s", i + 1, err);
        }
        x->stop = true;
        return;
    }
    res->output_tokens = ct > 0 ? ct : 0;
    struct mp_task_ans *an = &s->ans[i];
    an->answered = true;
    an->got = mp_task_last_number(text);
    an->right = mp_task_same_number(an->got, an->expected);
    size_t keep = strlen(text) > MP_TASK_REPLY_KEEP ? MP_TASK_REPLY_KEEP : strlen(text);
    while (keep && keep < strlen(text) && ((unsigned char)text[keep] & 0xc0) == 0x80)
        keep--; /* never cut inside a UTF-8 character */
    an->reply = xstrndup(text, keep);
    free(text);
}

static enum mp_outcome task_gate(struct sc *x)
{
    const struct mp_task_set *t = x->p->tasks;
    struct mp_score *s = x->s;
    s->task = MP_SC_OK;
    s->task_source = xstrdup(t->source ? t->source : "built-in");
    s->nans = t->n;
    s->ans = xcalloc(t->n + 1, sizeof(*s->ans));
    char **prompts = xcalloc(t->n + 1, sizeof(*prompts));
    for (size_t i = 0; i < t->n; i++) {
        s->ans[i].expected = xstrdup(t->t[i].answer);
        prompts[i] = mp_task_prompt(t->t[i].question);
    }
    char **b = bodies_of(x, (const char *const *)prompts, t->n, 2, 0);
    enum mp_outcome w = batch(x, b, t->n, x->p->level, on_task);
    bodies_free(b, t->n);
    bodies_free(prompts, t->n);
    return w;
}

enum mp_outcome mp_att_run_score(struct att *a)
{
    const struct mp_score_plan *p = a->o->score;
    struct sc x = {.a = a, .p = p, .s = mp_score_new()};
    mp_score_free(a->r->score);
    a->r->score = x.s;
    x.s->k = p->k;
    a->cur_phase = -1; /* not a phase of the workload */
    x.phase = "score";
    int64_t t0 = mp_now_ns();
    enum mp_outcome w = MP_OUT_CLEAN;
    if (p->npassages)
        w = passages(&x);
    if (w == MP_OUT_CLEAN && p->ngreedy)
        w = greedy(&x);
    x.s->score_s = (double)(mp_now_ns() - t0) / 1e9;
    int64_t t1 = mp_now_ns();
    x.phase = "task";
    if (w == MP_OUT_CLEAN && p->tasks && p->tasks->n)
        w = task_gate(&x);
    x.s->task_s = p->tasks ? (double)(mp_now_ns() - t1) / 1e9 : 0;
    size_t answered, right;
    mp_score_task_counts(x.s, &answered, &right);
    mp_att_note(a, "scoring: prompt logprobs %s, greedy %s, tasks %zu/%zu right (%.1f s + %.1f s)",
                mp_sc_status_name(x.s->plp), mp_sc_status_name(x.s->greedy), right, answered,
                x.s->score_s, x.s->task_s);
    if (w == MP_OUT_CLEAN && a->o->store &&
        mp_store_score_write(a->o->store, a->o->store_attempt, x.s) < 0)
        a->io_err = true;
    return w == MP_OUT_CLEAN && a->io_err ? MP_OUT_ERROR : w;
}
