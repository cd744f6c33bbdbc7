/* more.c - what the scanner keeps beyond the MoE backend (scan_int.h): the
 * speculative drafter's own MoE selection, every other selection line,
 * tallies (FlashInfer autotuner tactics that failed), the distinct fatal
 * messages, the device, and at the end the known issues that match. */
#include "compat.h"

#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "logs/scan_int.h"
#include "buf.h"
#include "xalloc.h"

bool mp_logs_drafter_field(const struct mp_logscan *s, int f)
{
    return s->drafter_mode &&
           (f == MP_KN_F_MOE_BACKEND || f == MP_KN_F_MOE_CANDIDATES || f == MP_KN_F_MOE_KIND ||
            f == MP_KN_F_UNQUANT_MOE_BACKEND || f == MP_KN_F_UNQUANT_MOE_CANDIDATES);
}

/* The drafter's first MoE selection only: its backend, list and oracle. */
void mp_logs_set_drafter(struct mp_logscan *s, int f, const char *v, size_t n)
{
    if (f == MP_KN_F_MOE_BACKEND || f == MP_KN_F_UNQUANT_MOE_BACKEND) {
        if (s->dr_backend)
            return;
        s->dr_backend = clean_copy(v, n, 256);
        s->dr_line = s->lineno;
    } else if (f == MP_KN_F_MOE_KIND) {
        if (!s->dr_kind && (!s->dr_backend || s->dr_line == s->lineno))
            s->dr_kind = clean_copy(v, n, 64);
    } else if (s->dr_cands.n == 0 && (!s->dr_backend || s->dr_line == s->lineno)) {
        mp_logs_set_candidates(&s->dr_cands, v, n);
    }
}

void mp_logs_add_other(struct mp_logscan *s, char *what, const char *v, size_t n)
{
    char *value = clean_copy(v, n, 200);
    for (size_t i = 0; i < s->noth; i++) {
        if (!strcmp(s->oth_what[i], what) && !strcmp(s->oth_value[i], value)) {
            free(what);
            free(value);
            return;
        }
    }
    if (s->noth == MAX_OTHER || !value[0]) {
        free(what);
        free(value);
        return;
    }
    s->oth_what[s->noth] = what;
    s->oth_value[s->noth] = value;
    s->oth_line[s->noth] = s->lineno;
    s->noth++;
}

void mp_logs_tally(struct mp_logscan *s, const char *name)
{
    mp_logs_tally_add(s, name, 1);
}

void mp_logs_tally_add(struct mp_logscan *s, const char *name, long n)
{
    if (n < 0 || n > 1000000)
        n = 1; /* a number the line cannot mean: the line itself counts */
    for (size_t i = 0; i < s->ntally; i++) {
        if (!strcmp(s->tally_name[i], name)) {
            s->tally_n[i] = s->tally_n[i] > LONG_MAX - n ? LONG_MAX : s->tally_n[i] + n;
            return;
        }
    }
    if (s->ntally == MAX_TALLY)
        return;
    s->tally_name[s->ntally] = xstrdup(name);
    s->tally_n[s->ntally] = n;
    s->tally_line[s->ntally] = s->lineno;
    s->ntally++;
}

void mp_logs_keep_fatal(struct mp_logscan *s, const char *msg)
{
    if (!msg || !msg[0] || s->fatal_msgs.n >= MAX_FATAL_MSGS || mp_strv_has(&s->fatal_msgs, msg))
        return;
    mp_strv_push(&s->fatal_msgs, msg);
}

char *mp_logs_device(const char *v, size_t n)
{
    char *x = xstrndup(v, n), buf[16];
    const char *d = mp_ki_device(x, buf, sizeof(buf));
    free(x);
    return d ? xstrdup(d) : NULL;
}

static long tally_of(const struct mp_logscan *s, const char *name, long *first)
{
    for (size_t i = 0; i < s->ntally; i++) {
        if (!strcmp(s->tally_name[i], name)) {
            if (first && (!*first || s->tally_line[i] < *first))
                *first = s->tally_line[i];
            return s->tally_n[i];
        }
    }
    return 0;
}

/* One finding for the FlashInfer autotuner's failed tactics, with counts;
 * and, when the engine crashed after them, one that says so. */
static void autotuner_findings(struct mp_logscan *s)
{
    long first = 0;
    long skipped = tally_of(s, "autotuner-skipped", &first);
    long failed = tally_of(s, "autotuner-failed", &first);
    long unsup = tally_of(s, "autotuner-unsupported", &first);
    long tma = tally_of(s, "autotuner-tma-descriptor", &first);
    long ws = tally_of(s, "tma-ws-grouped-gemm", &first);
    if (!skipped && !failed && !tma && !ws && !unsup)
        return;
    const struct { long n; const char *what; } part[] = {
        {skipped, "tactic(s) skipped after failing to profile"},
        {unsup, "tactic(s) the autotuner called unsupported"},
        {failed, "profiling failure(s)"},
        {ws, "'Failed to initialize cutlass TMA WS grouped gemm'"},
        {tma, "TMA descriptor error(s) while tuning"},
    };
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < sizeof(part) / sizeof(part[0]); i++)
        if (part[i].n)
            buf_printf(&b, "%s%ld %s", b.len ? ", " : "", part[i].n, part[i].what);
    add_finding(s, 1, "autotuner-tactics", first,
                xasprintf("FlashInfer autotuner: %s (first at line %ld): those kernel variants do "
                          "not run on this GPU and the autotuner kept others, which can be slower",
                          b.data, first));
    buf_release(&b);
    if (tma)
        add_finding(s, 1, "autotuner-tma-descriptor", first,
                    xasprintf("%ld 'Failed to initialize the TMA descriptor' error(s) while the "
                              "FlashInfer autotuner profiled tactics: those tactics cannot run "
                              "on this GPU",
                              tma));
    if (s->crash_cls >= 0 && s->crash_line > first)
        add_finding(s, 1, "crash-after-autotuner", s->crash_line,
                    xasprintf("the crash (line %ld) follows %ld failed autotuner tactic(s) (first "
                              "at line %ld): a failed tactic can leave a sticky CUDA error or the "
                              "kept tactic can be faulty on this GPU; rerun with the autotuner "
                              "off (--kernel-config '{\"enable_flashinfer_autotune\": false}') "
                              "to tell",
                              s->crash_line, skipped + unsup + failed + ws + tma, first));
}

void mp_logs_finish_more(struct mp_logscan *s)
{
    autotuner_findings(s);
}

void mp_logs_result_more(struct mp_logscan *s, struct mp_logresult *r)
{
    r->moe_kind = s->fields[MP_KN_F_MOE_KIND];
    r->drafter.loaded_line = s->drafter_loaded;
    r->drafter.moe_backend = s->dr_backend;
    r->drafter.moe_kind = s->dr_kind;
    r->drafter.moe_candidates = (const char **)s->dr_cands.v;
    r->drafter.n_moe_candidates = s->dr_cands.n;
    r->drafter.line = s->dr_line;
    for (size_t i = 0; i < s->noth; i++) {
        s->othres[i].what = s->oth_what[i];
        s->othres[i].value = s->oth_value[i];
        s->othres[i].line = s->oth_line[i];
    }
    r->other = s->othres;
    r->n_other = s->noth;
    for (size_t i = 0; i < s->ntally; i++) {
        s->tallyres[i].name = s->tally_name[i];
        s->tallyres[i].count = s->tally_n[i];
        s->tallyres[i].first_line = s->tally_line[i];
    }
    r->tallies = s->tallyres;
    r->n_tallies = s->ntally;
    r->device = s->fields[MP_KN_F_DEVICE];
    r->device_line = r->device ? s->fline[MP_KN_F_DEVICE] : 0;
    r->fatal_messages = (const char **)s->fatal_msgs.v;
    r->n_fatal_messages = s->fatal_msgs.n;
    r->known_issues = s->hits_done ? &s->hits : NULL;
}

void mp_logs_more_free(struct mp_logscan *s)
{
    free(s->dr_backend);
    free(s->dr_kind);
    mp_strv_release(&s->dr_cands);
    for (size_t i = 0; i < s->noth; i++) {
        free(s->oth_what[i]);
        free(s->oth_value[i]);
    }
    for (size_t i = 0; i < s->ntally; i++)
        free(s->tally_name[i]);
    mp_strv_release(&s->fatal_msgs);
    mp_ki_hits_release(&s->hits);
}
