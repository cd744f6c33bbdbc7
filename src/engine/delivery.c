/* delivery.c - knob delivery checks (engine/delivery.h). */
#include "engine/delivery.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "proc/proc.h"
#include "secret.h"
#include "xalloc.h"

/* ---------- redaction ---------- */

/* "--flag value" with a secret flag's value as *** */
static char *flag_text(const struct mp_knob *k)
{
    struct buf b = BUF_INIT;
    const char *f = k->words.n ? k->words.v[0] : "";
    const char *name = f;
    while (*name == '-')
        name++;
    const char *eq = strchr(name, '=');
    bool secret = mp_is_secret_name(name, eq ? (size_t)(eq - name) : strlen(name));
    if (eq && secret && mp_secret_value_ok(eq + 1, strlen(eq + 1)))
        buf_printf(&b, "%.*s=***", (int)(eq - f), f);
    else
        buf_adds(&b, f);
    for (size_t i = 1; i < k->words.n; i++) {
        const char *w = k->words.v[i];
        buf_addc(&b, ' ');
        buf_adds(&b, secret && mp_secret_value_ok(w, strlen(w)) ? "***" : w);
    }
    return buf_detach(&b, NULL);
}

/* ---------- the engine's non-default args ---------- */

/* End of the Python literal at p (a string, number, name, list, dict,
 * tuple): the first ',' or '}' outside brackets and quotes. */
static const char *literal_end(const char *p)
{
    int depth = 0;
    char q = 0;
    for (; *p; p++) {
        if (q) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == q)
                q = 0;
            continue;
        }
        if (*p == '\'' || *p == '"')
            q = *p;
        else if (*p == '[' || *p == '{' || *p == '(')
            depth++;
        else if (*p == ']' || *p == ')' || (*p == '}' && depth > 0))
            depth--;
        else if (depth == 0 && (*p == ',' || *p == '}'))
            return p;
    }
    return p;
}

int mp_nondefault_find(const char *line, const char *key, char *val, size_t n)
{
    const char *p = line ? strstr(line, "non-default args: {") : NULL;
    if (!p)
        return -1;
    p += strlen("non-default args: {");
    size_t kl = strlen(key);
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p != '\'' && *p != '"')
            return 0; /* '}' or something we do not read */
        char q = *p++;
        const char *ks = p;
        while (*p && *p != q)
            p++;
        if (!*p)
            return 0;
        size_t klen = (size_t)(p - ks);
        p++;
        while (*p == ' ')
            p++;
        if (*p != ':')
            return 0;
        p++;
        while (*p == ' ')
            p++;
        const char *ve = literal_end(p);
        if (klen == kl && !strncmp(ks, key, kl)) {
            snprintf(val, n, "%.*s", (int)(ve - p), p);
            return 1;
        }
        if (*ve != ',')
            return 0;
        p = ve + 1;
    }
    return 0;
}

/* Lower-case, '-' as '_', quotes stripped: how the engine may print a value. */
static void norm(const char *s, size_t len, char *out, size_t n)
{
    if (len >= 2 && (s[0] == '\'' || s[0] == '"') && s[len - 1] == s[0]) {
        s++;
        len -= 2;
    }
    size_t o = 0;
    for (size_t i = 0; i < len && o + 1 < n; i++) {
        char c = (char)tolower((unsigned char)s[i]);
        out[o++] = c == '-' ? '_' : c;
    }
    out[o] = '\0';
}

/* A number as vLLM reads one ("8k" = 8000, "8K" = 8192, "1.5e3"). */
static bool num(const char *s, double *v)
{
    char *end = NULL;
    if (!*s)
        return false;
    *v = strtod(s, &end);
    if (end == s)
        return false;
    if (*end && !end[1]) {
        static const char lo[] = "kmgt", up[] = "KMGT";
        const char *l = strchr(lo, *end), *u = strchr(up, *end);
        double m = 1;
        if (l)
            for (long i = 0; i <= l - lo; i++)
                m *= 1000;
        else if (u)
            for (long i = 0; i <= u - up; i++)
                m *= 1024;
        else
            return false;
        *v *= m;
        end++;
    }
    return *end == '\0';
}

static bool same_value(const char *want, const char *got)
{
    char a[512], b[512];
    norm(want, strlen(want), a, sizeof(a));
    norm(got, strlen(got), b, sizeof(b));
    if (!strcmp(a, b))
        return true;
    double x, y;
    return num(want, &x) && num(got, &y) && x == y;
}

/* Does the printed list/tuple value hold the element want? */
static bool list_has(const char *printed, const char *want)
{
    if (printed[0] != '[' && printed[0] != '(')
        return false;
    const char *p = printed + 1;
    while (*p && *p != ']' && *p != ')') {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        int depth = 0;
        char q = 0;
        for (; *e; e++) {
            if (q) {
                if (*e == q)
                    q = 0;
                continue;
            }
            if (*e == '\'' || *e == '"')
                q = *e;
            else if (*e == '[' || *e == '(' || *e == '{')
                depth++;
            else if ((*e == ']' || *e == ')' || *e == '}') && depth-- == 0)
                break;
            else if (*e == ',' && depth == 0)
                break;
        }
        char el[512];
        snprintf(el, sizeof(el), "%.*s", (int)(e - p), p);
        if (e > p && same_value(want, el))
            return true;
        if (!*e || *e == ']' || *e == ')')
            break;
        p = e + 1;
    }
    return false;
}

static bool scalar(const char *v)
{
    return v[0] != '[' && v[0] != '{' && v[0] != '(';
}

enum mp_dlv_status mp_delivery_judge_flag(const struct mp_knob *k, const char *line, long lineno,
                                          char **evidence)
{
    const char *f = k->words.n ? k->words.v[0] : "";
    if (f[0] != '-') {
        *evidence = xstrdup("not a flag: the engine's arguments are checked by flag name only");
        return MP_DLV_UNVERIFIED;
    }
    if (!line) {
        *evidence = xstrdup("the engine printed no 'non-default args' line to check it against");
        return MP_DLV_UNVERIFIED;
    }
    /* key: the flag without dashes, '-' as '_'; --no-x is x = False */
    const char *name = f;
    while (*name == '-')
        name++;
    const char *eq = strchr(name, '=');
    size_t nl = eq ? (size_t)(eq - name) : strlen(name);
    char key[256];
    snprintf(key, sizeof(key), "%.*s", (int)MP_MIN(nl, sizeof(key) - 1), name);
    for (char *p = key; *p; p++)
        if (*p == '-')
            *p = '_';
    struct mp_strv want = MP_STRV_INIT;
    if (eq)
        mp_strv_push(&want, eq + 1);
    for (size_t i = 1; i < k->words.n; i++)
        mp_strv_push(&want, k->words.v[i]);
    bool secret = mp_is_secret_name(key, strlen(key));
    char got[1024];
    int found = mp_nondefault_find(line, key, got, sizeof(got));
    bool negated = false;
    if (found == 0 && !want.n && !strncmp(key, "no_", 3)) {
        found = mp_nondefault_find(line, key + 3, got, sizeof(got));
        negated = true;
    }
    enum mp_dlv_status st;
    const char *shown = secret ? "***" : got;
    const char *shown_key = negated ? key + 3 : key;
    if (found < 0) {
        st = MP_DLV_UNVERIFIED;
        *evidence = xasprintf("server.log:%ld: the non-default args line could not be read", lineno);
    } else if (found == 0) {
        st = MP_DLV_UNVERIFIED;
        *evidence = xasprintf("server.log:%ld: '%s' is not among the engine's non-default args "
                              "(given with its default value, or not passed)",
                              lineno, key);
    } else {
        bool ok = true;
        if (!want.n) {
            ok = same_value(negated ? "False" : "True", got);
        } else {
            for (size_t i = 0; i < want.n && ok; i++)
                ok = same_value(want.v[i], got) || list_has(got, want.v[i]) ||
                     (want.n > 1 && !scalar(got) && strstr(got, want.v[i]));
        }
        if (ok) {
            st = MP_DLV_VERIFIED;
            *evidence = xasprintf("server.log:%ld: non-default args has '%s': %s", lineno,
                                  shown_key, shown);
        } else if (scalar(got) && want.n <= 1) {
            st = MP_DLV_MISSING;
            *evidence = xasprintf("server.log:%ld: the engine took '%s': %s instead", lineno,
                                  shown_key, shown);
        } else {
            st = MP_DLV_UNVERIFIED;
            *evidence = xasprintf("server.log:%ld: non-default args has '%s': %s, which moeprobe "
                                  "cannot compare with the knob's words",
                                  lineno, shown_key, shown);
        }
    }
    mp_strv_release(&want);
    return st;
}

/* ---------- environment ---------- */

static char *redacted(const char *assign)
{
    return mp_redact_assignment(assign);
}

enum mp_dlv_status mp_delivery_judge_config_env(const char *want, const char *env_json,
                                                const char *what, char **evidence)
{
    cJSON *a = env_json ? cJSON_Parse(env_json) : NULL;
    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        *evidence = xasprintf("%s gave no environment list to check", what);
        return MP_DLV_UNVERIFIED;
    }
    const char *eq = strchr(want, '=');
    size_t nl = eq ? (size_t)(eq - want) + 1 : strlen(want);
    const char *other = NULL;
    bool has = false;
    cJSON *it;
    cJSON_ArrayForEach(it, a)
    {
        if (!cJSON_IsString(it))
            continue;
        if (!strcmp(it->valuestring, want))
            has = true;
        else if (!strncmp(it->valuestring, want, nl))
            other = it->valuestring; /* the last one wins, as in the container */
    }
    char *rw = redacted(want);
    enum mp_dlv_status st;
    if (has) {
        st = MP_DLV_VERIFIED;
        *evidence = xasprintf("%s: the container's environment has %s", what, rw);
    } else {
        st = MP_DLV_MISSING;
        char *ro = other ? redacted(other) : NULL;
        if (ro)
            *evidence = xasprintf("%s: the container's environment has %s, not %s", what, ro, rw);
        else
            *evidence = xasprintf("%s: the container's environment has no %.*s", what,
                                  (int)(nl - (eq ? 1 : 0)), want);
        free(ro);
    }
    free(rw);
    cJSON_Delete(a);
    return st;
}

/* Judge from a process tree's environments. */
static enum mp_dlv_status judge_tree(const char *want, const struct mp_proc_envcheck *ec,
                                     int port, const char *whose, char **evidence)
{
    char *rw = redacted(want);
    enum mp_dlv_status st;
    if (ec->listeners > 0 && ec->listeners_unreadable == 0) {
        /* the process serving the port is the engine: its environment decides */
        if (ec->listeners_with == ec->listeners) {
            char ef[64];
            st = MP_DLV_VERIFIED;
            *evidence = xasprintf("pid %d (%s) of %s, listening on port %d, has %s in %s",
                                  (int)ec->listener, ec->listener_comm[0] ? ec->listener_comm : "?",
                                  whose, port, rw,
                                  mp_proc_environ_file(ec->listener, ef, sizeof(ef)));
        } else {
            st = MP_DLV_MISSING;
            struct buf b = BUF_INIT;
            buf_printf(&b, "pid %d (%s) of %s, listening on port %d, does not have %s in its "
                           "environment",
                       (int)ec->listener, ec->listener_comm[0] ? ec->listener_comm : "?", whose,
                       port, rw);
            if (ec->pid)
                buf_printf(&b, "; pid %d (%s) of the tree has it: a wrapper that did not pass "
                               "it on",
                           (int)ec->pid, ec->comm[0] ? ec->comm : "?");
            if (ec->other[0]) {
                char *ro = redacted(ec->other);
                buf_printf(&b, "; found %s", ro);
                free(ro);
            }
            *evidence = buf_detach(&b, NULL);
        }
        free(rw);
        return st;
    }
    if (ec->pid) {
        char ef[64];
        st = MP_DLV_VERIFIED;
        *evidence = xasprintf("pid %d (%s) of %s has %s in %s", (int)ec->pid,
                              ec->comm[0] ? ec->comm : "?", whose, rw,
                              mp_proc_environ_file(ec->pid, ef, sizeof(ef)));
    } else if (ec->processes == 0) {
        st = MP_DLV_UNVERIFIED;
        *evidence = xasprintf("no live process of %s was found to check", whose);
    } else if (ec->unreadable > 0) {
        st = MP_DLV_UNVERIFIED;
        *evidence = xasprintf("not in the environment of %d readable process(es) of %s; %d "
                              "could not be read (permission)",
                              ec->processes - ec->unreadable, whose, ec->unreadable);
    } else {
        st = MP_DLV_MISSING;
        char *ro = ec->other[0] ? redacted(ec->other) : NULL;
        *evidence = xasprintf("none of the %d process(es) of %s has %s in its environment%s%s",
                              ec->processes, whose, rw, ro ? "; found " : "", ro ? ro : "");
        free(ro);
    }
    free(rw);
    return st;
}

bool mp_delivery_inspect_argv(const struct mp_delivery_ctx *x, struct mp_strv *argv)
{
    const struct mp_launch *l = x->launch;
    if (!l->env_knobs.n || l->kind != MP_SHAPE_DOCKER || !l->container_name)
        return false;
    /* `<client> container inspect --format '{{.State.Pid}} {{json .Config.Env}}' NAME` */
    for (size_t i = 0; i < l->client.n; i++)
        mp_strv_push(argv, l->client.v[i]);
    mp_strv_push(argv, "container"); /* never an image of the same name */
    mp_strv_push(argv, "inspect");
    mp_strv_push(argv, "--format");
    mp_strv_push(argv, "{{.State.Pid}} {{json .Config.Env}}");
    mp_strv_push(argv, l->container_name);
    return true;
}

/* The inspect's answer: 0 with *pid and *env_json (owned), or -1 with *err
 * (owned) saying why not. */
static int inspect_answer(const struct mp_dlv_inspect *in, long *pid, char **env_json, char **err)
{
    *pid = 0;
    *env_json = NULL;
    *err = NULL;
    if (!in || in->rc < 0) {
        *err = xstrdup(in && in->err && in->err[0] ? in->err : "could not run it");
        return -1;
    }
    /* the answer line: "PID [...]"; anything else is warnings */
    const char *p = in->out ? in->out : "";
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *endp = NULL;
        long v = strtol(p, &endp, 10);
        if (endp != p && *endp == ' ' && endp[1] == '[') {
            *pid = v;
            *env_json = xstrndup(endp + 1, len - (size_t)(endp + 1 - p));
            break;
        }
        if (!*err && len)
            *err = xstrndup(p, MP_MIN(len, 300));
        p = e ? e + 1 : p + len;
    }
    if (*env_json) {
        free(*err);
        *err = NULL;
    } else if (!*err) {
        *err = xstrdup(in->status == -1 ? "timed out" : "no answer");
    }
    return *env_json ? 0 : -1;
}

static void check_env(const struct mp_delivery_ctx *x, const struct mp_dlv_inspect *in,
                      struct mp_attempt_result *r)
{
    const struct mp_launch *l = x->launch;
    if (!l->env_knobs.n)
        return;
    long cpid = 0;
    char *env_json = NULL, *err = NULL;
    char what[256] = "";
    bool inspected = false;
    if (l->kind == MP_SHAPE_DOCKER && l->container_name) {
        struct buf cl = BUF_INIT;
        for (size_t i = 0; i < l->client.n; i++) {
            if (i)
                buf_addc(&cl, ' ');
            buf_add_shell_word(&cl, l->client.v[i]);
        }
        snprintf(what, sizeof(what), "%s container inspect %s", cl.data ? cl.data : "",
                 l->container_name);
        buf_release(&cl);
        inspected = inspect_answer(in, &cpid, &env_json, &err) == 0;
    }
    for (size_t i = 0; i < l->env_knobs.n; i++) {
        const char *want = l->env_knobs.v[i];
        char *rw = redacted(want);
        char *ev = NULL;
        enum mp_dlv_status st = MP_DLV_UNVERIFIED;
        if (l->client_other) {
            ev = xasprintf("'%s' is not a container run moeprobe delivers knobs to: the variable "
                           "went to the client's environment only",
                           l->client_other);
        } else if (l->kind == MP_SHAPE_DOCKER && !l->container_name) {
            ev = xstrdup("the container has no name moeprobe could inspect");
        } else if (l->kind == MP_SHAPE_DOCKER && !inspected) {
            char *m = err ? mp_redact_assignment(err) : NULL;
            ev = xasprintf("`%s` failed: %s", what, m ? m : "no answer");
            free(m);
        } else if (l->kind == MP_SHAPE_DOCKER) {
            st = mp_delivery_judge_config_env(want, env_json, what, &ev);
            if (st == MP_DLV_VERIFIED && !l->remote && cpid > 0) {
                struct mp_proc_envcheck ec;
                if (mp_proc_tree_env(0, NULL, (pid_t)cpid, x->port, want, &ec) == 0 &&
                    ec.processes > 0 &&
                    ec.unreadable == 0) {
                    char *e2 = NULL;
                    st = judge_tree(want, &ec, x->port, "the container", &e2);
                    char *e3 = xasprintf(st == MP_DLV_MISSING
                                             ? "%s, but %s (dropped on the way to the engine)"
                                             : "%s; %s",
                                         ev, e2);
                    free(e2);
                    free(ev);
                    ev = e3;
                } else {
                    char *e2 = xasprintf("%s (its processes could not be read)", ev);
                    free(ev);
                    ev = e2;
                }
            } else if (st == MP_DLV_VERIFIED && l->remote) {
                char *e2 = xasprintf("%s (the container runs where the client points; its "
                                     "processes are not read)", ev);
                free(ev);
                ev = e2;
            }
        } else {
            struct mp_proc_envcheck ec;
            if (mp_proc_tree_env(x->leader, x->marker, 0, x->port, want, &ec) < 0)
                ev = xstrdup("/proc could not be read");
            else
                st = judge_tree(want, &ec, x->port, "the engine's process tree", &ev);
        }
        mp_attempt_add_dlv(r, rw, st, ev);
        free(ev);
        free(rw);
    }
    free(env_json);
    free(err);
}

void mp_delivery_check(const struct mp_delivery_ctx *x, struct mp_attempt_result *r)
{
    struct mp_strv argv = MP_STRV_INIT;
    if (!mp_delivery_inspect_argv(x, &argv)) {
        mp_delivery_check_inspected(x, NULL, r);
        return;
    }
    struct buf out = BUF_INIT;
    struct mp_diag d = MP_DIAG_INIT;
    struct mp_dlv_inspect in = {.status = -1};
    in.rc = mp_proc_capture(mp_strv_array(&argv), MP_DELIVERY_INSPECT_TIMEOUT_S, &out, &in.status,
                            &d);
    in.out = out.data;
    in.err = d.msg;
    mp_delivery_check_inspected(x, &in, r);
    buf_release(&out);
    mp_strv_release(&argv);
}

void mp_delivery_check_inspected(const struct mp_delivery_ctx *x, const struct mp_dlv_inspect *in,
                                 struct mp_attempt_result *r)
{
    check_env(x, in, r);
    struct mp_knobs ks = MP_KNOBS_INIT;
    if (x->cand)
        mp_candidate_knobs(x->cand, &ks);
    for (size_t i = 0; i < ks.n; i++) {
        if (ks.k[i].env)
            continue;
        char *ev = NULL;
        enum mp_dlv_status st =
            mp_delivery_judge_flag(&ks.k[i], x->nondefault, x->nondefault_line, &ev);
        char *t = flag_text(&ks.k[i]);
        mp_attempt_add_dlv(r, t, st, ev);
        free(t);
        free(ev);
    }
    mp_knobs_release(&ks);
}

void mp_delivery_unverified(const struct mp_candidate *cand, const char *const *extra_env,
                            const char *why, struct mp_attempt_result *r)
{
    struct mp_knobs ks = MP_KNOBS_INIT;
    if (cand)
        mp_candidate_knobs(cand, &ks);
    for (size_t i = 0; i < ks.n; i++) {
        char *t = ks.k[i].env ? redacted(ks.k[i].text) : flag_text(&ks.k[i]);
        mp_attempt_add_dlv(r, t, MP_DLV_UNVERIFIED, why);
        free(t);
    }
    for (size_t i = 0; extra_env && extra_env[i]; i++) {
        char *t = redacted(extra_env[i]);
        mp_attempt_add_dlv(r, t, MP_DLV_UNVERIFIED, why);
        free(t);
    }
    mp_knobs_release(&ks);
}
