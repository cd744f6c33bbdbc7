/* coverage.c - qualify's and resolve's kernel coverage check: find the
 * engine's files (--engine-dir, or the Python environment of a `vllm`
 * server command: its script's #! interpreter), read the GPU code its
 * libraries carry (inspect/kernels.h), keep it in the fingerprint, and say
 * in the plan which candidates' kernels this build cannot run natively.
 * docs/inspect.md "In qualify and resolve". */
#include "cli/coverage.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "inspect/kernels.h"
#include "knowledge/knowledge.h"
#include "store/store.h"
#include "xalloc.h"

/* The `vllm` program of the server command, as a path, or NULL. */
static char *vllm_program(char *const *cmd, size_t n)
{
    size_t i = 0;
    const char *b = i < n ? strrchr(cmd[i], '/') : NULL;
    if (i < n && !strcmp(b ? b + 1 : cmd[i], "env"))
        for (i++; i < n && mp_is_env_word(cmd[i]); i++)
            ;
    if (i >= n)
        return NULL;
    b = strrchr(cmd[i], '/');
    if (strcmp(b ? b + 1 : cmd[i], "vllm") != 0)
        return NULL;
    if (b)
        return xstrdup(cmd[i]);
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        const char *e = strchr(p, ':');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char *cand = xasprintf("%.*s/vllm", (int)l, p);
        if (l && access(cand, X_OK) == 0)
            return cand;
        free(cand);
        p = e ? e + 1 : NULL;
    }
    return NULL;
}

/* The site-packages of the interpreter that runs script (its #! line; with
 * "#!/usr/bin/env python3", the script's own bin/ folder's environment). */
static char *site_packages_of(const char *script)
{
    FILE *f = fopen(script, "re");
    char line[512] = "";
    if (f) {
        if (!fgets(line, sizeof(line), f))
            line[0] = 0;
        fclose(f);
    }
    char *interp = NULL;
    if (!strncmp(line, "#!", 2) && line[2] == '/' && !strstr(line, "/env ")) {
        line[strcspn(line, " \t\r\n")] = 0;
        interp = xstrdup(line + 2);
    } else {
        interp = xstrdup(script); /* bin/vllm next to bin/python */
    }
    char *slash = strrchr(interp, '/');
    if (!slash) {
        free(interp);
        return NULL;
    }
    *slash = 0;
    char *pat = xasprintf("%s/../lib/python3*/site-packages", interp);
    free(interp);
    glob_t g;
    char *out = NULL;
    if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0)
        out = xstrdup(g.gl_pathv[g.gl_pathc - 1]);
    globfree(&g);
    free(pat);
    return out;
}

/* The backend candidate c names explicitly (--moe-backend, an env knob
 * that maps to one), as the knowledge predicts it; NULL: auto. */
static char *predicted_backend(const struct mp_knowledge *kn, const struct mp_candidate *c)
{
    struct mp_explain e;
    if (mp_kn_explain(kn, NULL, c->env.v, c->env.n, c->args.v, c->args.n, &e) != 0)
        return NULL;
    char *b = e.predicted_moe_backend ? xstrdup(e.predicted_moe_backend) : NULL;
    mp_kn_explain_release(&e);
    return b;
}

static void say_plan(const struct mp_engine_kernels *k, const struct mp_knowledge *kn,
                     const struct mp_report *rep)
{
    fprintf(stderr, "moeprobe: engine kernels (%s): %s\n", k->dir, k->summary);
    if (!k->sm)
        return;
    for (size_t i = 0; i < rep->n; i++) {
        char *b = predicted_backend(kn, &rep->c[i].cand);
        const struct mp_engine_backend *eb = NULL;
        for (size_t j = 0; b && j < k->nbackends; j++)
            if (!strcmp(k->backends[j].backend, b))
                eb = &k->backends[j];
        if (eb && eb->library && eb->runs != MP_RUNS_NATIVE)
            fprintf(stderr, "moeprobe: plan: candidate '%s' (%s): %s carries no SASS that "
                    "sm_%u runs%s\n", rep->c[i].cand.name, b, eb->library, k->sm,
                    eb->runs == MP_RUNS_JIT ? "; only PTX, compiled at start-up"
                                            : "; it cannot run natively");
        free(b);
    }
}

int mp_cli_engine_coverage(struct mp_session *ss, const struct mp_opts *o,
                           const struct mp_report *rep, struct mp_report *out_rep)
{
    char *dir = o->engine_dir ? xstrdup(o->engine_dir) : NULL;
    static const char *const top[] = {"vllm", "vllm_*", "flashinfer*", NULL};
    const char *const *filter = NULL;
    if (!dir) {
        char *prog = vllm_program(o->cmd, o->ncmd);
        dir = prog ? site_packages_of(prog) : NULL;
        free(prog);
        filter = top; /* a whole site-packages: only the engine's own packages */
    }
    if (!dir)
        return 0;
    unsigned sm = 0;
    if (rep->fp.compute_capability && mp_cu_parse_sm(rep->fp.compute_capability, &sm) != 0)
        sm = 0;
    struct mp_engine_kernels k;
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_engine_scan_top(dir, filter, sm, "fingerprint", NULL, &k, &d);
    if (rc != 0) {
        char msg[600];
        mp_diag_format(&d, msg, sizeof(msg));
        mp_engine_kernels_release(&k);
        free(dir);
        if (o->engine_dir) /* asked for: a usage error */
            return mp_error("--engine-dir: %s", msg), MP_EXIT_USAGE;
        return 0;
    }
    char *json = mp_engine_to_json_compact(&k);
    int ec = 0;
    if (mp_store_set_engine_kernels(ss->store, json) < 0)
        ec = mp_session_store_failed(ss);
    if (out_rep)
        mp_report_set_engine_kernels_json(out_rep, json);
    if (!ec && !o->quiet)
        say_plan(&k, ss->kn, rep);
    free(json);
    mp_engine_kernels_release(&k);
    free(dir);
    return ec;
}
