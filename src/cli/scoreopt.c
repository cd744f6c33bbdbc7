/* scoreopt.c - the scoring pass from the options (cli/scoreopt.h). */
#include "cli/scoreopt.h"

#include <string.h>

#include "buf.h"
#include "err.h"
#include "file.h"
#include "quality/score.h"

#define ACCURACY_FILE_MAX ((size_t)256 << 20)

static int tasks_of(struct mp_cli_score *s, const struct mp_opts *o)
{
    if (!o->accuracy_file) {
        if (o->accuracy_n > 0)
            mp_task_builtin((size_t)o->accuracy_n, &s->tasks);
        return 0;
    }
    struct buf b = BUF_INIT;
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_read_file(o->accuracy_file, ACCURACY_FILE_MAX, &b, &d);
    if (rc == 0) {
        /* --accuracy N given with the file: its first N problems */
        size_t max = o->accuracy_given ? (size_t)o->accuracy_n : 0;
        rc = mp_task_parse_jsonl(b.data ? b.data : "", b.len, o->accuracy_file, max, &s->tasks,
                                 &d);
    }
    buf_release(&b);
    if (rc < 0)
        return mp_error("--accuracy-file: %s", d.msg);
    return 0;
}

int mp_cli_score_init(struct mp_cli_score *s, const struct mp_opts *o)
{
    memset(s, 0, sizeof(*s));
    if (o->reference) {
        bool found = false;
        for (size_t i = 0; i < o->ncands; i++)
            found = found || !strcmp(o->cands[i].name, o->reference);
        if (!found)
            return mp_error("--reference: no candidate is named '%s'", o->reference);
    }
    if (o->accuracy_given && o->accuracy_n == 0 && o->accuracy_file)
        return mp_error("--accuracy 0 turns the task gate off: do not give --accuracy-file too");
    if (tasks_of(s, o) < 0)
        return -1;
    struct mp_score_plan *p = &s->plan;
    if (o->agreement_n > 0) {
        size_t n;
        const char *const *pass = mp_score_passages(&n);
        p->passages = pass;
        p->npassages = (size_t)o->agreement_n < n ? (size_t)o->agreement_n : n;
        p->repeat = true;
        p->greedy = mp_score_greedy_prompts(&p->ngreedy);
        if ((size_t)o->agreement_n < p->ngreedy) /* a short pass: fewer continuations too */
            p->ngreedy = (size_t)o->agreement_n;
        p->greedy_tokens = MP_SCORE_GREEDY_TOKENS;
    }
    p->k = MP_SCORE_K;
    p->tasks = s->tasks.n ? &s->tasks : NULL;
    p->level = 1;
    for (size_t i = 0; i < o->wl.nphases; i++)
        p->level = o->wl.phases[i].level > p->level ? o->wl.phases[i].level : p->level;
    s->on = p->npassages || p->tasks;
    return 0;
}

void mp_cli_score_release(struct mp_cli_score *s)
{
    mp_task_set_release(&s->tasks);
    memset(s, 0, sizeof(*s));
}

const struct mp_score_plan *mp_cli_score_plan(const struct mp_cli_score *s)
{
    return s && s->on ? &s->plan : NULL;
}
