/* gpufault.c - the catalog of data/gpufault.json (gpufault.h). */
#include "logs/gpufault.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char mp_data_gpufault_json[];
extern const size_t mp_data_gpufault_json_len;

#define MAX_PATTERNS 12

struct family {
    const char *id, *label;
    const char *all[MAX_PATTERNS], *any[MAX_PATTERNS];
    size_t nall, nany;
};

static struct {
    bool loaded;
    cJSON *root; /* owns every string below; kept for the process' life */
    struct family *fam;
    size_t nfam;
    cJSON *exc, *xids;
} G;

static size_t patterns(cJSON *arr, const char **out)
{
    size_t n = 0;
    cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (cJSON_IsString(it) && it->valuestring[0] && n < MAX_PATTERNS)
            out[n++] = it->valuestring;
    }
    return n;
}

static void load(void)
{
    if (G.loaded)
        return;
    G.loaded = true;
    G.root = cJSON_ParseWithLength((const char *)mp_data_gpufault_json, mp_data_gpufault_json_len);
    cJSON *fams = cJSON_GetObjectItemCaseSensitive(G.root, "kernel_families");
    int n = cJSON_GetArraySize(fams);
    G.fam = n > 0 ? calloc((size_t)n, sizeof(*G.fam)) : NULL;
    cJSON *f;
    cJSON_ArrayForEach(f, fams)
    {
        cJSON *id = cJSON_GetObjectItemCaseSensitive(f, "id");
        cJSON *label = cJSON_GetObjectItemCaseSensitive(f, "label");
        if (!G.fam || !cJSON_IsString(id) || !cJSON_IsString(label))
            continue;
        struct family *x = &G.fam[G.nfam];
        x->id = id->valuestring;
        x->label = label->valuestring;
        x->nall = patterns(cJSON_GetObjectItemCaseSensitive(f, "all"), x->all);
        x->nany = patterns(cJSON_GetObjectItemCaseSensitive(f, "any"), x->any);
        if (x->nall || x->nany)
            G.nfam++;
    }
    G.exc = cJSON_GetObjectItemCaseSensitive(G.root, "exceptions");
    G.xids = cJSON_GetObjectItemCaseSensitive(G.root, "xids");
}

static bool word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* the first pattern of pats found in s (and where), or NULL */
static const char *find_any(const char *s, const char *const *pats, size_t n, const char **at)
{
    for (size_t i = 0; s && i < n; i++) {
        const char *p = strstr(s, pats[i]);
        if (p) {
            *at = p;
            return pats[i];
        }
    }
    return NULL;
}

static bool has_all(const char *s, const char *const *pats, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!s || !strstr(s, pats[i]))
            return false;
    return true;
}

/* the identifier of s around the first identifier of the pattern found at
 * s + at ("cutlass::device_kernel" found -> "cutlass") */
static void key_of(const char *s, const char *at, char *out, size_t outn)
{
    const char *b = at, *e = at;
    while (b > s && word_char(b[-1]))
        b--;
    while (*e && word_char(*e))
        e++;
    size_t n = (size_t)(e - b);
    if (!word_char(*at) || n >= outn)
        n = 0;
    memcpy(out, b, n);
    out[n] = '\0';
}

static bool match(const struct family *f, const char *s, struct mp_kfamily *out)
{
    if (!s || !has_all(s, f->all, f->nall))
        return false;
    const char *at = NULL, *pat = NULL;
    if (f->nany && !(pat = find_any(s, f->any, f->nany, &at)))
        return false;
    if (!pat)
        at = strstr(s, pat = f->all[f->nall - 1]); /* the most telling one: listed last */
    out->id = f->id;
    out->label = f->label;
    key_of(s, at, out->key, sizeof(out->key));
    return true;
}

bool mp_gf_family(const char *readable, const char *raw, struct mp_kfamily *out)
{
    memset(out, 0, sizeof(*out));
    load();
    for (size_t i = 0; i < G.nfam; i++) {
        if (match(&G.fam[i], readable, out))
            return true;
        if (match(&G.fam[i], raw, out)) {
            out->key[0] = '\0'; /* an identifier of the mangled form reads badly */
            return true;
        }
    }
    memset(out, 0, sizeof(*out));
    return false;
}

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *mp_gf_exception_class(const char *name, const char **meaning)
{
    load();
    if (meaning)
        *meaning = NULL;
    cJSON *e;
    cJSON_ArrayForEach(e, G.exc)
    {
        const char *n = str_of(e, "name");
        if (name && n && !strcmp(n, name)) {
            if (meaning)
                *meaning = str_of(e, "meaning");
            return str_of(e, "class");
        }
    }
    return NULL;
}

static const char *const cause_names[] = {"unknown", "application", "hardware", "driver",
                                          "informational"};

const char *mp_xid_cause_name(enum mp_xid_cause c)
{
    return (unsigned)c < MP_ARRAY_SIZE(cause_names) ? cause_names[c] : "unknown";
}

enum mp_xid_cause mp_xid_cause_from_name(const char *name)
{
    for (size_t i = 0; name && i < MP_ARRAY_SIZE(cause_names); i++)
        if (!strcmp(name, cause_names[i]))
            return (enum mp_xid_cause)i;
    return MP_XID_UNKNOWN;
}

bool mp_xid_cause_blames_system(enum mp_xid_cause c)
{
    return c == MP_XID_HARDWARE || c == MP_XID_DRIVER;
}

bool mp_gf_xid(int xid, struct mp_xid_info *out)
{
    memset(out, 0, sizeof(*out));
    out->xid = xid;
    load();
    cJSON *e;
    cJSON_ArrayForEach(e, G.xids)
    {
        cJSON *x = cJSON_GetObjectItemCaseSensitive(e, "xid");
        if (!cJSON_IsNumber(x) || x->valueint != xid)
            continue;
        out->mnemonic = str_of(e, "mnemonic");
        out->meaning = str_of(e, "meaning");
        out->cause = mp_xid_cause_from_name(str_of(e, "cause"));
        return true;
    }
    return false;
}

void mp_gf_counts(size_t *families, size_t *exceptions, size_t *xids)
{
    load();
    *families = G.nfam;
    *exceptions = (size_t)cJSON_GetArraySize(G.exc);
    *xids = (size_t)cJSON_GetArraySize(G.xids);
}
