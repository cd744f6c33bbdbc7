/* opts.h - the options of the run commands (qualify, diagnose, resolve,
 * minimize, soak; DESIGN.md "Shared options"), parsed into struct mp_opts.
 *
 * The options are one table (opts.c): a row names the option, its
 * argument, the commands that take it and its help lines; --help, the
 * parser and the refusals all come from it (optparse.c). Adding an option:
 * a field here, a row there (a flag, string, number or duration needs no
 * code; anything else a short setter). */
#ifndef MP_OPTS_H
#define MP_OPTS_H

#include "compat.h"

#include <signal.h>
#include <stdio.h>

#include "cli/spec.h"
#include "model/verdict.h"
#include "model/report.h"
#include "model/workload.h"
#include "proc/proc.h"
#include "sched/sched.h"

/* The run commands that take the options of this module, one bit each.
 * Every option (opts.c's table) lists the commands that take it; another
 * command refuses it with a reason instead of ignoring it. A new command
 * adds a bit here and to the table rows it takes. */
enum mp_cmd {
    MP_CMD_QUALIFY = 1u << 0,
    MP_CMD_DIAGNOSE = 1u << 1,
    MP_CMD_RESOLVE = 1u << 2,
    MP_CMD_MINIMIZE = 1u << 3,
    MP_CMD_SOAK = 1u << 4,
    MP_CMD_BISECT = 1u << 5,
};
/* Commands that start engines / drive load. */
#define MP_CMDS_RUN                                                                        \
    (MP_CMD_QUALIFY | MP_CMD_DIAGNOSE | MP_CMD_RESOLVE | MP_CMD_MINIMIZE | MP_CMD_SOAK |    \
     MP_CMD_BISECT)
#define MP_CMDS_LOAD                                                                       \
    (MP_CMD_QUALIFY | MP_CMD_DIAGNOSE | MP_CMD_MINIMIZE | MP_CMD_SOAK | MP_CMD_BISECT)

/* A command's name ("qualify") for messages. */
const char *mp_cmd_name(enum mp_cmd cmd);

struct mp_opts {
    enum mp_cmd command;     /* the command parsed for */
    struct mp_candidate *cands;
    size_t ncands;
    size_t ncands_given; /* how many --candidate were parsed (0: cands is the preset's) */
    char *preset;        /* --preset NAME as given, or NULL */
    char *engine_version; /* --engine-version V: the preset's era before the first start */
    char *only;
    char *out_dir;
    int port;
    struct mp_workload wl;
    bool json, quiet, no_diagnose, no_quality, no_dedupe;
    bool clean_env;          /* --clean-env: the candidates do not inherit our VLLM_*, CUDA_*,
                              * FLASHINFER_* (but what the engine needs: model/inherit.h) */
    bool keep_coredumps, no_coredump; /* GPU core dumps (run/crashinfo.h) */
    /* correctness (issue #23, cli/scoreopt.h): --agreement N (16), --reference
     * NAME, --accuracy N (64), --accuracy-file FILE */
    int agreement_n, accuracy_n;
    bool accuracy_given;
    char *reference, *accuracy_file;
    bool seq_given, conc_given; /* --seq, --conc were given (soak honours or refuses them) */
    int prefill_check;       /* --prefill-check N (0: none) */
    unsigned long diag_max_requests;
    double diag_budget_s;    /* --diagnose-budget (default 3600) */
    enum mp_objective objective; /* --objective (default sequential) */
    bool objective_given;
    char *knowledge_file;
    char *model_dir;         /* --model-dir (fingerprint) */
    char *api_key;           /* value of --api-key-env's variable; never printed */
    /* scale-out (src/sched) */
    char *gpus;              /* --gpus list as given, or NULL */
    int gpus_per_engine;     /* --gpus-per-engine (default 1) */
    bool slurm;
    char *slurm_args, *slurm_script;
    char *resume;            /* --resume RUNDIR (also sets out_dir) */
    /* --percentiles (recorded with the run: mp_store_set_report_opts);
     * n = 0: not given */
    double percentiles[MP_REPORT_MAX_PCT];
    size_t npercentiles;
    /* minimize */
    char *from, *to;
    /* soak */
    double duration_s;       /* --duration (0: not given) */
    int concurrency;         /* --concurrency N (default 8) */
    char *base_url;          /* --base-url URL: attach to a running server */
    char *log_file;          /* --log FILE (with --base-url) */
    char *attach_cmd[2];     /* o->cmd when --base-url stands in for the command */
    /* bisect (cli/cmd_bisect.c) */
    char *good, *bad;        /* --good G, --bad B */
    char *builds_file;       /* --builds FILE */
    struct mp_strv builds;   /* --build X, in the order given */
    char *by;                /* --by verdict|resolved|throughput:PCT */
    unsigned long probe_requests; /* --probe-requests N (0: derived) */
    /* qualify, resolve: the engine's files for the kernel coverage check */
    char *engine_dir;        /* --engine-dir DIR */
    char **cmd;              /* points into argv (or attach_cmd) */
    size_t ncmd;
};

/* The scale-out part of o, for src/sched (borrowed from o). */
void mp_opts_sched_cfg(const struct mp_opts *o, struct mp_sched_cfg *cfg);

/* Parse argv (argv[0] = the command's name) for command cmd: its options
 * (those of opts.c's table that list cmd), then the server command after
 * them (or after "--"). An option another command takes is refused with
 * the reason. --help prints head, the command's options and tail on
 * stdout. Returns 0 ok, 1 when --help was printed, <0 on a usage error
 * (message printed). Release with mp_opts_release in every case. */
int mp_opts_parse(struct mp_opts *o, enum mp_cmd cmd, int argc, char **argv, const char *head,
                  const char *tail);
/* Write cmd's options as --help lists them (grouped, one per line,
 * continuation lines indented) to f. */
void mp_opts_help(FILE *f, enum mp_cmd cmd);
void mp_opts_release(struct mp_opts *o);
struct mp_knowledge;
struct mp_report;
struct mp_store;

/* Before cmd ("qualify", "diagnose", "minimize", "soak") writes into the run
 * directory dir (--out, or --resume when resume): an existing dir must be a
 * directory (--out FILE is a usage error), and one that already holds a run
 * (its moeprobe.db, or the tasks/index.txt of a scale-out run) is refused unless
 * resume; the message names the run found there (command, model,
 * candidates, date) and how to resume it. A directory whose lock another
 * moeprobe holds is left to the store's "in use" refusal. 0, or
 * MP_EXIT_USAGE (message printed). */
int mp_cli_run_dir_check(const char *cmd, const char *dir, bool resume);
/* Any moeprobe on a run directory (`report`) ends what a dead run left:
 * when no live moeprobe holds DIR/lock (nor a task's, DIR/tasks/X/lock),
 * every engine process its store recorded that is still alive - pid, start
 * time and boot id must match (run/runner.h mp_run_end_seen_procs) - is
 * killed, with a warning saying how many. Returns that number. */
int mp_cli_end_dead_run_procs(const char *dir);
/* Parse a --percentiles LIST ("50,90,99.9"): at most MP_REPORT_MAX_PCT
 * distinct numbers in (0, 100] with at most 3 decimals, comma-separated,
 * into out in the order given (*n = count). 0, or -1 with the usage error
 * printed. */
int mp_cli_parse_percentiles(const char *list, double *out, size_t *n);
/* The knowledge a command uses: the built-in one, or file's when file is not
 * NULL (*own is then set and the caller frees it with mp_knowledge_free).
 * On a bad file prints "<cmd>: knowledge file <file:line: message>" and
 * returns -1; else 0. */
int mp_cli_knowledge(const char *cmd, const char *file, struct mp_knowledge **own,
                     const struct mp_knowledge **out);

#endif
