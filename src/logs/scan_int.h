/* scan_int.h - the scanner's state and the helpers its parts share
 * (src/logs only; not a public header). logscan.c owns construction, the
 * prefilter, line assembly and the public API; finding.c the findings list
 * and clean copies, under all the others; framing.c finds where a
 * line's message starts and whether a line continues a wrapped one;
 * traceback.c names frames and records the crash; selection.c turns
 * selection lines into fields and findings. */
#ifndef MP_LOGS_SCAN_INT_H
#define MP_LOGS_SCAN_INT_H

#include "compat.h"
#include "lines.h"
#include "strv.h"

#include "knowledge/issues.h"
#include "knowledge/knowledge.h"
#include "logs/logscan.h"

#define FRAME_RING 32
#define FRAME_WINDOW 40   /* frames further than this many lines above an error do not explain it */
#define AFTER_WINDOW 60   /* frames after an error line, within this many lines */
#define MSG_MAX 400       /* bytes of an error message kept */
#define MAX_LINEAR 12     /* dense-kernel methods kept */
#define WRAP_COLUMNS 80   /* a line this wide may have been wrapped by a terminal */
#define MAX_OTHER 16      /* other selections kept */
#define MAX_TALLY 8       /* tally names kept */
#define MAX_FATAL_MSGS 8  /* distinct fatal messages kept */

enum { LV_NONE, LV_DEBUG, LV_INFO, LV_WARNING, LV_ERROR, LV_CRITICAL };

struct pf_ent {
    int32_t next;
    uint16_t lit, off;
};

struct frame {
    char *site;
    long line;
    bool cpp;
};

struct mp_logscan {
    const struct mp_knowledge *k;
    /* literal prefilter: 2-byte grams */
    uint64_t bits[1024];
    int32_t *head; /* 65536 */
    struct pf_ent *ents;
    size_t nents;
    char **lits;
    size_t *litlen;
    size_t nlits;
    size_t **litsigs; /* per literal: signature indices */
    uint8_t *errlit;  /* per literal: an error word (mp_logresult.error_lines) */
    size_t *nlitsigs;
    uint8_t *hit;
    uint16_t *hitlist;
    size_t *sigbuf;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    /* line assembly */
    struct mp_lines lines; /* the byte stream's lines, bound MP_LOGSCAN_MAX_LINE */
    unsigned stream_ev;    /* events of the lines one feed handed on */
    bool finished;
    char *clean;          /* the line without ANSI escapes (MP_LOGSCAN_MAX_LINE) */
    char *held;           /* a wide line that a terminal may have wrapped */
    size_t heldlen;
    long held_lines;      /* physical lines in held */
    bool held_wide;       /* the last piece of held was wide: more may follow */
    /* state */
    long lineno;
    char *fields[MP_KN_NFIELDS];
    int prio[MP_KN_NFIELDS];
    long fline[MP_KN_NFIELDS];
    struct mp_strv cands, unknown_env;
    struct mp_strv uq_cands;                /* candidates of the unquantized MoE line */
    char *lin_method[MAX_LINEAR], *lin_kernel[MAX_LINEAR];
    long lin_line[MAX_LINEAR];
    size_t nlin;
    bool pending_list;
    /* the speculative drafter (more.c) */
    bool drafter_mode;
    long drafter_loaded;
    char *dr_backend, *dr_kind;
    struct mp_strv dr_cands;
    long dr_line;
    /* other selections, tallies, fatal messages (more.c) */
    char *oth_what[MAX_OTHER], *oth_value[MAX_OTHER];
    long oth_line[MAX_OTHER];
    size_t noth;
    char *tally_name[MAX_TALLY];
    long tally_n[MAX_TALLY], tally_line[MAX_TALLY];
    size_t ntally;
    bool in_autotune;
    struct mp_strv fatal_msgs;
    struct mp_ki_hits hits;
    bool hits_done;
    struct frame frames[FRAME_RING];
    size_t nframes; /* ring count; newest at (fhead-1) */
    size_t fhead;
    long tb_line;
    bool frames_seen;
    long last_frame_line;
    char *last_frame_site;
    /* crash */
    int crash_cls;
    bool crash_weak;      /* recorded from a line a same-rank error replaces (Xid) */
    char *crash_msg;
    long crash_line;
    struct mp_strv sites, line_cpp, after;
    char *launch_site;
    bool collecting_after;
    bool engine_dead;
    long engine_dead_line;
    char *startup_error;
    long startup_error_line;
    bool ready;
    long ready_line;
    long truncated;
    unsigned long long bytes;
    /* findings */
    struct mp_logfinding *findings;
    size_t nfindings, capfindings;
    long crash_finding; /* index or -1 */
    bool async_hint, findings_full;
    /* error-looking lines: a ring of the last MP_LOGSCAN_ERRLINES */
    char errtext[MP_LOGSCAN_ERRLINES][MP_LOGSCAN_ERRLINE_MAX + 1];
    long errline[MP_LOGSCAN_ERRLINES];
    size_t nerr, errhead; /* count kept, index of the oldest */
    /* NUL bytes skipped */
    unsigned long long nul_bytes, nul_tail; /* all, and the run the input ends in so far */
    long nul_line;
    char *nonul;          /* a live line without its NULs (MP_LOGSCAN_MAX_LINE) */
    struct mp_logresult res;
    struct mp_logkernel linres[MAX_LINEAR];
    struct mp_logsel othres[MAX_OTHER];
    struct mp_logtally tallyres[MAX_TALLY];
    struct mp_logline errres[MP_LOGSCAN_ERRLINES];
};

/* finding.c */
/* A copy of p[0..n) without surrounding blanks/backticks, cut at max bytes
 * (never inside a UTF-8 sequence), control bytes as spaces. */
char *clean_copy(const char *p, size_t n, size_t max);
/* A finding (text owned; a repeat is freed); its index, or -1 when the list
 * is full. */
long add_finding(struct mp_logscan *s, int sev, const char *code, long line, char *text);

/* logscan.c */
/* Scan one logical line p[0..len) made of nphys physical lines (a
 * terminal-wrapped line joined back); it takes the number of its first
 * line. Returns the OR of the MP_LOGEV_* it raised (logscan.c). */
unsigned mp_logs_process_line(struct mp_logscan *s, const char *p, size_t len, long nphys);

/* framing.c */
/* Offset of the message after journald/syslog, docker compose, kubectl,
 * podman and ISO/" | " timestamps, process tags and the level; *level is
 * LV_* of the level word found (LV_NONE when none). */
size_t mp_logs_strip_prefix(const char *p, size_t len, int *level);
/* Copies p[0..len) without ANSI escape sequences into out (room for len
 * bytes); returns the new length. */
size_t mp_logs_strip_ansi(const char *p, size_t len, char *out);
/* True when p[0..len) starts with a prefix mp_logs_strip_prefix knows (a
 * timestamp, a process tag, a level word): a log record. */
bool mp_logs_starts_record(const char *p, size_t len);
/* True when p[0..len) can be the rest of a wrapped line: it is not empty
 * and does not start a log record, a traceback line or a Markdown block. */
bool mp_logs_continues(const char *p, size_t len);

/* traceback.c */
/* The name of a Python frame: the path from the package root (after the
 * last site-packages/ or dist-packages/, a vLLM source checkout or
 * transformers_modules/), else the file name, plus ":fn" when fn is given.
 * Caller frees. */
char *mp_logs_frame_name(const char *path, size_t pn, const char *fn, size_t fnn);
/* True for a frame of the launch machinery (torch, triton, CUDA wrappers). */
bool mp_logs_is_machinery(const char *site);
void mp_logs_frame(struct mp_logscan *s, const char *path, size_t pn, const char *fn, size_t fnn);
/* A fatal line of class cls (msg owned, may be NULL). weak: a later line of
 * the same rank replaces it (kernel Xid lines: the CUDA error says more). */
void mp_logs_record_fatal(struct mp_logscan *s, int cls, char *msg, bool weak);
void mp_logs_crash_finding(struct mp_logscan *s);
char *mp_logs_message_window(const char *m, size_t n, const char *lit, size_t litlen);
void mp_logs_traceback_free(struct mp_logscan *s);

/* selection.c */
void mp_logs_set_candidates(struct mp_strv *out, const char *p, size_t n);
/* Returns true when the field took the value. aux: the regex's "method" or
 * "m" capture for linear kernels (may be NULL). */
bool mp_logs_set_field(struct mp_logscan *s, int f, const char *v, size_t n, int prio,
                       const char *aux, size_t auxn, bool aux_is_method);
void mp_logs_analyse_resolution(struct mp_logscan *s);
void mp_logs_selection_free(struct mp_logscan *s);

/* more.c */
/* Is field f one the drafter's MoE selection sets (after "Loading drafter
 * model")? Then mp_logs_set_drafter takes it. */
bool mp_logs_drafter_field(const struct mp_logscan *s, int f);
void mp_logs_set_drafter(struct mp_logscan *s, int f, const char *v, size_t n);
/* Another selection: what (owned) = value. Each (what, value) once. */
void mp_logs_add_other(struct mp_logscan *s, char *what, const char *v, size_t n);
/* Count one line of the tally name (the first line is kept). */
void mp_logs_tally(struct mp_logscan *s, const char *name);
/* Add n to the tally (a number the line states: "Skipped 4 unsupported
 * tactic(s)"); an absurd n counts as 1. */
void mp_logs_tally_add(struct mp_logscan *s, const char *name, long n);
/* Keep a fatal message (copied) when new; at most MAX_FATAL_MSGS. */
void mp_logs_keep_fatal(struct mp_logscan *s, const char *msg);
/* The device value normalised ("sm121"), owned; NULL when it names none. */
char *mp_logs_device(const char *v, size_t n);
/* End-of-log findings of the tallies and the known issues. */
void mp_logs_finish_more(struct mp_logscan *s);
/* Fill the result's drafter, other, tallies, fatal messages, hits. */
void mp_logs_result_more(struct mp_logscan *s, struct mp_logresult *r);
void mp_logs_more_free(struct mp_logscan *s);

#endif
