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

/* The groups of a merge: one per fingerprint (tasks on different GPUs or
 * engine builds are reported side by side). */
struct groups {
    struct group *g;
    size_t n;
};

static size_t group_add(struct groups *gs, const char *run_dir)
{
    gs->g = xreallocarray(gs->g, gs->n + 1, sizeof(*gs->g));
    memset(&gs->g[gs->n], 0, sizeof(gs->g[gs->n]));
    mp_report_init(&gs->g[gs->n].rep, run_dir);
    return gs->n++;
}

/* The group of a loaded task's fingerprint (t's moves there when new; a
 * new fingerprint adopts the group the gaps opened). */
static size_t group_of(struct groups *gs, const char *run_dir, struct mp_report *t)
{
    char *key = fp_key(&t->fp);
    size_t gi;
    for (gi = 0; gi < gs->n && !(gs->g[gi].key && !strcmp(gs->g[gi].key, key)); gi++)
        ;
    if (gi < gs->n) {
        free(key);
        return gi;
    }
    for (gi = 0; gi < gs->n && gs->g[gi].key; gi++)
        ;
    if (gi == gs->n)
        group_add(gs, run_dir);
    gs->g[gi].key = key;
    fp_move(&gs->g[gi].rep.fp, &t->fp);
    return gi;
}

/* A task without a result: it goes with the first fingerprint, and why. */
static void add_gap(struct groups *gs, const char *run_dir, const char *tdir, const char *name)
{
    if (gs->n == 0)
        group_add(gs, run_dir);
    struct buf why = BUF_INIT;
    if (describe_gap(tdir, name, &why)) /* it failed silently: say so, quiet or not */
        mp_warn("%s", why.data);
    mp_strv_push(&gs->g[0].gaps, name);
    mp_strv_push_owned(&gs->g[0].gap_why, buf_detach(&why, NULL));
}

/* Load task NAME and move its candidates into their group; false when it
 * has no result (then it is a gap with an empty candidate). */
static bool merge_task(struct groups *gs, const char *run_dir, char *name)
{
    char *tdir = xasprintf("%s/tasks/%s", run_dir, name);
    struct mp_report t;
    mp_report_init(&t, tdir);
    bool finished = false;
    bool loaded = mp_sched_task_load(tdir, &t, &finished) == 0 && finished;
    size_t gi = 0;
    if (loaded) {
        gi = group_of(gs, run_dir, &t);
        if (!gs->g[gi].opts_taken) {
            take_run_opts(&gs->g[gi].rep, &t);
            gs->g[gi].opts_taken = true;
        }
    } else {
        mp_report_release(&t);
        mp_report_init(&t, tdir);
        struct mp_candidate c = {0};
        c.name = name;
        mp_report_add_candidate(&t, &c);
        add_gap(gs, run_dir, tdir, name);
    }
    move_cands(&gs->g[gi].rep, &t);
    mp_report_release(&t);
    free(tdir);
    return loaded;
}

/* One fingerprint: the report in the run directory. The exit code. */
static int render_one(struct group *g, const char *run_dir, bool json, struct buf *out,
                      struct buf *sum)
{
    struct buf j = BUF_INIT, md = BUF_INIT, html = BUF_INIT;
    int exit_code;
    if (render(&g->rep, g, run_dir, &j, &md, &html) < 0)
        exit_code = MP_EXIT_INTERNAL;
    else
        exit_code = g->rep.recommended >= 0 ? MP_EXIT_OK : MP_EXIT_NONE;
    buf_add(out, json ? j.data : md.data, json ? j.len : md.len);
    mp_report_summary(&g->rep, sum);
    buf_release(&j);
    buf_release(&md);
    buf_release(&html);
    return exit_code;
}

/* The heading of fingerprint k's section (its words come from the tasks'
 * engines: escaped). */
static void fp_heading(struct buf *md, const struct mp_fingerprint *f, size_t k)
{
    buf_printf(md, "## Fingerprint %zu: ", k + 1);
    mp_md_text(md, f->gpu ? f->gpu : "no GPU", 120, 0);
    buf_adds(md, ", ");
    mp_md_text(md, f->engine ? f->engine : "engine", 40, 0);
    buf_adds(md, " ");
    mp_md_text(md, f->engine_version ? f->engine_version : "?", 60, 0);
    buf_adds(md, ", ");
    mp_md_text(md, f->model ? f->model : "?", 200, 0);
    buf_printf(md, "\n\n(fingerprint-%zu/)\n\n", k + 1);
}

/* The combined report of several fingerprints, being built. */
struct combined {
    struct buf md, j, html;
    bool any;                   /* some fingerprint has a recommendation */
};

static void combined_begin(struct combined *c, const struct groups *gs)
{
    memset(c, 0, sizeof(*c));
    buf_printf(&c->md,
               "# moeprobe qualify report: %zu fingerprints\n\n"
               "The tasks ran on different GPUs or engine builds. Results are reported side "
               "by side, one section per fingerprint; no recommendation spans them.\n\n",
               gs->n);
    const char *mv = gs->g[0].rep.moeprobe_version ? gs->g[0].rep.moeprobe_version : "";
    buf_adds(&c->j, "{\n\"moeprobe_version\": ");
    buf_add_json_str(&c->j, mv, strlen(mv));
    buf_adds(&c->j, ",\n\"fingerprint_groups\": [\n");
    buf_adds(&c->html, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>moeprobe "
                       "report</title></head><body><h1>moeprobe qualify report</h1><p>The "
                       "tasks ran on different fingerprints:</p><ul>\n");
}

/* Fingerprint k: its report in RUNDIR/fingerprint-K/, its section in c.
 * False when it could not be written. */
static bool combined_add(struct combined *c, struct group *g, const char *run_dir, size_t k,
                         struct buf *sum)
{
    char *dir = xasprintf("%s/fingerprint-%zu", run_dir, k + 1);
    mkdir(dir, 0777);
    struct buf j = BUF_INIT, md = BUF_INIT, html = BUF_INIT;
    bool ok = render(&g->rep, g, dir, &j, &md, &html) >= 0;
    c->any = c->any || g->rep.recommended >= 0;
    fp_heading(&c->md, &g->rep.fp, k);
    buf_add(&c->md, md.data, md.len);
    buf_adds(&c->md, "\n");
    buf_printf(&c->j, "%s", k ? ",\n" : "");
    buf_add(&c->j, j.data, j.len);
    buf_printf(&c->html, "<li><a href=\"fingerprint-%zu/report.html\">fingerprint %zu</a></li>\n",
               k + 1, k + 1);
    mp_report_summary(&g->rep, sum);
    buf_release(&j);
    buf_release(&md);
    buf_release(&html);
    free(dir);
    return ok;
}

/* Fingerprints differ: side by side, one report per fingerprint, and the
 * combined one in the run directory. The exit code. */
static int render_groups(struct groups *gs, const char *run_dir, bool json, struct buf *out,
                         struct buf *sum)
{
    struct combined c;
    combined_begin(&c, gs);
    int exit_code = MP_EXIT_NONE;
    for (size_t k = 0; k < gs->n && exit_code != MP_EXIT_INTERNAL; k++)
        if (!combined_add(&c, &gs->g[k], run_dir, k, sum))
            exit_code = MP_EXIT_INTERNAL;
    buf_adds(&c.j, "],\n\"recommendation\": null\n}\n");
    buf_adds(&c.html, "</ul></body></html>\n");
    if (exit_code != MP_EXIT_INTERNAL) {
        if (mp_write_file_atomic(run_dir, "report.json", c.j.data, c.j.len) < 0 ||
            mp_write_file_atomic(run_dir, "report.md", c.md.data, c.md.len) < 0 ||
            mp_write_file_atomic(run_dir, "report.html", c.html.data, c.html.len) < 0) {
            mp_error("cannot write the report into '%s'", run_dir);
            exit_code = MP_EXIT_INTERNAL;
        } else {
            exit_code = c.any ? MP_EXIT_OK : MP_EXIT_NONE;
        }
    }
    buf_add(out, json ? c.j.data : c.md.data, json ? c.j.len : c.md.len);
    buf_release(&c.md);
    buf_release(&c.j);
    buf_release(&c.html);
    return exit_code;
}

static void groups_release(struct groups *gs)
{
    for (size_t k = 0; k < gs->n; k++) {
        free(gs->g[k].key);
        mp_report_release(&gs->g[k].rep);
        mp_strv_release(&gs->g[k].gaps);
        mp_strv_release(&gs->g[k].gap_why);
    }
    free(gs->g);
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
    struct groups gs = {0};
    size_t nmissing = 0;
    for (size_t i = 0; i < names.n; i++)
        nmissing += !merge_task(&gs, run_dir, names.v[i]);
    struct buf out = BUF_INIT, sum = BUF_INIT;
    int exit_code = gs.n == 1 ? render_one(&gs.g[0], run_dir, json, &out, &sum)
                              : render_groups(&gs, run_dir, json, &out, &sum);
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
    groups_release(&gs);
    mp_strv_release(&names);
    return exit_code;
}
