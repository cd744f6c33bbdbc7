/* logfmt.h - vLLM-looking log lines on stdout/stderr.
 *
 * Lines look like "(APIServer pid=N) INFO MM-DD HH:MM:SS [file.py:N] msg"
 * (process tag per era, none for very old eras); multi-line messages get
 * the full prefix on every line (vLLM's NewLineFormatter). uvicorn lines
 * look like "(APIServer pid=N) INFO:     msg". Each line is written with one
 * write(2), so output from several processes interleaves by whole lines. */
#ifndef RE_LOGFMT_H
#define RE_LOGFMT_H

#include "compat.h"
#include "resolve.h"

#include <time.h>

struct re_log {
    const char *tag[2]; /* indexed by enum re_proc; NULL = no prefix */
    int pid[2];
    bool debug;         /* VLLM_LOGGING_LEVEL=DEBUG */
};

/* Format one physical line (no trailing newline) into out; pure. */
void re_log_format(char *out, size_t cap, const char *tag, int pid, enum re_level level,
                   time_t when, const char *file, int lineno, const char *text);

/* vLLM logger line(s) on stdout. */
void re_log(const struct re_log *lg, enum re_proc proc, enum re_level level, const char *file,
            int lineno, const char *fmt, ...) MP_PRINTF(6, 7);
/* uvicorn line "LEVEL:    msg" (level padded to 9 columns) on stderr
 * (access=false) or stdout (access=true). */
void re_log_uvicorn(const struct re_log *lg, bool access, const char *level, const char *fmt, ...)
    MP_PRINTF(4, 5);
/* Raw text with only the process prefix, on stderr (Python warnings,
 * argparse output). */
void re_log_raw(const struct re_log *lg, enum re_proc proc, const char *fmt, ...) MP_PRINTF(3, 4);
/* Print resolution lines (RE_RAW ones via re_log_raw). */
void re_log_lines(const struct re_log *lg, const struct re_lines *l);

#endif
