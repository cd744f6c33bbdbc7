/* overview.c - the first screen's shared parts (overview.h). */
#include "report/overview.h"

#include <stdlib.h>
#include <string.h>

#include "engine/launch.h"
#include "escape.h"
#include "report/internal.h"
#include "verdict/inherit.h"
#include "xalloc.h"

static cJSON *str_or_null(const char *s)
{
    return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

void mp_rep_inherited_json(const struct mp_report *rep, cJSON *fp)
{
    const struct mp_inherited *in = &rep->inherited;
    cJSON *env = cJSON_AddObjectToObject(fp, "inherited_env");
    cJSON *det = cJSON_AddArrayToObject(fp, "inherited_env_detail");
    for (size_t i = 0; i < in->n; i++) {
        const struct mp_inh_var *v = &in->v[i];
        if (v->passed)
            cJSON_AddItemToObject(env, v->name, cJSON_CreateString(v->value));
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "name", cJSON_CreateString(v->name));
        cJSON_AddItemToObject(o, "value", cJSON_CreateString(v->value));
        cJSON_AddBoolToObject(o, "passed", v->passed);
        cJSON_AddItemToObject(o, "acts_on_selection",
                              v->acts == MP_INH_UNKNOWN ? cJSON_CreateNull()
                                                        : cJSON_CreateBool(v->acts == MP_INH_YES));
        cJSON_AddItemToObject(o, "affects", str_or_null(v->affects));
        cJSON_AddItemToObject(o, "note", str_or_null(v->note));
        cJSON_AddItemToArray(det, o);
    }
    cJSON_AddBoolToObject(fp, "clean_env", in->clean_env);
}

/* What a variable does, in a few words. */
static const char *acts_words(const struct mp_inh_var *v)
{
    if (v->acts == MP_INH_UNKNOWN && v->affects)
        return "acts on a kernel selection in some vLLM versions: the engine's is not known";
    if (v->acts == MP_INH_UNKNOWN)
        return "unknown to moeprobe: may change a kernel selection";
    if (v->acts != MP_INH_YES)
        return "no selection";
    if (v->affects && !strcmp(v->affects, "moe"))
        return "acts on the MoE backend selection";
    if (v->affects && !strcmp(v->affects, "linear"))
        return "acts on the dense kernel selection";
    if (v->affects && !strcmp(v->affects, "attention"))
        return "acts on the attention backend selection";
    return "acts on a kernel selection";
}

/* The variables with passed == want, as "`A=1` (what it does), ..." in the
 * format of md (else HTML). Returns how many. */
static size_t list_vars(const struct mp_inherited *in, bool want, bool md, struct buf *b)
{
    size_t n = 0;
    for (size_t i = 0; i < in->n; i++) {
        const struct mp_inh_var *v = &in->v[i];
        if (v->passed != want)
            continue;
        char *kv = xasprintf("%s=%s", v->name, v->value);
        buf_adds(b, n++ ? ", " : "");
        if (md) {
            mp_md_code(b, kv, 400, 0);
        } else {
            buf_adds(b, v->acts != MP_INH_NO && want ? "<code class=bad>" : "<code>");
            mp_html_esc(b, kv, 400);
            buf_adds(b, "</code>");
        }
        if (want) {
            buf_adds(b, " (");
            buf_adds(b, md && v->acts != MP_INH_NO ? "**" : "");
            buf_adds(b, acts_words(v));
            buf_adds(b, md && v->acts != MP_INH_NO ? "**" : "");
            buf_adds(b, ")");
        }
        free(kv);
    }
    return n;
}

static size_t count(const struct mp_inherited *in, bool passed)
{
    size_t n = 0;
    for (size_t i = 0; i < in->n; i++)
        n += in->v[i].passed == passed;
    return n;
}

/* How many passed variables moeprobe's knowledge does not know. */
static size_t nunknown(const struct mp_inherited *in)
{
    size_t n = 0;
    for (size_t i = 0; i < in->n; i++)
        n += in->v[i].passed && in->v[i].acts == MP_INH_UNKNOWN;
    return n;
}

static void inherited_text(const struct mp_report *rep, bool md, struct buf *b)
{
    const struct mp_inherited *in = &rep->inherited;
    size_t npass = count(in, true), nrem = count(in, false), nact = mp_inherited_nacting(in);
    if (npass) {
        buf_adds(b, md ? "**Inherited environment**: every candidate, auto included, ran with "
                       : "<b>Inherited environment</b>: every candidate, auto included, ran with ");
        list_vars(in, true, md, b);
        buf_adds(b, ". ");
    }
    if (nrem) {
        buf_adds(b, md ? "`--clean-env` removed " : "<code>--clean-env</code> removed ");
        list_vars(in, false, md, b);
        buf_adds(b, " from the engines' environment. ");
    }
    if (nact)
        buf_printf(b, "%s on what the engine selects, so \"auto\" is not the engine's "
                      "default here and no knob is called a no-op unless the engine said it does "
                      "not know it; %s starts the engines without %s.",
                   nact == 1 ? (nunknown(in) ? "One of them may act" : "One of them acts")
                             : (nunknown(in) ? "Some of them may act" : "Some of them act"),
                   md ? "`--clean-env`" : "<code>--clean-env</code>", nact == 1 ? "it" : "them");
    else if (npass && !in->clean_env)
        buf_adds(b, "None of them acts on a kernel selection (per moeprobe's knowledge).");
}

void mp_rep_inherited_md(const struct mp_report *rep, struct buf *b)
{
    if (!rep->inherited.n)
        return;
    inherited_text(rep, true, b);
    buf_adds(b, "\n\n");
}

void mp_rep_inherited_html(const struct mp_report *rep, struct buf *b)
{
    if (!rep->inherited.n)
        return;
    buf_adds(b, mp_inherited_nacting(&rep->inherited) ? "<p class=\"fp inh bad\">"
                                                        : "<p class=\"fp inh\">");
    inherited_text(rep, false, b);
    buf_adds(b, "</p>\n");
}

char *mp_rep_inherited_noop_note(const struct mp_report *rep)
{
    char *acting = mp_inherit_acting_list(&rep->inherited);
    if (!acting)
        return NULL;
    char *s = xasprintf("No knob is listed as changing nothing unless the engine said it does not "
                        "know it: the inherited %s changes what every candidate, auto included, "
                        "resolves to (run with --clean-env to compare against the engine's "
                        "default).",
                        acting);
    free(acting);
    return s;
}

void mp_rep_stop_md(const struct mp_report *rep, struct buf *b)
{
    if (!rep->stop_reason)
        return;
    buf_adds(b, "> **The run stopped early.** ");
    mp_md_text(b, rep->stop_reason, 4000, 0);
    buf_adds(b, ". The candidates after it were not started: no backend can be judged while the "
                "command fails; a new run with the fixed command tests them.\n\n");
}

void mp_rep_stop_html(const struct mp_report *rep, struct buf *b)
{
    if (!rep->stop_reason)
        return;
    buf_adds(b, "<div class=banner role=alert><b>The run stopped early.</b> ");
    mp_html_esc(b, rep->stop_reason, 4000);
    buf_adds(b, ". The candidates after it were not started: no backend can be judged while the "
                "command fails; a new run with the fixed command tests them.</div>\n");
}

const char *mp_rep_title(const struct mp_report *rep)
{
    const char *sub = rep->subcommand ? rep->subcommand : "qualify";
    if (mp_report_is_resolve_map(rep) || !strcmp(sub, "resolve"))
        return "moeprobe resolve report: which road leads where";
    if (!strcmp(sub, "soak"))
        return "moeprobe soak report";
    if (!strcmp(sub, "diagnose"))
        return "moeprobe diagnose report";
    if (!strcmp(sub, "minimize"))
        return "moeprobe minimize report";
    return "moeprobe qualify report";
}

/* ---- the candidates at a glance ---- */

char *mp_rep_reason_line(const struct mp_report *rep, const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    if (p && p->outcome == MP_OUT_SAME_CONFIG && c->verdict)
        return xasprintf("same configuration as '%s' (not tested again)",
                         p->same_as ? p->same_as : "?");
    if (!c->verdict || !c->why)
        return xstrdup(c->unfinished ? (rep->stop_reason ? "not started: the run stopped early"
                                                         : "unfinished")
                                     : mp_cand_verdict_label(c));
    const char *w = c->why, *cut = strstr(w, "; ");
    size_t len = strlen(w);
    if (cut && cut - w >= 40)
        len = (size_t)(cut - w);
    if (len > 200) {
        len = 200;
        while (len > 0 && ((unsigned char)w[len] & 0xC0) == 0x80)
            len--; /* not inside a UTF-8 character */
        return xasprintf("%.*s…", (int)len, w);
    }
    return xasprintf("%.*s", (int)len, w);
}

char *mp_rep_evidence_ref(const struct mp_report *rep, const struct mp_cand_report *c)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    long line = p ? (p->fail_line > 0 ? p->fail_line : p->res.moe_backend_line) : 0;
    if (!p || line <= 0 || !p->dir)
        return NULL;
    size_t n = strlen(rep->run_dir);
    const char *d = !strncmp(p->dir, rep->run_dir, n) && p->dir[n] == '/' ? p->dir + n + 1 : p->dir;
    return xasprintf("%s/server.log:%ld", d, line);
}

/* A phase every request of which was served. */
static bool ran_through(const struct mp_phase_result *ph)
{
    return ph->ok > 0 && ph->failed == 0 && (ph->planned <= 0 || ph->ok >= ph->planned ||
                                             !strcmp(ph->name, "soak"));
}

static const char *failure_word(const struct mp_attempt_result *a)
{
    switch (a->outcome) {
    case MP_OUT_CRASH: return "crash";
    case MP_OUT_HANG: return "hang";
    default: return "failure";
    }
}

void mp_rep_speed_cell(const struct mp_report *rep, const struct mp_cand_report *c, bool seq,
                       char *out, size_t n)
{
    const struct mp_attempt_result *p = mp_cand_primary(c);
    const struct mp_attempt_result *a = mp_rep_numbers_attempt(rep, c);
    const char *shared = a && a != p ? " (shared)" : "";
    size_t len = 0;
    out[0] = '\0';
    for (size_t k = 0; a && k < a->nphases; k++) {
        const struct mp_phase_result *ph = &a->phases[k];
        bool want = seq ? !strcmp(ph->name, "sequential")
                        : !strncmp(ph->name, "concurrency-", 12) || !strcmp(ph->name, "soak");
        if (!want || !ran_through(ph) || len + 1 >= n)
            continue;
        if (seq)
            len += (size_t)snprintf(out + len, n - len, "%.1f", ph->tok_s);
        else
            len += (size_t)snprintf(out + len, n - len, "%s%d: %.1f", len ? ", " : "", ph->level,
                                    ph->tok_s);
    }
    if (len && len + 1 < n) {
        snprintf(out + len, n - len, "%s", shared);
        return;
    }
    bool failed = a && a->outcome != MP_OUT_CLEAN && a->outcome != MP_OUT_SAME_CONFIG &&
                  a->outcome != MP_OUT_RESOLVED && a->outcome != MP_OUT_STARTUP_FAILURE &&
                  (a->req_ok || a->req_failed);
    if (failed && seq)
        snprintf(out, n, "n=%lu before %s%s", a->ok_before_failure, failure_word(a), shared);
    else
        snprintf(out, n, "—");
}

/* ---- next steps ---- */

static void add_step(struct mp_next_step **s, size_t *n, char *what, char *cmd)
{
    *s = xreallocarray(*s, *n + 1, sizeof(**s));
    (*s)[*n].what = what;
    (*s)[(*n)++].cmd = cmd;
}

/* The server command as words (NULL when not recorded). */
static char *const *server_cmd(const struct mp_report *rep, size_t *n)
{
    *n = rep->server_cmd.n;
    return *n ? rep->server_cmd.v : NULL;
}

/* The run directory as a shell word, absolute when it can be. */
static void add_run_dir(const struct mp_report *rep, struct buf *b)
{
    char *abs = realpath(rep->run_dir, NULL);
    buf_add_shell_word(b, abs ? abs : rep->run_dir);
    free(abs);
}

/* The recommendation as a serve command: its knobs where they reach the
 * engine, with the inherited variables that act on a selection (its result
 * depends on them), {port} as 8000. */
static char *serve_cmd(const struct mp_report *rep, const struct mp_cand_report *c)
{
    size_t n;
    char *const *cmd = server_cmd(rep, &n);
    if (!cmd)
        return NULL;
    struct mp_strv extra = MP_STRV_INIT;
    for (size_t i = 0; i < rep->inherited.n; i++) {
        const struct mp_inh_var *v = &rep->inherited.v[i];
        if (v->passed && v->acts != MP_INH_NO)
            mp_strv_push_owned(&extra, xasprintf("%s=%s", v->name, v->value));
    }
    struct mp_launch l;
    mp_launch_build(&l, cmd, n, &c->cand, 8000, (const char *const *)mp_strv_array(&extra), NULL);
    char *s = mp_launch_display(&l);
    mp_launch_release(&l);
    mp_strv_release(&extra);
    return s;
}

static char *soak_cmd(const struct mp_report *rep, const struct mp_cand_report *c)
{
    size_t n;
    char *const *cmd = server_cmd(rep, &n);
    if (!cmd)
        return NULL;
    struct buf b = BUF_INIT;
    char *knobs = mp_candidate_knobs_str(&c->cand);
    char *spec = xasprintf("%s: %s", c->cand.name, knobs);
    buf_adds(&b, "moeprobe soak --duration 9h --candidate ");
    buf_add_shell_word(&b, spec);
    if (rep->inherited.clean_env)
        buf_adds(&b, " --clean-env");
    buf_adds(&b, " --");
    for (size_t i = 0; i < n; i++) {
        buf_addc(&b, ' ');
        buf_add_shell_word(&b, cmd[i]);
    }
    free(spec);
    free(knobs);
    return buf_detach(&b, NULL);
}

static bool failing(enum mp_verdict v)
{
    return v == MP_V_ASYNC_RACE || v == MP_V_KERNEL_FAULT || v == MP_V_CRASHED ||
           v == MP_V_STARTUP_FAILURE || v == MP_V_HANG || v == MP_V_GARBAGE_OUTPUT ||
           v == MP_V_SERVER_ERROR;
}

/* `report --format issue` for each candidate that failed by itself (not a
 * shared result), at most 3. */
static void issue_steps(const struct mp_report *rep, struct mp_next_step **s, size_t *n)
{
    size_t k = 0;
    for (size_t i = 0; i < rep->n && k < 3; i++) {
        const struct mp_cand_report *c = &rep->c[i];
        const struct mp_attempt_result *p = mp_cand_primary(c);
        const char *cls = p && p->fail_class ? p->fail_class : "";
        /* a backend the engine rejects for this device is its design, not a bug */
        if (!failing(c->verdict) || mp_rep_is_same_config(c) ||
            !strcmp(cls, "unsupported-backend") || !strcmp(cls, "no-moe-backend"))
            continue;
        struct buf b = BUF_INIT;
        buf_adds(&b, "moeprobe report --format issue --candidate ");
        buf_add_shell_word(&b, c->cand.name);
        buf_addc(&b, ' ');
        add_run_dir(rep, &b);
        char *file = xasprintf("%s-issue.md", c->cand.name);
        buf_adds(&b, " > ");
        buf_add_shell_word(&b, file);
        free(file);
        add_step(s, n,
                 xasprintf("report '%s' (%s) upstream: a bug report with its evidence", c->cand.name,
                           mp_verdict_name(c->verdict)),
                 buf_detach(&b, NULL));
        k++;
    }
}

size_t mp_rep_next_steps(const struct mp_report *rep, struct mp_next_step **out)
{
    size_t n = 0;
    *out = NULL;
    if (rep->stop_reason) {
        add_step(out, &n,
                 xstrdup("run the server command by hand until it starts, then start a new run "
                         "with it (another --out)"),
                 NULL);
        return n;
    }
    if (rep->recommended >= 0) {
        const struct mp_cand_report *c = &rep->c[rep->recommended];
        char *cmd = serve_cmd(rep, c);
        if (cmd)
            add_step(out, &n, xasprintf("serve with '%s', exactly as it was tested", c->cand.name),
                     cmd);
        cmd = soak_cmd(rep, c);
        if (cmd && (!rep->subcommand || strcmp(rep->subcommand, "soak") != 0))
            add_step(out, &n,
                     xstrdup("soak it before you rely on it: a short run bounds the failure rate, "
                             "it does not prove hours (crashes after hours are common on SM12x)"),
                     cmd);
        else
            free(cmd);
    }
    issue_steps(rep, out, &n);
    return n;
}

void mp_rep_next_steps_free(struct mp_next_step *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].what);
        free(s[i].cmd);
    }
    free(s);
}

void mp_rep_next_steps_md(const struct mp_report *rep, struct buf *b)
{
    struct mp_next_step *s;
    size_t n = mp_rep_next_steps(rep, &s);
    if (n)
        buf_adds(b, "## Next steps\n\n");
    for (size_t i = 0; i < n; i++) {
        buf_adds(b, "- ");
        mp_md_text(b, s[i].what, 400, 0);
        if (s[i].cmd) {
            /* a fence longer than any run of backticks in the command */
            size_t run = 0, longest = 2;
            for (const char *p = s[i].cmd; *p; p++) {
                run = *p == '`' ? run + 1 : 0;
                longest = MP_MAX(longest, run);
            }
            buf_adds(b, ":\n\n  ");
            for (size_t k = 0; k <= longest; k++)
                buf_addc(b, '`');
            buf_adds(b, "sh\n  ");
            mp_term_esc(b, s[i].cmd, strlen(s[i].cmd), 0); /* one line, no control bytes */
            buf_adds(b, "\n  ");
            for (size_t k = 0; k <= longest; k++)
                buf_addc(b, '`');
            buf_adds(b, "\n");
        }
        buf_adds(b, "\n");
    }
    mp_rep_next_steps_free(s, n);
}

void mp_rep_next_steps_html(const struct mp_report *rep, struct buf *b)
{
    struct mp_next_step *s;
    size_t n = mp_rep_next_steps(rep, &s);
    if (n)
        buf_adds(b, "<h2>Next steps</h2>\n<ul class=next>");
    for (size_t i = 0; i < n; i++) {
        buf_adds(b, "<li>");
        mp_html_esc(b, s[i].what, 400);
        if (s[i].cmd) {
            buf_adds(b, ":<pre>");
            mp_html_esc(b, s[i].cmd, 8192);
            buf_adds(b, "</pre>");
        }
        buf_adds(b, "</li>");
    }
    if (n)
        buf_adds(b, "</ul>\n");
    mp_rep_next_steps_free(s, n);
}
