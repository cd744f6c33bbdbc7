/* coredump.c - the driver's core-dump lines (coredump.h). */
#include "logs/coredump.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "xalloc.h"

void mp_coredump_init(struct mp_coredump *c)
{
    memset(c, 0, sizeof(*c));
}

void mp_coredump_release(struct mp_coredump *c)
{
    for (size_t i = 0; i < c->n; i++) {
        for (size_t k = 0; k < c->d[i].nframes; k++)
            free(c->d[i].frames[k].name);
        free(c->d[i].file);
    }
    mp_coredump_init(c);
}

static const char *find(const char *p, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    for (size_t i = 0; i + l <= n; i++)
        if (p[i] == lit[0] && !memcmp(p + i, lit, l))
            return p + i;
    return NULL;
}

static bool starts(const char *p, const char *e, const char *lit)
{
    size_t l = strlen(lit);
    return (size_t)(e - p) >= l && !memcmp(p, lit, l);
}

static const char *skip_blank(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* trailing blanks and CR off */
static const char *trim_end(const char *p, const char *e)
{
    while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    return e;
}

/* a decimal number at p (bounded); -1 when none */
static long dec(const char **pp, const char *e)
{
    const char *p = *pp;
    long v = 0;
    if (p >= e || !isdigit((unsigned char)*p))
        return -1;
    while (p < e && isdigit((unsigned char)*p)) {
        if (v < 100000000L)
            v = v * 10 + (*p - '0');
        p++;
    }
    *pp = p;
    return v;
}

static bool hex(const char **pp, const char *e, unsigned long long *out)
{
    const char *p = *pp;
    if (!starts(p, e, "0x") && !starts(p, e, "0X"))
        return false;
    p += 2;
    unsigned long long v = 0;
    int nd = 0;
    while (p < e && isxdigit((unsigned char)*p) && nd < 16) {
        int c = tolower((unsigned char)*p++);
        v = v * 16 + (unsigned long long)(isdigit(c) ? c - '0' : c - 'a' + 10);
        nd++;
    }
    if (!nd)
        return false;
    *out = v;
    *pp = p;
    return true;
}

long mp_coredump_file_pid(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *e = b + strlen(b);
    const char *c = find(b, (size_t)(e - b), "core_");
    if (c) {
        const char *p = c + 5;
        long v = dec(&p, e);
        if (v > 0)
            return v;
    }
    /* name.<pid>.<time>: the next-to-last dot component, all digits */
    const char *last = strrchr(b, '.');
    if (!last || last == b)
        return 0;
    const char *q = last - 1;
    while (q > b && isdigit((unsigned char)*q))
        q--;
    if (*q != '.' || q + 1 == last)
        return 0;
    const char *p = q + 1;
    long v = dec(&p, last);
    return p == last && v > 0 ? v : 0;
}

/* "pid=N" in the prefix (a process tag), 0 when none */
static long prefix_pid(const char *line, const char *cd)
{
    const char *p = find(line, (size_t)(cd - line), "pid=");
    if (!p)
        return 0;
    p += 4;
    long v = dec(&p, cd);
    return v > 0 ? v : 0;
}

static struct mp_cd_dump *new_dump(struct mp_coredump *c, long pid, long lineno)
{
    if (c->n >= MP_CD_RECORDS) {
        c->dropped++;
        return NULL;
    }
    struct mp_cd_dump *d = &c->d[c->n++];
    memset(d, 0, sizeof(*d));
    d->pid = pid;
    d->exception_code = d->device = d->sm = d->warp = -1;
    d->line_first = lineno;
    return d;
}

/* the dump this line belongs to (a new one for "Starting"), or NULL when
 * the dumps are full */
static struct mp_cd_dump *dump_for(struct mp_coredump *c, long pid, bool starting, long lineno)
{
    if (c->dropped)
        return NULL; /* the rest belongs to dumps not kept */
    for (size_t i = c->n; pid && i-- > 0;) {
        struct mp_cd_dump *d = &c->d[i];
        if (d->pid == pid && !d->done)
            return starting && d->started ? new_dump(c, pid, lineno) : d;
    }
    if (!pid && c->n && !c->d[c->n - 1].done && !(starting && c->d[c->n - 1].started))
        return &c->d[c->n - 1];
    return new_dump(c, pid, lineno);
}

static void set_int(int *field, const char **p, const char *e)
{
    *p = skip_blank(*p, e);
    long v = dec(p, e);
    if (*field < 0 && v >= 0)
        *field = (int)v;
}

static void exception_line(struct mp_cd_dump *d, const char *p, const char *e, long lineno)
{
    if (d->exception[0])
        return;
    p = skip_blank(p, e);
    size_t n = 0;
    while (p + n < e && (isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 < sizeof(d->exception))
        n++;
    if (!n)
        return;
    memcpy(d->exception, p, n);
    d->exception[n] = '\0';
    d->line_exception = lineno;
    p = skip_blank(p + n, e);
    if (p < e && *p == '(') {
        p++;
        long v = dec(&p, e);
        if (v >= 0 && p < e && *p == ')')
            d->exception_code = (int)v;
    }
}

/* "#N <sep> 0x... <sep> name" */
static void frame_line(struct mp_cd_dump *d, const char *p, const char *e, long lineno)
{
    p++; /* # */
    long idx = dec(&p, e);
    if (idx < 0)
        return;
    p = skip_blank(p, e);
    unsigned long long pc = 0;
    if (!hex(&p, e, &pc))
        return;
    p = skip_blank(p, e);
    e = trim_end(p, e);
    if (p == e)
        return;
    if (d->nframes >= MP_CD_FRAMES) {
        d->frames_dropped++;
        return;
    }
    struct mp_cd_frame *f = &d->frames[d->nframes++];
    f->index = (int)idx;
    f->pc = pc;
    f->name = xstrndup(p, MP_MIN((size_t)(e - p), (size_t)MP_CD_NAME_MAX));
    if (!d->line_frame)
        d->line_frame = lineno;
}

static void detail_line(struct mp_cd_dump *d, const char *p, const char *e)
{
    p = skip_blank(p + 1, e); /* after '-' */
    if (starts(p, e, "Device:")) {
        p += 7;
        set_int(&d->device, &p, e);
    } else if (starts(p, e, "SM:")) {
        p += 3;
        set_int(&d->sm, &p, e);
    } else if (starts(p, e, "Warp:")) {
        p += 5;
        set_int(&d->warp, &p, e);
    } else if (starts(p, e, "PC")) {
        p = skip_blank(p + 2, e);
        if (p < e && *p == ':')
            p = skip_blank(p + 1, e);
        unsigned long long pc;
        if (!d->has_pc && hex(&p, e, &pc)) {
            d->pc = pc;
            d->has_pc = true;
        }
    }
}

static void file_line(struct mp_cd_dump *d, const char *p, const char *e)
{
    p = skip_blank(p, e);
    e = trim_end(p, e);
    if (d->file || p == e)
        return;
    d->file = xstrndup(p, MP_MIN((size_t)(e - p), (size_t)MP_CD_PATH_MAX));
    if (!d->pid)
        d->pid = mp_coredump_file_pid(d->file);
}

bool mp_coredump_line(struct mp_coredump *c, const char *line, size_t len, long lineno)
{
    const char *nul = memchr(line, '\0', len);
    if (nul) /* a NUL ends what the line says (a zero-filled tail) */
        len = (size_t)(nul - line);
    const char *cd = find(line, len, "coredump:");
    if (!cd)
        return false;
    const char *e = line + len;
    const char *p = skip_blank(cd + 9, e);
    c->lines++;
    bool starting = starts(p, e, "Starting GPU coredump generation");
    struct mp_cd_dump *d = dump_for(c, prefix_pid(line, cd), starting, lineno);
    if (!d)
        return true;
    if (starting)
        d->started = true;
    else if (starts(p, e, "Detected an exception of type"))
        exception_line(d, p + 29, e, lineno);
    else if (p < e && *p == '-')
        detail_line(d, p, e);
    else if (p < e && *p == '#')
        frame_line(d, p, e, lineno);
    else if (starts(p, e, "Writing ELF file to"))
        file_line(d, p + 19, e);
    else if (starts(p, e, "All done"))
        d->done = true;
    return true;
}

/* one row of "info cuda kernels": the name after 8 columns (9 with '*') */
static void kernel_row(const char *p, const char *e, struct mp_strv *names, size_t *added)
{
    p = skip_blank(p, e);
    if (p < e && *p == '*')
        p = skip_blank(p + 1, e);
    if (p >= e || !isdigit((unsigned char)*p))
        return; /* the header, or anything else */
    for (int col = 0; col < 8; col++) {
        while (p < e && *p != ' ' && *p != '\t')
            p++;
        p = skip_blank(p, e);
        if (p >= e)
            return;
    }
    /* up to " x=" (the first argument) or the line's end */
    const char *ne = e;
    for (const char *q = p; q < e; q++) {
        if (*q != '=')
            continue;
        const char *b = q;
        while (b > p && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
            b--;
        if (b < q && b > p && (b[-1] == ' ' || b[-1] == '\t')) {
            ne = b;
            break;
        }
    }
    ne = trim_end(p, ne);
    if (ne == p || *added >= MP_CD_FRAMES)
        return;
    char *n = xstrndup(p, MP_MIN((size_t)(ne - p), (size_t)MP_CD_NAME_MAX));
    if (mp_strv_has(names, n)) {
        free(n);
        return;
    }
    mp_strv_push_owned(names, n);
    (*added)++;
}

size_t mp_cudagdb_kernels(const char *text, size_t len, struct mp_strv *names)
{
    size_t added = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        const char *nul = memchr(p, '\0', (size_t)(e - p));
        kernel_row(p, nul ? nul : e, names, &added);
        p = nl ? nl + 1 : end;
    }
    return added;
}

const struct mp_cd_dump *mp_coredump_exception(const struct mp_coredump *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->d[i].exception[0])
            return &c->d[i];
    return NULL;
}
