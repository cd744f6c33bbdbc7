/* issues.c - the known-issue matcher (issues.h). Pure: facts in, hits out. */
#include "compat.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "knowledge/issues.h"
#include "vec.h"
#include "xalloc.h"

static bool re_hit(const pcre2_code *re, const char *s)
{
    if (!re || !s)
        return false;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int rc = pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

static bool re_any(const pcre2_code *re, const char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (re_hit(re, v[i]))
            return true;
    return false;
}

static bool in_set(char *const *set, size_t n, const char *s)
{
    for (size_t i = 0; s && i < n; i++)
        if (!strcmp(set[i], s))
            return true;
    return false;
}

/* Do the signature criteria the entry names all hold? The kernel regex is
 * satisfied by a resolved selection or by an error message that names the
 * kernel (a core dump, "This kernel only supports sm120"). */
static bool signature_holds(const struct mp_kn_issue *is, const struct mp_ki_facts *f)
{
    if (is->nclasses && !in_set(is->classes, is->nclasses, f->crash_class ? f->crash_class : "none"))
        return false;
    if (is->message && !re_any(is->message, f->messages, f->nmessages))
        return false;
    if (is->unless && re_any(is->unless, f->messages, f->nmessages))
        return false;
    if (is->kernel && !re_any(is->kernel, f->kernels, f->nkernels) &&
        !re_any(is->kernel, f->messages, f->nmessages))
        return false;
    if (is->nfindings) {
        bool any = false;
        for (size_t i = 0; i < f->nfindings && !any; i++)
            any = in_set(is->findings, is->nfindings, f->findings[i]);
        if (!any)
            return false;
    }
    return true;
}

static void devices_text(const struct mp_kn_issue *is, struct buf *b)
{
    for (size_t i = 0; i < is->ndevices; i++)
        buf_printf(b, "%s%s", i ? "/" : "", is->devices[i]);
}

static void range_text(const struct mp_kn_issue *is, struct buf *b)
{
    if (is->has_from)
        buf_printf(b, ">= %d.%d.%d", is->from.v[0], is->from.v[1], is->from.v[2]);
    if (is->has_from && is->has_until)
        buf_adds(b, ", ");
    if (is->has_until)
        buf_printf(b, "< %d.%d.%d", is->until.v[0], is->until.v[1], is->until.v[2]);
}

/* The context criteria: contradictions into differs, unknowns into unconfirmed. */
static void judge_context(const struct mp_kn_issue *is, const struct mp_ki_facts *f,
                          struct buf *differs, struct buf *unconfirmed)
{
    if (is->ndevices) {
        struct buf *b = !f->device ? unconfirmed
                        : in_set(is->devices, is->ndevices, f->device) ? NULL : differs;
        if (b) {
            buf_adds(b, b->len ? "; " : "");
            if (f->device)
                buf_printf(b, "device %s (known issue: ", f->device);
            else
                buf_adds(b, "the device is not known (known issue: ");
            devices_text(is, b);
            buf_addc(b, ')');
        }
    }
    if (!is->has_from && !is->has_until)
        return;
    struct mp_kn_ver v;
    bool known = f->engine_version && mp_kn_ver_parse(f->engine_version, &v) == 0;
    bool inside = known && !(is->has_from && mp_kn_ver_cmp(&v, &is->from) < 0) &&
                  !(is->has_until && mp_kn_ver_cmp(&v, &is->until) >= 0);
    if (known && inside)
        return;
    struct buf *b = known ? differs : unconfirmed;
    buf_adds(b, b->len ? "; " : "");
    if (known)
        buf_printf(b, "vLLM %s (known issue: ", f->engine_version);
    else
        buf_adds(b, "the vLLM version is not known (known issue: ");
    range_text(is, b);
    buf_addc(b, ')');
    if (known && is->has_until && mp_kn_ver_cmp(&v, &is->until) >= 0 && is->fixed_in)
        buf_printf(b, ", at or after the fix (%s): a regression or another cause", is->fixed_in);
}

static void push_hit(struct mp_ki_hits *out, size_t *cap, const struct mp_kn_issue *is,
                     enum mp_ki_kind kind, struct buf *differs, struct buf *unconfirmed)
{
    mp_grow(out->v, *cap, out->n + 1);
    struct mp_ki_hit *h = &out->v[out->n++];
    h->issue = is;
    h->kind = kind;
    h->differs = differs->len ? buf_detach(differs, NULL) : NULL;
    h->unconfirmed = unconfirmed->len ? buf_detach(unconfirmed, NULL) : NULL;
}

size_t mp_ki_match(const struct mp_knowledge *k, const struct mp_ki_facts *f,
                   struct mp_ki_hits *out)
{
    memset(out, 0, sizeof(*out));
    size_t cap = 0, nexact = 0;
    for (int pass = 0; pass < 2; pass++) { /* exact ones first, then near ones */
        for (size_t i = 0; i < k->nissues; i++) {
            const struct mp_kn_issue *is = &k->issues[i];
            if (!signature_holds(is, f))
                continue;
            struct buf differs = BUF_INIT, unconfirmed = BUF_INIT;
            judge_context(is, f, &differs, &unconfirmed);
            bool exact = differs.len == 0;
            if (exact == (pass == 0))
                push_hit(out, &cap, is, exact ? MP_KI_EXACT : MP_KI_NEAR, &differs, &unconfirmed);
            buf_release(&differs);
            buf_release(&unconfirmed);
        }
        if (pass == 0)
            nexact = out->n;
        if (nexact)
            break; /* near hits only lead where nothing matches exactly */
    }
    return out->n;
}

void mp_ki_hits_release(struct mp_ki_hits *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->v[i].differs);
        free(h->v[i].unconfirmed);
    }
    free(h->v);
    memset(h, 0, sizeof(*h));
}

void mp_ki_hit_line(const struct mp_ki_hit *h, struct buf *out)
{
    const struct mp_kn_issue *is = h->issue;
    buf_printf(out, "%s known issue %s (%s): ",
               h->kind == MP_KI_EXACT ? "matches" : "resembles", is->id, is->title);
    buf_printf(out, "%s%s", is->fixed_in ? "fixed in " : "no fix release known",
               is->fixed_in ? is->fixed_in : "");
    if (is->workaround)
        buf_printf(out, " / workaround: %s", is->workaround);
    if (h->differs)
        buf_printf(out, " - differs: %s", h->differs);
    if (h->unconfirmed)
        buf_printf(out, " - not confirmed: %s", h->unconfirmed);
    buf_printf(out, " [%s]", is->source);
}

static void jstr(struct buf *b, const char *s)
{
    if (s)
        buf_add_json_str(b, s, strlen(s));
    else
        buf_adds(b, "null");
}

void mp_ki_hits_to_json(const struct mp_ki_hits *h, struct buf *b)
{
    buf_addc(b, '[');
    for (size_t i = 0; i < h->n; i++) {
        const struct mp_ki_hit *x = &h->v[i];
        buf_adds(b, i ? ", {\"id\": " : "{\"id\": ");
        jstr(b, x->issue->id);
        buf_adds(b, ", \"title\": ");
        jstr(b, x->issue->title);
        buf_adds(b, ", \"source\": ");
        jstr(b, x->issue->source);
        buf_printf(b, ", \"match\": \"%s\", \"fixed_in\": ", x->kind == MP_KI_EXACT ? "exact" : "near");
        jstr(b, x->issue->fixed_in);
        buf_adds(b, ", \"workaround\": ");
        jstr(b, x->issue->workaround);
        buf_adds(b, ", \"differs\": ");
        jstr(b, x->differs);
        buf_adds(b, ", \"unconfirmed\": ");
        jstr(b, x->unconfirmed);
        buf_addc(b, '}');
    }
    buf_addc(b, ']');
}

const char *mp_ki_device(const char *cc, char *buf, size_t n)
{
    if (!cc || n < 8)
        return NULL;
    const char *p = cc;
    if (!strncasecmp(p, "sm", 2)) {
        p += 2;
        if (*p == '_')
            p++;
    }
    int major = 0, minor = 0, digits = 0;
    if (strchr(p, '.')) {
        if (sscanf(p, "%d.%d", &major, &minor) != 2 || major < 1 || major > 99 || minor < 0 ||
            minor > 9)
            return NULL;
    } else {
        int v = 0;
        for (; p[digits] >= '0' && p[digits] <= '9' && digits < 4; digits++)
            v = v * 10 + (p[digits] - '0');
        if (digits < 2 || digits > 3)
            return NULL;
        major = v / 10;
        minor = v % 10;
    }
    snprintf(buf, n, "sm%d%d", major, minor);
    return buf;
}

void mp_ki_kernel(struct mp_strv *out, const char *area, const char *name)
{
    if (!name || !name[0] || !area)
        return;
    char *a = xstrdup(area);
    for (char *p = a; *p; p++)
        *p = *p == ' ' ? '-' : (char)tolower((unsigned char)*p);
    char *x = xasprintf("%s:%s", a, name);
    if (!mp_strv_has(out, x))
        mp_strv_push(out, x);
    free(x);
    free(a);
}
