/* traceback.c - frames and the crash: naming a frame of any Python package,
 * the sites of the first fatal failure (innermost first), the launch site,
 * and the crash finding (see scan_int.h). */
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logs/scan_int.h"
#include "xalloc.h"

/* The last occurrence of needle in p[0..n) that starts p or follows a '/',
 * or NULL. */
static const char *last_component(const char *p, size_t n, const char *needle)
{
    size_t nl = strlen(needle);
    const char *best = NULL;
    for (size_t i = 0; i + nl <= n; i++)
        if ((i == 0 || p[i - 1] == '/') && !memcmp(p + i, needle, nl))
            best = p + i;
    return best;
}

char *mp_logs_frame_name(const char *path, size_t pn, const char *fn, size_t fnn)
{
    const char *p = path;
    size_t n = pn;
    while (n >= 2 && p[0] == '.' && p[1] == '/')
        p += 2, n -= 2;
    const char *root = NULL;
    const char *sp = last_component(p, n, "site-packages/");
    const char *dp = last_component(p, n, "dist-packages/");
    const char *pk = sp && (!dp || sp > dp) ? sp : dp;
    if (pk) {
        root = pk + strlen("site-packages/"); /* same length as dist-packages/ */
    } else if ((root = last_component(p, n, "transformers_modules/")) != NULL) {
        /* Hugging Face dynamic modules (trust-remote-code models) */
    } else if (n && p[0] == '/') {
        /* outside installed packages: a vLLM source checkout keeps its
         * package path ("/workspace/vllm/vllm/v1/..."), the standard library
         * its module path, anything else its file name */
        const char *v = last_component(p, n, "vllm/");
        if (v && memchr(v + 5, '/', n - (size_t)(v + 5 - p)))
            root = v;
        if (!root) {
            for (size_t i = 0; i + 13 < n && !root; i++) {
                if (memcmp(p + i, "/lib/python", 11) || !(p[i + 11] >= '0' && p[i + 11] <= '9'))
                    continue;
                const char *slash = memchr(p + i + 11, '/', n - i - 11);
                if (slash && slash + 1 < p + n)
                    root = slash + 1;
            }
        }
        if (!root) {
            const char *b = p + n;
            while (b > p && b[-1] != '/')
                b--;
            root = b;
        }
    } else {
        root = p; /* a relative path is already from its root */
    }
    size_t rn = n - (size_t)(root - p);
    if (fn && fnn)
        return xasprintf("%.*s:%.*s", (int)rn, root, (int)fnn, fn);
    return xstrndup(root, rn);
}

bool mp_logs_is_machinery(const char *site)
{
    static const char *const pre[] = {"torch/", "triton/",  "cuda/",  "cupy/", "pycuda/",
                                      "tvm_ffi/", "nvidia/", "<frozen", "cudnn/"};
    for (size_t i = 0; i < MP_ARRAY_SIZE(pre); i++)
        if (!strncmp(site, pre[i], strlen(pre[i])))
            return true;
    return false;
}

/* Sites of the recorded crash: C++ locations of the error line, frames before
 * it (innermost first, since the last Traceback, within FRAME_WINDOW), then
 * frames listed after it (a traceback tail, innermost last). */
static void rebuild_sites(struct mp_logscan *s)
{
    struct mp_strv all = MP_STRV_INIT;
    for (size_t i = 0; i < s->line_cpp.n; i++)
        if (!mp_strv_has(&all, s->line_cpp.v[i]))
            mp_strv_push(&all, s->line_cpp.v[i]);
    size_t used = 0;
    for (size_t i = 0; i < s->nframes; i++) {
        const struct frame *f = &s->frames[(s->fhead + FRAME_RING - 1 - i) % FRAME_RING];
        if (f->line < s->tb_line || s->crash_line - f->line > FRAME_WINDOW || f->line > s->crash_line)
            continue;
        if (f->line == s->crash_line && f->cpp)
            continue; /* already in line_cpp */
        used++;
        if (!mp_strv_has(&all, f->site))
            mp_strv_push(&all, f->site);
    }
    for (size_t i = s->after.n; i-- > 0;)
        if (!mp_strv_has(&all, s->after.v[i]))
            mp_strv_push(&all, s->after.v[i]);
    if (used == 0 && s->after.n == 0)
        s->collecting_after = true;
    mp_strv_clear(&s->sites);
    free(s->launch_site);
    s->launch_site = NULL;
    for (size_t i = 0; i < all.n; i++) {
        if (s->sites.n < MP_LOGSCAN_MAX_SITES)
            mp_strv_push(&s->sites, all.v[i]);
        if (!s->launch_site && strncmp(all.v[i], "csrc/", 5) && !mp_logs_is_machinery(all.v[i]))
            s->launch_site = xstrdup(all.v[i]);
    }
    mp_strv_release(&all);
}

static void add_frame(struct mp_logscan *s, const char *site, bool cpp)
{
    struct frame *f = &s->frames[s->fhead];
    free(f->site);
    f->site = xstrdup(site);
    f->line = s->lineno;
    f->cpp = cpp;
    s->fhead = (s->fhead + 1) % FRAME_RING;
    if (s->nframes < FRAME_RING)
        s->nframes++;
    s->frames_seen = true;
    s->last_frame_line = s->lineno;
    free(s->last_frame_site);
    s->last_frame_site = xstrdup(site);
    if (!cpp && s->crash_cls >= 0 && s->collecting_after && s->lineno > s->crash_line &&
        s->lineno - s->crash_line <= AFTER_WINDOW && s->after.n < 16) {
        if (!mp_strv_has(&s->after, site))
            mp_strv_push(&s->after, site);
        rebuild_sites(s);
        s->collecting_after = true;
    }
}

void mp_logs_frame(struct mp_logscan *s, const char *path, size_t pn, const char *fn, size_t fnn)
{
    const char *cs = pn >= 5 ? memmem(path, pn, "csrc/", 5) : NULL;
    if (cs && (cs == path || cs[-1] == '/') && !memmem(path, pn, ".py", 3)) {
        char *site = xstrndup(cs, pn - (size_t)(cs - path));
        if (!mp_strv_has(&s->line_cpp, site))
            mp_strv_push(&s->line_cpp, site);
        add_frame(s, site, true);
        free(site);
        return;
    }
    char *site = mp_logs_frame_name(path, pn, fn, fnn);
    if (site[0])
        add_frame(s, site, false);
    free(site);
}

/* The part of a message around the literal that matched: the backtick span
 * it is in (prose and Markdown), else a window of words around it. */
char *mp_logs_message_window(const char *m, size_t n, const char *lit, size_t litlen)
{
    const char *hit = memmem(m, n, lit, litlen);
    if (!hit)
        return clean_copy(m, n, MSG_MAX);
    size_t a = (size_t)(hit - m), e = a + litlen;
    size_t lo = a > 200 ? a - 200 : 0, hi = MP_MIN(n, e + 240);
    const char *bt = NULL;
    for (size_t i = a; i-- > lo;)
        if (m[i] == '`') {
            bt = m + i;
            break;
        }
    size_t start, end = hi;
    if (bt) {
        start = (size_t)(bt - m) + 1;
        const char *bt2 = memchr(m + e, '`', hi - e);
        if (bt2)
            end = (size_t)(bt2 - m);
    } else if (n <= 160) {
        return clean_copy(m, n, MSG_MAX);
    } else {
        start = a > 100 ? a - 100 : 0;
        while (start > 0 && start < a && m[start - 1] != ' ')
            start++;
        const char *bt2 = memchr(m + e, '`', hi - e);
        if (bt2)
            end = (size_t)(bt2 - m);
    }
    while (end < n && end > e && ((unsigned char)m[end] & 0xC0) == 0x80)
        end--;
    return clean_copy(m + start, end - start, MSG_MAX);
}

static bool cuda_async_class(int cls)
{
    return cls == MP_KN_CLS_ILLEGAL_ADDRESS || cls == MP_KN_CLS_MISALIGNED_ADDRESS ||
           cls == MP_KN_CLS_ILLEGAL_INSTRUCTION || cls == MP_KN_CLS_LAUNCH_FAILURE;
}

void mp_logs_crash_finding(struct mp_logscan *s)
{
    if (s->crash_cls < 0)
        return;
    char *text = xasprintf("%s%s: %s%s", mp_kn_class_name(s->crash_cls),
                           s->ready ? "" : " before any sign that the server was ready", s->crash_msg,
                           s->engine_dead ? " (the engine died)" : "");
    if (s->crash_finding >= 0) {
        struct mp_logfinding *f = &s->findings[s->crash_finding];
        free((char *)f->text);
        f->text = text;
        f->line = s->crash_line;
    } else {
        s->crash_finding = add_finding(s, 2, "crash", s->crash_line, text);
    }
}

void mp_logs_record_fatal(struct mp_logscan *s, int cls, char *msg, bool weak)
{
    if (cls == MP_KN_CLS_ENGINE_DEAD && !s->engine_dead) {
        s->engine_dead = true;
        s->engine_dead_line = s->lineno;
    }
    int rank = mp_kn_class_rank(cls), have = mp_kn_class_rank(s->crash_cls);
    if (s->crash_cls < 0 || rank > have || (rank == have && s->crash_weak && !weak)) {
        /* an error of the same rank after a kernel Xid line keeps the Xid's class
         * only when it says nothing more specific */
        if (!(s->crash_cls >= 0 && rank == have && cls == MP_KN_CLS_CUDA_OTHER))
            s->crash_cls = cls;
        s->crash_weak = weak;
        free(s->crash_msg);
        s->crash_msg = msg;
        msg = NULL;
        s->crash_line = s->lineno;
        mp_strv_clear(&s->after);
        s->collecting_after = false;
        rebuild_sites(s);
        if (!s->ready) {
            free(s->startup_error);
            s->startup_error = xstrdup(s->crash_msg);
            s->startup_error_line = s->lineno;
        }
        if (cuda_async_class(s->crash_cls) && !s->async_hint) {
            s->async_hint = true;
            add_finding(s, 1, "async-site", s->lineno,
                        xstrdup("CUDA faults surface asynchronously: the traceback points where the "
                                "host synchronised, which need not be the faulty kernel; moeprobe "
                                "diagnose reruns with CUDA_LAUNCH_BLOCKING=1 to tell an async race "
                                "from a faulty kernel"));
        }
    }
    free(msg);
    mp_logs_crash_finding(s);
}

void mp_logs_traceback_free(struct mp_logscan *s)
{
    for (size_t i = 0; i < FRAME_RING; i++)
        free(s->frames[i].site);
    free(s->last_frame_site);
    free(s->crash_msg);
    free(s->launch_site);
    mp_strv_release(&s->sites);
    mp_strv_release(&s->line_cpp);
    mp_strv_release(&s->after);
    free(s->startup_error);
}
