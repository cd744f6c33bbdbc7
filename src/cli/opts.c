#include "cli/opts.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "logs/logscan.h"
#include "report/report.h"
#include "store/store.h"
#include "xalloc.h"

enum {
    O_CANDIDATE = 256, O_PRESET, O_ONLY, O_OUT, O_PORT, O_READY, O_SEQ, O_CONC, O_MAXTOK, O_INTOK, O_PREFILL,
    O_STALL, O_GRACE, O_API, O_APIKEY, O_NODIAG, O_NODEDUPE, O_DIAGMAX, O_DIAGBUDGET, O_KNOWLEDGE, O_JSON, O_QUIET,
    O_FROM, O_TO, O_NOQUALITY, O_MODELDIR, O_GPUS, O_GPUS_PER, O_SLURM, O_SLURM_ARGS, O_SLURM_SCRIPT,
    O_RESUME, O_OBJECTIVE, O_PERCENTILES, O_AGREEMENT, O_REFERENCE, O_ACCURACY, O_ACCFILE,
};

static const struct option longopts[] = {
    {"candidate", required_argument, NULL, O_CANDIDATE},
    {"preset", required_argument, NULL, O_PRESET},
    {"only", required_argument, NULL, O_ONLY},
    {"out", required_argument, NULL, O_OUT},
    {"port", required_argument, NULL, O_PORT},
    {"ready-timeout", required_argument, NULL, O_READY},
    {"seq", required_argument, NULL, O_SEQ},
    {"conc", required_argument, NULL, O_CONC},
    {"max-tokens", required_argument, NULL, O_MAXTOK},
    {"output-tokens", required_argument, NULL, O_MAXTOK},
    {"input-tokens", required_argument, NULL, O_INTOK},
    {"prefill-check", required_argument, NULL, O_PREFILL},
    {"stall-timeout", required_argument, NULL, O_STALL},
    {"grace", required_argument, NULL, O_GRACE},
    {"api", required_argument, NULL, O_API},
    {"api-key-env", required_argument, NULL, O_APIKEY},
    {"no-diagnose", no_argument, NULL, O_NODIAG},
    {"no-dedupe", no_argument, NULL, O_NODEDUPE},
    {"no-quality", no_argument, NULL, O_NOQUALITY},
    {"diagnose-max-requests", required_argument, NULL, O_DIAGMAX},
    {"diagnose-budget", required_argument, NULL, O_DIAGBUDGET},
    {"knowledge", required_argument, NULL, O_KNOWLEDGE},
    {"json", no_argument, NULL, O_JSON},
    {"quiet", no_argument, NULL, O_QUIET},
    {"model-dir", required_argument, NULL, O_MODELDIR},
    {"from", required_argument, NULL, O_FROM},
    {"to", required_argument, NULL, O_TO},
    {"gpus", required_argument, NULL, O_GPUS},
    {"gpus-per-engine", required_argument, NULL, O_GPUS_PER},
    {"slurm", no_argument, NULL, O_SLURM},
    {"slurm-args", required_argument, NULL, O_SLURM_ARGS},
    {"slurm-script", required_argument, NULL, O_SLURM_SCRIPT},
    {"resume", required_argument, NULL, O_RESUME},
    {"objective", required_argument, NULL, O_OBJECTIVE},
    {"percentiles", required_argument, NULL, O_PERCENTILES},
    {"agreement", required_argument, NULL, O_AGREEMENT},
    {"reference", required_argument, NULL, O_REFERENCE},
    {"accuracy", required_argument, NULL, O_ACCURACY},
    {"accuracy-file", required_argument, NULL, O_ACCFILE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return mp_error("%s: '%s' is not a whole number in %ld..%ld", opt, s, lo, hi);
    *out = v;
    return 0;
}

static int parse_secs(const char *opt, const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    double mult = 1;
    if (end && *end == 's' && end[1] == '\0')
        end++;
    else if (end && *end == 'm' && end[1] == '\0')
        mult = 60, end++;
    else if (end && *end == 'h' && end[1] == '\0')
        mult = 3600, end++;
    if (errno || end == s || *end || !isfinite(v) || v <= 0)
        return mp_error("%s: '%s' is not a positive duration (seconds, or with s/m/h)", opt, s);
    *out = v * mult;
    return 0;
}

static void add_cand(struct mp_opts *o, struct mp_candidate *c)
{
    o->cands = xreallocarray(o->cands, o->ncands + 1, sizeof(*o->cands));
    o->cands[o->ncands++] = *c;
}

int mp_opts_parse(struct mp_opts *o, int argc, char **argv, const char *help)
{
    memset(o, 0, sizeof(*o));
    mp_workload_default(&o->wl);
    o->diag_max_requests = 2000;
    o->diag_budget_s = 3600;
    o->agreement_n = 16;
    o->accuracy_n = 64;
    o->gpus_per_engine = 1;
    bool conc_given = false;
    int prefill = 0; /* --prefill-check N */
    const char *preset = NULL;
    long v;
    double d;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs(help, stdout);
            return 1;
        case O_CANDIDATE: {
            struct mp_candidate cand;
            struct mp_diag dg = MP_DIAG_INIT;
            if (mp_candidate_parse(optarg, &cand, &dg) < 0)
                return mp_error("--candidate: %s", dg.msg);
            for (size_t i = 0; i < o->ncands; i++) {
                if (!strcmp(o->cands[i].name, cand.name)) {
                    mp_error("--candidate: the name '%s' is used twice", cand.name);
                    mp_candidate_release(&cand);
                    return -1;
                }
            }
            add_cand(o, &cand);
            o->ncands_given++;
            break;
        }
        case O_PRESET:
            preset = optarg;
            free(o->preset);
            o->preset = xstrdup(optarg);
            break;
        case O_ONLY:
            free(o->only);
            o->only = xstrdup(optarg);
            break;
        case O_OUT:
            free(o->out_dir);
            o->out_dir = xstrdup(optarg);
            break;
        case O_PORT:
            if (parse_long("--port", optarg, 1, 65535, &v) < 0)
                return -1;
            o->port = (int)v;
            break;
        case O_READY:
            if (parse_secs("--ready-timeout", optarg, &o->wl.ready_timeout_s) < 0)
                return -1;
            break;
        case O_SEQ:
            if (parse_long("--seq", optarg, 0, 10000000, &v) < 0)
                return -1;
            o->wl.phases[1].requests = (int)v;
            o->seq_given = true;
            break;
        case O_CONC:
            if (!conc_given) {
                o->wl.nphases = 2;
                conc_given = o->conc_given = true;
            }
            if (mp_workload_add_conc(&o->wl, optarg) < 0)
                return mp_error("--conc: '%s' is not LEVEL:REQUESTS (e.g. 8:32)", optarg);
            break;
        case O_MAXTOK:
            if (parse_long("--max-tokens", optarg, 1, 1000000, &v) < 0)
                return -1;
            o->wl.max_tokens = (int)v;
            break;
        case O_INTOK:
            if (parse_long("--input-tokens", optarg, 1, 1000000, &v) < 0)
                return -1;
            o->wl.input_tokens = (int)v;
            break;
        case O_PREFILL:
            if (parse_long("--prefill-check", optarg, 1, 1000000, &v) < 0)
                return -1;
            prefill = (int)v;
            break;
        case O_STALL:
            if (parse_secs("--stall-timeout", optarg, &o->wl.stall_timeout_s) < 0)
                return -1;
            break;
        case O_GRACE:
            if (parse_secs("--grace", optarg, &d) < 0)
                return -1;
            o->wl.grace_s = d;
            break;
        case O_API:
            if (!strcmp(optarg, "chat"))
                o->wl.chat = true;
            else if (!strcmp(optarg, "completions"))
                o->wl.chat = false;
            else
                return mp_error("--api: '%s' is not 'completions' or 'chat'", optarg);
            break;
        case O_APIKEY: {
            const char *val = getenv(optarg);
            if (!val || !*val)
                return mp_error("--api-key-env: variable '%s' is not set", optarg);
            free(o->api_key);
            o->api_key = xstrdup(val);
            o->wl.api_key = o->api_key;
            break;
        }
        case O_NODIAG:
            o->no_diagnose = true;
            break;
        case O_NOQUALITY:
            o->no_quality = true;
            break;
        case O_NODEDUPE:
            o->no_dedupe = true;
            break;
        case O_AGREEMENT:
            if (parse_long("--agreement", optarg, 0, 16, &o->agreement_n) < 0)
                return -1;
            break;
        case O_ACCURACY:
            if (parse_long("--accuracy", optarg, 0, 100000, &o->accuracy_n) < 0)
                return -1;
            o->accuracy_given = true;
            break;
        case O_REFERENCE:
            free(o->reference);
            o->reference = xstrdup(optarg);
            break;
        case O_ACCFILE:
            free(o->accuracy_file);
            o->accuracy_file = xstrdup(optarg);
            break;
        case O_DIAGBUDGET:
            if (parse_secs("--diagnose-budget", optarg, &o->diag_budget_s) < 0)
                return -1;
            break;
        case O_DIAGMAX:
            if (parse_long("--diagnose-max-requests", optarg, 1, 100000000, &v) < 0)
                return -1;
            o->diag_max_requests = (unsigned long)v;
            break;
        case O_KNOWLEDGE:
            free(o->knowledge_file);
            o->knowledge_file = xstrdup(optarg);
            break;
        case O_JSON:
            o->json = true;
            break;
        case O_QUIET:
            o->quiet = true;
            break;
        case O_MODELDIR:
            free(o->model_dir);
            o->model_dir = xstrdup(optarg);
            break;
        case O_FROM:
            free(o->from);
            o->from = xstrdup(optarg);
            break;
        case O_TO:
            free(o->to);
            o->to = xstrdup(optarg);
            break;
        case O_GPUS:
            free(o->gpus);
            o->gpus = xstrdup(optarg);
            break;
        case O_GPUS_PER:
            if (parse_long("--gpus-per-engine", optarg, 1, 1024, &v) < 0)
                return -1;
            o->gpus_per_engine = (int)v;
            break;
        case O_SLURM:
            o->slurm = true;
            break;
        case O_SLURM_ARGS:
            free(o->slurm_args);
            o->slurm_args = xstrdup(optarg);
            break;
        case O_SLURM_SCRIPT:
            free(o->slurm_script);
            o->slurm_script = xstrdup(optarg);
            break;
        case O_PERCENTILES:
            if (mp_cli_parse_percentiles(optarg, o->percentiles, &o->npercentiles) < 0)
                return -1;
            break;
        case O_RESUME:
            free(o->resume);
            o->resume = xstrdup(optarg);
            free(o->out_dir);
            o->out_dir = xstrdup(optarg);
            break;
        case O_OBJECTIVE:
            if (mp_objective_from_name(optarg, &o->objective) < 0)
                return mp_error("--objective: '%s' is not sequential, throughput, ttft or tpot",
                                optarg);
            o->objective_given = true;
            break;
        case '?':
        default:
            if (optopt)
                return mp_error("option '%s' needs a value (see --help)", argv[optind - 1]);
            return mp_error("unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (!conc_given) {
        mp_workload_add_conc(&o->wl, "4:16");
        mp_workload_add_conc(&o->wl, "8:32");
    }
    if (prefill && mp_workload_add_prefill(&o->wl, prefill, 3) < 0)
        return mp_error("--prefill-check: too many phases");
    if (o->wl.phases[1].requests == 0) {
        /* --seq 0: drop the sequential phase */
        memmove(&o->wl.phases[1], &o->wl.phases[2], (o->wl.nphases - 2) * sizeof(o->wl.phases[0]));
        o->wl.nphases--;
    }
    if (optind < argc && !strcmp(argv[optind - 1], "--")) {
        /* getopt consumed "--" */
    }
    if (optind >= argc)
        return mp_error("no server command given: put it after '--' (see --help)");
    o->cmd = argv + optind;
    o->ncmd = (size_t)(argc - optind);
    if (o->ncands == 0 && !o->from) {
        struct mp_candidate *pc = NULL;
        size_t pn = 0;
        const char *name = preset ? preset : "sm12x-nvfp4";
        if (mp_preset_load(name, &pc, &pn) < 0)
            return mp_error("--preset: unknown preset '%s' (known: %s)", name, mp_preset_names());
        for (size_t i = 0; i < pn; i++)
            add_cand(o, &pc[i]);
        free(pc);
    } else if (preset) {
        return mp_error("--preset and --candidate cannot be combined");
    }
    if (!o->out_dir) {
        char iso[32];
        mp_iso8601(mp_wall_ns(), iso, sizeof(iso));
        /* 2026-12-02T09:23:03Z -> 20261202-092303 */
        char stamp[32];
        snprintf(stamp, sizeof(stamp), "%.4s%.2s%.2s-%.2s%.2s%.2s", iso, iso + 5, iso + 8,
                 iso + 11, iso + 14, iso + 17);
        o->out_dir = xasprintf("moeprobe-run-%s", stamp);
    }
    return 0;
}

/* One percentile of --percentiles: digits with at most 3 decimals (so that
 * its report key, "p%g", is exact and two values never share a key), in
 * (0, 100]. */
int mp_cli_parse_percentiles(const char *list, double *out, size_t *n)
{
    char err[256];
    if (mp_percentiles_parse(list, out, n, err, sizeof(err)) < 0)
        return mp_error("--percentiles: %s", err);
    return 0;
}

void mp_opts_release(struct mp_opts *o)
{
    free(o->reference);
    free(o->accuracy_file);
    for (size_t i = 0; i < o->ncands; i++)
        mp_candidate_release(&o->cands[i]);
    free(o->cands);
    free(o->preset);
    free(o->only);
    free(o->out_dir);
    free(o->knowledge_file);
    free(o->model_dir);
    if (o->api_key) {
        memset(o->api_key, 0, strlen(o->api_key));
        free(o->api_key);
    }
    free(o->from);
    free(o->to);
    free(o->gpus);
    free(o->slurm_args);
    free(o->slurm_script);
    free(o->resume);
    memset(o, 0, sizeof(*o));
}

int mp_cli_knowledge(const char *cmd, const char *file, struct mp_knowledge **own,
                     const struct mp_knowledge **out)
{
    *own = NULL;
    *out = mp_knowledge_builtin();
    if (!file)
        return 0;
    struct mp_diag d = MP_DIAG_INIT;
    if (mp_knowledge_load(file, own, &d) != 0) {
        char msg[600];
        mp_diag_format(&d, msg, sizeof(msg));
        return mp_error("%s: knowledge file %s", cmd, msg);
    }
    *out = *own;
    return 0;
}

void mp_opts_sched_cfg(const struct mp_opts *o, struct mp_sched_cfg *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->cands = o->cands;
    cfg->ncands = o->ncands;
    cfg->only = o->only;
    cfg->out_dir = o->out_dir;
    cfg->port = o->port;
    cfg->grace_s = o->wl.grace_s;
    cfg->json = o->json;
    cfg->quiet = o->quiet;
    cfg->gpus = o->gpus;
    cfg->gpus_per_engine = o->gpus_per_engine;
    cfg->slurm = o->slurm;
    cfg->slurm_args = o->slurm_args;
    cfg->slurm_script = o->slurm_script;
    cfg->resume = o->resume;
    cfg->cmd = o->cmd;
    cfg->ncmd = o->ncmd;
}

/* s with control characters shown as '?' (it goes to a terminal). */
static void add_printable(struct buf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        buf_addc(b, *p < 0x20 || *p == 0x7f ? '?' : (char)*p);
}

/* Is dir/lock held by another moeprobe right now? */
static bool run_dir_locked(const char *dir)
{
    char *lp = xasprintf("%s/lock", dir);
    int fd = open(lp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    free(lp);
    if (fd < 0)
        return false;
    bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd); /* also releases the lock if we got it */
    return held;
}

/* "qualify of MODEL (candidates a, b) started DATE; server command: ..." */
static void describe_run(const char *dir, struct buf *b, char **sub_out, bool *finished)
{
    struct mp_store *st = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    if (mp_store_open(dir, MP_STORE_READONLY, &st, &d) < 0) {
        buf_printf(b, "its %s cannot be read (", MP_STORE_DB_NAME);
        add_printable(b, d.msg);
        buf_adds(b, ")");
        return;
    }
    char *sub = NULL;
    struct mp_strv argv = MP_STRV_INIT;
    struct mp_report rep;
    mp_report_init(&rep, dir);
    if (mp_store_run_argv(st, &sub, &argv) < 0) {
        buf_adds(b, "a run whose record is empty");
        goto out;
    }
    mp_store_load(st, &rep, NULL);
    mp_report_fill_fingerprint(&rep);
    buf_printf(b, "a '%s' run", sub);
    if (rep.fp.model) {
        buf_adds(b, " of ");
        add_printable(b, rep.fp.model);
    }
    buf_printf(b, " (%zu candidate%s", rep.n, rep.n == 1 ? "" : "s");
    for (size_t i = 0; i < rep.n; i++) {
        buf_adds(b, i ? ", " : ": ");
        add_printable(b, rep.c[i].cand.name);
    }
    buf_adds(b, ")");
    if (rep.started) {
        buf_adds(b, " started ");
        add_printable(b, rep.started);
    }
    *finished = rep.finished && !rep.interrupted;
    buf_adds(b, *finished ? ", finished" : rep.finished ? ", interrupted" : ", not finished");
    size_t k = 0;
    while (k < argv.n && strcmp(argv.v[k], "--") != 0)
        k++;
    if (k + 1 < argv.n) {
        struct buf c = BUF_INIT;
        for (size_t i = k + 1; i < argv.n; i++) {
            if (c.len)
                buf_addc(&c, ' ');
            buf_add_shell_word(&c, argv.v[i]);
        }
        buf_adds(b, "; server command: ");
        add_printable(b, c.data);
        buf_release(&c);
    }
out:
    *sub_out = sub;
    mp_strv_release(&argv);
    mp_report_release(&rep);
    mp_store_close(st);
}

int mp_cli_run_dir_check(const char *cmd, const char *dir, bool resume)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (resume)
            return mp_error("--resume: '%s': %s", dir, strerror(errno)), MP_EXIT_USAGE;
        return 0; /* a new run directory */
    }
    if (!S_ISDIR(st.st_mode)) {
        mp_error("%s '%s' is a file, not a directory: a run directory holds one run's store, "
                 "attempts and reports; give a new or empty directory",
                 resume ? "--resume" : "--out", dir);
        return MP_EXIT_USAGE;
    }
    /* what moeprobe writes at the top of a run directory: never through a
     * link planted there (the store opens with O_NOFOLLOW too) */
    static const char *const names[] = {
        "lock", MP_STORE_DB_NAME, MP_STORE_DB_NAME "-wal", MP_STORE_DB_NAME "-shm",
        MP_STORE_DB_NAME "-journal", "attempts", "tasks", "report.json", "report.md",
        "report.html", "minimize.json", "index.txt",
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(names); i++) {
        char *p = xasprintf("%s/%s", dir, names[i]);
        bool link = lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
        free(p);
        if (link) {
            struct buf d = BUF_INIT;
            add_printable(&d, dir);
            mp_error("%s: '%s/%s' is a symbolic link: moeprobe never writes through a link "
                     "inside a run directory; remove it, or give another %s",
                     cmd, d.data, names[i], resume ? "run directory" : "--out DIR");
            buf_release(&d);
            return MP_EXIT_USAGE;
        }
    }
    if (resume)
        return 0;
    char *db = xasprintf("%s/%s", dir, MP_STORE_DB_NAME);
    char *tasks = xasprintf("%s/tasks/index.txt", dir); /* a scale-out run's (src/sched) */
    bool has_db = lstat(db, &st) == 0, has_tasks = lstat(tasks, &st) == 0;
    free(db);
    free(tasks);
    if (!has_db && !has_tasks)
        return 0;
    if (run_dir_locked(dir))
        return 0; /* the store refuses it: "in use by another moeprobe" */
    struct buf b = BUF_INIT, hint = BUF_INIT;
    char *sub = NULL;
    bool finished = false;
    if (has_db)
        describe_run(dir, &b, &sub, &finished);
    else
        buf_adds(&b, "a scale-out run (tasks/)");
    const char *rsub = has_db ? sub : "qualify";
    if (finished) {
        buf_adds(&hint, "; 'moeprobe report ");
        buf_add_shell_word(&hint, dir);
        buf_adds(&hint, "' shows that run again");
    } else if (rsub && (!strcmp(rsub, "qualify") || !strcmp(rsub, "diagnose"))) {
        buf_printf(&hint, ", or continue that run with 'moeprobe %s --resume ", rsub);
        buf_add_shell_word(&hint, dir);
        buf_adds(&hint, "'");
    }
    struct buf d = BUF_INIT;
    add_printable(&d, dir);
    mp_error("%s: '%s' already holds a run: %s. A run directory holds one run: give another "
             "--out DIR%s",
             cmd, d.data, b.data, hint.data ? hint.data : "");
    free(sub);
    buf_release(&b);
    buf_release(&d);
    buf_release(&hint);
    return MP_EXIT_USAGE;
}
