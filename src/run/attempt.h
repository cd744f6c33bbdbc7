/* attempt.h - one start of the engine for a candidate, from spawn to
 * teardown: wait for ready, read the resolved backends from the log, drive
 * the workload phases, watch for every kind of failure, tear down, and
 * summarise what happened. qualify, diagnose and minimize are built from
 * attempts.
 *
 * Everything an attempt learns is written into its directory as it happens
 * (never through a symbolic link: the directory must be a real one, and its
 * files are opened with O_NOFOLLOW):
 *   server.log        the engine's stdout+stderr, byte for byte (lines)
 *   server.times      one line per server.log line: seconds since spawn
 *   requests.jsonl    one JSON object per finished request
 * How it runs (states, events, the table) is run/attempt.c's header.
 * Loop-thread only; not re-entrant. */
#ifndef MP_ATTEMPT_H
#define MP_ATTEMPT_H

#include "compat.h"


#include "model/attempt.h"
#include "model/candidate.h"
#include "model/workload.h"
#include "net.h"

struct mp_knowledge;
struct mp_store;
struct mp_score_plan;

struct mp_attempt_opts {
    const char *dir;                   /* created if missing */
    char *const *cmd;                  /* server command words */
    size_t ncmd;
    const struct mp_candidate *cand;
    int port;                          /* resolved port */
    bool launch_blocking;              /* add CUDA_LAUNCH_BLOCKING=1 */
    int index;
    const struct mp_knowledge *kn;     /* borrowed */
    const struct mp_workload *wl;      /* borrowed */
    int signal_fd;                     /* signalfd for SIGINT/TERM/HUP/QUIT/CHLD or -1 */
    const char *label;                 /* progress label, e.g. "cutlass 2/5" */
    bool progress;                     /* draw a live progress line on stderr (a terminal):
                                        * phase, counts, tok/s, the engine's last log line
                                        * during start-up, the run's ETA */
    bool progress_lines;               /* stderr is not a terminal: one line per state
                                        * change (started, resolved, ready, phase done,
                                        * failed), never a \r redraw */
    double eta_after_s;                /* the run's estimate for what follows this attempt,
                                        * <0 = none (shown in the live line) */
    double expect_s;                   /* expected length of this attempt, <=0 = unknown */
    /* Output check: after a clean workload, each prompt is sent once, greedy
     * (temperature 0), without ignore_eos, with quality_max_tokens (default
     * 32), one at a time, as phase "quality". NULL/0 = no quality phase. */
    const char *const *quality_prompts;
    size_t nquality;
    int quality_max_tokens;
    /* Evidence store (NULL = none): the engine's pid and marker and every
     * finished request are written to attempt row store_attempt as they
     * happen; secret values are masked in server.log and requests.jsonl. A
     * store write error ends the attempt (outcome MP_OUT_ERROR, return
     * MP_EDB). So does a failed write of server.log, server.times or
     * requests.jsonl (full disk, file-size limit, I/O error): outcome
     * MP_OUT_ERROR, fail_class MP_FAIL_EVIDENCE, fail_message naming the
     * file and the reason, return -errno. */
    struct mp_store *store;
    int64_t store_attempt;
    /* Attach mode (soak --base-url): drive a server someone else started
     * at attach_url instead of spawning cmd; attach_log (or NULL) is its log
     * file, read from the beginning and followed as it grows. Nothing is
     * torn down. */
    const char *attach_url;
    const char *attach_log;
    /* Resolve first (qualify without --no-dedupe): called once before
     * ready, as soon as the engine has logged every kernel selection its
     * command can print (logs/selstop.h: per era, a drafter's own MoE line
     * included; "Model loading took" where nothing vouches for less; at
     * ready at the latest),
     * with what it resolved. Returning true with *same_as and *why set
     * (malloc'd; the attempt takes them) says this candidate is the same
     * configuration as one tested already: the engine is stopped at once
     * and the outcome is MP_OUT_SAME_CONFIG. NULL = no check. */
    bool (*same_config)(void *ud, const struct mp_resolved *res, char **same_as, char **why);
    void *same_ud;
    const char *cwd;                   /* the engine's working directory, NULL = ours */
    /* `moeprobe resolve`: stop the engine as soon as its selections are
     * logged (or at ready); outcome MP_OUT_RESOLVED, no load. */
    bool resolve_only;
    /* GPU core dumps (run/crashinfo.h): none at all (--no-coredump), kept
     * (--keep-coredumps); run_dir for the kept-dumps cap (may be NULL) */
    bool no_coredump, keep_coredumps;
    const char *run_dir;
    /* The scoring pass after a clean workload (run/score.h): r->score.
     * NULL = none. */
    const struct mp_score_plan *score;
};

/* Run one attempt. Returns 0 when the attempt ran (whatever its outcome;
 * see r->outcome), MP_ECOMMAND when the server command could not be started
 * (spawn failed, or the attached server's log cannot be read), or another
 * <0 when moeprobe itself failed; r->fail_message says why. *r must be
 * zeroed by the caller; release with mp_attempt_result_release. When
 * interrupted, *signo_out gets the signal (also one that came during the
 * teardown of an attempt that ended otherwise). */
int mp_attempt_run(const struct mp_attempt_opts *o, struct mp_attempt_result *r, int *signo_out);

#endif
