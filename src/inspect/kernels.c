/* kernels.c - the compatibility judge, the backend -> library mapping and
 * the directory scan of kernels.h. */
#include "inspect/kernels.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xalloc.h"

extern const unsigned char mp_data_kernel_libs_json[];
extern const size_t mp_data_kernel_libs_json_len;

#define SCAN_MAX_DEPTH 24
#define SCAN_MAX_FILES 200000ul

const char *mp_cu_runs_name(enum mp_cu_runs r)
{
    static const char *const names[] = {"unknown", "no", "jit", "native"};
    return (unsigned)r < MP_ARRAY_SIZE(names) ? names[r] : "unknown";
}

int mp_cu_parse_sm(const char *s, unsigned *sm)
{
    if (!strncmp(s, "sm_", 3))
        s += 3;
    else if (!strncmp(s, "sm", 2))
        s += 2;
    unsigned major = 0, minor = 0, digits = 0;
    const char *p = s;
    while (isdigit((unsigned char)*p) && digits < 4)
        major = major * 10 + (unsigned)(*p++ - '0'), digits++;
    if (!digits)
        return MP_EUSAGE;
    if (*p == '.') { /* "12.1" */
        if (!isdigit((unsigned char)p[1]) || p[2])
            return MP_EUSAGE;
        minor = (unsigned)(p[1] - '0');
        major = major * 10 + minor;
        p += 2;
    }
    if (*p || major < 10 || major > 999)
        return MP_EUSAGE;
    *sm = major;
    return 0;
}

enum mp_cu_runs mp_cu_runs_on(const struct mp_cu_target *t, unsigned dev_sm, char *why, size_t n)
{
    char name[24], dbuf[16];
    mp_cu_target_name(t, name, sizeof(name));
    snprintf(dbuf, sizeof(dbuf), "%u.%u", dev_sm / 10, dev_sm % 10);
    bool same_major = t->sm / 10 == dev_sm / 10, minor_ok = t->sm % 10 <= dev_sm % 10;
    bool ok;
    const char *rule;
    if (t->variant == MP_CU_ARCH) {
        ok = t->sm == dev_sm;
        rule = ok ? "an arch-specific (a) target runs on its own compute capability"
                  : "an arch-specific (a) target runs on its own compute capability only";
    } else if (t->variant == MP_CU_FAMILY) {
        ok = same_major && minor_ok;
        rule = ok ? "a family (f) target runs on its family, same major, equal or higher minor"
                  : "a family (f) target needs the same major and an equal or higher minor";
    } else if (t->kind == MP_CU_SASS) {
        ok = same_major && minor_ok;
        rule = ok ? "SASS runs on the same major with an equal or higher minor"
                  : "SASS needs the same major and an equal or higher minor";
    } else {
        ok = t->sm <= dev_sm;
        rule = ok ? "PTX is compiled by the driver for any equal or newer GPU"
                  : "PTX needs a GPU of at least its compute capability";
    }
    if (why)
        snprintf(why, n, "%s %s %s: %s", name, ok ? "on" : "not on", dbuf, rule);
    if (!ok)
        return MP_RUNS_NO;
    return t->kind == MP_CU_PTX ? MP_RUNS_JIT : MP_RUNS_NATIVE;
}

enum mp_cu_runs mp_cu_judge(const struct mp_cu_targets *t, unsigned dev_sm, char *why, size_t n)
{
    if (why && n)
        why[0] = 0;
    if (!dev_sm) {
        if (why)
            snprintf(why, n, "no compute capability to judge against");
        return MP_RUNS_UNKNOWN;
    }
    enum mp_cu_runs best = MP_RUNS_NO;
    char line[256];
    for (size_t i = 0; i < t->n; i++) {
        enum mp_cu_runs r = mp_cu_runs_on(&t->v[i], dev_sm, line, sizeof(line));
        if (r > best) {
            best = r;
            if (why)
                snprintf(why, n, "%s", line);
        }
    }
    if (best == MP_RUNS_NO && why)
        snprintf(why, n, "no SASS for %u.%u (same major, equal or higher minor; a targets only on their own) and no PTX of %u.%u or older",
                 dev_sm / 10, dev_sm % 10, dev_sm / 10, dev_sm % 10);
    return best;
}

enum mp_cu_runs mp_cu_judge_arch_specific(const struct mp_cu_targets *t, unsigned dev_sm,
                                          char *why, size_t n)
{
    if (!dev_sm)
        return mp_cu_judge(t, dev_sm, why, n);
    if (why && n)
        why[0] = 0;
    enum mp_cu_runs best = MP_RUNS_NO;
    char line[256];
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].variant == MP_CU_PLAIN)
            continue; /* plain code cannot contain arch-specific instructions */
        enum mp_cu_runs r = mp_cu_runs_on(&t->v[i], dev_sm, line, sizeof(line));
        if (r > best) {
            best = r;
            if (why)
                snprintf(why, n, "%s", line);
        }
    }
    if (best != MP_RUNS_NO || !why)
        return best;
    enum mp_cu_runs plain = mp_cu_judge(t, dev_sm, line, sizeof(line));
    if (plain != MP_RUNS_NO)
        snprintf(why, n, "no a or f target for %u.%u, and only those can contain the "
                 "arch-specific instructions these kernels need: the library loads (%s), "
                 "but without these kernels", dev_sm / 10, dev_sm % 10, line);
    else
        snprintf(why, n, "no a or f target for %u.%u, and only those can contain the "
                 "arch-specific instructions these kernels need (nothing else in it runs "
                 "there either)", dev_sm / 10, dev_sm % 10);
    return best;
}

/* ---------- the mapping ---------- */

static char **json_strings(const cJSON *arr, size_t *n)
{
    *n = 0;
    if (!cJSON_IsArray(arr))
        return NULL;
    size_t cnt = (size_t)cJSON_GetArraySize(arr), k = 0;
    char **v = xcalloc(cnt + 1, sizeof(*v));
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (cJSON_IsString(it))
            v[k++] = xstrdup(it->valuestring);
    }
    *n = k;
    return v;
}

static char *json_str(const cJSON *o, const char *key)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(s) ? xstrdup(s->valuestring) : NULL;
}

int mp_kernel_libs_parse(const char *json, size_t len, struct mp_kernel_libs *out,
                         struct mp_diag *d)
{
    memset(out, 0, sizeof(*out));
    cJSON *root = cJSON_ParseWithLength(json, len);
    const cJSON *arr = root ? cJSON_GetObjectItemCaseSensitive(root, "backends") : NULL;
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(root);
        return mp_diag_set(d, MP_EPARSE, 0, "kernel-libs: not an object with a \"backends\" list");
    }
    out->b = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(*out->b));
    const cJSON *e;
    int rc = 0;
    cJSON_ArrayForEach(e, arr) {
        struct mp_kl_backend *b = &out->b[out->n];
        b->backend = json_str(e, "backend");
        b->patterns = json_strings(cJSON_GetObjectItemCaseSensitive(e, "patterns"), &b->npatterns);
        b->sources = json_strings(cJSON_GetObjectItemCaseSensitive(e, "sources"), &b->nsources);
        b->what = json_str(e, "what");
        b->missing = json_str(e, "missing");
        b->arch_specific = json_str(e, "arch_specific");
        out->n++;
        if (!b->backend || !b->npatterns || !b->nsources) {
            rc = mp_diag_set(d, MP_EPARSE, 0, "kernel-libs: entry %zu needs backend, patterns "
                             "and sources", out->n);
            break;
        }
    }
    cJSON_Delete(root);
    if (rc)
        mp_kernel_libs_release(out);
    return rc;
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void mp_kernel_libs_release(struct mp_kernel_libs *k)
{
    for (size_t i = 0; i < k->n; i++) {
        free(k->b[i].backend);
        free(k->b[i].what);
        free(k->b[i].missing);
        free(k->b[i].arch_specific);
        free_strings(k->b[i].patterns, k->b[i].npatterns);
        free_strings(k->b[i].sources, k->b[i].nsources);
    }
    free(k->b);
    memset(k, 0, sizeof(*k));
}

const struct mp_kernel_libs *mp_kernel_libs_builtin(void)
{
    static struct mp_kernel_libs builtin;
    static int state; /* 0 not parsed, 1 ok, -1 broken */
    if (state == 0)
        state = mp_kernel_libs_parse((const char *)mp_data_kernel_libs_json,
                                     mp_data_kernel_libs_json_len, &builtin, NULL) == 0 ? 1 : -1;
    return state > 0 ? &builtin : NULL;
}

static bool pattern_matches(const char *pat, const char *rel)
{
    if (fnmatch(pat, rel, 0) == 0)
        return true;
    for (const char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/'))
        if (fnmatch(pat, s + 1, 0) == 0)
            return true;
    return false;
}

/* ---------- the scan ---------- */

struct scan {
    const char *const *top;   /* patterns for the top level, or NULL */
    struct mp_engine_kernels *out;
    size_t cap;
    dev_t *devs;
    ino_t *inos;
    size_t nseen, capseen;
};

static bool seen_file(struct scan *s, const struct stat *st)
{
    for (size_t i = 0; i < s->nseen; i++)
        if (s->devs[i] == st->st_dev && s->inos[i] == st->st_ino)
            return true;
    if (s->nseen == s->capseen) {
        s->capseen = s->capseen ? s->capseen * 2 : 64;
        s->devs = xreallocarray(s->devs, s->capseen, sizeof(*s->devs));
        s->inos = xreallocarray(s->inos, s->capseen, sizeof(*s->inos));
    }
    s->devs[s->nseen] = st->st_dev;
    s->inos[s->nseen++] = st->st_ino;
    return false;
}

static bool wanted_name(const char *n)
{
    size_t l = strlen(n);
    if (l > 3 && !strcmp(n + l - 3, ".so"))
        return true;
    if (strstr(n, ".so."))
        return true;
    return (l > 6 && !strcmp(n + l - 6, ".cubin")) || (l > 7 && !strcmp(n + l - 7, ".fatbin"));
}

/* Read one file's targets into lib (error set on failure). */
static void read_lib(int fd, const struct stat *st, struct mp_engine_lib *lib)
{
    if (st->st_size == 0)
        return;
    if ((uint64_t)st->st_size > SIZE_MAX) {
        lib->error = xstrdup("too large to map");
        return;
    }
    size_t len = (size_t)st->st_size;
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        lib->error = xasprintf("cannot map it: %s", strerror(errno));
        return;
    }
    struct mp_diag d = MP_DIAG_INIT;
    if (mp_cu_scan(m, len, &lib->t, &d) != 0)
        lib->error = xasprintf("partial: %s", d.msg);
    munmap(m, len);
}

static void scan_file(struct scan *s, const char *path, const char *rel)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || seen_file(s, &st)) {
        close(fd);
        return;
    }
    s->out->files++;
    struct mp_engine_lib lib = {.path = xstrdup(rel)};
    read_lib(fd, &st, &lib);
    close(fd);
    if (lib.t.n == 0 && !lib.error) { /* no CUDA code: not listed */
        free(lib.path);
        mp_cu_targets_release(&lib.t);
        return;
    }
    if (s->out->nlibs == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->out->libs = xreallocarray(s->out->libs, s->cap, sizeof(*s->out->libs));
    }
    s->out->libs[s->out->nlibs++] = lib;
}

static void scan_dir(struct scan *s, const char *path, const char *rel, int depth)
{
    DIR *dp = opendir(path);
    if (!dp)
        return;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL && s->out->files < SCAN_MAX_FILES) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (depth == 0 && s->top) {
            bool want = false;
            for (size_t i = 0; s->top[i] && !want; i++)
                want = fnmatch(s->top[i], de->d_name, 0) == 0;
            if (!want)
                continue;
        }
        char *p = xasprintf("%s/%s", path, de->d_name);
        char *r = *rel ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
        struct stat st;
        if (lstat(p, &st) == 0) {
            if (S_ISDIR(st.st_mode) && depth < SCAN_MAX_DEPTH)
                scan_dir(s, p, r, depth + 1);
            else if ((S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) && wanted_name(de->d_name))
                scan_file(s, p, r);
        }
        free(p);
        free(r);
    }
    closedir(dp);
}

static int lib_cmp(const void *a, const void *b)
{
    return strcmp(((const struct mp_engine_lib *)a)->path, ((const struct mp_engine_lib *)b)->path);
}

/* One backend: the best of the libraries its patterns match, judged by the
 * a/f rules only when its kernels need arch-specific features. */
static void judge_backend(struct mp_engine_kernels *k, const struct mp_kl_backend *m,
                          struct mp_engine_backend *eb)
{
    char why[512];
    eb->backend = m->backend;
    eb->note = m->missing;
    eb->arch_specific = m->arch_specific;
    for (size_t i = 0; i < k->nlibs; i++) {
        struct mp_engine_lib *l = &k->libs[i];
        bool hit = false;
        for (size_t p = 0; p < m->npatterns && !hit; p++)
            hit = pattern_matches(m->patterns[p], l->path);
        if (!hit)
            continue;
        mp_strv_push(&l->backends, eb->backend);
        enum mp_cu_runs r = l->runs;
        const char *w = l->why;
        if (m->arch_specific && k->sm) {
            r = mp_cu_judge_arch_specific(&l->t, k->sm, why, sizeof(why));
            w = why;
        }
        if (!eb->library || r > eb->runs) {
            eb->runs = r;
            eb->library = l->path;
            free(eb->why);
            eb->why = w ? xstrdup(w) : NULL;
        }
    }
}

/* Judge every library and every backend of the mapping. */
static void judge_all(struct mp_engine_kernels *k, const struct mp_kernel_libs *map)
{
    char why[320];
    for (size_t i = 0; i < k->nlibs; i++) {
        struct mp_engine_lib *l = &k->libs[i];
        l->runs = mp_cu_judge(&l->t, k->sm, why, sizeof(why));
        l->why = xstrdup(why);
    }
    if (!map)
        return;
    k->backends = xcalloc(map->n + 1, sizeof(*k->backends));
    for (size_t b = 0; b < map->n; b++)
        judge_backend(k, &map->b[b], &k->backends[k->nbackends++]);
}

static enum mp_cu_runs lib_runs(const struct mp_engine_kernels *k, const char *path)
{
    for (size_t i = 0; i < k->nlibs; i++)
        if (!strcmp(k->libs[i].path, path))
            return k->libs[i].runs;
    return MP_RUNS_NO;
}

static void summarize(struct mp_engine_kernels *k)
{
    size_t cnt[4] = {0};
    for (size_t i = 0; i < k->nlibs; i++)
        cnt[k->libs[i].runs]++;
    struct buf b = BUF_INIT;
    buf_printf(&b, "%zu librar%s with CUDA code (%lu file%s looked at)", k->nlibs,
               k->nlibs == 1 ? "y" : "ies", k->files, k->files == 1 ? "" : "s");
    if (!k->sm) {
        buf_adds(&b, "; no GPU compute capability known (give --sm): not judged");
    } else {
        buf_printf(&b, "; on sm_%u: %zu native, %zu only by PTX JIT at start-up, %zu cannot run",
                   k->sm, cnt[MP_RUNS_NATIVE], cnt[MP_RUNS_JIT], cnt[MP_RUNS_NO]);
        for (size_t i = 0; i < k->nbackends; i++) {
            const struct mp_engine_backend *eb = &k->backends[i];
            if (!eb->library || eb->runs == MP_RUNS_NATIVE)
                continue;
            const char *how = eb->runs == MP_RUNS_JIT ? "PTX JIT only" : "cannot run";
            if (eb->runs == MP_RUNS_NO && eb->arch_specific &&
                lib_runs(k, eb->library) != MP_RUNS_NO)
                how = "the library loads, but has no a or f target for this GPU: its "
                      "arch-specific kernels cannot run";
            buf_printf(&b, "; %s kernels (%s): %s", eb->backend, eb->library, how);
        }
    }
    k->summary = buf_detach(&b, NULL);
}

int mp_engine_scan(const char *dir, unsigned sm, const char *sm_source,
                   const struct mp_kernel_libs *map, struct mp_engine_kernels *out,
                   struct mp_diag *d)
{
    return mp_engine_scan_top(dir, NULL, sm, sm_source, map, out, d);
}

int mp_engine_scan_top(const char *dir, const char *const *top, unsigned sm,
                       const char *sm_source, const struct mp_kernel_libs *map,
                       struct mp_engine_kernels *out, struct mp_diag *d)
{
    memset(out, 0, sizeof(*out));
    out->dir = xstrdup(dir);
    out->sm = sm;
    out->sm_source = sm ? sm_source : NULL;
    struct stat st;
    if (stat(dir, &st) != 0) {
        int e = errno;
        snprintf(d->file, sizeof(d->file), "%s", dir);
        return mp_diag_set(d, -e, 0, "cannot read the engine directory: %s", strerror(e));
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(d->file, sizeof(d->file), "%s", dir);
        return mp_diag_set(d, -ENOTDIR, 0, "not a directory (give the folder that holds the "
                           "engine: site-packages, a vLLM install, an unpacked image layer)");
    }
    struct scan s = {.out = out, .top = top};
    scan_dir(&s, dir, "", 0);
    free(s.devs);
    free(s.inos);
    if (out->nlibs > 1)
        qsort(out->libs, out->nlibs, sizeof(*out->libs), lib_cmp);
    judge_all(out, map ? map : mp_kernel_libs_builtin());
    summarize(out);
    return 0;
}

void mp_engine_kernels_release(struct mp_engine_kernels *k)
{
    for (size_t i = 0; i < k->nlibs; i++) {
        free(k->libs[i].path);
        free(k->libs[i].why);
        free(k->libs[i].error);
        mp_cu_targets_release(&k->libs[i].t);
        mp_strv_release(&k->libs[i].backends);
    }
    free(k->libs);
    for (size_t i = 0; i < k->nbackends; i++)
        free(k->backends[i].why);
    free(k->backends);
    free(k->dir);
    free(k->summary);
    memset(k, 0, sizeof(*k));
}

/* ---------- output ---------- */

static cJSON *names_json(const struct mp_cu_targets *t, unsigned kind)
{
    cJSON *a = cJSON_CreateArray();
    char name[24];
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].kind != kind)
            continue;
        mp_cu_target_name(&t->v[i], name, sizeof(name));
        /* several PTX ISA versions of one target: the name once */
        cJSON *last = cJSON_GetArrayItem(a, cJSON_GetArraySize(a) - 1);
        if (!last || strcmp(last->valuestring, name) != 0)
            cJSON_AddItemToArray(a, cJSON_CreateString(name));
    }
    return a;
}

static cJSON *ptx_versions_json(const struct mp_cu_targets *t)
{
    cJSON *a = cJSON_CreateArray();
    char v[16];
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].kind != MP_CU_PTX)
            continue;
        snprintf(v, sizeof(v), "%u.%u", t->v[i].ptx_major, t->v[i].ptx_minor);
        bool dup = false;
        const cJSON *it;
        cJSON_ArrayForEach(it, a) dup |= !strcmp(it->valuestring, v);
        if (!dup)
            cJSON_AddItemToArray(a, cJSON_CreateString(v));
    }
    return a;
}

static cJSON *engine_json(const struct mp_engine_kernels *k)
{
    cJSON *o = cJSON_CreateObject();
    char sm[16];
    snprintf(sm, sizeof(sm), "%u", k->sm);
    cJSON_AddItemToObject(o, "sm", k->sm ? cJSON_CreateString(sm) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "sm_source",
                          k->sm_source ? cJSON_CreateString(k->sm_source) : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "dir", k->dir);
    cJSON_AddNumberToObject(o, "files", (double)k->files);
    cJSON *libs = cJSON_AddArrayToObject(o, "libraries");
    for (size_t i = 0; i < k->nlibs; i++) {
        const struct mp_engine_lib *l = &k->libs[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "path", l->path);
        cJSON_AddItemToObject(j, "sass", names_json(&l->t, MP_CU_SASS));
        cJSON_AddItemToObject(j, "ptx", names_json(&l->t, MP_CU_PTX));
        cJSON_AddItemToObject(j, "ptx_isa", ptx_versions_json(&l->t));
        cJSON_AddItemToObject(j, "runs", k->sm ? cJSON_CreateString(mp_cu_runs_name(l->runs))
                                               : cJSON_CreateNull());
        cJSON_AddStringToObject(j, "why", l->why ? l->why : "");
        cJSON *bk = cJSON_AddArrayToObject(j, "backends");
        for (size_t b = 0; b < l->backends.n; b++)
            cJSON_AddItemToArray(bk, cJSON_CreateString(l->backends.v[b]));
        cJSON_AddItemToObject(j, "error", l->error ? cJSON_CreateString(l->error) : cJSON_CreateNull());
        cJSON_AddItemToArray(libs, j);
    }
    cJSON *bks = cJSON_AddArrayToObject(o, "backends");
    for (size_t i = 0; i < k->nbackends; i++) {
        const struct mp_engine_backend *eb = &k->backends[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "backend", eb->backend);
        cJSON_AddItemToObject(j, "library", eb->library ? cJSON_CreateString(eb->library) : cJSON_CreateNull());
        cJSON_AddItemToObject(j, "runs", eb->library && k->sm ? cJSON_CreateString(mp_cu_runs_name(eb->runs))
                                                              : cJSON_CreateNull());
        cJSON_AddItemToObject(j, "arch_specific", eb->arch_specific
                                  ? cJSON_CreateString(eb->arch_specific) : cJSON_CreateNull());
        cJSON_AddItemToObject(j, "why", eb->library && k->sm && eb->why
                                  ? cJSON_CreateString(eb->why) : cJSON_CreateNull());
        if (!eb->library && eb->note)
            cJSON_AddStringToObject(j, "note", eb->note);
        cJSON_AddItemToArray(bks, j);
    }
    cJSON_AddStringToObject(o, "summary", k->summary ? k->summary : "");
    return o;
}

void mp_engine_to_json(const struct mp_engine_kernels *k, struct buf *out)
{
    cJSON *o = engine_json(k);
    char *s = cJSON_Print(o);
    buf_adds(out, s);
    buf_addc(out, '\n');
    free(s);
    cJSON_Delete(o);
}

char *mp_engine_to_json_compact(const struct mp_engine_kernels *k)
{
    cJSON *o = engine_json(k);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    char *r = xstrdup(s);
    free(s);
    return r;
}

static void names_text(struct buf *b, const struct mp_cu_targets *t, unsigned kind)
{
    char name[24], last[24] = "";
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].kind != kind)
            continue;
        mp_cu_target_name(&t->v[i], name, sizeof(name));
        if (!strcmp(name, last))
            continue;
        buf_printf(b, "%s%s", k++ ? " " : "", name);
        if (kind == MP_CU_PTX)
            buf_printf(b, "(%u.%u)", t->v[i].ptx_major, t->v[i].ptx_minor);
        snprintf(last, sizeof(last), "%s", name);
    }
    if (!k)
        buf_adds(b, "-");
}

void mp_engine_to_text(const struct mp_engine_kernels *k, struct buf *out)
{
    buf_printf(out, "engine: %s\n", k->dir);
    if (k->sm)
        buf_printf(out, "GPU: sm_%u (compute capability %u.%u, from %s)\n", k->sm, k->sm / 10,
                   k->sm % 10, k->sm_source ? k->sm_source : "?");
    else
        buf_adds(out, "GPU: unknown (no NVIDIA GPU found; give --sm 121)\n");
    for (size_t i = 0; i < k->nlibs; i++) {
        const struct mp_engine_lib *l = &k->libs[i];
        buf_printf(out, "\n%s\n  SASS: ", l->path);
        names_text(out, &l->t, MP_CU_SASS);
        buf_adds(out, "\n  PTX:  ");
        names_text(out, &l->t, MP_CU_PTX);
        buf_printf(out, "\n  runs: %s", k->sm ? mp_cu_runs_name(l->runs) : "not judged");
        if (l->why && *l->why && k->sm)
            buf_printf(out, " (%s)", l->why);
        for (size_t b = 0; b < l->backends.n; b++)
            buf_printf(out, "%s%s", b ? ", " : "\n  kernels of: ", l->backends.v[b]);
        if (l->error)
            buf_printf(out, "\n  note: %s", l->error);
        buf_addc(out, '\n');
    }
    buf_adds(out, "\nMoE backends:\n");
    for (size_t i = 0; i < k->nbackends; i++) {
        const struct mp_engine_backend *eb = &k->backends[i];
        if (eb->library) {
            buf_printf(out, "  %-20s %s (%s)\n", eb->backend,
                       k->sm ? mp_cu_runs_name(eb->runs) : "not judged", eb->library);
            if (k->sm && eb->why && (eb->arch_specific || eb->runs != MP_RUNS_NATIVE))
                buf_printf(out, "  %-20s %s\n", "", eb->why);
        } else
            buf_printf(out, "  %-20s not found: %s\n", eb->backend, eb->note ? eb->note : "");
    }
    buf_printf(out, "\n%s\n", k->summary ? k->summary : "");
}
