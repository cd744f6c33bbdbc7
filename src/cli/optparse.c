/* optparse.c - the option table (opts.c) put to work: getopt_long over the
 * rows a command takes, the refusal of another command's option with its
 * reason, and --help generated from the same rows. */
#include "cli/opt_int.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "err.h"
#include "xalloc.h"

#define HELP_COL 29 /* where an option's help text starts */

const char *mp_cmd_name(enum mp_cmd cmd)
{
    switch (cmd) {
    case MP_CMD_QUALIFY: return "qualify";
    case MP_CMD_DIAGNOSE: return "diagnose";
    case MP_CMD_RESOLVE: return "resolve";
    case MP_CMD_MINIMIZE: return "minimize";
    case MP_CMD_SOAK: return "soak";
    case MP_CMD_BISECT: return "bisect";
    }
    return "?";
}

int mp_opt_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return mp_error("%s: '%s' is not a whole number in %ld..%ld", opt, s, lo, hi);
    *out = v;
    return 0;
}

int mp_opt_secs(const char *opt, const char *s, double *out)
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

/* The row of name that cmd takes, or -1. */
static int row_for(const struct mp_opttable *tb, const char *name, unsigned cmd)
{
    for (size_t i = 0; i < tb->ndefs; i++)
        if ((tb->defs[i].cmds & cmd) && !strcmp(tb->defs[i].name, name))
            return (int)i;
    return -1;
}

/* Apply row r to o. 0 or -1 (message printed). */
static int apply_row(struct mp_opts *o, const struct mp_optdef *r, const char *arg)
{
    char opt[64];
    snprintf(opt, sizeof(opt), "--%s", r->name);
    char *field = (char *)o + r->off;
    long v;
    switch (r->kind) {
    case MP_OPT_FLAG:
        *(bool *)(void *)field = true;
        return 0;
    case MP_OPT_STR:
        free(*(char **)(void *)field);
        *(char **)(void *)field = xstrdup(arg);
        return 0;
    case MP_OPT_INT:
        if (mp_opt_long(opt, arg, r->lo, r->hi, &v) < 0)
            return -1;
        *(int *)(void *)field = (int)v;
        return 0;
    case MP_OPT_SECS:
        return mp_opt_secs(opt, arg, (double *)(void *)field);
    case MP_OPT_FN:
        return r->set(o, opt, arg);
    }
    return -1;
}

/* Every distinct option name the table has (for any command) that word
 * ("--nam", "--name=x") names exactly or as the one prefix: its first row,
 * or -1 (*ambiguous set when several names start with it). */
static int lookup_any(const struct mp_opttable *tb, const char *word, bool *ambiguous)
{
    *ambiguous = false;
    if (strncmp(word, "--", 2) != 0)
        return -1;
    const char *n = word + 2;
    size_t len = strcspn(n, "=");
    int found = -1;
    for (size_t i = 0; i < tb->ndefs; i++) {
        const char *name = tb->defs[i].name;
        if (strncmp(name, n, len) != 0)
            continue;
        if (name[len] == '\0')
            return (int)i; /* exact */
        if (found >= 0 && strcmp(tb->defs[found].name, name) != 0)
            *ambiguous = true;
        else
            found = (int)i;
    }
    return *ambiguous ? -1 : found;
}

/* The commands whose bits are in cmds, as "qualify, diagnose". */
static void cmd_list(unsigned cmds, struct buf *b)
{
    for (unsigned bit = 1; bit <= MP_CMD_BISECT; bit <<= 1) {
        if (!(cmds & bit))
            continue;
        if (b->len)
            buf_adds(b, ", ");
        buf_adds(b, mp_cmd_name((enum mp_cmd)bit));
    }
}

/* word is no option of o->command: say why. Returns -1. */
static int refuse(const struct mp_opttable *tb, const struct mp_opts *o, const char *word)
{
    const char *cmd = mp_cmd_name(o->command);
    bool amb;
    int r = lookup_any(tb, word, &amb);
    if (amb)
        return mp_error("%s: '%s' is ambiguous: give more of the option's name (see "
                        "'moeprobe %s --help')", cmd, word, cmd);
    if (r < 0)
        return mp_error("unknown option '%s' (see 'moeprobe %s --help')", word, cmd);
    const char *name = tb->defs[r].name;
    for (size_t i = 0; i < tb->nrefusals; i++) {
        if ((tb->refusals[i].cmds & o->command) && !strcmp(tb->refusals[i].name, name))
            return mp_error("%s does not take --%s: %s", cmd, name, tb->refusals[i].why);
    }
    unsigned takers = 0;
    for (size_t i = 0; i < tb->ndefs; i++)
        if (!strcmp(tb->defs[i].name, name))
            takers |= tb->defs[i].cmds;
    struct buf b = BUF_INIT;
    cmd_list(takers, &b);
    mp_error("%s does not take --%s (an option of %s; see 'moeprobe %s --help')", cmd, name,
             b.data ? b.data : "no command", cmd);
    buf_release(&b);
    return -1;
}

/* getopt_long's table for cmd: one entry per distinct name of the whole
 * table, val = 256 + the row cmd takes (or the name's first row, which the
 * parser then refuses): an exact name of another command's option is
 * refused as that option, never read as an abbreviation of one of cmd's
 * (soak's --conc is not --concurrency). */
static struct option *long_table(const struct mp_opttable *tb, unsigned cmd)
{
    struct option *t = xcalloc(tb->ndefs + 2, sizeof(*t));
    size_t n = 0;
    for (size_t i = 0; i < tb->ndefs; i++) {
        const struct mp_optdef *r = &tb->defs[i];
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++)
            seen = !strcmp(t[k].name, r->name);
        if (seen)
            continue;
        int mine = row_for(tb, r->name, cmd);
        t[n].name = r->name;
        t[n].has_arg = r->arg ? required_argument : no_argument;
        t[n].val = 256 + (mine >= 0 ? mine : (int)i);
        n++;
    }
    t[n].name = "help";
    t[n].has_arg = no_argument;
    t[n].val = 'h';
    return t;
}

int mp_optparse_run(const struct mp_opttable *tb, struct mp_opts *o, int argc, char **argv, int *next)
{
    struct option *t = long_table(tb, o->command);
    int rc = 0, c;
    optind = 0;
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "+h", t, NULL)) != -1) {
        if (c == 'h') {
            rc = 1;
        } else if (c >= 256 && (size_t)(c - 256) < tb->ndefs) {
            const struct mp_optdef *r = &tb->defs[c - 256];
            if (r->cmds & o->command) {
                rc = apply_row(o, r, optarg);
            } else {
                char word[64];
                snprintf(word, sizeof(word), "--%s", r->name);
                rc = refuse(tb, o, word);
            }
        } else if (optopt >= 256) {
            rc = mp_error("option '--%s' needs a value (see 'moeprobe %s --help')",
                          tb->defs[optopt - 256].name, mp_cmd_name(o->command));
        } else if (optopt > 0) {
            rc = mp_error("unknown option '-%c' (see 'moeprobe %s --help')", optopt,
                          mp_cmd_name(o->command));
        } else {
            rc = refuse(tb, o, argv[optind - 1]);
        }
    }
    free(t);
    *next = optind;
    return rc;
}

/* One option's lines: "  --name ARG" padded to HELP_COL, its help, each
 * further line of the help indented to HELP_COL. */
static void help_row(FILE *f, const struct mp_optdef *r)
{
    char head[96];
    int n = snprintf(head, sizeof(head), "  --%s%s%s", r->name, r->arg ? " " : "",
                     r->arg ? r->arg : "");
    fputs(head, f);
    if (n + 2 > HELP_COL)
        fprintf(f, "\n%*s", HELP_COL, "");
    else
        fprintf(f, "%*s", HELP_COL - n, "");
    for (const char *p = r->help; *p;) {
        size_t len = strcspn(p, "\n");
        fwrite(p, 1, len, f);
        fputc('\n', f);
        p += len;
        if (*p == '\n' && p[1])
            fprintf(f, "%*s", HELP_COL, "");
        if (*p)
            p++;
    }
}

void mp_optparse_help(const struct mp_opttable *tb, FILE *f, enum mp_cmd cmd)
{
    const char *group = NULL;
    bool said_help = false;
    for (size_t i = 0; i < tb->ndefs; i++) {
        const struct mp_optdef *r = &tb->defs[i];
        if (!(r->cmds & cmd))
            continue;
        if (!group || strcmp(group, r->group) != 0) {
            if (group && !said_help) /* at the end of the first section */
                fprintf(f, "%*s%s\n", -HELP_COL, "  -h, --help", "this help");
            said_help = group != NULL;
            fprintf(f, "%s%s:\n", group ? "\n" : "", r->group);
            group = r->group;
        }
        help_row(f, r);
    }
    if (!said_help)
        fprintf(f, "%*s%s\n", -HELP_COL, "  -h, --help", "this help");
}
