/* issue.h - `moeprobe report --format issue`: one candidate of a run as
 * Markdown for a vLLM or FlashInfer bug report (#24): the environment, the
 * exact launch command with the candidate's knobs (the minimal set when
 * `minimize` found one), the verdict with its evidence (the traceback's
 * last lines, the faulting kernel and the core dump's lines, the Xids, the
 * launch-blocking result with its counts and ratio), known issues it
 * matches, and a one-command reproducer. Every string from a log or a
 * command is escaped for Markdown (code blocks get a fence longer than any
 * backtick run in them) and the result is masked with the run's secrets.
 * Reads the attempts' server.log excerpts and the run's minimize.json. */
#ifndef MP_REPORT_ISSUE_H
#define MP_REPORT_ISSUE_H

#include "compat.h"

#include "buf.h"
#include "model/report.h"
#include "strv.h"

struct mp_knowledge;

struct mp_issue_in {
    const struct mp_report *rep;       /* finalized */
    const char *candidate;             /* NULL: the first candidate that failed, kernel-fault
                                        * and async-race first */
    const struct mp_strv *argv;        /* the run's arguments as stored (masked), may be NULL */
    const struct mp_knowledge *kn;     /* known issues; may be NULL */
};

/* Append the issue text to out. Returns 0, or MP_EUSAGE with why filled:
 * no candidate of that name, or no candidate failed (and none was named). */
int mp_report_issue(const struct mp_issue_in *in, struct buf *out, char *why, size_t whyn);

#endif
