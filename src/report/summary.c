/* summary.c - the terminal summary a run prints at its end
 * (mp_report_summary): a line per candidate, the recommendation or what was
 * learned, how to continue an unfinished run, and the known issues each
 * candidate's failure or resolution matches (report/resolved.h). */
#include "report/report.h"

#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "xalloc.h"
#include "verdict/recommend.h"

#include "report/internal.h"
#include "report/overview.h"
#include "report/resolved.h"

/* Append s for the terminal (escape.h): controls shown, not sent. */
static void term_add(struct buf *b, const char *s)
{
    if (s)
        mp_term_esc(b, s, strlen(s), 0);
}

/* term_add padded with spaces to width bytes. */
static void term_pad(struct buf *b, const char *s, size_t width)
{
    size_t before = b->len;
    term_add(b, s);
    for (size_t n = b->len - before; n < width; n++)
        buf_addc(b, ' ');
}

/* "NAME, NAME: matches known issue ID (...)": each known issue the
 * candidates match, once, with the candidates that match it alike. */
static void summary_known_issues(const struct mp_report *rep, struct buf *out)
{
    struct mp_strv lines = MP_STRV_INIT, names = MP_STRV_INIT; /* parallel */
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_ki_hits h;
        mp_rep_cand_known_issues(rep, &rep->c[i], &h);
        for (size_t j = 0; j < h.n; j++) {
            struct buf line = BUF_INIT;
            mp_ki_hit_line(&h.v[j], &line);
            size_t k = 0;
            while (k < lines.n && strcmp(lines.v[k], line.data) != 0)
                k++;
            if (k == lines.n) {
                mp_strv_push(&lines, line.data);
                mp_strv_push(&names, rep->c[i].cand.name);
            } else {
                char *joined = xasprintf("%s, %s", names.v[k], rep->c[i].cand.name);
                free(names.v[k]);
                names.v[k] = joined;
            }
            buf_release(&line);
        }
        mp_ki_hits_release(&h);
    }
    for (size_t k = 0; k < lines.n; k++) {
        term_add(out, names.v[k]);
        buf_adds(out, ": ");
        term_add(out, lines.v[k]);
        buf_adds(out, "\n");
    }
    mp_strv_release(&lines);
    mp_strv_release(&names);
}

void mp_report_summary(const struct mp_report *rep, struct buf *out)
{
    for (size_t i = 0; i < rep->n; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *p = mp_cand_primary(c);
        buf_adds(out, "  ");
        term_pad(out, c->cand.name, 20);
        buf_addc(out, ' ');
        term_pad(out, mp_cand_verdict_label(c), 16);
        buf_addc(out, ' ');
        term_pad(out, p && p->res.moe_backend ? p->res.moe_backend : "-", 20);
        buf_addc(out, ' ');
        char seq[96];
        mp_rep_speed_cell(rep, c, true, seq, sizeof(seq));
        if (p && p->outcome == MP_OUT_SAME_CONFIG) {
            buf_adds(out, "shared with ");
            term_add(out, p->same_as ? p->same_as : "?");
        } else if (strcmp(seq, "—") != 0) {
            /* a number: right-aligned as before; "n=K before crash" as it is */
            if (strspn(seq, "0123456789.") == strlen(seq))
                buf_printf(out, "%8s tok/s seq", seq);
            else
                buf_adds(out, seq);
        }
        buf_adds(out, "\n");
    }
    if (rep->recommended >= 0) {
        char *knobs = mp_candidate_knobs_str(&rep->c[rep->recommended].cand);
        buf_adds(out, "recommendation: ");
        term_add(out, rep->c[rep->recommended].cand.name);
        if (knobs[0]) {
            buf_adds(out, " (");
            term_add(out, knobs);
            buf_adds(out, ")");
        }
        buf_printf(out, ", by %s (--objective %s)\n", mp_verdict_objective_label(rep->objective),
                   mp_objective_name(rep->objective));
        free(knobs);
    } else if (mp_report_is_resolve_map(rep)) {
        buf_adds(out, "resolution only: no load was driven, nothing is recommended\n");
    } else {
        buf_adds(out, mp_report_nunfinished(rep) ? "no finished candidate qualified"
                                                 : "no candidate qualified");
        for (size_t i = 0; i < rep->learned.n; i++) {
            buf_adds(out, i ? "; " : ": ");
            term_add(out, rep->learned.v[i]);
        }
        buf_adds(out, "\n");
    }
    struct mp_next_step *steps;
    size_t nsteps = mp_rep_next_steps(rep, &steps);
    if (nsteps && steps[0].cmd && rep->recommended >= 0) {
        buf_adds(out, "serve it with: ");
        term_add(out, steps[0].cmd);
        buf_adds(out, "\n");
    }
    mp_rep_next_steps_free(steps, nsteps);
    if (rep->stop_reason) {
        buf_adds(out, "the run stopped early: ");
        term_add(out, rep->stop_reason);
        buf_adds(out, "\n");
    } else if (mp_report_incomplete(rep)) {
        char *cmd = mp_report_resume_command(rep);
        buf_printf(out, "%s; %s %s\n",
                   rep->interrupted ? "the run was interrupted" : "the run did not finish",
                   cmd ? "continue it with:" : "it cannot be resumed:",
                   cmd ? cmd : "start it again with a new --out DIR");
        free(cmd);
    }
    summary_known_issues(rep, out);
}
