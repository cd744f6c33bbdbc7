/* main.c - moeprobe's command dispatcher. */
#include "compat.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "proc/proc.h"
#include "store/store.h"
#include "version.h"
#include "err.h"

static const char usage[] =
    "usage: moeprobe <command> [options] [-- SERVER COMMAND...]\n"
    "\n"
    "Finds which MoE kernel backend actually works for your model, GPU and vLLM\n"
    "build: starts the server once per candidate knob set, reads what each knob\n"
    "resolved to, drives load, classifies every failure, reports with evidence.\n"
    "\n"
    "commands:\n"
    "  qualify  [options] -- SERVER COMMAND...   run all candidates, write a report\n"
    "  diagnose [options] -- SERVER COMMAND...   async race or faulty kernel? (CUDA_LAUNCH_BLOCKING=1 rerun)\n"
    "  resolve  [options] -- SERVER COMMAND...   which backend each knob set resolves to (starts only, no load)\n"
    "  minimize --from KNOBS --to KNOBS [options] -- SERVER COMMAND...\n"
    "                                            smallest knob change that makes it work\n"
    "  soak     --duration 9h [--concurrency N] [options] -- SERVER COMMAND...\n"
    "                                            steady load until the duration ends or a failure\n"
    "  scan     [--json] LOGFILE...              post-mortem of existing engine logs\n"
    "  explain  [--engine-version V] [--json] -- COMMAND WITH KNOBS...\n"
    "                                            what each knob does, without running it\n"
    "  inspect  [--json] MODEL_DIR               what in the checkpoint decides backend support\n"
    "  inspect  [--json] --engine DIR [--sm 121] which GPU architectures the engine's kernels carry\n"
    "  bisect   --good G --bad B [--builds FILE] [options] -- SERVER COMMAND WITH {build}...\n"
    "                                            the first build on which a candidate breaks\n"
    "  report   [--format md|json|html|csv] RUNDIR\n"
    "                                            render a run's report again (from RUNDIR/moeprobe.db)\n"
    "  report   --format issue [--candidate NAME] RUNDIR\n"
    "                                            a failing candidate as a bug report for upstream\n"
    "  report   --compare RUNDIR RUNDIR...       runs of the same GPU and model side by side\n"
    "  report   --merge RUNDIR                   merge a --gpus/--slurm run's task results\n"
    "  version                                   print moeprobe's version and git commit\n"
    "\n"
    "Run 'moeprobe <command> --help' for a command's options.\n"
    "\n"
    "exit codes: 0 a recommendation was made (or the command succeeded);\n"
    "            1 the run finished and no candidate qualified; 2 usage or input error;\n"
    "            3 internal or I/O error; 128+N killed by signal N\n";

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
};

static const struct command commands[] = {
    {"qualify", cmd_qualify}, {"diagnose", cmd_diagnose}, {"resolve", cmd_resolve}, {"minimize", cmd_minimize},
    {"soak", cmd_soak},       {"scan", cmd_scan},         {"explain", cmd_explain},
    {"inspect", cmd_inspect}, {"report", cmd_report},   {"bisect", cmd_bisect},
};

/* Started with stdin, stdout or stderr closed (`>&-`), the first file we
 * open would become that descriptor: the report would be printed into
 * RUNDIR/lock. Put /dev/null there first (open returns the lowest free
 * descriptor, so the holes fill in order). Returns false when even that
 * fails (nothing can be said: there is no stderr). */
static bool fill_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (n < 0)
            return false;
        if (n != fd) { /* cannot happen: every lower descriptor is open */
            close(n);
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    if (!fill_std_fds())
        return MP_EXIT_INTERNAL;
    mp_progname = "moeprobe";
    /* its connections are moeprobe's own: the hard limit, not a conservative
     * soft default (engines get the soft limit back: src/proc/limits.c) */
    mp_proc_raise_nofile();
    /* a file-size limit (ulimit -f) must be a write error (EFBIG) that is
     * reported with the file's name, not a silent death by SIGXFSZ; engines
     * get the default back (src/proc/spawn.c) */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        fputs(usage, stderr);
        return MP_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return MP_EXIT_OK;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("moeprobe %s (commit %s)\n", mp_version, mp_commit[0] ? mp_commit : "unknown");
        return MP_EXIT_OK;
    }
    for (size_t i = 0; i < MP_ARRAY_SIZE(commands); i++) {
        if (!strcmp(cmd, commands[i].name)) {
            /* once, before anything can start a thread (src/http/loadgen.h) */
            if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                mp_error("cannot initialise libcurl");
                return MP_EXIT_INTERNAL;
            }
            /* every message from here on goes through the one mask */
            mp_store_mask_process_init(argv + 2, (size_t)(argc - 2));
            int rc = commands[i].fn(argc - 1, argv + 1);
            mp_store_mask_process_end();
            curl_global_cleanup();
            return rc;
        }
    }
    mp_error("unknown command '%s' (see 'moeprobe --help')", cmd);
    return MP_EXIT_USAGE;
}
