/* opt_int.h - the option table's row type, shared by opts.c (the table and
 * its setters) and optparse.c (getopt, --help, refusals). Internal to
 * src/cli. */
#ifndef MP_CLI_OPT_INT_H
#define MP_CLI_OPT_INT_H

#include "compat.h"

#include <stddef.h>

#include "cli/opts.h"

enum mp_optkind {
    MP_OPT_FLAG, /* bool at off, set to true */
    MP_OPT_STR,  /* char * at off, replaced by a copy of the argument */
    MP_OPT_INT,  /* int at off, a whole number in lo..hi */
    MP_OPT_SECS, /* double at off, a positive duration (s, or with s/m/h) */
    MP_OPT_FN,   /* set() does it */
};

struct mp_optdef {
    const char *name;  /* long name without "--" */
    const char *arg;   /* the argument as --help shows it ("N"); NULL: a flag */
    unsigned cmds;     /* MP_CMD_* that take it */
    const char *group; /* --help section ("options", "scale-out (qualify)") */
    enum mp_optkind kind;
    size_t off;        /* offsetof(struct mp_opts, field) for the plain kinds */
    long lo, hi;       /* MP_OPT_INT's range */
    /* MP_OPT_FN: opt is "--name", arg NULL for a flag; 0 or -1 (message printed) */
    int (*set)(struct mp_opts *o, const char *opt, const char *arg);
    const char *help;  /* '\n'-separated lines; the continuation lines are indented */
};

/* Another command's option, refused by the commands in cmds with why (a
 * sentence; the refusal adds the option and the command). */
struct mp_optrefusal {
    const char *name;
    unsigned cmds;
    const char *why;
};

extern const struct mp_optdef mp_optdefs[];
extern const size_t mp_noptdefs;
extern const struct mp_optrefusal mp_optrefusals[];
extern const size_t mp_noptrefusals;

/* A table as the parser takes it: optparse.c knows no table of its own
 * (opts.c passes mp_optdefs and mp_optrefusals), so it stays below opts.c. */
struct mp_opttable {
    const struct mp_optdef *defs;
    size_t ndefs;
    const struct mp_optrefusal *refusals;
    size_t nrefusals;
};

/* Parse argv's options for o->cmd into o (the table's setters); stops at
 * the first word that is not an option, or after "--". *next gets the index
 * of the first word after them. Returns 0, 1 when --help was asked for, or
 * -1 (message printed). */
int mp_optparse_run(const struct mp_opttable *tb, struct mp_opts *o, int argc, char **argv,
                    int *next);

/* --help's option sections for cmd from tb's rows (mp_opts_help). */
void mp_optparse_help(const struct mp_opttable *tb, FILE *f, enum mp_cmd cmd);

/* Shared by the setters: "N" in lo..hi, a duration ("90", "5m", "1.5h").
 * 0 or -1 (message printed, naming opt). */
int mp_opt_long(const char *opt, const char *s, long lo, long hi, long *out);
int mp_opt_secs(const char *opt, const char *s, double *out);

#endif
