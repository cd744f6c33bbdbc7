/* era.c - candidates fitted to the engine's version (cli/era.h). */
#include "cli/era.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spec.h"
#include "err.h"
#include "store/runinfo.h"
#include "store/store.h"
#include "strv.h"
#include "xalloc.h"

const char *mp_era_assumed(const struct mp_knowledge *kn, const char *engine_version,
                           char *const *cmd, size_t ncmd, const char **from)
{
    static char tagver[64];
    *from = NULL;
    if (engine_version) {
        *from = "--engine-version";
        return engine_version;
    }
    if (mp_image_engine_version(kn, cmd, ncmd, tagver, sizeof(tagver))) {
        *from = "the image tag";
        return tagver;
    }
    return NULL;
}

static ssize_t find_cand(const struct mp_report *rep, const char *name)
{
    for (size_t i = 0; i < rep->n; i++)
        if (!strcmp(rep->c[i].cand.name, name))
            return (ssize_t)i;
    return -1;
}

static void set_na(struct mp_cand_report *c, const char *why)
{
    free(c->not_applicable);
    c->not_applicable = why ? xstrdup(why) : NULL;
}

/* The preset's candidates as version spells them, into rep; changed[i]
 * set for those whose knobs or applicability changed (rep->n entries). */
static void refit_preset(struct mp_era *e, const char *version, struct mp_report *rep, bool **done,
                         bool **changed)
{
    struct mp_preset_cand *p = NULL;
    size_t n = 0;
    if (!e->preset || mp_preset_express(e->kn, e->preset, version, &p, &n) < 0)
        return;
    for (size_t k = 0; k < n; k++) {
        ssize_t i = find_cand(rep, p[k].cand.name);
        char *was = NULL;
        if (i < 0) {
            if (!mp_csv_has(e->only, p[k].cand.name))
                continue; /* a later backend --only leaves out */
            i = (ssize_t)mp_report_add_candidate(rep, &p[k].cand);
            *done = xreallocarray(*done, rep->n + 1, sizeof(**done));
            *changed = xreallocarray(*changed, rep->n + 1, sizeof(**changed));
            (*done)[i] = false;
            (*changed)[i] = true;
        } else if (rep->c[i].nattempts) {
            continue; /* started already: it stays what it was */
        } else {
            was = mp_candidate_knobs_str(&rep->c[i].cand);
            mp_candidate_release(&rep->c[i].cand);
            mp_candidate_copy(&rep->c[i].cand, &p[k].cand);
        }
        char *now = mp_candidate_knobs_str(&rep->c[i].cand);
        if ((was && strcmp(was, now) != 0) || p[k].not_applicable || rep->c[i].not_applicable)
            (*changed)[i] = true;
        free(was);
        free(now);
        set_na(&rep->c[i], p[k].not_applicable);
    }
    mp_preset_free(p, n);
}

int mp_era_fit(struct mp_era *e, const char *version, struct mp_report *rep, struct mp_store *st,
               bool **done)
{
    if (!version || (e->applied && !strcmp(e->applied, version)))
        return 0;
    if (e->assumed && strcmp(e->assumed, version) != 0 && !e->quiet)
        mp_warn("the engine says it is vLLM %s, %s said %s: the candidates not started yet are "
                "fitted to %s",
                version, e->assumed_from ? e->assumed_from : "the assumption", e->assumed,
                version);
    bool *changed = xcalloc(rep->n + 1, sizeof(*changed));
    refit_preset(e, version, rep, done, &changed);
    for (size_t i = 0; i < rep->n; i++) {
        struct mp_cand_report *c = &rep->c[i];
        if (c->nattempts || (*done)[i] || !changed[i])
            continue;
        if (st && mp_store_candidate_update(st, i, &c->cand, c->not_applicable) < 0) {
            free(changed);
            return mp_error("cannot write the evidence store: %s", mp_store_errmsg(st));
        }
    }
    free(changed);
    free(e->applied);
    e->applied = xstrdup(version);
    if (st && e->preset && mp_store_set_preset_version(st, version) < 0)
        return mp_error("cannot write the evidence store: %s", mp_store_errmsg(st));
    free(rep->preset_version);
    rep->preset_version = e->preset ? xstrdup(version) : NULL;
    return 0;
}

void mp_era_release(struct mp_era *e)
{
    free(e->applied);
    e->applied = NULL;
}
