/* load.c - reading a run back from the store into the report model, so
 * that every report is rendered from the database alone. */
#include "store/internal.h"
#include "store/runinfo.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/report.h"
#include "store/evidence.h"
#include "xalloc.h"

static char *col_str(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? xstrdup((const char *)t) : NULL;
}

static void strv_from_json(struct mp_strv *v, const char *j)
{
    if (!j)
        return;
    cJSON *a = cJSON_Parse(j);
    cJSON *it;
    cJSON_ArrayForEach(it, a)
    {
        if (cJSON_IsString(it))
            mp_strv_push(v, it->valuestring);
    }
    cJSON_Delete(a);
}

/* An attempt's GPU telemetry as stored (schema v7); NULL or damaged text
 * leaves it unsampled. */
static void gpu_from_json(struct mp_gpu_telemetry *g, const char *text)
{
    memset(g, 0, sizeof(*g));
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "samples");
    cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "throttle");
    cJSON *stats = cJSON_GetObjectItemCaseSensitive(j, "stats");
    struct mp_gpu_stat *m[4] = {&g->sm_clock_mhz, &g->temperature_c, &g->power_w,
                                &g->memory_used_mib};
    if (cJSON_IsNumber(s) && s->valuedouble >= 1 && cJSON_GetArraySize(stats) == 4) {
        g->samples = (size_t)s->valuedouble;
        g->throttle_reasons = cJSON_IsNumber(t) ? (unsigned long long)t->valuedouble : 0;
        for (int k = 0; k < 4; k++) {
            cJSON *a = cJSON_GetArrayItem(stats, k);
            if (cJSON_GetArraySize(a) != 4)
                continue;
            m[k]->min = cJSON_GetArrayItem(a, 0)->valuedouble;
            m[k]->median = cJSON_GetArrayItem(a, 1)->valuedouble;
            m[k]->max = cJSON_GetArrayItem(a, 2)->valuedouble;
            double n = cJSON_GetArrayItem(a, 3)->valuedouble;
            m[k]->n = n >= 0 ? (size_t)n : 0;
        }
    }
    cJSON_Delete(j);
}

/* A stored count (a JSON number in [1, 1e12]), else 0: never a cast of an
 * out-of-range double. */
static unsigned long count_or_0(const cJSON *n)
{
    return cJSON_IsNumber(n) && n->valuedouble >= 1 && n->valuedouble <= 1e12
               ? (unsigned long)n->valuedouble
               : 0;
}

/* diagnoses.policy (v14): how the diagnosis ran; NULL or damaged: not
 * recorded (the stored diagnosis stands). */
static void policy_from_json(struct mp_diag_policy *p, const char *text)
{
    memset(p, 0, sizeof(*p));
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    if (cJSON_IsObject(j)) {
        const cJSON *cap = cJSON_GetObjectItemCaseSensitive(j, "cap");
        const cJSON *bud = cJSON_GetObjectItemCaseSensitive(j, "budget_s");
        const cJSON *conc = cJSON_GetObjectItemCaseSensitive(j, "concurrency");
        p->recorded = true;
        p->diagnose = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "diagnose"));
        p->skipped = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "skipped"));
        p->notes = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "notes"));
        p->cap = count_or_0(cap);
        p->budget_s = cJSON_IsNumber(bud) && bud->valuedouble > 0 ? bud->valuedouble : 0;
        p->concurrency = cJSON_IsNumber(conc) && conc->valuedouble >= 1 ? (int)conc->valuedouble : 1;
        const cJSON *lead = cJSON_GetObjectItemCaseSensitive(j, "lead"); /* #27; absent before */
        const cJSON *blead = cJSON_GetObjectItemCaseSensitive(j, "blocked_lead"); /* absent before */
        p->lead = count_or_0(lead);
        p->blocked_lead = count_or_0(blead);
    }
    cJSON_Delete(j);
}

static void read_col(sqlite3_stmt *st, int i, const struct mp_store_col *c, void *base)
{
    char *p = (char *)base + c->off;
    bool null = sqlite3_column_type(st, i) == SQLITE_NULL;
    switch (c->type) {
    case MP_COL_STR:
        *(char **)(void *)p = col_str(st, i);
        break;
    case MP_COL_LONG:
        *(long *)(void *)p = null ? 0 : (long)sqlite3_column_int64(st, i);
        break;
    case MP_COL_ULONG:
        *(unsigned long *)(void *)p = null ? 0 : (unsigned long)sqlite3_column_int64(st, i);
        break;
    case MP_COL_INT:
        *(int *)(void *)p = null ? 0 : sqlite3_column_int(st, i);
        break;
    case MP_COL_BOOL:
        *(bool *)(void *)p = !null && sqlite3_column_int(st, i) != 0;
        break;
    case MP_COL_DBL:
        *(double *)(void *)p = null ? 0 : sqlite3_column_double(st, i);
        break;
    case MP_COL_STRV:
        strv_from_json((struct mp_strv *)(void *)p, (const char *)sqlite3_column_text(st, i));
        break;
    case MP_COL_GPU:
        gpu_from_json((struct mp_gpu_telemetry *)(void *)p, (const char *)sqlite3_column_text(st, i));
        break;
    case MP_COL_FAULT: {
        const char *t = (const char *)sqlite3_column_text(st, i);
        cJSON *j = t ? cJSON_Parse(t) : NULL; /* damaged text: nothing known */
        mp_gpu_fault_from_json((struct mp_gpu_fault *)(void *)p, j);
        cJSON_Delete(j);
        break;
    }
    case MP_COL_RESMORE: /* damaged text: nothing known */
        mp_resolved_more_from_json((struct mp_resolved *)(void *)p,
                                   (const char *)sqlite3_column_text(st, i));
        break;
    case MP_COL_OBS:
        mp_store_obs_read((struct mp_attempt_obs *)(void *)p, (const char *)sqlite3_column_text(st, i));
        break;
    }
}

/* Knob delivery: the knob_delivery table (v7+), or the three parallel JSON
 * lists of v5/v6. */
static int load_delivery(struct mp_store *s, int64_t id, struct mp_attempt_result *r)
{
    sqlite3_stmt *st = NULL;
    if (s->version < 5)
        return 0;
    if (s->version < 7) {
        if (mp_store_prep(s, &st, "SELECT dlv_knob, dlv_status, dlv_evidence FROM attempts"
                                  " WHERE id = ?") < 0)
            return MP_EDB;
        sqlite3_bind_int64(st, 1, id);
        int vr = sqlite3_step(st);
        if (vr == SQLITE_ROW) {
            struct mp_strv k = MP_STRV_INIT, stv = MP_STRV_INIT, ev = MP_STRV_INIT;
            strv_from_json(&k, (const char *)sqlite3_column_text(st, 0));
            strv_from_json(&stv, (const char *)sqlite3_column_text(st, 1));
            strv_from_json(&ev, (const char *)sqlite3_column_text(st, 2));
            for (size_t i = 0; i < k.n; i++)
                mp_attempt_add_dlv(r, k.v[i], mp_dlv_status_from_name(i < stv.n ? stv.v[i] : NULL),
                                   i < ev.n ? ev.v[i] : NULL);
            mp_strv_release(&k);
            mp_strv_release(&stv);
            mp_strv_release(&ev);
        }
        return mp_store_read_end(s, st, vr, "read the knob delivery");
    }
    if (mp_store_prep(s, &st, "SELECT knob, status, evidence FROM knob_delivery"
                              " WHERE attempt_id = ? ORDER BY pos") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, id);
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW)
        mp_attempt_add_dlv(r, (const char *)sqlite3_column_text(st, 0),
                           mp_dlv_status_from_name((const char *)sqlite3_column_text(st, 1)),
                           (const char *)sqlite3_column_text(st, 2));
    return mp_store_read_end(s, st, sr, "read the knob delivery");
}

static int load_attempt_details(struct mp_store *s, int64_t id, struct mp_attempt_result *r)
{
    sqlite3_stmt *st = NULL;
    /* phases; their histograms (stored since v9: phases.hist = 1) */
    if (mp_store_prep(s, &st,
                      s->version >= 9
                          ? "SELECT name, level, planned, ok, failed, wall_s, tokens, tok_s,"
                            " req_tok_s_p50, hist, prompt_tokens, prompt_n FROM phases"
                            " WHERE attempt_id = ? ORDER BY pos"
                          : "SELECT name, level, planned, ok, failed, wall_s, tokens, tok_s,"
                            " req_tok_s_p50, NULL, 0, 0 FROM phases WHERE attempt_id = ? ORDER BY pos") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, id);
    int sr;
    bool legacy[MP_ARRAY_SIZE(r->phases)];
    while ((sr = sqlite3_step(st)) == SQLITE_ROW && r->nphases < MP_ARRAY_SIZE(r->phases)) {
        legacy[r->nphases] = sqlite3_column_type(st, 9) == SQLITE_NULL;
        struct mp_phase_result *ph = &r->phases[r->nphases++];
        snprintf(ph->name, sizeof(ph->name), "%s", (const char *)sqlite3_column_text(st, 0));
        ph->level = sqlite3_column_int(st, 1);
        ph->planned = sqlite3_column_int(st, 2);
        ph->ok = sqlite3_column_int(st, 3);
        ph->failed = sqlite3_column_int(st, 4);
        ph->wall_s = sqlite3_column_double(st, 5);
        ph->tokens = (long)sqlite3_column_int64(st, 6);
        ph->tok_s = sqlite3_column_double(st, 7);
        ph->req_tok_s_p50 = sqlite3_column_double(st, 8);
        ph->prompt_tokens = (long)sqlite3_column_int64(st, 10);
        ph->prompt_n = sqlite3_column_int(st, 11);
    }
    if (mp_store_read_end(s, st, sr, "read the phases") < 0 || mp_store_srvm_load(s, id, r) < 0)
        return MP_EDB; /* ^ the phases' server metrics */
    if (mp_store_load_metrics(s, id, r, legacy) < 0)
        return MP_EDB;
    /* generated texts */
    r->ntexts = 0;
    for (const char *const *p = mp_prompts; *p; p++)
        r->ntexts++;
    r->texts = xcalloc(r->ntexts + 1, sizeof(*r->texts));
    if (mp_store_prep(s, &st, "SELECT kind, idx, text FROM texts WHERE attempt_id = ?") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, id);
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 0);
        size_t idx = (size_t)sqlite3_column_int64(st, 1);
        if (!strcmp(kind, "workload") && idx < r->ntexts) {
            free(r->texts[idx]);
            r->texts[idx] = col_str(st, 2);
        } else if (!strcmp(kind, "quality") && idx < 4096) {
            if (idx >= r->nquality) {
                r->quality_texts = xreallocarray(r->quality_texts, idx + 2, sizeof(char *));
                memset(r->quality_texts + r->nquality, 0, (idx + 2 - r->nquality) * sizeof(char *));
                r->nquality = idx + 1;
            }
            free(r->quality_texts[idx]);
            r->quality_texts[idx] = col_str(st, 2);
        }
    }
    int trc = mp_store_read_end(s, st, sr, "read the generated texts");
    if (trc < 0)
        return trc;
    return load_delivery(s, id, r);
}

static int load_fp(struct mp_store *s, struct mp_report *rep)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st,
                      "SELECT gpu, compute_capability, driver, cuda, engine, engine_version, model,"
                      " host_arch FROM fingerprint WHERE id = 1") < 0)
        return MP_EDB;
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW) {
        char **f[] = {&rep->fp.gpu, &rep->fp.compute_capability, &rep->fp.driver, &rep->fp.cuda,
                      &rep->fp.engine, &rep->fp.engine_version, &rep->fp.model, &rep->fp.host_arch};
        for (int i = 0; i < 8; i++) {
            free(*f[i]);
            *f[i] = col_str(st, i);
        }
    }
    if (mp_store_read_end(s, st, sr, "read the fingerprint") < 0)
        return MP_EDB;
    if (s->version >= 3) {
        if (mp_store_prep(s, &st, "SELECT checkpoint_json FROM fingerprint WHERE id = 1") < 0)
            return MP_EDB;
        sr = sqlite3_step(st);
        if (sr == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            mp_report_set_checkpoint_json(rep, (const char *)sqlite3_column_text(st, 0));
        if (mp_store_read_end(s, st, sr, "read the checkpoint") < 0)
            return MP_EDB;
    }
    char *ek = NULL;
    if (mp_store_load_engine_kernels(s, &ek) < 0)
        return MP_EDB;
    mp_report_set_engine_kernels_json(rep, ek);
    free(ek);
    return 0;
}

int mp_store_load_fp_extra(struct mp_store *s, struct mp_fp_extra *x)
{
    memset(x, 0, sizeof(*x));
    x->gpu_memory_mib = -1;
    if (s->version < 2)
        return 0;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st,
                      "SELECT quantization, gpu_memory_mib, gpu_source, model_dir FROM fingerprint"
                      " WHERE id = 1") < 0)
        return MP_EDB;
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW) {
        x->quantization = col_str(st, 0);
        if (sqlite3_column_type(st, 1) != SQLITE_NULL)
            x->gpu_memory_mib = (long)sqlite3_column_int64(st, 1);
        x->gpu_source = col_str(st, 2);
        x->model_dir = col_str(st, 3);
    }
    if (mp_store_read_end(s, st, sr, "read the fingerprint") < 0)
        return MP_EDB;
    if (s->version >= 3) {
        if (mp_store_prep(s, &st, "SELECT checkpoint_json FROM fingerprint WHERE id = 1") < 0)
            return MP_EDB;
        sr = sqlite3_step(st);
        if (sr == SQLITE_ROW)
            x->checkpoint_json = col_str(st, 0);
        if (mp_store_read_end(s, st, sr, "read the checkpoint") < 0)
            return MP_EDB;
    }
    return 0;
}

/* An attempt's directory is RUNDIR/attempts/<leaf> (runner.c). The stored
 * path is spelled the way the writing moeprobe named the run directory
 * (relative to its working directory); a run resumed from elsewhere, or a
 * copied run, is read as the run directory it is loaded from. */
static char *attempt_dir(const char *run_dir, const char *stored)
{
    if (!stored)
        return NULL;
    const char *leaf = strrchr(stored, '/');
    leaf = leaf ? leaf + 1 : stored;
    size_t sl = strlen(stored), ll = strlen(leaf);
    bool under_attempts = sl >= ll + 9 && !strncmp(stored + sl - ll - 9, "attempts/", 9);
    return under_attempts && *leaf ? xasprintf("%s/attempts/%s", run_dir, leaf) : xstrdup(stored);
}

/* The run's --objective and --percentiles (version 11; before: not
 * recorded, the defaults). A value this version does not know - a later
 * objective, a bad list - leaves the default: the report says which
 * objective it used. */
static int load_report_opts(struct mp_store *s, struct mp_report *rep)
{
    if (s->version < 11)
        return 0;
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st, "SELECT objective, percentiles FROM run WHERE id = 1") < 0)
        return MP_EDB;
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW) {
        const char *obj = (const char *)sqlite3_column_text(st, 0);
        if (!obj || mp_objective_from_name(obj, &rep->objective) < 0)
            rep->objective = MP_OBJ_SEQUENTIAL;
        const char *p = (const char *)sqlite3_column_text(st, 1);
        double v[MP_REPORT_MAX_PCT];
        size_t n = 0;
        char err[256];
        if (p && mp_percentiles_parse(p, v, &n, err, sizeof(err)) == 0) {
            memcpy(rep->percentiles, v, n * sizeof(v[0]));
            rep->npercentiles = n;
        }
    }
    return mp_store_read_end(s, st, sr, "read the report options");
}

/* Candidate id's diagnoses row into c (none: c's stays empty), with the
 * policy it was derived under (v14). 0 or MP_EDB. */
static int read_diagnosis(struct mp_store *s, int64_t id, struct mp_cand_report *c)
{
    sqlite3_stmt *st = NULL;
    if (mp_store_prep(s, &st,
                      s->version >= 14
                          ? "SELECT done, launch_blocking, requests_clean, requests_required,"
                            " confidence, throughput_ratio, pinned_site, reasoning, note,"
                            " launch_site, policy FROM diagnoses WHERE candidate_id = ?"
                      : s->version >= 4
                          ? "SELECT done, launch_blocking, requests_clean, requests_required,"
                            " confidence, throughput_ratio, pinned_site, reasoning, note,"
                            " launch_site, NULL FROM diagnoses WHERE candidate_id = ?"
                          : "SELECT done, launch_blocking, requests_clean, requests_required,"
                            " confidence, throughput_ratio, pinned_site, reasoning, note,"
                            " NULL, NULL FROM diagnoses WHERE candidate_id = ?") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, id);
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW) {
        struct mp_diagnosis *dg = &c->diag;
        dg->done = sqlite3_column_int(st, 0) != 0;
        dg->launch_blocking = mp_lb_from_name((const char *)sqlite3_column_text(st, 1));
        dg->requests_clean = (unsigned long)sqlite3_column_int64(st, 2);
        dg->requests_required = (unsigned long)sqlite3_column_int64(st, 3);
        dg->confidence = sqlite3_column_double(st, 4);
        dg->throughput_ratio = sqlite3_column_double(st, 5);
        dg->pinned_site = col_str(st, 6);
        dg->reasoning = col_str(st, 7);
        dg->note = col_str(st, 8);
        dg->launch_site = col_str(st, 9);
        policy_from_json(&c->policy, (const char *)sqlite3_column_text(st, 10));
    }
    return mp_store_read_end(s, st, sr, "read the diagnoses") < 0 ? MP_EDB : 0;
}

/* The finished attempts of candidate i (store id cid) into rep. */
static int load_attempts(struct mp_store *s, struct mp_report *rep, size_t i, int64_t cid)
{
    /* finished ones; running ones are not evidence */
    struct buf sql = BUF_INIT;
    buf_adds(&sql, "SELECT id, idx, launch_blocking, dir, outcome");
    for (size_t k = 0; k < mp_store_attempt_cols_in(s->version); k++)
        buf_printf(&sql, ", %s", mp_store_attempt_cols[k].name);
    /* interrupted attempts with a summary count only while the run is
     * (still) interrupted; a resume redoes them */
    buf_printf(&sql, " FROM attempts WHERE candidate_id = ? AND (status = 'done'%s) ORDER BY id",
               rep->interrupted ? " OR (status = 'interrupted' AND outcome IS NOT NULL)" : "");
    sqlite3_stmt *st = NULL;
    int rc = mp_store_prep(s, &st, sql.data);
    buf_release(&sql);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, cid);
    int sr = SQLITE_DONE;
    while (rc == 0 && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        struct mp_attempt_result r;
        memset(&r, 0, sizeof(r));
        int64_t aid = sqlite3_column_int64(st, 0);
        r.index = sqlite3_column_int(st, 1);
        r.launch_blocking = sqlite3_column_int(st, 2) != 0;
        r.dir = attempt_dir(rep->run_dir, (const char *)sqlite3_column_text(st, 3));
        r.outcome = mp_outcome_from_name((const char *)sqlite3_column_text(st, 4));
        for (size_t k = 0; k < mp_store_attempt_cols_in(s->version); k++)
            read_col(st, (int)k + 5, &mp_store_attempt_cols[k], &r);
        rc = load_attempt_details(s, aid, &r);
        if (rc == 0)
            rc = mp_store_load_evidence(s, aid, &r);
        if (rc == 0)
            rc = mp_store_score_load(s, aid, &r); /* store/correct.c */
        mp_report_add_attempt(rep, i, &r);
        mp_attempt_result_release(&r);
    }
    if (rc < 0) {
        sqlite3_finalize(st);
        return rc;
    }
    return mp_store_read_end(s, st, sr, "read the attempts") < 0 ? MP_EDB : 0;
}

int mp_store_load(struct mp_store *s, struct mp_report *rep, bool **done_out)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    bool *done = NULL;
    if (mp_store_prep(s, &st, "SELECT started, finished, interrupted, moeprobe_version, subcommand,"
                              " resumes FROM run WHERE id = 1") < 0)
        return MP_EDB;
    int sr = sqlite3_step(st);
    if (sr != SQLITE_ROW) {
        if (mp_store_read_end(s, st, sr, "read the run") < 0)
            return MP_EDB;
        return -ENOENT;
    }
    free(rep->started);
    free(rep->finished);
    rep->started = col_str(st, 0);
    rep->finished = col_str(st, 1);
    rep->interrupted = sqlite3_column_int(st, 2) != 0;
    rep->resumes = sqlite3_column_int(st, 5);
    bool io_stop = sqlite3_column_int(st, 2) == 2; /* stopped by an I/O error (resume.c) */
    free(rep->subcommand);
    rep->subcommand = col_str(st, 4);
    char *ver = col_str(st, 3);
    if (ver) {
        free(rep->moeprobe_version);
        rep->moeprobe_version = ver;
    }
    sqlite3_finalize(st);
    free(rep->stopped_by);
    rep->stopped_by = NULL;
    if (io_stop && mp_store_io_stop(s, &rep->stopped_by) < 0)
        return MP_EDB;
    if ((rc = load_fp(s, rep)) < 0 || (rc = mp_store_load_workload(s, rep)) < 0 ||
        (rc = load_report_opts(s, rep)) < 0 || (rc = mp_store_load_reference(s, rep)) < 0)
        return rc;

    /* candidates */
    if (mp_store_prep(s, &st, "SELECT id, pos, name, env, args, done FROM candidates ORDER BY pos") < 0)
        return MP_EDB;
    size_t ncap = 0;
    int64_t *ids = NULL;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        struct mp_candidate c;
        memset(&c, 0, sizeof(c));
        c.name = col_str(st, 2);
        strv_from_json(&c.env, (const char *)sqlite3_column_text(st, 3));
        strv_from_json(&c.args, (const char *)sqlite3_column_text(st, 4));
        size_t i = mp_report_add_candidate(rep, &c);
        mp_candidate_release(&c);
        if (i >= ncap) {
            ncap = i + 16;
            ids = xreallocarray(ids, ncap, sizeof(*ids));
            done = xreallocarray(done, ncap, sizeof(*done));
        }
        ids[i] = sqlite3_column_int64(st, 0);
        done[i] = sqlite3_column_int(st, 5) != 0;
        rep->c[i].unfinished = !done[i];
    }
    if (mp_store_read_end(s, st, sr, "read the candidates") < 0)
        rc = MP_EDB;

    for (size_t i = 0; i < rep->n && rc == 0; i++) {
        if ((rc = load_attempts(s, rep, i, ids[i])) < 0)
            break;
        if (mp_store_load_cut(s, ids[i], rep->interrupted, &rep->c[i]) < 0) {
            rc = MP_EDB;
            break;
        }
        rc = read_diagnosis(s, ids[i], &rep->c[i]);
    }
    free(ids);
    if (rc == 0)
        rc = mp_store_load_runinfo(s, rep);
    if (rc < 0 || !done_out)
        free(done);
    else
        *done_out = done ? done : xcalloc(1, sizeof(bool));
    return rc;
}
