/* merge.c - merge the task results of a run directory into one report.
 *
 * Each task has its evidence store, RUNDIR/tasks/NAME/moeprobe.db (a qualify
 * of one candidate). Its candidates and attempts are loaded back into the
 * report model (struct mp_report, mp_store_load: lossless, the latency
 * histograms as their buckets) and the merged model is finalized and rendered
 * by the report module, so verdicts, groups, no-op knobs, the output check
 * and the recommendation are computed across all candidates exactly as in a
 * serial run. A task without a database (a store that failed, or a directory
 * something else wrote) is a failed task: it has no result, and the report
 * says why. Its report.json is never read back: it does not hold the
 * evidence (latency samples would have to be made up). */
#include "compat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "escape.h"
#include "file.h"
#include "report/report.h"
#include "sched/internal.h"
#include "sched/sched.h"
#include "store/store.h"
#include "xalloc.h"

int mp_sched_task_load(const char *task_dir, struct mp_report *rep, bool *finished)
{
    *finished = false;
    struct mp_store *st = NULL;
    int rc = mp_store_open(task_dir, MP_STORE_READONLY, &st, NULL);
    if (rc < 0)
        return rc;
    bool *done = NULL;
    rc = mp_store_load(st, rep, &done); /* with the tasks' --objective, --percentiles */
    mp_store_close(st);
    if (rc == 0) {
        *finished = rep->n > 0 && !rep->interrupted;
        for (size_t i = 0; i < rep->n && done; i++)
            *finished = *finished && done[i];
    }
    free(done);
    return rc;
}

static char *fp_key(const struct mp_fingerprint *f)
{
    const char *v[] = {f->gpu, f->compute_capability, f->driver, f->cuda,
                       f->engine, f->engine_version, f->model, f->host_arch};
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < MP_ARRAY_SIZE(v); i++)
        buf_printf(&b, "%s\x1f", v[i] ? v[i] : "");
    return buf_detach(&b, NULL);
}

static void fp_move(struct mp_fingerprint *to, struct mp_fingerprint *from)
{
    *to = *from;
    memset(from, 0, sizeof(*from));
}

/* move every candidate of src into dst */
static void move_cands(struct mp_report *dst, struct mp_report *src)
{
    for (size_t i = 0; i < src->n; i++) {
        struct mp_cand_report *c = &src->c[i];
        size_t k = mp_report_add_candidate(dst, &c->cand);
        for (size_t j = 0; j < c->nattempts; j++)
            mp_report_add_attempt(dst, k, &c->attempts[j]);
        dst->c[k].diag = c->diag;
        dst->c[k].policy = c->policy; /* the diagnosis is derived again under it */
        memset(&c->diag, 0, sizeof(c->diag));
    }
    if (src->started && (!dst->started || strcmp(src->started, dst->started) < 0)) {
        free(dst->started);
        dst->started = xstrdup(src->started);
    }
    if (src->finished && (!dst->finished || strcmp(src->finished, dst->finished) > 0)) {
        free(dst->finished);
        dst->finished = xstrdup(src->finished);
    }
    dst->interrupted = dst->interrupted || src->interrupted;
}

/* The run's options every task was started with - what the report ranks
 * and summarises by (--objective, --percentiles) and the workload - from a
 * task that loaded (a task without a result says nothing of them). */
static void take_run_opts(struct mp_report *dst, const struct mp_report *src)
{
    dst->objective = src->objective;
    memcpy(dst->percentiles, src->percentiles, sizeof(dst->percentiles));
    dst->npercentiles = src->npercentiles;
    dst->workload = src->workload;
    dst->workload.api_key = NULL;
    dst->has_workload = src->has_workload;
    free(dst->cor.reference); /* --reference NAME (verdict/correct.h) */
    dst->cor.reference = src->cor.reference ? xstrdup(src->cor.reference) : NULL;
}

struct group {
    char *key;
    struct mp_report rep;
    struct mp_strv gaps;        /* candidates without a result, and why */
    struct mp_strv gap_why;
    bool opts_taken;            /* take_run_opts done from a loaded task */
};

/* Why task NAME has no result, into why. True when it ended but left no
 * database (a failure the task itself did not report). */
static bool describe_gap(const char *task_dir, const char *name, struct buf *why)
{
    struct mp_sched_rec r;
    int e = mp_sched_rec_read(task_dir, &r);
    char *db = xasprintf("%s/%s", task_dir, MP_STORE_DB_NAME);
    bool no_db = access(db, F_OK) != 0;
    free(db);
    buf_printf(why, "no result: the task for '%s' ", name);
    if (e == -ENOENT) {
        buf_adds(why, "never ran (or its node could not write its directory)");
    } else if (r.end_ns == 0) {
        buf_adds(why, "did not finish");
        if (r.host)
            buf_printf(why, " (started on %s)", r.host);
    } else {
        buf_printf(why, "ended with exit %d", r.exit_code);
        if (r.host && *r.host)
            buf_printf(why, " on %s", r.host);
        if (r.note)
            buf_printf(why, " (%s)", r.note);
        if (no_db) /* nothing to report from: its report.json holds no evidence */
            buf_printf(why, " and left no evidence store (%s): a task without a database is a "
                            "failed task", MP_STORE_DB_NAME);
    }
    bool silent = no_db && e == 0 && r.end_ns != 0;
    buf_printf(why, "; see tasks/%s/task.log; 'qualify --resume RUNDIR' runs it again", name);
    mp_sched_rec_release(&r);
    return silent;
}

static int render(struct mp_report *rep, const struct group *g, const char *dir, struct buf *j,
                  struct buf *md, struct buf *html)
{
    mp_report_finalize(rep);
    for (size_t i = 0; i < g->gaps.n; i++) {
        for (size_t k = 0; k < rep->n; k++) {
            if (!strcmp(rep->c[k].cand.name, g->gaps.v[i]) && !rep->c[k].verdict) {
                free(rep->c[k].why);
                rep->c[k].why = xstrdup(g->gap_why.v[i]);
            }
        }
        mp_strv_push(&rep->learned, g->gap_why.v[i]);
    }
    mp_report_json(rep, j);
    mp_report_markdown(rep, md);
    mp_report_html(rep, html);
    int e = mp_write_file_atomic(dir, "report.json", j->data, j->len);
    if (e == 0)
        e = mp_write_file_atomic(dir, "report.md", md->data, md->len);
    if (e == 0)
        e = mp_write_file_atomic(dir, "report.html", html->data, html->len);
    if (e < 0)
        mp_error("cannot write the report into '%s': %s", dir, mp_strerror(e));
    return e;
}

int mp_sched_merge(const char *run_dir, bool json, bool quiet)
{
    struct mp_strv names = MP_STRV_INIT;
    int e = mp_sched_index_read(run_dir, &names);
    if (e < 0) {
        mp_error("'%s' has no task index (tasks/index.txt): %s; was it run with --gpus or --slurm?",
                 run_dir, mp_strerror(e));
        return MP_EXIT_USAGE;
    }
    struct group *g = NULL;
    size_t ng = 0;
    size_t nmissing = 0;
    for (size_t i = 0; i < names.n; i++) {
        char *tdir = xasprintf("%s/tasks/%s", run_dir, names.v[i]);
        struct mp_report t;
        mp_report_init(&t, tdir);
        bool finished = false;
        int le = mp_sched_task_load(tdir, &t, &finished);
        if (le < 0 || !finished) {
            le = -ENOENT;
            nmissing++;
            mp_report_release(&t);
            mp_report_init(&t, tdir);
            struct mp_candidate c = {0};
            c.name = names.v[i];
            mp_report_add_candidate(&t, &c);
        }
        size_t gi = 0;
        if (le == 0) {
            char *key = fp_key(&t.fp);
            for (gi = 0; gi < ng && !(g[gi].key && !strcmp(g[gi].key, key)); gi++)
                ;
            if (gi == ng) {
                /* a new fingerprint; it adopts the group the gaps opened */
                for (gi = 0; gi < ng && g[gi].key; gi++)
                    ;
                if (gi == ng) {
                    g = xreallocarray(g, ng + 1, sizeof(*g));
                    memset(&g[ng], 0, sizeof(g[ng]));
                    mp_report_init(&g[ng].rep, run_dir);
                    ng++;
                }
                g[gi].key = key;
                fp_move(&g[gi].rep.fp, &t.fp);
            } else {
                free(key);
            }
        } else {
            if (ng == 0) { /* gaps go with the first fingerprint */
                g = xreallocarray(g, 1, sizeof(*g));
                memset(&g[0], 0, sizeof(g[0]));
                mp_report_init(&g[0].rep, run_dir);
                ng = 1;
            }
            struct buf why = BUF_INIT;
            if (describe_gap(tdir, names.v[i], &why)) /* it failed silently: say so, quiet or not */
                mp_warn("%s", why.data);
            mp_strv_push(&g[0].gaps, names.v[i]);
            mp_strv_push_owned(&g[0].gap_why, buf_detach(&why, NULL));
        }
        if (le == 0 && !g[gi].opts_taken) {
            take_run_opts(&g[gi].rep, &t);
            g[gi].opts_taken = true;
        }
        move_cands(&g[gi].rep, &t);
        mp_report_release(&t);
        free(tdir);
    }
    int exit_code = MP_EXIT_NONE;
    struct buf out = BUF_INIT, sum = BUF_INIT;
    if (ng == 1) {
        struct buf j = BUF_INIT, md = BUF_INIT, html = BUF_INIT;
        if (render(&g[0].rep, &g[0], run_dir, &j, &md, &html) < 0)
            exit_code = MP_EXIT_INTERNAL;
        else
            exit_code = g[0].rep.recommended >= 0 ? MP_EXIT_OK : MP_EXIT_NONE;
        buf_add(&out, json ? j.data : md.data, json ? j.len : md.len);
        mp_report_summary(&g[0].rep, &sum);
        buf_release(&j);
        buf_release(&md);
        buf_release(&html);
    } else {
        /* fingerprints differ: side by side, one report per fingerprint */
        struct buf mdall = BUF_INIT, jall = BUF_INIT, hall = BUF_INIT;
        buf_printf(&mdall,
                   "# moeprobe qualify report: %zu fingerprints\n\n"
                   "The tasks ran on different GPUs or engine builds. Results are reported side "
                   "by side, one section per fingerprint; no recommendation spans them.\n\n",
                   ng);
        const char *mv = g[0].rep.moeprobe_version ? g[0].rep.moeprobe_version : "";
        buf_adds(&jall, "{\n\"moeprobe_version\": ");
        buf_add_json_str(&jall, mv, strlen(mv));
        buf_adds(&jall, ",\n\"fingerprint_groups\": [\n");
        buf_adds(&hall, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>moeprobe "
                        "report</title></head><body><h1>moeprobe qualify report</h1><p>The "
                        "tasks ran on different fingerprints:</p><ul>\n");
        bool any = false;
        for (size_t k = 0; k < ng && exit_code != MP_EXIT_INTERNAL; k++) {
            char *dir = xasprintf("%s/fingerprint-%zu", run_dir, k + 1);
            mkdir(dir, 0777);
            struct buf j = BUF_INIT, md = BUF_INIT, html = BUF_INIT;
            if (render(&g[k].rep, &g[k], dir, &j, &md, &html) < 0)
                exit_code = MP_EXIT_INTERNAL;
            any = any || g[k].rep.recommended >= 0;
            const struct mp_fingerprint *f = &g[k].rep.fp;
            /* the fingerprint's words come from the tasks' engines: escaped */
            buf_printf(&mdall, "## Fingerprint %zu: ", k + 1);
            mp_md_text(&mdall, f->gpu ? f->gpu : "no GPU", 120, 0);
            buf_adds(&mdall, ", ");
            mp_md_text(&mdall, f->engine ? f->engine : "engine", 40, 0);
            buf_adds(&mdall, " ");
            mp_md_text(&mdall, f->engine_version ? f->engine_version : "?", 60, 0);
            buf_adds(&mdall, ", ");
            mp_md_text(&mdall, f->model ? f->model : "?", 200, 0);
            buf_printf(&mdall, "\n\n(fingerprint-%zu/)\n\n", k + 1);
            buf_add(&mdall, md.data, md.len);
            buf_adds(&mdall, "\n");
            buf_printf(&jall, "%s", k ? ",\n" : "");
            buf_add(&jall, j.data, j.len);
            buf_printf(&hall, "<li><a href=\"fingerprint-%zu/report.html\">fingerprint %zu</a></li>\n",
                       k + 1, k + 1);
            mp_report_summary(&g[k].rep, &sum);
            buf_release(&j);
            buf_release(&md);
            buf_release(&html);
            free(dir);
        }
        buf_adds(&jall, "],\n\"recommendation\": null\n}\n");
        buf_adds(&hall, "</ul></body></html>\n");
        if (exit_code != MP_EXIT_INTERNAL) {
            if (mp_write_file_atomic(run_dir, "report.json", jall.data, jall.len) < 0 ||
                mp_write_file_atomic(run_dir, "report.md", mdall.data, mdall.len) < 0 ||
                mp_write_file_atomic(run_dir, "report.html", hall.data, hall.len) < 0) {
                mp_error("cannot write the report into '%s'", run_dir);
                exit_code = MP_EXIT_INTERNAL;
            } else {
                exit_code = any ? MP_EXIT_OK : MP_EXIT_NONE;
            }
        }
        buf_add(&out, json ? jall.data : mdall.data, json ? jall.len : mdall.len);
        buf_release(&mdall);
        buf_release(&jall);
        buf_release(&hall);
    }
    if (out.len)
        fwrite(out.data, 1, out.len, stdout);
    if (fflush(stdout) != 0)
        exit_code = MP_EXIT_INTERNAL;
    if (!quiet) {
        fprintf(stderr, "\nmoeprobe: run directory %s (%zu task%s merged", run_dir,
                names.n - nmissing, names.n - nmissing == 1 ? "" : "s");
        if (nmissing)
            fprintf(stderr, ", %zu without a result", nmissing);
        fprintf(stderr, ")\n%s", sum.data ? sum.data : "");
    }
    buf_release(&out);
    buf_release(&sum);
    for (size_t k = 0; k < ng; k++) {
        free(g[k].key);
        mp_report_release(&g[k].rep);
        mp_strv_release(&g[k].gaps);
        mp_strv_release(&g[k].gap_why);
    }
    free(g);
    mp_strv_release(&names);
    return exit_code;
}
