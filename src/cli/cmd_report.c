/* cmd_report.c - `moeprobe report`: render a run's report again from its
 * evidence store alone, or put runs of the same fingerprint side by side. */
#include "compat.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli/commands.h"
#include "cli/opts.h"
#include "err.h"
#include "escape.h"
#include "logs/logscan.h"
#include "report/bisect.h"
#include "report/compare.h"
#include "report/issue.h"
#include "report/report.h"
#include "sched/sched.h"
#include "store/store.h"
#include "file.h"
#include "xalloc.h"

static const char report_help[] =
    "usage: moeprobe report [--format md|json|html|csv] [--percentiles LIST] [--objective O]\n"
    "                       [--no-write] RUNDIR\n"
    "       moeprobe report --format issue [--candidate NAME] RUNDIR\n"
    "       moeprobe report --compare [--format md|json] RUNDIR RUNDIR...\n"
    "       moeprobe report --merge [--format md|json] RUNDIR\n"
    "\n"
    "Renders a run's report from its evidence store (RUNDIR/moeprobe.db) alone,\n"
    "rewrites report.json, report.md and report.html in RUNDIR (not with\n"
    "--no-write) and prints the chosen format on stdout (md by default). Works on\n"
    "a run that is still going or was interrupted (it shows what is finished).\n"
    "A run on read-only media (a mount, a directory without write permission) is\n"
    "read in place and rendered on stdout; the files are then not rewritten (a\n"
    "warning says so, exit 0). A damaged database is refused (exit 3).\n"
    "\n"
    "--objective sequential|throughput|ttft|tpot ranks the recommendation by another\n"
    "measure than the run's own --objective (see qualify --help).\n"
    "--format csv prints one row per candidate and phase (latency percentiles,\n"
    "throughput, verdict; docs/metrics.md) for spreadsheets; the files are\n"
    "rewritten as for any format. --percentiles LIST (e.g. 50,95,99.9; at most 8,\n"
    "each in (0, 100]) chooses the latency percentiles; by default the run's own\n"
    "--percentiles, else 50,90,99.\n"
    "\n"
    "--format issue prints one candidate (NAME, else the first that failed:\n"
    "kernel-fault, then async-race, crashed, hang...) as Markdown for a vLLM or\n"
    "FlashInfer bug report: environment, launch command, verdict with its\n"
    "evidence (traceback, faulting kernel, core dump, Xids, the launch-blocking\n"
    "result), known issues, a one-command reproducer; secrets masked. The\n"
    "report files are not rewritten.\n"
    "\n"
    "--compare puts runs side by side, one column per run, e.g. before and after\n"
    "an engine upgrade. Runs must share the fingerprint's GPU, compute capability,\n"
    "model and host architecture; a run that does not is refused with the reason.\n"
    "\n"
    "--merge merges the per-candidate task results of a qualify --gpus/--slurm run\n"
    "(RUNDIR/tasks/*/) into RUNDIR's report, e.g. after submitting the script of\n"
    "qualify --slurm-script by hand (docs/scale-out.md).\n"
    "\n"
    "exit codes: 0 ok; 2 usage error, no store, or fingerprints differ;\n"
    "            3 the store cannot be read (damaged, not a database) or the\n"
    "              report not written (full disk, I/O error)\n";

enum { F_MD, F_JSON, F_HTML, F_CSV, F_ISSUE };

/* objective >= 0: rank by it instead of the run's own --objective */
/* argv (may be NULL) gets the run's stored arguments (masked) */
static int load_run(const char *dir, int objective, struct mp_report *rep, struct mp_strv *argv)
{
    struct mp_store *st = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_store_open(dir, MP_STORE_READONLY, &st, &d);
    if (rc < 0) {
        mp_error("%s", d.msg[0] ? d.msg : mp_strerror(rc));
        return rc == -ENOENT ? MP_EXIT_USAGE : MP_EXIT_INTERNAL;
    }
    if (mp_store_note(st)[0])
        mp_warn("%s", mp_store_note(st));
    mp_report_init(rep, dir);
    rc = mp_store_load(st, rep, NULL);
    char *sub = NULL;
    if (rc == 0 && argv && mp_store_run_argv(st, &sub, argv) < 0)
        mp_strv_release(argv); /* the reproducer then shows the launch command */
    free(sub);
    /* the run's own --objective and --percentiles come with the store */
    if (rc == 0 && objective >= 0)
        rep->objective = (enum mp_objective)objective;
    if (rc < 0)
        mp_error("cannot read '%s/%s': %s", dir, MP_STORE_DB_NAME,
                 rc == -ENOENT ? "no run recorded" : mp_store_errmsg(st));
    mp_store_close(st);
    if (rc < 0) {
        mp_report_release(rep);
        return rc == -ENOENT ? MP_EXIT_USAGE : MP_EXIT_INTERNAL;
    }
    mp_report_finalize(rep);
    return 0;
}

static int compare(char **dirs, int n, int fmt, int objective)
{
    struct mp_report *runs = xcalloc((size_t)n, sizeof(*runs));
    int ec = 0, loaded = 0;
    for (int i = 0; i < n && !ec; i++) {
        ec = load_run(dirs[i], objective, &runs[i], NULL);
        if (!ec)
            loaded++;
    }
    for (int i = 1; i < loaded && !ec; i++) {
        char *why = mp_fingerprint_mismatch(&runs[0].fp, &runs[i].fp, true);
        if (why) {
            mp_error("refusing to compare '%s' with '%s': %s; results only hold for the "
                     "fingerprint they were measured on", dirs[i], dirs[0], why);
            free(why);
            ec = MP_EXIT_USAGE;
        }
    }
    if (!ec) {
        struct buf b = BUF_INIT;
        if (fmt == F_JSON)
            mp_compare_json(runs, dirs, n, &b);
        else
            mp_compare_markdown(runs, dirs, n, &b); /* what changed first (report/compare.h) */
        fwrite(b.data, 1, b.len, stdout);
        if (fflush(stdout) != 0)
            ec = MP_EXIT_INTERNAL;
        buf_release(&b);
    }
    for (int i = 0; i < loaded; i++)
        mp_report_release(&runs[i]);
    free(runs);
    return ec;
}

/* One run's report: rendered from its store, the report files rewritten
 * (unless nowrite), the format asked for on stdout. Returns the exit code. */
static int render_run(const char *dir, int fmt, int objective, const double *pct, size_t npct,
                      bool nowrite)
{
    struct mp_report rep;
    mp_cli_end_dead_run_procs(dir); /* an escaped daemon outlives a kill -9 (#30) */
    int ec = load_run(dir, objective, &rep, NULL);
    if (ec)
        return ec;
    if (npct) { /* report --percentiles overrides the run's */
        memcpy(rep.percentiles, pct, npct * sizeof(pct[0]));
        rep.npercentiles = npct;
    }
    struct buf j = BUF_INIT, md = BUF_INIT, html = BUF_INIT, csv = BUF_INIT;
    int brc = mp_bisect_render_dir(dir, &rep, &j, &md, &html); /* a bisect run's own report */
    if (brc == -ENOENT) {
        mp_report_json(&rep, &j);
        mp_report_markdown(&rep, &md);
        mp_report_html(&rep, &html);
    } else if (brc < 0) {
        ec = MP_EXIT_INTERNAL;
    }
    if (!nowrite) {
        int e = mp_write_file_atomic(dir, "report.json", j.data, j.len);
        if (e == 0)
            e = mp_write_file_atomic(dir, "report.md", md.data, md.len);
        if (e == 0)
            e = mp_write_file_atomic(dir, "report.html", html.data, html.len);
        if (e == -EROFS || e == -EACCES || e == -EPERM) {
            /* read-only media: rendering is what was asked for; say why
             * the files were left as they are */
            mp_warn("'%s' is not writable (%s): report.json, report.md and report.html were not "
                    "rewritten; the report is on stdout only (--no-write skips the files)",
                    dir, mp_strerror(e));
        } else if (e < 0) {
            mp_error("cannot write the report into '%s': %s", dir, mp_strerror(e));
            ec = MP_EXIT_INTERNAL;
        }
    }
    if (fmt == F_CSV)
        mp_report_csv(&rep, &csv);
    const struct buf *o = fmt == F_JSON ? &j : fmt == F_HTML ? &html : fmt == F_CSV ? &csv : &md;
    fwrite(o->data, 1, o->len, stdout);
    if (fflush(stdout) != 0)
        ec = MP_EXIT_INTERNAL;
    buf_release(&j);
    buf_release(&md);
    buf_release(&html);
    buf_release(&csv);
    mp_report_release(&rep);
    return ec;
}

/* --format issue: one candidate as a bug report (report/issue.h) */
static int issue(const char *dir, const char *cand)
{
    struct mp_report rep;
    struct mp_strv args = MP_STRV_INIT;
    int ec = load_run(dir, -1, &rep, &args);
    if (ec)
        return ec;
    struct buf out = BUF_INIT;
    char why[256];
    struct mp_issue_in in = {&rep, cand, args.n ? &args : NULL, mp_knowledge_builtin()};
    if (mp_report_issue(&in, &out, why, sizeof(why)) < 0) {
        mp_error("%s", why);
        ec = MP_EXIT_USAGE;
    } else {
        fwrite(out.data, 1, out.len, stdout);
        if (fflush(stdout) != 0)
            ec = MP_EXIT_INTERNAL;
    }
    buf_release(&out);
    mp_strv_release(&args);
    mp_report_release(&rep);
    return ec;
}

int cmd_report(int argc, char **argv)
{
    static const struct option lo[] = {
        {"format", required_argument, NULL, 'f'},
        {"compare", no_argument, NULL, 'c'},
        {"no-write", no_argument, NULL, 'n'},
        {"merge", no_argument, NULL, 'm'},
        {"objective", required_argument, NULL, 'o'},
        {"percentiles", required_argument, NULL, 'p'},
        {"candidate", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int fmt = F_MD;
    const char *cand = NULL;
    bool cmp = false, nowrite = false, merge = false;
    int objective = -1; /* the run's own */
    enum mp_objective ob;
    double pct[MP_REPORT_MAX_PCT];
    size_t npct = 0;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (!strcmp(optarg, "md"))
                fmt = F_MD;
            else if (!strcmp(optarg, "json"))
                fmt = F_JSON;
            else if (!strcmp(optarg, "html"))
                fmt = F_HTML;
            else if (!strcmp(optarg, "csv"))
                fmt = F_CSV;
            else if (!strcmp(optarg, "issue"))
                fmt = F_ISSUE;
            else {
                mp_error("--format: '%s' is not md, json, html, csv or issue", optarg);
                return MP_EXIT_USAGE;
            }
            break;
        case 'c':
            cmp = true;
            break;
        case 'C':
            cand = optarg;
            break;
        case 'n':
            nowrite = true;
            break;
        case 'm':
            merge = true;
            break;
        case 'o':
            if (mp_objective_from_name(optarg, &ob) < 0) {
                mp_error("--objective: '%s' is not sequential, throughput, ttft or tpot", optarg);
                return MP_EXIT_USAGE;
            }
            objective = (int)ob;
            break;
        case 'p':
            if (mp_cli_parse_percentiles(optarg, pct, &npct) < 0)
                return MP_EXIT_USAGE;
            break;
        case 'h':
            fputs(report_help, stdout);
            return MP_EXIT_OK;
        default:
            mp_error("unknown option or missing value '%s' (see --help)", argv[optind - 1]);
            return MP_EXIT_USAGE;
        }
    }
    int nd = argc - optind;
    if (cmp) {
        if (nd < 2) {
            mp_error("--compare needs two or more run directories");
            return MP_EXIT_USAGE;
        }
        if (fmt == F_HTML || fmt == F_CSV) {
            mp_error("--compare renders md or json");
            return MP_EXIT_USAGE;
        }
        if (npct) { /* the comparison shows throughput, not latency percentiles */
            mp_error("--percentiles does not apply to --compare");
            return MP_EXIT_USAGE;
        }
        return compare(argv + optind, nd, fmt, objective);
    }
    if (nd != 1) {
        mp_error("give exactly one run directory (see --help)");
        return MP_EXIT_USAGE;
    }
    if (merge && (objective >= 0 || npct)) {
        /* a merge ranks and summarises as its tasks were started */
        mp_error("%s does not apply to --merge (the tasks' own are used)",
                 objective >= 0 ? "--objective" : "--percentiles");
        return MP_EXIT_USAGE;
    }
    if (merge && fmt == F_CSV) {
        mp_error("--merge renders md or json");
        return MP_EXIT_USAGE;
    }
    if (merge) { /* qualify --gpus/--slurm task results (src/sched) */
        int mc = mp_sched_merge(argv[optind], fmt == F_JSON, true);
        return mc == MP_EXIT_NONE ? MP_EXIT_OK : mc;
    }
    if (cand && fmt != F_ISSUE) {
        mp_error("--candidate picks the candidate of --format issue");
        return MP_EXIT_USAGE;
    }
    if (fmt == F_ISSUE && (cmp || merge))
        return mp_error("--format issue renders one run's candidate"), MP_EXIT_USAGE;
    if (fmt == F_ISSUE)
        return issue(argv[optind], cand);
    return render_run(argv[optind], fmt, objective, pct, npct, nowrite);
}
