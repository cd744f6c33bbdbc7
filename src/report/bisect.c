/* bisect.c - the bisect report's model (report/bisect.h), its JSON and
 * Markdown; the HTML is bisect_html.c. */
#include "report/bisect.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "escape.h"
#include "report/report.h"
#include "verdict/recommend.h"
#include "verdict/stats.h"
#include "xalloc.h"

/* ---------- the model ---------- */

static long index_of(const struct mp_strv *v, const char *s)
{
    for (size_t i = 0; s && i < v->n; i++)
        if (!strcmp(v->v[i], s))
            return (long)i;
    return -1;
}

/* What candidate ci's attempts showed. */
static void observe(const struct mp_report *rep, struct mp_bisect_probe_view *pv)
{
    pv->obs.tok_s = -1;
    pv->conc_tok_s = -1;
    pv->upper95 = -1;
    if (pv->ci < 0)
        return;
    const struct mp_cand_report *c = &rep->c[pv->ci];
    const struct mp_attempt_result *a = mp_cand_primary(c);
    pv->obs.verdict = c->verdict;
    if ((size_t)pv->ci < rep->cor.n) {
        const struct mp_correctness *k = &rep->cor.c[pv->ci];
        /* greedy continuations alone are weak evidence (a wrong kernel can pass them) */
        pv->cor_measured = (k->ag.result != MP_AG_NOT_MEASURED && !k->ag.greedy_only) ||
                           k->acc.result != MP_ACC_NOT_RUN;
        pv->cor_note = k->ag.note ? k->ag.note
                       : k->ag.greedy_only ? "only its greedy continuations were compared"
                                           : NULL;
    }
    pv->obs.usable = a && a->outcome != MP_OUT_ERROR && a->outcome != MP_OUT_INTERRUPTED &&
                     !c->unfinished;
    if (!a)
        return;
    pv->obs.moe_backend = a->res.moe_backend;
    pv->obs.linear_kernel = a->res.linear_kernel;
    pv->attention = a->res.attention_backend;
    pv->engine_version = a->res.engine_version;
    pv->fail_class = a->fail_class;
    double t = mp_verdict_seq_tok_s(a);
    pv->obs.tok_s = t > 0 ? t : -1;
    t = mp_verdict_best_conc_tok_s(a);
    pv->conc_tok_s = t > 0 ? t : -1;
    for (size_t k = 0; k < c->nattempts; k++) {
        if (c->attempts[k].launch_blocking)
            continue;
        pv->obs.req_ok += c->attempts[k].req_ok;
        pv->obs.req_failed += c->attempts[k].req_failed;
    }
    if (pv->obs.req_failed == 0 && c->verdict == MP_V_STABLE) {
        pv->clean = pv->obs.req_ok;
        pv->upper95 = mp_stats_failure_upper95(pv->clean);
    }
}

static void judge_probes(struct mp_bisect_model *m)
{
    const struct mp_probe_obs *ref = m->good_probe >= 0 ? &m->pv[m->good_probe].obs : NULL;
    for (size_t i = 0; i < m->npv; i++) {
        struct mp_bisect_probe_view *pv = &m->pv[i];
        if (pv->rank < 0 || !pv->finished)
            continue;
        if (pv->rank == 0) {
            bool ok = pv->obs.usable && pv->obs.verdict != MP_V_NONE;
            pv->outcome = ok ? MP_PROBE_GOOD : MP_PROBE_SKIP;
            snprintf(pv->why, sizeof(pv->why), "%s", ok ? "the good build: the reference"
                                                        : "the good build could not be probed");
        } else if (ref) {
            pv->outcome = mp_bisect_judge(&m->cfg, ref, &pv->obs, pv->why, sizeof(pv->why));
            /* good by a verdict whose correctness could not be compared with the good
             * build's (tokens that do not line up, no logprobs): said, not assumed */
            const struct mp_bisect_probe_view *g = &m->pv[m->good_probe];
            if (pv->outcome == MP_PROBE_GOOD && m->cfg.by == MP_BY_VERDICT && g->cor_measured &&
                !pv->cor_measured) {
                size_t l = strlen(pv->why);
                snprintf(pv->why + l, sizeof(pv->why) - l,
                         "; correctness not established: its output could not be compared "
                         "with the good build's (%s)",
                         pv->cor_note ? pv->cor_note : "not measured");
            }
        } else {
            snprintf(pv->why, sizeof(pv->why), "judged once the good build is probed");
        }
        /* the bad build probed before the good one counts as probed */
        m->out[pv->rank] = pv->outcome != MP_PROBE_UNKNOWN ? pv->outcome : MP_PROBE_BAD;
    }
}

static void answer(struct mp_bisect_model *m)
{
    mp_bisect_next(m->out, m->m, &m->step);
    m->last_good = m->first_bad = -1;
    for (size_t i = 0; i < m->npv; i++) {
        if (m->pv[i].rank == m->step.last_good && m->step.last_good >= 0)
            m->last_good = (long)i;
        if (m->pv[i].rank == m->step.first_bad && m->step.first_bad >= 0)
            m->first_bad = (long)i;
    }
    if (m->step.done && m->last_good >= 0 && m->first_bad >= 0 && m->cfg.by != MP_BY_THROUGHPUT) {
        m->confidence_known = true;
        m->confidence = mp_bisect_confidence(m->sb.p_bad, m->pv[m->last_good].clean,
                                             m->confidence_why, sizeof(m->confidence_why));
    } else if (m->cfg.by == MP_BY_THROUGHPUT) {
        snprintf(m->confidence_why, sizeof(m->confidence_why),
                 "a slowdown is a measured rate, not a failure probability: the probes' rates "
                 "are the evidence");
    }
    const char *lg = m->last_good >= 0 ? m->pv[m->last_good].sp->build : NULL;
    const char *fb = m->first_bad >= 0 ? m->pv[m->first_bad].sp->build : NULL;
    if (!m->step.done)
        m->summary = xasprintf("unfinished: %zu build(s) left between %s and %s",
                               m->step.left, lg ? lg : m->sb.good, fb ? fb : m->sb.bad);
    else if (m->good_probe < 0 || m->pv[m->good_probe].outcome != MP_PROBE_GOOD)
        m->summary = xasprintf("the good build %s could not be probed: no answer", m->sb.good);
    else if (!fb)
        m->summary = xasprintf("the bad build %s came out the same as the good build %s "
                               "(--by %s): nothing to bisect", m->sb.bad, m->sb.good,
                               mp_bisect_by_name(m->cfg.by));
    else if (m->step.ambiguous)
        m->summary = xasprintf("the first bad build is after %s and at or before %s; the "
                               "builds between could not be probed", lg, fb);
    else
        m->summary = xasprintf("first bad build %s, last good build %s%s", fb, lg,
                               m->step.inconsistent ? " (but a later build came out good: "
                                                      "more than one change?)" : "");
}

int mp_bisect_model_build(const struct mp_report *rep, struct mp_store_bisect *sb,
                          struct mp_bisect_model *m, char *why, size_t n)
{
    memset(m, 0, sizeof(*m));
    m->sb = *sb;
    memset(sb, 0, sizeof(*sb));
    m->good_probe = m->last_good = m->first_bad = -1;
    char msg[200];
    if (mp_bisect_parse_by(m->sb.by ? m->sb.by : "", &m->cfg, msg, sizeof(msg)) != 0 &&
        !(m->sb.by && !strcmp(m->sb.by, "throughput"))) {
        snprintf(why, n, "stored bisection: %s", msg);
        return MP_EPARSE;
    }
    if (m->sb.by && !strcmp(m->sb.by, "throughput")) {
        m->cfg.by = MP_BY_THROUGHPUT;
        m->cfg.pct = m->sb.pct;
    }
    long g = index_of(&m->sb.builds, m->sb.good), b = index_of(&m->sb.builds, m->sb.bad);
    if (g < 0 || b < 0 || g == b) {
        snprintf(why, n, "stored bisection: good and bad are not two of its builds");
        return MP_EPARSE;
    }
    long dir = b > g ? 1 : -1;
    m->m = (size_t)labs(b - g) + 1;
    m->two_builds = m->sb.builds.n == 2;
    m->build_of = xcalloc(m->m, sizeof(*m->build_of));
    for (size_t r = 0; r < m->m; r++)
        m->build_of[r] = g + (long)r * dir;
    m->out = xcalloc(m->m, sizeof(*m->out));
    m->pv = xcalloc(m->sb.nprobes + 1, sizeof(*m->pv));
    for (size_t i = 0; i < m->sb.nprobes; i++) {
        struct mp_bisect_probe_view *pv = &m->pv[m->npv++];
        pv->sp = &m->sb.probes[i];
        pv->rank = -1;
        for (size_t r = 0; r < m->m; r++)
            if (m->build_of[r] == pv->sp->pos)
                pv->rank = (long)r;
        pv->ci = pv->sp->cand_pos >= 0 && (size_t)pv->sp->cand_pos < rep->n ? pv->sp->cand_pos : -1;
        observe(rep, pv);
        /* finished: its candidate row is done (the stored outcome follows) */
        pv->finished = pv->ci >= 0 && !rep->c[pv->ci].unfinished && rep->c[pv->ci].nattempts > 0;
        if (pv->finished && pv->rank == 0)
            m->good_probe = (long)(m->npv - 1);
    }
    judge_probes(m);
    answer(m);
    return 0;
}

void mp_bisect_model_release(struct mp_bisect_model *m)
{
    mp_store_bisect_release(&m->sb);
    free(m->build_of);
    free(m->pv);
    free(m->out);
    free(m->summary);
    memset(m, 0, sizeof(*m));
}

/* ---------- JSON ---------- */

static cJSON *str_or_null(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

static cJSON *num_or_null(double v)
{
    return v >= 0 && isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* The standard report's candidate object of probe pv (borrowed from cands). */
static const cJSON *cand_json(const cJSON *cands, const struct mp_bisect_probe_view *pv)
{
    return pv->ci >= 0 ? cJSON_GetArrayItem(cands, (int)pv->ci) : NULL;
}

static cJSON *probe_json(const struct mp_bisect_probe_view *pv, const cJSON *cands)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "step", (double)pv->sp->step);
    cJSON_AddStringToObject(p, "build", pv->sp->build ? pv->sp->build : "");
    cJSON_AddItemToObject(p, "outcome", pv->finished && pv->outcome != MP_PROBE_UNKNOWN
                                            ? cJSON_CreateString(mp_probe_outcome_name(pv->outcome))
                                            : cJSON_CreateNull());
    cJSON_AddStringToObject(p, "why", pv->finished ? pv->why : "the run stopped in this probe");
    cJSON_AddItemToObject(p, "verdict", str_or_null(mp_verdict_name(pv->obs.verdict)));
    cJSON_AddItemToObject(p, "moe_backend", str_or_null(pv->obs.moe_backend));
    cJSON_AddItemToObject(p, "linear_kernel", str_or_null(pv->obs.linear_kernel));
    cJSON_AddItemToObject(p, "engine_version", str_or_null(pv->engine_version));
    cJSON_AddItemToObject(p, "error_class", str_or_null(pv->fail_class));
    cJSON_AddItemToObject(p, "tok_s", num_or_null(pv->obs.tok_s));
    cJSON_AddItemToObject(p, "concurrency_tok_s", num_or_null(pv->conc_tok_s));
    cJSON_AddNumberToObject(p, "requests_ok", (double)pv->obs.req_ok);
    cJSON_AddNumberToObject(p, "requests_failed", (double)pv->obs.req_failed);
    cJSON_AddNumberToObject(p, "requests_required", (double)pv->sp->required);
    cJSON_AddItemToObject(p, "failure_rate_upper_95", num_or_null(pv->upper95));
    const cJSON *c = cand_json(cands, pv);
    const cJSON *ev = c ? cJSON_GetObjectItemCaseSensitive(c, "evidence") : NULL;
    cJSON_AddItemToObject(p, "evidence", ev ? cJSON_Duplicate(ev, 1) : cJSON_CreateArray());
    cJSON_AddItemToObject(p, "candidate", str_or_null(c ? cJSON_GetStringValue(
                                                              cJSON_GetObjectItemCaseSensitive(c, "name"))
                                                        : NULL));
    return p;
}

struct field {
    const char *name;
    char a[96], b[96];
};

/* The fields compared between two probes (the difference section). */
static size_t diff_fields(const struct mp_bisect_probe_view *x, const struct mp_bisect_probe_view *y,
                          struct field *f)
{
    const char *names[] = {"engine_version", "moe_backend", "linear_kernel", "attention_backend",
                           "verdict", "error_class", "sequential_tok_s", "concurrency_tok_s"};
    const struct mp_bisect_probe_view *pv[2] = {x, y};
    for (size_t i = 0; i < MP_ARRAY_SIZE(names); i++) {
        f[i].name = names[i];
        for (int k = 0; k < 2; k++) {
            const struct mp_bisect_probe_view *p = pv[k];
            const char *s[] = {p->engine_version, p->obs.moe_backend, p->obs.linear_kernel,
                               p->attention, mp_verdict_name(p->obs.verdict), p->fail_class};
            char *dst = k ? f[i].b : f[i].a;
            double v = i == 6 ? p->obs.tok_s : p->conc_tok_s;
            if (i < 6)
                snprintf(dst, 96, "%s", s[i] ? s[i] : "-");
            else if (v >= 0)
                snprintf(dst, 96, "%.1f", v);
            else
                snprintf(dst, 96, "-");
        }
    }
    return MP_ARRAY_SIZE(names);
}

static cJSON *difference_json(const struct mp_bisect_model *m)
{
    if (m->last_good < 0 || m->first_bad < 0)
        return cJSON_CreateNull();
    struct field f[8];
    size_t n = diff_fields(&m->pv[m->last_good], &m->pv[m->first_bad], f);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "last_good", m->pv[m->last_good].sp->build);
    cJSON_AddStringToObject(d, "first_bad", m->pv[m->first_bad].sp->build);
    cJSON *arr = cJSON_AddArrayToObject(d, "fields");
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "field", f[i].name);
        cJSON_AddStringToObject(o, "last_good", f[i].a);
        cJSON_AddStringToObject(o, "first_bad", f[i].b);
        cJSON_AddBoolToObject(o, "differs", strcmp(f[i].a, f[i].b) != 0);
        cJSON_AddItemToArray(arr, o);
    }
    return d;
}

static void settings_json(cJSON *o, const struct mp_bisect_model *m)
{
    cJSON_AddStringToObject(o, "by", mp_bisect_by_name(m->cfg.by));
    cJSON_AddItemToObject(o, "slowdown_pct",
                          m->cfg.by == MP_BY_THROUGHPUT ? cJSON_CreateNumber(m->cfg.pct)
                                                        : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "good", m->sb.good);
    cJSON_AddStringToObject(o, "bad", m->sb.bad);
    cJSON *b = cJSON_AddArrayToObject(o, "builds");
    for (size_t i = 0; i < m->sb.builds.n; i++)
        cJSON_AddItemToArray(b, cJSON_CreateString(m->sb.builds.v[i]));
    cJSON_AddBoolToObject(o, "comparison", m->two_builds);
    cJSON_AddItemToObject(o, "candidate_name", str_or_null(m->sb.candidate));
    cJSON_AddItemToObject(o, "requests_required", m->sb.required_set
                                                      ? cJSON_CreateNumber((double)m->sb.required)
                                                      : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "required_why", str_or_null(m->sb.required_why));
    cJSON_AddItemToObject(o, "bad_failure_rate", m->sb.p_bad > 0 ? cJSON_CreateNumber(m->sb.p_bad)
                                                                 : cJSON_CreateNull());
}

void mp_bisect_json(const struct mp_report *rep, const struct mp_bisect_model *m,
                    struct buf *out)
{
    struct buf std = BUF_INIT;
    mp_report_json(rep, &std);
    cJSON *full = cJSON_ParseWithLength(std.data ? std.data : "{}", std.len);
    buf_release(&std);
    cJSON *cands = full ? cJSON_GetObjectItemCaseSensitive(full, "candidates") : NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "moeprobe_version", rep->moeprobe_version ? rep->moeprobe_version : "");
    settings_json(o, m);
    const char *fb = m->first_bad >= 0 ? m->pv[m->first_bad].sp->build : NULL;
    const char *lg = m->last_good >= 0 ? m->pv[m->last_good].sp->build : NULL;
    cJSON_AddItemToObject(o, "first_bad", str_or_null(m->step.done ? fb : NULL));
    cJSON_AddItemToObject(o, "last_good", str_or_null(m->step.done ? lg : NULL));
    cJSON_AddItemToObject(o, "confidence", m->confidence_known ? cJSON_CreateNumber(m->confidence)
                                                               : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "confidence_why", m->confidence_why);
    cJSON_AddBoolToObject(o, "finished", m->step.done && !mp_report_incomplete(rep));
    cJSON_AddBoolToObject(o, "ambiguous", m->step.ambiguous);
    cJSON_AddBoolToObject(o, "inconsistent", m->step.inconsistent);
    cJSON_AddStringToObject(o, "summary", m->summary ? m->summary : "");
    cJSON *probes = cJSON_AddArrayToObject(o, "probes");
    for (size_t i = 0; i < m->npv; i++)
        cJSON_AddItemToArray(probes, probe_json(&m->pv[i], cands));
    cJSON_AddItemToObject(o, "difference", difference_json(m));
    if (full) {
        cJSON_AddItemToObject(o, "fingerprint", cJSON_DetachItemFromObject(full, "fingerprint"));
        cJSON_AddItemToObject(o, "candidates", cJSON_DetachItemFromObject(full, "candidates"));
    }
    char *s = cJSON_Print(o);
    buf_adds(out, s);
    buf_addc(out, '\n');
    free(s);
    cJSON_Delete(o);
    cJSON_Delete(full);
}

/* ---------- Markdown ---------- */

static void md_cell(struct buf *b, const char *s)
{
    buf_adds(b, " ");
    mp_md_text(b, s ? s : "-", 200, MP_MD_TABLE);
    buf_adds(b, " |");
}

static void md_num(struct buf *b, double v, int decimals)
{
    char t[48] = "-";
    if (v >= 0)
        snprintf(t, sizeof(t), "%.*f", decimals, v);
    md_cell(b, t);
}

static void md_probes(struct buf *b, const struct mp_bisect_model *m)
{
    buf_adds(b, "\n## Probes\n\n| step | build | outcome | verdict | MoE backend | engine | "
                "seq tok/s | requests ok / failed | failure rate ≤ (95 %) | why |\n"
                "|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < m->npv; i++) {
        const struct mp_bisect_probe_view *pv = &m->pv[i];
        char req[48];
        buf_printf(b, "| %ld |", pv->sp->step);
        md_cell(b, pv->sp->build);
        md_cell(b, pv->finished ? mp_probe_outcome_name(pv->outcome) : "unfinished");
        md_cell(b, mp_verdict_name(pv->obs.verdict));
        md_cell(b, pv->obs.moe_backend);
        md_cell(b, pv->engine_version);
        md_num(b, pv->obs.tok_s, 1);
        snprintf(req, sizeof(req), "%lu / %lu", pv->obs.req_ok, pv->obs.req_failed);
        md_cell(b, req);
        md_num(b, pv->upper95, 3);
        md_cell(b, pv->finished ? pv->why : "the run stopped in this probe");
        buf_addc(b, '\n');
    }
}

static void md_difference(struct buf *b, const struct mp_bisect_model *m)
{
    if (m->last_good < 0 || m->first_bad < 0)
        return;
    struct field f[8];
    size_t n = diff_fields(&m->pv[m->last_good], &m->pv[m->first_bad], f);
    buf_adds(b, m->two_builds ? "\n## Side by side\n\n| | " : "\n## The difference\n\n| | ");
    mp_md_text(b, m->pv[m->last_good].sp->build, 200, MP_MD_TABLE);
    buf_adds(b, " (good) | ");
    mp_md_text(b, m->pv[m->first_bad].sp->build, 200, MP_MD_TABLE);
    buf_adds(b, " (bad) |\n|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        bool d = strcmp(f[i].a, f[i].b) != 0;
        buf_printf(b, "| %s%s%s |", d ? "**" : "", f[i].name, d ? "**" : "");
        md_cell(b, f[i].a);
        md_cell(b, f[i].b);
        buf_addc(b, '\n');
    }
}

static void md_evidence(struct buf *b, const struct mp_report *rep,
                        const struct mp_bisect_model *m)
{
    buf_adds(b, "\n## Evidence\n\n");
    for (size_t i = 0; i < m->npv; i++) {
        const struct mp_bisect_probe_view *pv = &m->pv[i];
        if (pv->ci < 0)
            continue;
        const struct mp_cand_report *c = &rep->c[pv->ci];
        buf_adds(b, "- ");
        mp_md_text(b, pv->sp->build, 200, 0);
        buf_adds(b, ": ");
        mp_md_text(b, c->why ? c->why : "no verdict", 600, 0);
        for (size_t k = 0; k < c->nattempts; k++) {
            const struct mp_attempt_result *a = &c->attempts[k];
            buf_adds(b, k ? ", " : "; attempts: ");
            mp_md_code(b, a->dir ? a->dir : "?", 300, 0);
            if (a->launch_blocking)
                buf_adds(b, " (CUDA_LAUNCH_BLOCKING=1)");
            if (a->res.moe_backend_line > 0)
                buf_printf(b, " (MoE backend: server.log:%ld)", a->res.moe_backend_line);
            if (a->fail_line > 0)
                buf_printf(b, " (failure: server.log:%ld)", a->fail_line);
        }
        buf_addc(b, '\n');
    }
}

void mp_bisect_markdown(const struct mp_report *rep, const struct mp_bisect_model *m,
                        struct buf *out)
{
    buf_adds(out, m->two_builds ? "# moeprobe: two builds compared\n\n" : "# moeprobe bisect\n\n");
    if (mp_report_incomplete(rep) || !m->step.done)
        buf_adds(out, "> **This run did not finish**; `moeprobe bisect --resume RUNDIR` "
                      "continues it.\n\n");
    buf_adds(out, "**");
    mp_md_text(out, m->summary ? m->summary : "", 600, 0);
    buf_adds(out, "**");
    if (m->confidence_known)
        buf_printf(out, " (confidence %.3f)", m->confidence);
    buf_adds(out, "\n\n");
    if (m->confidence_why[0]) {
        buf_adds(out, "Confidence: ");
        mp_md_text(out, m->confidence_why, 600, 0);
        buf_adds(out, "\n\n");
    }
    buf_printf(out, "- same as good means (--by %s): ", mp_bisect_by_name(m->cfg.by));
    if (m->cfg.by == MP_BY_VERDICT)
        buf_adds(out, "the same verdict class (serves / fails under load / fails to start / "
                      "wrong output / not delivered) and the same resolved MoE backend\n");
    else if (m->cfg.by == MP_BY_RESOLVED)
        buf_adds(out, "the same resolved MoE backend and dense kernel\n");
    else
        buf_printf(out, "sequential tok/s no more than %g %% below the good build's\n", m->cfg.pct);
    buf_adds(out, "- candidate: ");
    mp_md_code(out, m->sb.candidate ? m->sb.candidate : "auto", 200, 0);
    buf_printf(out, "\n- builds: %zu between ", m->m);
    mp_md_code(out, m->sb.good, 200, 0);
    buf_adds(out, " (good) and ");
    mp_md_code(out, m->sb.bad, 200, 0);
    buf_adds(out, " (bad), both included\n- requests per probe: ");
    mp_md_text(out, m->sb.required_why ? m->sb.required_why : "not known yet", 600, 0);
    buf_addc(out, '\n');
    md_difference(out, m);
    md_probes(out, m);
    md_evidence(out, rep, m);
}

/* ---------- the store -> the three formats ---------- */

int mp_bisect_render(struct mp_store *st, const struct mp_report *rep, struct buf *json,
                     struct buf *md, struct buf *html)
{
    struct mp_store_bisect sb;
    int rc = mp_store_bisect_load(st, &sb);
    if (rc == -ENOENT)
        return -ENOENT;
    if (rc < 0) {
        mp_error("cannot read the bisection back: %s", mp_store_errmsg(st));
        return rc;
    }
    struct mp_bisect_model m;
    char why[256];
    rc = mp_bisect_model_build(rep, &sb, &m, why, sizeof(why));
    if (rc == 0) {
        if (json)
            mp_bisect_json(rep, &m, json);
        if (md)
            mp_bisect_markdown(rep, &m, md);
        if (html)
            mp_bisect_html(rep, &m, html);
    } else {
        mp_error("%s", why);
    }
    mp_bisect_model_release(&m);
    mp_store_bisect_release(&sb);
    return rc;
}

int mp_bisect_render_dir(const char *run_dir, const struct mp_report *rep, struct buf *json,
                         struct buf *md, struct buf *html)
{
    if (!rep->subcommand || strcmp(rep->subcommand, "bisect") != 0)
        return -ENOENT;
    struct mp_store *st = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_store_open(run_dir, MP_STORE_READONLY, &st, &d);
    if (rc < 0) {
        mp_error("%s", d.msg[0] ? d.msg : mp_strerror(rc));
        return rc;
    }
    rc = mp_bisect_render(st, rep, json, md, html);
    mp_store_close(st);
    return rc;
}
