/* report.c - the report model's life cycle (model/report.h). */
#include "model/report.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "version.h"
#include "xalloc.h"


void mp_report_init(struct mp_report *rep, const char *run_dir)
{
    memset(rep, 0, sizeof(*rep));
    rep->moeprobe_version = xstrdup(mp_version);
    rep->run_dir = xstrdup(run_dir ? run_dir : ".");
    rep->recommended = -1;
    rep->qc.ref = -1;
}

void mp_report_release(struct mp_report *rep)
{
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_cand_report *c = &rep->c[i];
        mp_candidate_release(&c->cand);
        for (size_t j = 0; j < c->nattempts; j++)
            mp_attempt_result_release(&c->attempts[j]);
        free(c->attempts);
        free(c->why);
        free(c->not_applicable);
        mp_diagnosis_reset(&c->diag);
    }
    free(rep->c);
    free(rep->moeprobe_version);
    free(rep->run_dir);
    free(rep->started);
    free(rep->finished);
    free(rep->subcommand);
    free(rep->stopped_by);
    mp_inherited_release(&rep->inherited);
    free(rep->preset_version);
    free(rep->stop_reason);
    mp_strv_release(&rep->server_cmd);
    free(rep->recommendation_why);
    mp_strv_release(&rep->learned);
    mp_report_derived_release(rep);
    mp_qcheck_release(&rep->qc);
    mp_correct_release(&rep->cor);
    free(rep->checkpoint_json);
    free(rep->checkpoint_summary);
    mp_strv_release(&rep->checkpoint_notes);
    free(rep->engine_kernels_json);
    free(rep->engine_kernels_summary);
    mp_fingerprint_release(&rep->fp);
    memset(rep, 0, sizeof(*rep));
}

size_t mp_report_add_candidate(struct mp_report *rep, const struct mp_candidate *c)
{
    rep->c = xreallocarray(rep->c, rep->n + 1, sizeof(*rep->c));
    struct mp_cand_report *cr = &rep->c[rep->n];
    memset(cr, 0, sizeof(*cr));
    mp_candidate_copy(&cr->cand, c);
    cr->not_run = true;
    cr->diag.throughput_ratio = -1;
    return rep->n++;
}

struct mp_attempt_result *mp_report_add_attempt(struct mp_report *rep, size_t i,
                                                struct mp_attempt_result *owned_a)
{
    struct mp_cand_report *c = &rep->c[i];
    c->attempts = xreallocarray(c->attempts, c->nattempts + 1, sizeof(*c->attempts));
    c->attempts[c->nattempts] = *owned_a;
    memset(owned_a, 0, sizeof(*owned_a));
    c->not_run = false;
    return &c->attempts[c->nattempts++];
}

const struct mp_attempt_result *mp_cand_primary(const struct mp_cand_report *c)
{
    for (size_t j = 0; j < c->nattempts; j++) {
        if (!c->attempts[j].launch_blocking)
            return &c->attempts[j];
    }
    return NULL;
}

size_t mp_report_nunfinished(const struct mp_report *rep)
{
    size_t n = 0;
    for (size_t i = 0; i < rep->n; i++)
        n += rep->c[i].unfinished;
    return n;
}

bool mp_report_incomplete(const struct mp_report *rep)
{
    return rep->interrupted || !rep->finished || mp_report_nunfinished(rep) > 0;
}

void mp_diagnosis_reset(struct mp_diagnosis *dg)
{
    free(dg->pinned_site);
    free(dg->launch_site);
    free(dg->reasoning);
    free(dg->note);
    memset(dg, 0, sizeof(*dg));
    dg->throughput_ratio = -1;
}

const char *mp_lb_name(enum mp_lb_result r)
{
    return r == MP_LB_CLEAN ? "clean" : r == MP_LB_CRASHED ? "crashed" : NULL;
}

enum mp_lb_result mp_lb_from_name(const char *name)
{
    if (name && !strcmp(name, "clean"))
        return MP_LB_CLEAN;
    if (name && !strcmp(name, "crashed"))
        return MP_LB_CRASHED;
    return MP_LB_NONE;
}

const char *mp_cand_verdict_label(const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    if (!c->verdict && mp_attempt_evidence_incomplete(p))
        return "evidence incomplete"; /* (and unfinished: the run stopped there) */
    if (c->unfinished)
        return "unfinished";
    if (!c->verdict && p && p->outcome == MP_OUT_RESOLVED)
        return "resolved";
    return c->verdict ? mp_verdict_name(c->verdict) : "not run";
}

bool mp_report_is_resolve_map(const struct mp_report *rep)
{
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_attempt_result *p = mp_cand_primary(&rep->c[i]);
        if (p && p->outcome == MP_OUT_RESOLVED)
            return true;
    }
    return false;
}

void mp_report_derived_release(struct mp_report *rep)
{
    for (size_t i = 0; i < rep->ngroups; i++)
        mp_strv_release(&rep->groups[i].candidates);
    free(rep->groups);
    rep->groups = NULL;
    rep->ngroups = 0;
    for (size_t i = 0; i < rep->nnoop; i++) {
        free(rep->noop[i].candidate);
        free(rep->noop[i].knob);
        free(rep->noop[i].resolved_like);
        free(rep->noop[i].engine_warning);
        free(rep->noop[i].delivery_evidence);
    }
    free(rep->noop);
    rep->noop = NULL;
    rep->nnoop = 0;
}


static long jlong(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
}

static const char *jtext(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The summary line and notes come from the JSON alone, so a report loaded
 * from the evidence store (which keeps the JSON) reads the same. */
void mp_report_set_engine_kernels_json(struct mp_report *rep, const char *json)
{
    free(rep->engine_kernels_json);
    free(rep->engine_kernels_summary);
    rep->engine_kernels_json = json ? xstrdup(json) : NULL;
    rep->engine_kernels_summary = NULL;
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    const char *s = j ? jtext(j, "summary") : NULL;
    if (s)
        rep->engine_kernels_summary = xstrdup(s);
    cJSON_Delete(j);
}

void mp_report_set_checkpoint_json(struct mp_report *rep, const char *json)
{
    free(rep->checkpoint_json);
    free(rep->checkpoint_summary);
    mp_strv_release(&rep->checkpoint_notes);
    rep->checkpoint_json = json ? xstrdup(json) : NULL;
    rep->checkpoint_summary = NULL;
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    if (!j)
        return;
    const cJSON *moe = cJSON_GetObjectItemCaseSensitive(j, "moe");
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(j, "quantization");
    const char *arch = jtext(j, "architecture");
    struct buf s = BUF_INIT;
    buf_printf(&s, "%s", arch ? arch : "unknown architecture");
    if (cJSON_IsObject(moe)) {
        const char *act = jtext(moe, "activation");
        buf_printf(&s, ", %ld experts (%ld per token), MoE intermediate size %ld, %s",
                   jlong(moe, "experts"), jlong(moe, "experts_per_token"),
                   jlong(moe, "intermediate_size"), act ? act : "activation unknown");
        const cJSON *lim = cJSON_GetObjectItemCaseSensitive(moe, "swiglu_limit");
        if (cJSON_IsNumber(lim))
            buf_printf(&s, ", swiglu_limit %g", lim->valuedouble);
    }
    if (cJSON_IsObject(q)) {
        const char *prod = jtext(q, "producer"), *algo = jtext(q, "algo");
        buf_printf(&s, "; %s %s%s", prod ? prod : "", algo ? algo : "",
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, "weight_only")) ? " (weight-only)"
                                                                                     : "");
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "hybrid")))
        buf_adds(&s, "; hybrid Mamba/attention");
    rep->checkpoint_summary = buf_detach(&s, NULL);
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(j, "notes");
    const cJSON *n;
    cJSON_ArrayForEach(n, notes)
    {
        if (cJSON_IsString(n))
            mp_strv_push(&rep->checkpoint_notes, n->valuestring);
    }
    cJSON_Delete(j);
}

static bool pct_word_ok(const char *w, size_t len, double *out)
{
    size_t dot = len, digits = 0;
    for (size_t i = 0; i < len; i++) {
        if (w[i] == '.' && dot == len)
            dot = i;
        else if (w[i] >= '0' && w[i] <= '9')
            digits++;
        else
            return false;
    }
    if (!digits || (dot < len && len - dot - 1 > 3) || dot == 0 || dot + 1 == len)
        return false;
    char tmp[32];
    if (len >= sizeof(tmp))
        return false;
    memcpy(tmp, w, len);
    tmp[len] = '\0';
    double v = strtod(tmp, NULL);
    if (!(v > 0 && v <= 100))
        return false;
    *out = v;
    return true;
}

int mp_percentiles_parse(const char *list, double *out, size_t *n, char *err, size_t errn)
{
    size_t k = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        double v;
        if (!len) {
            snprintf(err, errn, "'%s' has an empty item (give e.g. 50,90,99)", list);
            return -1;
        }
        if (!pct_word_ok(p, len, &v)) {
            snprintf(err, errn, "'%.*s' in '%s' is not a percentile: give numbers in (0, 100] "
                     "with at most 3 decimals, separated by commas (e.g. 50,90,99)",
                     (int)MP_MIN(len, 40), p, list);
            return -1;
        }
        for (size_t i = 0; i < k; i++) {
            if (out[i] == v) {
                snprintf(err, errn, "%g is given twice in '%s'", v, list);
                return -1;
            }
        }
        if (k == MP_REPORT_MAX_PCT) {
            snprintf(err, errn, "'%s' has more than %d percentiles", list, MP_REPORT_MAX_PCT);
            return -1;
        }
        out[k++] = v;
        if (!p[len])
            break;
        p += len + 1;
    }
    *n = k;
    return 0;
}
