/* score.c - the scoring pass of an attempt (run/score.h): a row of the
 * attempt's passes after the load phases, driven by its state machine. */
#include "run/att_internal.h"
#include "run/score.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "http/loadgen.h"
#include "quality/score.h"
#include "store/store.h"
#include "xalloc.h"

size_t mp_score_plan_requests(const struct mp_score_plan *p)
{
    if (!p)
        return 0;
    return p->npassages * (p->repeat ? 2 : 1) + p->ngreedy + (p->tasks ? p->tasks->n : 0);
}

static const char *phase_of(const struct mp_score_state *st)
{
    return st->stage == MP_SC_TASK ? "task" : "score";
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

/* The request into requests.jsonl and the attempt's counts; a failure that
 * is no refusal is the attempt's failure (no answer within --stall-timeout:
 * a hang). */
static void record(struct att *a, const struct mp_lg_result *res)
{
    const char *phase = phase_of(&a->score);
    mp_att_write_request(a, res, phase);
    if (res->outcome == MP_LG_OK) {
        a->r->req_ok++;
        return;
    }
    if (refused(res) || a->failed || a->hang)
        return;
    a->r->req_failed++;
    a->fail_req_line = a->req_lines;
    if (res->outcome == MP_LG_TIMEOUT && !res->http_status) {
        a->hang = true;
        a->seen = MP_SEEN_HANG;
        free(a->seen_msg);
        a->seen_msg = xasprintf("no answer to a scoring request within %.0f s",
                                a->o->wl->stall_timeout_s);
        a->r->ok_before_failure = a->r->req_ok;
    } else {
        mp_att_set_fail(a, res->outcome == MP_LG_CONNECT ? MP_SEEN_CONNECT : MP_SEEN_HTTP_ERROR,
                        res->error[0] ? res->error : mp_lg_outcome_name(res->outcome));
    }
    free(a->r->fail_phase);
    a->r->fail_phase = xstrdup(phase);
}

/* ---- the stages' answers ---- */

static void on_passage(struct att *a, size_t i, struct mp_lg_result *res)
{
    struct mp_score *s = a->r->score;
    bool rep = a->score.stage == MP_SC_REPEAT;
    if (res->outcome != MP_LG_OK) {
        if (refused(res) && !rep && s->plp == MP_SC_OK) {
            s->plp = MP_SC_REFUSED;
            s->plp_note = note_of(res);
            /* "max allowed: N" (vLLM's --max-logprobs): N >= 1 still gives each
             * position's own token and top-1, all the comparison reads */
            int n = mp_score_max_allowed(res->error);
            if (n >= 1 && n < a->score.plp_k && a->score.plp_retry_k == -1)
                a->score.plp_retry_k = n;
        }
        a->score.stop = true;
        return;
    }
    char err[256];
    struct mp_lp_seq *dst = rep ? &s->repeat[i] : &s->pass[i];
    mp_lp_seq_release(dst);
    int rc = mp_score_parse_plp(res->text, res->text_len, dst, err, sizeof(err));
    if (rc != 0 && !rep && s->plp == MP_SC_OK) {
        s->plp = rc == MP_SCORE_ABSENT ? MP_SC_REFUSED : MP_SC_FAILED;
        s->plp_note = rc == MP_SCORE_ABSENT
                          ? xstrdup("the engine answered without prompt_logprobs")
                          : xasprintf("passage %zu: %s", i + 1, err);
    }
    if (rc != 0)
        a->score.stop = true; /* a repeat with a hole is dropped at the stage's end */
}

static void on_greedy(struct att *a, size_t i, struct mp_lg_result *res)
{
    struct mp_score *s = a->r->score;
    struct mp_score_state *st = &a->score;
    char err[256];
    int k = 0, rc = MP_EPARSE;
    if (res->outcome == MP_LG_OK) {
        mp_gen_seq_release(&s->gen[i]);
        rc = mp_score_parse_gen(res->text, res->text_len, &s->gen[i], &k, err, sizeof(err));
        if (rc == 0 && k > s->greedy_k)
            s->greedy_k = k;
    }
    if (rc == 0 || s->greedy != MP_SC_OK) {
        if (rc != 0)
            st->stop = true;
        return;
    }
    st->stop = true;
    free(s->greedy_note);
    if (res->outcome != MP_LG_OK) {
        int n = refused(res) ? mp_score_max_allowed(res->error) : -1;
        s->greedy = refused(res) ? MP_SC_REFUSED : MP_SC_FAILED;
        s->greedy_note = note_of(res);
        if (n >= 0 && n < st->k && st->retry_k == -1)
            st->retry_k = n; /* "max allowed: N": asked again with N */
    } else {
        s->greedy = rc == MP_SCORE_ABSENT ? MP_SC_REFUSED : MP_SC_FAILED;
        s->greedy_note = rc == MP_SCORE_ABSENT ? xstrdup("the engine answered without logprobs")
                                               : xasprintf("prompt %zu: %s", i + 1, err);
    }
}

static void on_task(struct att *a, size_t i, struct mp_lg_result *res)
{
    struct mp_score *s = a->r->score;
    char err[256], *text = NULL;
    int ct = -1;
    int rc = res->outcome == MP_LG_OK
                 ? mp_score_parse_text(res->text, res->text_len, &text, &ct, err, sizeof(err))
                 : MP_EPARSE;
    if (rc != 0) {
        if (s->task == MP_SC_OK) {
            s->task = refused(res) ? MP_SC_REFUSED : MP_SC_FAILED;
            s->task_note = res->outcome == MP_LG_OK ? xasprintf("problem %zu: %s", i + 1, err)
                                                    : note_of(res);
        }
        a->score.stop = true;
        return;
    }
    res->output_tokens = ct > 0 ? ct : 0;
    struct mp_task_ans *an = &s->ans[i];
    an->answered = true;
    an->got = mp_task_last_number(text);
    an->right = mp_task_same_number(an->got, an->expected);
    size_t len = strlen(text), keep = len > MP_TASK_REPLY_KEEP ? MP_TASK_REPLY_KEEP : len;
    while (keep && keep < len && ((unsigned char)text[keep] & 0xc0) == 0x80)
        keep--; /* never cut inside a UTF-8 character */
    an->reply = xstrndup(text, keep);
    free(text);
}

/* ---- the stages ---- */

static void enter_stage(struct att *a, enum mp_sc_stage stage);

/* The request body of the stage's request i (caller frees). */
static char *body_of(const struct att *a, size_t i)
{
    const struct mp_score_plan *p = a->o->score;
    const char *model = a->model[0] ? a->model : NULL;
    switch (a->score.stage) {
    case MP_SC_PASSAGES:
    case MP_SC_REPEAT:
        return mp_score_plp_body(model, p->passages[i], a->score.plp_k);
    case MP_SC_GREEDY:
        return mp_score_greedy_body(model, p->greedy[i], p->greedy_tokens, a->score.k);
    default: {
        char *prompt = mp_task_prompt(p->tasks->t[i].question);
        char *b = mp_score_text_body(model, prompt, p->tasks->max_tokens, mp_task_stop());
        free(prompt);
        return b;
    }
    }
}

static void send_more(struct att *a)
{
    struct mp_score_state *st = &a->score;
    while (!st->stop && !a->failed && st->sent < st->n && (int)(st->sent - st->done) < st->level) {
        char *body = body_of(a, st->sent);
        long id = mp_lg_post(a->lg, "/v1/completions", body, a->o->wl->stall_timeout_s,
                             (int)st->sent);
        free(body);
        if (id < 0) {
            mp_att_set_fail(a, MP_SEEN_CLIENT_ERROR, "could not start a request");
            return;
        }
        st->sent++;
    }
}

/* The passages' stage ended: complete, or marked failed. */
static void passages_end(struct att *a)
{
    struct mp_score *s = a->r->score;
    struct mp_score_state *st = &a->score;
    if (s->plp == MP_SC_REFUSED && st->plp_retry_k >= 1) {
        /* asked again with what the engine allows: teacher-forced evidence
         * instead of the greedy comparison alone */
        st->plp_k = st->plp_retry_k;
        st->plp_retry_k = -2;
        for (size_t i = 0; i < s->npass; i++)
            mp_lp_seq_release(&s->pass[i]);
        free(s->pass);
        s->pass = NULL;
        free(s->plp_note);
        s->plp_note = NULL;
        s->k = st->plp_k;
        enter_stage(a, MP_SC_PASSAGES);
        return;
    }
    bool complete = true;
    for (size_t i = 0; i < s->npass; i++)
        complete = complete && s->pass[i].n;
    if (s->plp == MP_SC_OK && !complete) {
        s->plp = MP_SC_FAILED;
        s->plp_note = xstrdup("a passage came back without positions");
    }
    enter_stage(a, s->plp == MP_SC_OK && a->o->score->repeat ? MP_SC_REPEAT : MP_SC_GREEDY);
}

/* The repeat ended: kept only whole (no run-to-run figure otherwise). */
static void repeat_end(struct att *a)
{
    struct mp_score *s = a->r->score;
    bool ok = true;
    for (size_t i = 0; ok && i < s->npass; i++)
        ok = s->repeat[i].n > 0;
    if (!ok) {
        for (size_t i = 0; i < s->npass; i++)
            mp_lp_seq_release(&s->repeat[i]);
        free(s->repeat);
        s->repeat = NULL;
    }
    enter_stage(a, MP_SC_GREEDY);
}

static void greedy_end(struct att *a)
{
    struct mp_score_state *st = &a->score;
    struct mp_score *s = a->r->score;
    if (s->greedy == MP_SC_REFUSED && st->retry_k >= 0) {
        st->k = st->retry_k; /* ask again with what the engine allows */
        st->retry_k = -2;
        char *why = xasprintf("the engine allows %d logprobs, not %d", st->k, a->o->score->k);
        free(s->greedy_note);
        s->greedy_note = why;
        enter_stage(a, MP_SC_GREEDY);
        return;
    }
    s->score_s = (double)(mp_now_ns() - st->t0) / 1e9;
    enter_stage(a, MP_SC_TASK);
}

/* Everything asked: the note and the store. */
static void finish(struct att *a)
{
    struct mp_score *s = a->r->score;
    struct mp_score_state *st = &a->score;
    if (st->t_task)
        s->task_s = (double)(mp_now_ns() - st->t_task) / 1e9;
    size_t answered, right;
    mp_score_task_counts(s, &answered, &right);
    mp_att_note(a, "scoring: prompt logprobs %s, greedy %s, tasks %zu/%zu right (%.1f s + %.1f s)",
                mp_sc_status_name(s->plp), mp_sc_status_name(s->greedy), right, answered,
                s->score_s, s->task_s);
    if (a->o->store && mp_store_score_write(a->o->store, a->o->store_attempt, s) < 0)
        mp_att_io_error(a);
}

/* Make room for the stage's results and its first requests. */
static void enter_stage(struct att *a, enum mp_sc_stage stage)
{
    const struct mp_score_plan *p = a->o->score;
    struct mp_score *s = a->r->score;
    struct mp_score_state *st = &a->score;
    st->stage = stage;
    st->sent = st->done = 0;
    st->stop = false;
    st->level = p->level > 0 ? p->level : 1;
    if (stage == MP_SC_PASSAGES) {
        st->n = p->npassages;
        st->level = 1; /* one at a time: the canonical scoring */
        s->npass = p->npassages;
        s->pass = xcalloc(p->npassages + 1, sizeof(*s->pass));
        s->plp = st->n ? MP_SC_OK : MP_SC_NOT_RUN;
    } else if (stage == MP_SC_REPEAT) {
        st->n = p->npassages;
        s->repeat = xcalloc(p->npassages + 1, sizeof(*s->repeat));
    } else if (stage == MP_SC_GREEDY) {
        st->n = p->ngreedy;
        if (!s->gen)
            s->gen = xcalloc(p->ngreedy + 1, sizeof(*s->gen));
        s->ngen = p->ngreedy;
        s->greedy = st->n ? MP_SC_OK : MP_SC_NOT_RUN;
        s->greedy_k = 0;
    } else if (stage == MP_SC_TASK) {
        st->n = p->tasks ? p->tasks->n : 0;
        st->t_task = st->n ? mp_now_ns() : 0;
        s->task = st->n ? MP_SC_OK : MP_SC_NOT_RUN;
        s->task_source = st->n ? xstrdup(p->tasks->source ? p->tasks->source : "built-in") : NULL;
        s->nans = st->n;
        s->ans = st->n ? xcalloc(st->n, sizeof(*s->ans)) : NULL;
        for (size_t i = 0; i < st->n; i++)
            s->ans[i].expected = xstrdup(p->tasks->t[i].answer);
    } else {
        st->n = 0;
        finish(a);
        return;
    }
    if (st->n == 0) {
        enter_stage(a, stage == MP_SC_PASSAGES ? MP_SC_GREEDY : stage + 1);
        return;
    }
    send_more(a);
}

bool mp_score_wanted(const struct att *a)
{
    return a->o->score != NULL;
}

void mp_score_begin(struct att *a)
{
    mp_score_free(a->r->score);
    a->r->score = mp_score_new();
    a->r->score->k = a->o->score->k;
    memset(&a->score, 0, sizeof(a->score));
    a->score.k = a->o->score->k;
    a->score.retry_k = -1;
    a->score.plp_k = a->o->score->k;
    a->score.plp_retry_k = -1;
    a->score.t0 = mp_now_ns();
    a->cur_phase = -1; /* not a phase of the workload */
    enter_stage(a, MP_SC_PASSAGES);
}

void mp_score_result(struct att *a, struct mp_lg_result *res)
{
    struct mp_score_state *st = &a->score;
    if (res->kind != MP_LG_POST || res->user_tag < 0 || (size_t)res->user_tag >= st->n ||
        st->stage == MP_SC_DONE)
        return;
    size_t i = (size_t)res->user_tag;
    if (st->stage == MP_SC_PASSAGES || st->stage == MP_SC_REPEAT)
        on_passage(a, i, res);
    else if (st->stage == MP_SC_GREEDY)
        on_greedy(a, i, res);
    else
        on_task(a, i, res);
    record(a, res);
    st->done++;
    a->pass_i = st->done;
    if (a->failed || a->hang) {
        a->r->score->score_s = (double)(mp_now_ns() - st->t0) / 1e9;
        return;
    }
    if (st->done < st->sent || (st->sent < st->n && !st->stop)) {
        send_more(a);
        return;
    }
    if (st->stage == MP_SC_PASSAGES)
        passages_end(a);
    else if (st->stage == MP_SC_REPEAT)
        repeat_end(a);
    else if (st->stage == MP_SC_GREEDY)
        greedy_end(a);
    else
        enter_stage(a, MP_SC_DONE);
}

bool mp_score_complete(const struct att *a)
{
    return a->score.stage == MP_SC_DONE || a->failed || a->hang;
}
