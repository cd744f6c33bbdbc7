/* era.h - a run's candidates fitted to the engine's version (cli/spec.h):
 * once the version is known (--engine-version, a known image tag, or the
 * first engine start), the preset's candidates not started yet are
 * expressed with the knobs that exist there (and the ones that appear only
 * in later versions added or left out), and one with no road there is
 * marked not applicable instead of being started into an argparse error.
 * Candidates given with --candidate run as given (the engine's own error
 * is their evidence). Loop-thread only. */
#ifndef MP_CLI_ERA_H
#define MP_CLI_ERA_H

#include "compat.h"

#include "model/report.h"

struct mp_knowledge;
struct mp_store;

struct mp_era {
    const struct mp_knowledge *kn;  /* borrowed */
    const char *preset;             /* the preset the candidates came from, or NULL */
    const char *only;               /* --only, or NULL */
    const char *assumed;            /* --engine-version or the image tag's version, or NULL */
    const char *assumed_from;       /* "--engine-version" or "the image tag" */
    char *applied;                  /* the version the candidates were fitted to */
    bool quiet;
};

/* The version before any start: --engine-version, else the image of the
 * server command when the knowledge knows it (an upstream tag, an NGC tag;
 * a static buffer), else NULL (*from names it). */
const char *mp_era_assumed(const struct mp_knowledge *kn, const char *engine_version,
                           char *const *cmd, size_t ncmd, const char **from);

/* Fit rep's candidates that have no attempt yet to version (NULL: nothing
 * to do; the same version as last time: nothing either): re-express the
 * preset's, add the later-only ones it lacks (that --only allows; *done
 * grows with rep->n), mark the not applicable ones, record them in st. An
 * observed version that differs from an assumed one is warned about.
 * 0, or -1 when the store could not be written (message printed). */
int mp_era_fit(struct mp_era *e, const char *version, struct mp_report *rep, struct mp_store *st,
               bool **done);
void mp_era_release(struct mp_era *e);

#endif
