/* opts.c - the run commands' options: the table (one row per option and
 * the commands that take it), the refusals with their reasons, the setters
 * of the options that are more than a flag, a string, a number or a
 * duration, and what is settled once all are read (the candidates, the
 * workload's phases, the run directory's default name). */
#include "cli/opt_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "knowledge/knowledge.h"
#include "report/report.h"
#include "xalloc.h"

#define OFF(f) offsetof(struct mp_opts, f)
#define Q MP_CMD_QUALIFY
#define D MP_CMD_DIAGNOSE
#define R MP_CMD_RESOLVE
#define M MP_CMD_MINIMIZE
#define S MP_CMD_SOAK
#define BI MP_CMD_BISECT

/* The longest soak: 30 days. Longer ones are refused (usage error) rather
 * than run into the nanosecond clock's range. */
#define SOAK_MAX_S (30.0 * 24 * 3600)

static void add_cand(struct mp_opts *o, struct mp_candidate *c)
{
    o->cands = xreallocarray(o->cands, o->ncands + 1, sizeof(*o->cands));
    o->cands[o->ncands++] = *c;
}

static int set_candidate(struct mp_opts *o, const char *opt, const char *arg)
{
    struct mp_candidate cand;
    struct mp_diag dg = MP_DIAG_INIT;
    if (mp_candidate_parse(arg, &cand, &dg) < 0)
        return mp_error("%s: %s", opt, dg.msg);
    for (size_t i = 0; i < o->ncands; i++) {
        if (!strcmp(o->cands[i].name, cand.name)) {
            mp_error("%s: the name '%s' is used twice", opt, cand.name);
            mp_candidate_release(&cand);
            return -1;
        }
    }
    add_cand(o, &cand);
    o->ncands_given++;
    return 0;
}

static int set_seq(struct mp_opts *o, const char *opt, const char *arg)
{
    long v;
    if (mp_opt_long(opt, arg, 0, 10000000, &v) < 0)
        return -1;
    o->wl.phases[1].requests = (int)v;
    o->seq_given = true;
    return 0;
}

static int set_conc(struct mp_opts *o, const char *opt, const char *arg)
{
    if (!o->conc_given) {
        o->wl.nphases = 2; /* the given steps replace the default ones */
        o->conc_given = true;
    }
    if (mp_workload_add_conc(&o->wl, arg) < 0)
        return mp_error("%s: '%s' is not LEVEL:REQUESTS (e.g. 8:32)", opt, arg);
    return 0;
}

static int set_api(struct mp_opts *o, const char *opt, const char *arg)
{
    if (!strcmp(arg, "chat"))
        o->wl.chat = true;
    else if (!strcmp(arg, "completions"))
        o->wl.chat = false;
    else
        return mp_error("%s: '%s' is not 'completions' or 'chat'", opt, arg);
    return 0;
}

static int set_api_key_env(struct mp_opts *o, const char *opt, const char *arg)
{
    const char *val = getenv(arg);
    if (!val || !*val)
        return mp_error("%s: variable '%s' is not set", opt, arg);
    free(o->api_key);
    o->api_key = xstrdup(val);
    o->wl.api_key = o->api_key;
    return 0;
}

static int set_diag_max(struct mp_opts *o, const char *opt, const char *arg)
{
    long v;
    if (mp_opt_long(opt, arg, 1, 100000000, &v) < 0)
        return -1;
    o->diag_max_requests = (unsigned long)v;
    return 0;
}

static int set_objective(struct mp_opts *o, const char *opt, const char *arg)
{
    if (mp_objective_from_name(arg, &o->objective) < 0)
        return mp_error("%s: '%s' is not sequential, throughput, ttft or tpot", opt, arg);
    o->objective_given = true;
    return 0;
}

static int set_percentiles(struct mp_opts *o, const char *opt, const char *arg)
{
    return mp_cli_parse_percentiles(arg, o->percentiles, &o->npercentiles);
}

static int set_resume(struct mp_opts *o, const char *opt, const char *arg)
{
    free(o->resume);
    o->resume = xstrdup(arg);
    free(o->out_dir);
    o->out_dir = xstrdup(arg);
    return 0;
}

static int set_engine_version(struct mp_opts *o, const char *opt, const char *arg)
{
    struct mp_kn_ver v;
    char why[512];
    if (mp_kn_version_is_ngc_tag(mp_knowledge_builtin(), arg, why, sizeof(why)))
        return mp_error("%s: %s", opt, why);
    if (mp_kn_ver_parse(arg, &v) < 0)
        return mp_error("%s: '%s' is not a version (e.g. 0.15.1)", opt, arg);
    free(o->engine_version);
    o->engine_version = xstrdup(arg[0] == 'v' ? arg + 1 : arg);
    return 0;
}

static int set_grace(struct mp_opts *o, const char *opt, const char *arg)
{
    return mp_opt_secs(opt, arg, &o->wl.grace_s);
}

/* soak --duration: seconds, or with s/m/h/d; at most 30 days */
static int set_duration(struct mp_opts *o, const char *opt, const char *arg)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(arg, &end);
    double mult = 1;
    if (end && *end && end[1] == '\0') {
        static const char units[] = "smhd";
        static const double mults[] = {1, 60, 3600, 86400};
        const char *u = strchr(units, *end);
        if (u) {
            mult = mults[u - units];
            end++;
        }
    }
    if (errno || end == arg || *end || !isfinite(v) || v <= 0)
        return mp_error("%s: '%s' is not a positive duration (seconds, or with s/m/h/d)", opt,
                        arg);
    if (v > SOAK_MAX_S / mult)
        return mp_error("%s: '%s' is longer than the 30 days a soak may run (30d, 720h)", opt,
                        arg);
    o->duration_s = v * mult;
    return 0;
}

static int set_base_url(struct mp_opts *o, const char *opt, const char *arg)
{
    if (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0)
        return mp_error("%s: '%s' is not an http:// or https:// URL", opt, arg);
    free(o->base_url);
    o->base_url = xstrdup(arg);
    return 0;
}

static int set_accuracy(struct mp_opts *o, const char *opt, const char *arg)
{
    long v;
    if (mp_opt_long(opt, arg, 0, 100000, &v) < 0)
        return -1;
    o->accuracy_n = (int)v;
    o->accuracy_given = true;
    return 0;
}

static int set_build(struct mp_opts *o, const char *opt, const char *arg)
{
    if (!*arg || strpbrk(arg, " \t\n"))
        return mp_error("%s: '%s' is no build name (no blanks)", opt, arg);
    mp_strv_push(&o->builds, arg);
    return 0;
}

static int set_probe_requests(struct mp_opts *o, const char *opt, const char *arg)
{
    long v;
    if (mp_opt_long(opt, arg, 1, 10000000, &v) < 0)
        return -1;
    o->probe_requests = (unsigned long)v;
    return 0;
}

#define G_OPTS "options"
#define G_BISECT "bisect"
#define G_SCALE "scale-out (qualify)"
#define G_ATTACH "attach to a server someone else started (soak; no SERVER COMMAND, nothing is stopped)"

/* clang-format off */
const struct mp_optdef mp_optdefs[] = {
    {"candidate", "'NAME: KNOBS'", Q | D | R | S | BI, G_OPTS, MP_OPT_FN, 0, 0, 0, set_candidate,
     "a candidate (repeatable); NAME=VALUE words are\n"
     "environment, other words are appended to the command"},
    {"preset", "NAME", Q | R | S, G_OPTS, MP_OPT_STR, OFF(preset), 0, 0, NULL,
     "candidate set when no --candidate is given\n"
     "(default sm12x-nvfp4: auto, cutlass, marlin,\n"
     "flashinfer_cutlass, marlin-env)"},
    {"only", "a,b", Q | R | S, G_OPTS, MP_OPT_STR, OFF(only), 0, 0, NULL,
     "run only these candidates"},
    {"engine-version", "V", Q | D | R, G_OPTS, MP_OPT_FN, 0, 0, 0, set_engine_version,
     "the engine's vLLM version, when it is known before the\n"
     "first start (otherwise a known image tag, or the first\n"
     "start, tells): the preset's candidates use the knobs\n"
     "that exist there; one that cannot exist is not-applicable"},
    {"from", "'KNOBS'", M, G_OPTS, MP_OPT_STR, OFF(from), 0, 0, NULL,
     "the knob set that fails"},
    {"to", "'KNOBS'", M, G_OPTS, MP_OPT_STR, OFF(to), 0, 0, NULL,
     "the knob set that works"},
    {"duration", "D", S, G_OPTS, MP_OPT_FN, 0, 0, 0, set_duration,
     "how long to soak (seconds, or with s/m/h/d: 9h; at most\n"
     "30 days); required"},
    {"concurrency", "N", S, G_OPTS, MP_OPT_INT, OFF(concurrency), 1, 100000, NULL,
     "requests in flight during the soak phase (8)"},
    {"out", "DIR", MP_CMDS_RUN, G_OPTS, MP_OPT_STR, OFF(out_dir), 0, 0, NULL,
     "run directory (default moeprobe-run-YYYYMMDD-HHMMSS);\n"
     "one that already holds a run is refused (exit 2)"},
    {"port", "N", MP_CMDS_RUN, G_OPTS, MP_OPT_INT, OFF(port), 1, 65535, NULL,
     "port for the engine (default: a free port per attempt)"},
    {"ready-timeout", "S", MP_CMDS_RUN, G_OPTS, MP_OPT_SECS, OFF(wl.ready_timeout_s), 0, 0, NULL,
     "seconds to wait for /health and /v1/models (1800)"},
    {"seq", "N", Q | D | M | BI, G_OPTS, MP_OPT_FN, 0, 0, 0, set_seq,
     "sequential requests after 1 warm-up (10)"},
    {"seq", "N", S, G_OPTS, MP_OPT_FN, 0, 0, 0, set_seq,
     "N sequential requests after the warm-up (default:\n"
     "no sequential phase)"},
    {"conc", "LEVEL:REQUESTS", Q | D | M | BI, G_OPTS, MP_OPT_FN, 0, 0, 0, set_conc,
     "a concurrency step (repeatable; default 4:16 and 8:32)"},
    {"max-tokens", "N", MP_CMDS_LOAD, G_OPTS, MP_OPT_INT, OFF(wl.max_tokens), 1, 1000000, NULL,
     "tokens per request (256; ignore_eos is set)"},
    {"output-tokens", "N", MP_CMDS_LOAD, G_OPTS, MP_OPT_INT, OFF(wl.max_tokens), 1, 1000000, NULL,
     "the same"},
    {"input-tokens", "N", MP_CMDS_LOAD, G_OPTS, MP_OPT_INT, OFF(wl.input_tokens), 1, 1000000, NULL,
     "prompts of about N tokens (default: fixed ~15-token\n"
     "prompts); --api chat adds the chat template's tokens"},
    {"prefill-check", "N", Q | D | M | BI, G_OPTS, MP_OPT_INT, OFF(prefill_check), 1, 1000000, NULL,
     "a last phase of 3 sequential requests with N-token\n"
     "prompts (long-prefill crashes, e.g. 8192)"},
    {"prefill-check", "N", S, G_OPTS, MP_OPT_INT, OFF(prefill_check), 1, 1000000, NULL,
     "3 sequential requests with N-token prompts (long-\n"
     "prefill crashes), after --seq's phase and before the\n"
     "soak phase"},
    {"stall-timeout", "S", MP_CMDS_LOAD, G_OPTS, MP_OPT_SECS, OFF(wl.stall_timeout_s), 0, 0, NULL,
     "no token progress for S seconds = hang (120)"},
    {"grace", "S", MP_CMDS_RUN, G_OPTS, MP_OPT_FN, 0, 0, 0, set_grace,
     "teardown grace after SIGTERM (10)"},
    {"api", "completions|chat", MP_CMDS_LOAD, G_OPTS, MP_OPT_FN, 0, 0, 0, set_api,
     "endpoint to drive (completions)"},
    {"api-key-env", "NAME", MP_CMDS_RUN, G_OPTS, MP_OPT_FN, 0, 0, 0, set_api_key_env,
     "send the bearer token from variable NAME (never stored)"},
    {"no-diagnose", NULL, Q | BI, G_OPTS, MP_OPT_FLAG, OFF(no_diagnose), 0, 0, NULL,
     "do not rerun crashes with CUDA_LAUNCH_BLOCKING=1"},
    {"no-quality", NULL, Q | D | M | BI, G_OPTS, MP_OPT_FLAG, OFF(no_quality), 0, 0, NULL,
     "skip the greedy output check after the load phases"},
    {"agreement", "N", Q | M | BI, G_OPTS, MP_OPT_INT, OFF(agreement_n), 0, 16, NULL,
     "reference passages each serving candidate scores by\n"
     "teacher-forced logprobs, to compare the candidates\n"
     "(16, all of them; also up to 4 greedy continuations;\n"
     "0 = none)"},
    {"reference", "NAME", Q, G_OPTS, MP_OPT_STR, OFF(reference), 0, 0, NULL,
     "compare logprobs with this candidate instead of the\n"
     "consensus of all"},
    {"accuracy", "N", Q | M | BI, G_OPTS, MP_OPT_FN, 0, 0, 0, set_accuracy,
     "task problems each serving candidate answers (64;\n"
     "0 = no task gate)"},
    {"accuracy-file", "FILE", Q | M | BI, G_OPTS, MP_OPT_STR, OFF(accuracy_file), 0, 0, NULL,
     "your own problems instead: gsm8k JSON lines\n"
     "({\"question\": ..., \"answer\": \"... #### NUMBER\"})"},
    {"no-dedupe", NULL, Q, G_OPTS, MP_OPT_FLAG, OFF(no_dedupe), 0, 0, NULL,
     "test every candidate in full; by default a\n"
     "candidate whose log shows the configuration of one\n"
     "tested already is stopped at once and shares its result"},
    {"diagnose-max-requests", "N", Q | D | M | BI, G_OPTS, MP_OPT_FN, 0, 0, 0, set_diag_max,
     "cap on the launch-blocking run (2000; minimize: on\n"
     "the clean requests a pass needs)"},
    {"diagnose-budget", "D", Q | D | BI, G_OPTS, MP_OPT_SECS, OFF(diag_budget_s), 0, 0, NULL,
     "time the launch-blocking run may take (1h; s/m/h); a\n"
     "run over it says so first and stops there"},
    {"clean-env", NULL, MP_CMDS_RUN, G_OPTS, MP_OPT_FLAG, OFF(clean_env), 0, 0, NULL,
     "start the engines without this shell's VLLM_*, CUDA_* and\n"
     "FLASHINFER_* variables (kept: CUDA_VISIBLE_DEVICES, the\n"
     "CUDA and cache paths, tokens); by default the candidates\n"
     "inherit them and the reports list them"},
    {"no-coredump", NULL, MP_CMDS_RUN, G_OPTS, MP_OPT_FLAG, OFF(no_coredump), 0, 0, NULL,
     "set no CUDA core-dump variable: no faulting kernel\n"
     "named, no dump of a hung engine (docs/verdicts.md)"},
    {"keep-coredumps", NULL, MP_CMDS_RUN, G_OPTS, MP_OPT_FLAG, OFF(keep_coredumps), 0, 0, NULL,
     "keep GPU core dumps in the attempt directories (for\n"
     "cuda-gdb; at most 2 GiB a run) instead of deleting\n"
     "them once their lines are read"},
    {"knowledge", "FILE", MP_CMDS_RUN, G_OPTS, MP_OPT_STR, OFF(knowledge_file), 0, 0, NULL,
     "vLLM knob/log knowledge to use instead of the built-in"},
    {"model-dir", "DIR", MP_CMDS_RUN, G_OPTS, MP_OPT_STR, OFF(model_dir), 0, 0, NULL,
     "checkpoint folder: its quantization joins the fingerprint"},
    {"engine-dir", "DIR", Q | R, G_OPTS, MP_OPT_STR, OFF(engine_dir), 0, 0, NULL,
     "the engine's files (site-packages, a vLLM install): the\n"
     "GPU architectures its kernels carry join the fingerprint\n"
     "(default: a host 'vllm' command's Python environment)"},
    {"objective", "O", Q | D | S, G_OPTS, MP_OPT_FN, 0, 0, 0, set_objective,
     "what \"fastest\" means for the recommendation:\n"
     "sequential (tok/s, the default), throughput (best\n"
     "concurrency tok/s), ttft or tpot (lowest median over\n"
     "the load phases)"},
    {"percentiles", "LIST", MP_CMDS_LOAD, G_OPTS, MP_OPT_FN, 0, 0, 0, set_percentiles,
     "latency percentiles the reports show (50,90,99;\n"
     "at most 8, each in (0, 100])"},
    {"resume", "RUNDIR", Q | D | R | BI, G_OPTS, MP_OPT_FN, 0, 0, 0, set_resume,
     "continue an interrupted run with its own options (with\n"
     "--gpus/--slurm: rerun only the candidates whose task\n"
     "left no finished result in RUNDIR)"},
    {"json", NULL, MP_CMDS_RUN, G_OPTS, MP_OPT_FLAG, OFF(json), 0, 0, NULL,
     "print the report JSON on stdout"},
    {"quiet", NULL, MP_CMDS_RUN, G_OPTS, MP_OPT_FLAG, OFF(quiet), 0, 0, NULL,
     "no progress or summary on stderr"},
    {"good", "G", BI, G_BISECT, MP_OPT_STR, OFF(good), 0, 0, NULL,
     "the build known good (in the list)"},
    {"bad", "B", BI, G_BISECT, MP_OPT_STR, OFF(bad), 0, 0, NULL,
     "the build known bad (in the list)"},
    {"builds", "FILE", BI, G_BISECT, MP_OPT_STR, OFF(builds_file), 0, 0, NULL,
     "builds oldest first, one per line (# comments)"},
    {"build", "X", BI, G_BISECT, MP_OPT_FN, 0, 0, 0, set_build,
     "a build (repeatable, oldest first): the list inline"},
    {"by", "verdict|resolved|throughput:PCT", BI, G_BISECT, MP_OPT_STR, OFF(by), 0, 0, NULL,
     "what 'same as good' means: the verdict class and\n"
     "resolved MoE backend (default); the resolved MoE\n"
     "backend and dense kernel; sequential tok/s at most\n"
     "PCT % below the good build's"},
    {"probe-requests", "N", BI, G_BISECT, MP_OPT_FN, 0, 0, 0, set_probe_requests,
     "clean requests each probe must serve (default: derived\n"
     "from the bad build's measured failure rate)"},
    {"gpus", "0,1,2,3", Q, G_SCALE, MP_OPT_STR, OFF(gpus), 0, 0, NULL,
     "run candidates in parallel, each engine pinned to its\n"
     "own GPUs (default: every GPU nvidia-smi lists)"},
    {"gpus-per-engine", "N", Q, G_SCALE, MP_OPT_INT, OFF(gpus_per_engine), 1, 1024, NULL,
     "GPUs per engine (1; tensor-parallel servers need more)"},
    {"slurm", NULL, Q, G_SCALE, MP_OPT_FLAG, OFF(slurm), 0, 0, NULL,
     "one Slurm job-array task per candidate, then merge"},
    {"slurm-args", "'ARGS'", Q, G_SCALE, MP_OPT_STR, OFF(slurm_args), 0, 0, NULL,
     "extra sbatch arguments (e.g. '--partition=gpu --gres=gpu:1')"},
    {"slurm-script", "FILE", Q, G_SCALE, MP_OPT_STR, OFF(slurm_script), 0, 0, NULL,
     "only write the sbatch script (submit it by hand, then\n"
     "'moeprobe report --merge RUNDIR')"},
    {"base-url", "URL", S, G_ATTACH, MP_OPT_FN, 0, 0, 0, set_base_url,
     "drive this server (e.g. http://127.0.0.1:8000)"},
    {"log", "FILE", S, G_ATTACH, MP_OPT_STR, OFF(log_file), 0, 0, NULL,
     "its log, read from the start and followed as it grows,\n"
     "so the backends it resolved and its crashes are classified"},
};
const size_t mp_noptdefs = MP_ARRAY_SIZE(mp_optdefs);

#define NO_LOAD "it drives no load: each engine is stopped once its kernel selections are logged"
const struct mp_optrefusal mp_optrefusals[] = {
    {"seq", R, NO_LOAD}, {"conc", R, NO_LOAD}, {"max-tokens", R, NO_LOAD},
    {"output-tokens", R, NO_LOAD}, {"input-tokens", R, NO_LOAD}, {"prefill-check", R, NO_LOAD},
    {"stall-timeout", R, NO_LOAD}, {"api", R, NO_LOAD}, {"no-quality", R, NO_LOAD},
    {"percentiles", R, NO_LOAD}, {"objective", R, "it measures no speed and makes no recommendation"},
    {"conc", S, "it drives one level until --duration ends, not steps of a number of requests "
                "(--conc LEVEL:REQUESTS): give the level as --concurrency N"},
    {"resume", S, "a soak is not resumed: start it again with a new --out DIR"},
    {"resume", M, "a minimize run is not resumed (each test is a full attempt): start it again "
                  "with a new --out DIR"},
    {"objective", M, "it ranks a recommendation, and minimize makes none"},
    {"candidate", M, "it compares two knob sets: give them as --from 'KNOBS' (fails) and "
                     "--to 'KNOBS' (works)"},
    {"preset", M, "it compares two knob sets, not a preset's candidates: give them as "
                  "--from 'KNOBS' (fails) and --to 'KNOBS' (works); 'moeprobe qualify --preset' "
                  "tests a preset"},
    {"only", M, "it has no candidates to pick from: its knob sets are --from and --to"},
    {"preset", D, "it runs one candidate: give it with --candidate 'NAME: KNOBS' (or put "
                  "its knobs in the server command)"},
    {"only", D, "it runs one candidate: give it with --candidate 'NAME: KNOBS'"},
    {"no-diagnose", D, "it is the CUDA_LAUNCH_BLOCKING=1 rerun; to run a candidate without "
                       "it use 'moeprobe qualify --no-diagnose'"},
    {"no-dedupe", D | R | M | S, "only qualify shares the result of one configuration between "
                                 "candidates (resolve starts every candidate anyway)"},
    {"no-quality", S, "there is no output check in a soak"},
    {"agreement", D | R | S, "only qualify, minimize and bisect compare logprobs"},
    {"accuracy", D | R | S, "only qualify, minimize and bisect run the task gate"},
    {"accuracy-file", D | R | S, "only qualify, minimize and bisect run the task gate"},
    {"reference", D | R | M | S | BI, "only qualify compares candidates with a reference "
                                      "(minimize compares with --to, bisect with the good "
                                      "build)"},
    {"no-diagnose", S, "a soak does not rerun a failure with CUDA_LAUNCH_BLOCKING=1 (use "
                       "'moeprobe diagnose' on the candidate)"},
    {"diagnose-max-requests", S | R, "there is no CUDA_LAUNCH_BLOCKING=1 run here"},
    {"diagnose-budget", S | R | M, "there is no CUDA_LAUNCH_BLOCKING=1 run here"},
};
const size_t mp_noptrefusals = MP_ARRAY_SIZE(mp_optrefusals);

static const struct mp_opttable table = {mp_optdefs, MP_ARRAY_SIZE(mp_optdefs), mp_optrefusals,
                                         MP_ARRAY_SIZE(mp_optrefusals)};

void mp_opts_help(FILE *f, enum mp_cmd cmd)
{
    mp_optparse_help(&table, f, cmd);
}
/* clang-format on */

/* Each name of --only must be a candidate's: a typo is named with the
 * names there are. 0 or -1 (message printed). */
static int check_only(const struct mp_opts *o)
{
    if (!o->only)
        return 0;
    struct buf known = BUF_INIT, bad = BUF_INIT;
    size_t nmatch = 0;
    for (size_t i = 0; i < o->ncands; i++) {
        buf_printf(&known, "%s%s", i ? ", " : "", o->cands[i].name);
        nmatch += mp_csv_has(o->only, o->cands[i].name);
    }
    for (const char *p = o->only; *p;) {
        size_t len = strcspn(p, ",");
        bool found = false;
        for (size_t i = 0; i < o->ncands && !found; i++)
            found = strlen(o->cands[i].name) == len && !strncmp(o->cands[i].name, p, len);
        if (!found && len)
            buf_printf(&bad, "%s'%.*s'", bad.len ? ", " : "", (int)len, p);
        p += len + (p[len] == ',');
    }
    int rc = 0;
    if (nmatch == 0 || bad.len)
        rc = mp_error("--only '%s' %s: %s %s not a candidate's name; the candidates are: %s",
                      o->only, nmatch ? "names an unknown candidate" : "matches no candidate",
                      bad.len ? bad.data : "''", strchr(bad.data ? bad.data : "", ',') ? "are" : "is",
                      known.len ? known.data : "(none)");
    buf_release(&known);
    buf_release(&bad);
    return rc;
}

/* The candidates when no --candidate was given: the preset's. */
static int load_preset(struct mp_opts *o)
{
    if (o->ncands_given) {
        if (o->preset)
            return mp_error("--preset and --candidate cannot be combined");
        return 0;
    }
    struct mp_candidate *pc = NULL;
    size_t pn = 0;
    const char *name = o->preset ? o->preset : "sm12x-nvfp4";
    if (mp_preset_load(name, &pc, &pn) < 0)
        return mp_error("--preset: unknown preset '%s' (known: %s)", name, mp_preset_names());
    for (size_t i = 0; i < pn; i++)
        add_cand(o, &pc[i]);
    free(pc);
    return 0;
}

/* The workload's phases once every option is read: the default
 * concurrency steps unless --conc, the prefill check, --seq 0. */
static int settle_workload(struct mp_opts *o)
{
    if (!o->conc_given) {
        mp_workload_add_conc(&o->wl, "4:16");
        mp_workload_add_conc(&o->wl, "8:32");
    }
    if (o->prefill_check && mp_workload_add_prefill(&o->wl, o->prefill_check, 3) < 0)
        return mp_error("--prefill-check: too many phases");
    if (o->wl.phases[1].requests == 0) {
        /* --seq 0: drop the sequential phase */
        memmove(&o->wl.phases[1], &o->wl.phases[2], (o->wl.nphases - 2) * sizeof(o->wl.phases[0]));
        o->wl.nphases--;
    }
    return 0;
}

/* The server command after the options (or --base-url standing in for it). */
static int settle_command(struct mp_opts *o, int argc, char **argv, int next)
{
    if (o->log_file && !o->base_url)
        return mp_error("--log goes with --base-url (a server soak starts itself is logged by "
                        "moeprobe)");
    if (o->base_url) {
        if (next < argc)
            return mp_error("give either --base-url or a server command after '--', not both");
        o->attach_cmd[0] = o->base_url; /* the URL stands in for the command */
        o->cmd = o->attach_cmd;
        o->ncmd = 1;
        return 0;
    }
    if (next >= argc)
        return mp_error("no server command given: put it after '--' (see 'moeprobe %s --help')",
                        mp_cmd_name(o->command));
    o->cmd = argv + next;
    o->ncmd = (size_t)(argc - next);
    return 0;
}

static void default_out_dir(struct mp_opts *o)
{
    if (o->out_dir)
        return;
    char iso[32];
    mp_iso8601(mp_wall_ns(), iso, sizeof(iso));
    /* 2026-12-02T09:23:03Z -> 20261202-092303 */
    char stamp[32];
    snprintf(stamp, sizeof(stamp), "%.4s%.2s%.2s-%.2s%.2s%.2s", iso, iso + 5, iso + 8, iso + 11,
             iso + 14, iso + 17);
    o->out_dir = xasprintf("moeprobe-run-%s", stamp);
}

int mp_opts_parse(struct mp_opts *o, enum mp_cmd cmd, int argc, char **argv, const char *head,
                  const char *tail)
{
    memset(o, 0, sizeof(*o));
    o->command = cmd;
    mp_workload_default(&o->wl);
    o->diag_max_requests = 2000;
    o->diag_budget_s = 3600;
    o->agreement_n = 16;
    o->accuracy_n = 64;
    o->gpus_per_engine = 1;
    o->concurrency = 8;
    int next = argc;
    int rc = mp_optparse_run(&table, o, argc, argv, &next);
    if (rc == 1) {
        fputs(head ? head : "", stdout);
        mp_opts_help(stdout, cmd);
        fputs(tail ? tail : "", stdout);
        return 1;
    }
    if (rc < 0 || settle_workload(o) < 0 || settle_command(o, argc, argv, next) < 0)
        return -1;
    if (cmd != MP_CMD_MINIMIZE && (load_preset(o) < 0 || check_only(o) < 0))
        return -1;
    if (cmd == MP_CMD_SOAK && o->duration_s <= 0)
        return mp_error("soak needs --duration (e.g. --duration 9h)");
    default_out_dir(o);
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
    free(o->base_url);
    free(o->log_file);
    free(o->engine_version);
    free(o->good);
    free(o->bad);
    free(o->builds_file);
    free(o->by);
    free(o->engine_dir);
    mp_strv_release(&o->builds);
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

