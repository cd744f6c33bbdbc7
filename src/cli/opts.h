/* opts.h - the options that qualify, diagnose, minimize and soak share
 * (DESIGN.md "Shared options"). */
#ifndef MP_OPTS_H
#define MP_OPTS_H

#include "compat.h"

#include <signal.h>

#include "cli/spec.h"
#include "model/verdict.h"
#include "model/report.h"
#include "model/workload.h"
#include "proc/proc.h"
#include "sched/sched.h"

/* The shared options' help, in parts: soak composes its own list from them
 * (it refuses --conc, and --no-dedupe, --no-diagnose, --no-quality and
 * --diagnose-* do nothing there; its --seq and --prefill-check differ); MP_COMMON_OPTS_HELP is the whole list for the other commands. */
#define MP_OPTS_HELP_CANDS                                                               \
    "options:\n"                                                                         \
    "  --candidate 'NAME: KNOBS'  a candidate (repeatable); NAME=VALUE words are\n"      \
    "                             environment, other words are appended to the command\n" \
    "  --preset NAME              candidate set when no --candidate is given\n"          \
    "                             (default sm12x-nvfp4: auto, cutlass, marlin,\n"        \
    "                             flashinfer_cutlass, marlin-env)\n"                      \
    "  --only a,b                 run only these candidates\n"                           \
    "  --out DIR                  run directory (default moeprobe-run-YYYYMMDD-HHMMSS);\n" \
    "                             one that already holds a run is refused (exit 2)\n" \
    "  --port N                   port for the engine (default: a free port per attempt)\n" \
    "  --ready-timeout S          seconds to wait for /health and /v1/models (1800)\n"
#define MP_OPTS_HELP_SEQ_CONC                                                            \
    "  --seq N                    sequential requests after 1 warm-up (10)\n"            \
    "  --conc LEVEL:REQUESTS      a concurrency step (repeatable; default 4:16 and 8:32)\n"
#define MP_OPTS_HELP_TOKENS                                                              \
    "  --max-tokens N             tokens per request (256; ignore_eos is set);\n"         \
    "  --output-tokens N          the same\n"                                             \
    "  --input-tokens N           prompts of about N tokens (default: fixed ~15-token\n" \
    "                             prompts); --api chat adds the chat template's tokens\n"
#define MP_OPTS_HELP_PREFILL                                                             \
    "  --prefill-check N          a last phase of 3 sequential requests with N-token\n"   \
    "                             prompts (long-prefill crashes, e.g. 8192)\n"
#define MP_OPTS_HELP_RUN                                                                 \
    "  --stall-timeout S          no token progress for S seconds = hang (120)\n"         \
    "  --grace S                  teardown grace after SIGTERM (10)\n"                   \
    "  --api completions|chat     endpoint to drive (completions)\n"                     \
    "  --api-key-env NAME         send the bearer token from variable NAME (never stored)\n"
#define MP_OPTS_HELP_CHECKS                                                              \
    "  --no-diagnose              do not rerun crashes with CUDA_LAUNCH_BLOCKING=1\n"     \
    "  --no-quality               skip the greedy output check after the load phases\n"     \
    "  --agreement N              reference passages scored by teacher-forced logprobs\n" \
    "                             to compare the candidates (16, all of them; 0 = none)\n" \
    "  --reference NAME           compare with this candidate instead of the consensus\n" \
    "  --accuracy N               task problems per serving candidate (64; 0 = no task\n" \
    "                             gate)\n"                                                 \
    "  --accuracy-file FILE       your own problems instead: gsm8k JSON lines\n"          \
    "                             ({\"question\", \"answer\": \"... #### NUMBER\"})\n"
#define MP_OPTS_HELP_DEDUPE                                                              \
    "  --no-dedupe                (qualify) test every candidate in full; by default a\n" \
    "                             candidate whose log shows the configuration of one\n" \
    "                             tested already is stopped at once and shares its result\n"
#define MP_OPTS_HELP_DIAG                                                                \
    "  --diagnose-max-requests N  cap on the launch-blocking run (2000)\n"               \
    "  --diagnose-budget D        time the launch-blocking run may take (1h; s/m/h); a\n" \
    "                             run over it says so first and stops there\n"
#define MP_OPTS_HELP_TAIL                                                                \
    "  --knowledge FILE           vLLM knob/log knowledge to use instead of the built-in\n" \
    "  --model-dir DIR            checkpoint folder: its quantization joins the fingerprint\n" \
    "  --objective O              what \"fastest\" means for the recommendation (not\n" \
    "                             minimize): sequential (tok/s, the default),\n"        \
    "                             throughput (best concurrency tok/s), ttft or tpot\n"  \
    "                             (lowest median over the load phases)\n"               \
    "  --percentiles LIST         latency percentiles the reports show (50,90,99;\n"     \
    "                             at most 8, each in (0, 100])\n"                        \
    "  --json                     print the report JSON on stdout\n"                     \
    "  --quiet                    no progress or summary on stderr\n"                    \
    "  -h, --help                 this help\n"
#define MP_COMMON_OPTS_HELP                                                              \
    MP_OPTS_HELP_CANDS MP_OPTS_HELP_SEQ_CONC MP_OPTS_HELP_TOKENS MP_OPTS_HELP_PREFILL    \
    MP_OPTS_HELP_RUN MP_OPTS_HELP_CHECKS MP_OPTS_HELP_DEDUPE MP_OPTS_HELP_DIAG          \
    MP_OPTS_HELP_TAIL

/* qualify only: scale-out (src/sched, docs/scale-out.md) */
#define MP_SCHED_OPTS_HELP                                                               \
    "scale-out (qualify):\n"                                                             \
    "  --gpus 0,1,2,3             run candidates in parallel, each engine pinned to its\n" \
    "                             own GPUs (default: every GPU nvidia-smi lists)\n"      \
    "  --gpus-per-engine N        GPUs per engine (1; tensor-parallel servers need more)\n" \
    "  --slurm                    one Slurm job-array task per candidate, then merge\n"  \
    "  --slurm-args 'ARGS'        extra sbatch arguments (e.g. '--partition=gpu --gres=gpu:1')\n" \
    "  --slurm-script FILE        only write the sbatch script (submit it by hand, then\n" \
    "                             'moeprobe report --merge RUNDIR')\n"                   \
    "  --resume RUNDIR            with --gpus/--slurm: rerun only the candidates whose\n" \
    "                             task left no finished result in RUNDIR\n"

struct mp_opts {
    struct mp_candidate *cands;
    size_t ncands;
    size_t ncands_given; /* how many --candidate were parsed (0: cands is the preset's) */
    char *preset;        /* --preset NAME as given, or NULL */
    char *only;
    char *out_dir;
    int port;
    struct mp_workload wl;
    bool json, quiet, no_diagnose, no_quality, no_dedupe;
    /* correctness (issue #23, cli/scoreopt.h): --agreement N (16), --reference
     * NAME, --accuracy N (64), --accuracy-file FILE */
    long agreement_n, accuracy_n;
    bool accuracy_given;
    char *reference, *accuracy_file;
    bool seq_given, conc_given; /* --seq, --conc were given (soak honours or refuses them) */
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
    char **cmd;              /* points into argv */
    size_t ncmd;
};

/* The scale-out part of o, for src/sched (borrowed from o). */
void mp_opts_sched_cfg(const struct mp_opts *o, struct mp_sched_cfg *cfg);

/* Parse argv (argv[0] = subcommand). Returns 0 ok, 1 when --help was
 * printed, <0 on a usage error (message printed). help is the command's
 * help text. Release with mp_opts_release in every case. */
int mp_opts_parse(struct mp_opts *o, int argc, char **argv, const char *help);
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
