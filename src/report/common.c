/* common.c - numbers and checks the report writers share (internal.h). */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "http/lgstats.h"
#include "model/score.h"
#include "quality/quality.h"
#include "secret.h"
#include "version.h"
#include "verdict/recommend.h"
#include "verdict/stats.h"
#include "xalloc.h"

#include "report/internal.h"

/* the numbers the recommendation ranks by (verdict/recommend.h) */
double mp_rep_seq_tok_s(const struct mp_attempt_result *a)
{
    return mp_verdict_seq_tok_s(a);
}

double mp_rep_best_conc_tok_s(const struct mp_attempt_result *a)
{
    return mp_verdict_best_conc_tok_s(a);
}

double mp_rep_median_req_rate(const struct mp_attempt_result *a)
{
    struct mp_phase_metrics m;
    mp_attempt_metrics(a, &m);
    double v = m.req_tok_s.n ? mp_hist_percentile(&m.req_tok_s, 50) : -1;
    mp_phase_metrics_release(&m);
    return v;
}


struct mp_rep_cost mp_rep_cand_cost(const struct mp_cand_report *c)
{
    struct mp_rep_cost k;
    memset(&k, 0, sizeof(k));
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (a->outcome == MP_OUT_ERROR && a->wall_s <= 0)
            continue; /* never started */
        k.starts++;
        k.stops += a->outcome == MP_OUT_SAME_CONFIG || a->outcome == MP_OUT_RESOLVED;
        double wall = a->wall_s > 0 ? a->wall_s : 0, req = 0;
        k.engine_s += wall;
        k.workload_s += a->workload_s > 0 ? a->workload_s : 0;
        for (size_t p = 0; p < a->nphases; p++)
            req += a->phases[p].wall_s > 0 ? a->phases[p].wall_s : 0;
        if (a->score) /* the correctness scoring pass and task gate: requests too */
            req += MP_MAX(0.0, a->score->score_s) + MP_MAX(0.0, a->score->task_s);
        double start = MP_MIN(a->ready_s > 0 ? a->ready_s : 0, wall);
        req = MP_MIN(req, wall - start);
        k.startup_s += start;
        k.request_s += req;
        k.overhead_s += wall - start - req;
    }
    /* engines an interruption cut short cost a start too (not results) */
    k.cut = c->cut_starts;
    k.starts += c->cut_starts;
    k.engine_s += c->cut_engine_s;
    return k;
}

void mp_rep_cost_add(struct mp_rep_cost *to, const struct mp_rep_cost *k)
{
    to->starts += k->starts;
    to->stops += k->stops;
    to->cut += k->cut;
    to->engine_s += k->engine_s;
    to->workload_s += k->workload_s;
    to->startup_s += k->startup_s;
    to->request_s += k->request_s;
    to->overhead_s += k->overhead_s;
}

const char *mp_rep_resumed_words(int n, char *out, size_t outsz)
{
    if (n == 1)
        snprintf(out, outsz, "interrupted and resumed once");
    else
        snprintf(out, outsz, "interrupted and resumed %d times", n);
    return out;
}

/* Seconds between two ISO 8601 times of the report, <0 when unknown. */
double mp_rep_iso_span(const char *a, const char *b)
{
    struct tm ta, tb;
    memset(&ta, 0, sizeof(ta));
    memset(&tb, 0, sizeof(tb));
    if (!a || !b || !strptime(a, "%Y-%m-%dT%H:%M:%S", &ta) || !strptime(b, "%Y-%m-%dT%H:%M:%S", &tb))
        return -1;
    return difftime(timegm(&tb), timegm(&ta));
}

bool mp_rep_is_same_config(const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    return p && p->outcome == MP_OUT_SAME_CONFIG;
}

/* The attempt whose numbers a candidate shows: its own first normal
 * attempt, or for a shared result its representative's. */
const struct mp_attempt_result *mp_rep_numbers_attempt(const struct mp_report *rep,
                                                       const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    if (!p || p->outcome != MP_OUT_SAME_CONFIG || !p->same_as)
        return p;
    for (size_t j = 0; j < rep->n; j++) {
        if (&rep->c[j] != c && !strcmp(rep->c[j].cand.name, p->same_as) && !mp_rep_is_same_config(&rep->c[j]))
            return mp_cand_primary(&rep->c[j]) ? mp_cand_primary(&rep->c[j]) : p;
    }
    return p;
}

static const double default_pct[] = {50, 90, 99};

size_t mp_rep_percentiles(const struct mp_report *rep, const double **p)
{
    if (rep->npercentiles) {
        *p = rep->percentiles;
        return MP_MIN(rep->npercentiles, (size_t)MP_REPORT_MAX_PCT);
    }
    *p = default_pct;
    return MP_ARRAY_SIZE(default_pct);
}

void mp_rep_pct_word(double p, char *out, size_t n)
{
    /* --percentiles allows 3 decimals, which %g always shows exactly */
    snprintf(out, n, "p%g", p);
}

const struct mp_rep_metric_def mp_rep_metrics[MP_REP_NMETRICS] = {
    [MP_REP_TTFT] = {"ttft_ms", "TTFT", "ms"},
    [MP_REP_TPOT] = {"tpot_ms", "TPOT", "ms"},
    [MP_REP_ITL] = {"itl_ms", "ITL", "ms"},
    [MP_REP_E2EL] = {"e2el_ms", "E2E", "ms"},
    [MP_REP_REQ_RATE] = {"request_tok_s", "per-request tok/s", "tok/s"},
};

const struct mp_hist *mp_rep_metric_hist(const struct mp_phase_result *ph, enum mp_rep_metric m)
{
    switch (m) {
    case MP_REP_TTFT:
        return &ph->m.ttft_ms;
    case MP_REP_TPOT:
        return &ph->m.tpot_ms;
    case MP_REP_ITL:
        return &ph->m.itl_ms;
    case MP_REP_E2EL:
        return &ph->m.e2e_ms;
    case MP_REP_REQ_RATE:
    case MP_REP_NMETRICS:
        break;
    }
    return &ph->m.req_tok_s;
}

void mp_rep_dist(const struct mp_report *rep, const struct mp_hist *h, struct mp_rep_dist *d)
{
    memset(d, 0, sizeof(*d));
    d->n = h->n;
    if (!h->n)
        return;
    d->mean = mp_hist_mean(h);
    d->median = mp_hist_percentile(h, 50);
    d->std = mp_hist_stddev(h);
    const double *p;
    size_t np = mp_rep_percentiles(rep, &p);
    for (size_t i = 0; i < np; i++)
        d->pct[i] = mp_hist_percentile(h, p[i]);
}

/* lgstats' one definition of the rates (http/lgstats.h), as the writers name them */
void mp_rep_phase_rates(const struct mp_phase_result *ph, struct mp_rep_rates *r)
{
    struct mp_lg_rates lr;
    mp_lg_phase_rates(ph, &lr);
    r->req_s = lr.req_s;
    r->out_tok_s = lr.out_tok_s;
    r->total_tok_s = lr.total_tok_s;
    r->input_tokens = lr.input_tokens;
}

int mp_rep_phase_input_tokens(const struct mp_workload *w, size_t i)
{
    if (i < w->nphases && w->phases[i].input_tokens > 0)
        return w->phases[i].input_tokens;
    return w->input_tokens > 0 ? w->input_tokens : 0;
}

/* The first attempt of the run (normal or blocked, by blocked) that ran phase name, or NULL. */
static const struct mp_phase_result *find_phase(const struct mp_report *rep, const char *name,
                                                bool blocked)
{
    for (size_t i = 0; i < rep->n; i++) {
        for (size_t j = 0; j < rep->c[i].nattempts; j++) {
            const struct mp_attempt_result *a = &rep->c[i].attempts[j];
            if (a->launch_blocking != blocked)
                continue;
            for (size_t k = 0; k < a->nphases; k++)
                if (!strcmp(a->phases[k].name, name))
                    return &a->phases[k];
        }
    }
    return NULL;
}

/* The next entry of out, zeroed, with its name and shape. */
static struct mp_rep_wphase *wphase_add(struct mp_rep_wphase *out, size_t *n, const char *name,
                                        int level, int requests)
{
    struct mp_rep_wphase *e = &out[(*n)++];
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->level = level;
    e->requests = requests;
    return e;
}

size_t mp_rep_workload_phases(const struct mp_report *rep, struct mp_rep_wphase *out, size_t cap)
{
    const struct mp_workload *w = &rep->workload;
    size_t n = 0;
    for (size_t i = 0; i < w->nphases && i < MP_MAX_PHASES && n < cap; i++) {
        const struct mp_phase_spec *s = &w->phases[i];
        struct mp_rep_wphase *e = wphase_add(out, &n, s->name, s->level, s->requests);
        e->duration_s = s->duration_s;
        e->input_tokens = mp_rep_phase_input_tokens(w, i);
        e->max_tokens = w->max_tokens;
        e->ignore_eos = w->ignore_eos;
    }
    /* the diagnosis' continuation at the highest level, then the output check (run order) */
    const struct mp_phase_result *ext = find_phase(rep, "extended", true);
    if (!ext)
        ext = find_phase(rep, "extended", false);
    if (ext && n < cap) {
        struct mp_rep_wphase *e = wphase_add(out, &n, "extended", ext->level, -1);
        e->input_tokens = w->input_tokens > 0 ? w->input_tokens : 0;
        e->max_tokens = w->max_tokens;
        e->ignore_eos = w->ignore_eos;
        e->diagnosis_only = !find_phase(rep, "extended", false);
    }
    const struct mp_phase_result *q = find_phase(rep, "quality", false);
    bool q_normal = q != NULL;
    if (!q)
        q = find_phase(rep, "quality", true);
    if (q && n < cap) {
        struct mp_rep_wphase *e = wphase_add(out, &n, "quality", 1, q->planned);
        e->max_tokens = MP_QUALITY_MAX_TOKENS;
        e->ignore_eos = false;
        e->diagnosis_only = !q_normal;
    }
    return n;
}

void mp_rep_diagnosis_phases(const struct mp_report *rep, char *out, size_t n)
{
    out[0] = '\0';
    for (size_t i = 0; i < rep->n; i++) {
        for (size_t j = 0; j < rep->c[i].nattempts; j++) {
            const struct mp_attempt_result *a = &rep->c[i].attempts[j];
            if (!a->launch_blocking || !a->nphases)
                continue;
            size_t len = 0;
            for (size_t k = 0; k < a->nphases && len < n; k++)
                len += (size_t)snprintf(out + len, n - len, "%s%s", k ? ", " : "", a->phases[k].name);
            return;
        }
    }
}

const char *mp_rep_fixed_prompt_cell(const struct mp_workload *w)
{
    return w->chat ? "~15 + chat template" : "~15";
}
