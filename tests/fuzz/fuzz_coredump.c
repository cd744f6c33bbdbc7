/* fuzz_coredump.c - the core-dump line parser (logs/coredump.h), the
 * demangler (logs/demangle.h) and the kernel-family match (logs/gpufault.h)
 * under arbitrary input.
 *
 * The input is a log: lines split at '\n'. The first byte picks a cut (a
 * number of lines, as a fraction of them). Invariants: the bounds hold,
 * strings are NUL-terminated and within their caps, and the partial-input
 * contract of coredump.h: the dumps after the first `cut` lines are a prefix
 * of the dumps after all of them, each field unset or equal, each frame list
 * a prefix. Every frame name is demangled (any result; on success the text
 * is within MP_DEMANGLE_MAX and has no NUL) and matched to a family. The
 * same bytes as cuda-gdb's kernel table (mp_cudagdb_kernels): at most
 * MP_CD_FRAMES names, none empty, none repeated. */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "logs/coredump.h"
#include "logs/demangle.h"
#include "logs/gpufault.h"
#include "strv.h"

static size_t feed(struct mp_coredump *c, const char *s, size_t n, size_t max_lines)
{
    size_t lines = 0;
    const char *p = s, *e = s + n;
    while (p < e && lines < max_lines) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(e - p);
        mp_coredump_line(c, p, len, (long)++lines);
        p += len + (nl ? 1 : 0);
    }
    return lines;
}

static bool same_str(const char *part, const char *whole)
{
    return !part || (whole && !strcmp(part, whole));
}

static void check_prefix(const struct mp_cd_dump *a, const struct mp_cd_dump *w)
{
    if ((a->exception[0] && strcmp(a->exception, w->exception)) ||
        (a->exception_code >= 0 && a->exception_code != w->exception_code) ||
        (a->device >= 0 && a->device != w->device) || (a->sm >= 0 && a->sm != w->sm) ||
        (a->warp >= 0 && a->warp != w->warp) || (a->has_pc && (!w->has_pc || a->pc != w->pc)) ||
        !same_str(a->file, w->file) || (a->pid && a->pid != w->pid) ||
        (a->started && !w->started) || (a->done && !w->done) || a->nframes > w->nframes ||
        a->line_first != w->line_first)
        abort();
    for (size_t k = 0; k < a->nframes; k++)
        if (a->frames[k].pc != w->frames[k].pc || strcmp(a->frames[k].name, w->frames[k].name))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n < 1)
        return 0;
    const char *s = (const char *)d + 1;
    size_t len = n - 1;
    struct mp_coredump whole, part;
    mp_coredump_init(&whole);
    mp_coredump_init(&part);
    size_t lines = feed(&whole, s, len, (size_t)-1);
    feed(&part, s, len, lines * d[0] / 255);
    if (whole.n > MP_CD_RECORDS || part.n > whole.n || part.dropped > whole.dropped)
        abort();
    for (size_t i = 0; i < whole.n; i++) {
        const struct mp_cd_dump *x = &whole.d[i];
        if (x->nframes > MP_CD_FRAMES || strlen(x->exception) >= sizeof(x->exception) ||
            (x->file && strlen(x->file) > MP_CD_PATH_MAX))
            abort();
        for (size_t k = 0; k < x->nframes; k++) {
            const char *name = x->frames[k].name;
            size_t nl = strlen(name);
            if (nl == 0 || nl > MP_CD_NAME_MAX)
                abort();
            struct buf b = BUF_INIT;
            if (mp_demangle(name, nl, &b) == 0 && (b.len > MP_DEMANGLE_MAX || strlen(b.data) != b.len))
                abort();
            struct mp_kfamily f;
            (void)mp_gf_family(b.len ? b.data : name, name, &f);
            struct buf sh = BUF_INIT;
            mp_demangle_short(b.len ? b.data : name, f.key[0] ? f.key : NULL, &sh);
            struct mp_strv w = MP_STRV_INIT;
            mp_demangle_words(name, nl, &w);
            if (w.n > 64)
                abort();
            mp_strv_release(&w);
            buf_release(&sh);
            buf_release(&b);
        }
    }
    for (size_t i = 0; i < part.n; i++)
        check_prefix(&part.d[i], &whole.d[i]);
    struct mp_strv names = MP_STRV_INIT;
    size_t nn = mp_cudagdb_kernels(s, len, &names);
    if (nn != names.n || nn > MP_CD_FRAMES)
        abort();
    for (size_t i = 0; i < names.n; i++) {
        if (!names.v[i][0] || strlen(names.v[i]) > MP_CD_NAME_MAX)
            abort();
        for (size_t k = 0; k < i; k++)
            if (!strcmp(names.v[k], names.v[i]))
                abort();
    }
    mp_strv_release(&names);
    mp_coredump_release(&whole);
    mp_coredump_release(&part);
    return 0;
}
