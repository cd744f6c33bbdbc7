/* feed.c - what goes into the log scanner and what comes out (logscan.h):
 * whole lines (live engines) and byte streams (collected logs, with
 * terminal-wrapped lines joined back), NUL bytes and overlong lines
 * counted, the closing findings, the result, and the binary-file probe.
 * One logical line is scanned by logscan.c (mp_logs_process_line). */
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/issues.h"
#include "logs/scan_int.h"
#include "buf.h"
#include "strv.h"
#include "xalloc.h"

/* The knowledge's known issues the finished log matches (knowledge/issues.h),
 * as findings; here, beside the result view they are matched on. */
static void match_issues(struct mp_logscan *s)
{
    mp_ki_hits_release(&s->hits);
    struct mp_ki_facts f;
    struct mp_strv kernels = MP_STRV_INIT, msgs = MP_STRV_INIT, codes = MP_STRV_INIT;
    mp_logresult_facts(mp_logscan_result(s), &f, &kernels, &msgs, &codes);
    mp_ki_match(s->k, &f, &s->hits);
    s->hits_done = true;
    for (size_t i = 0; i < s->hits.n; i++) {
        struct buf b = BUF_INIT;
        mp_ki_hit_line(&s->hits.v[i], &b);
        add_finding(s, s->hits.v[i].kind == MP_KI_EXACT ? 1 : 0, "known-issue", 0,
                    buf_detach(&b, NULL));
    }
    mp_strv_release(&kernels);
    mp_strv_release(&msgs);
    mp_strv_release(&codes);
}

/* ------------------------------------------------------------------ public */

static unsigned line_bounded(struct mp_logscan *s, const char *p, size_t len)
{
    if (len > MP_LOGSCAN_MAX_LINE) {
        s->truncated++;
        len = MP_LOGSCAN_MAX_LINE;
    }
    return mp_logs_process_line(s, p, len, 1);
}

/* Count a run of n NUL bytes (skipped) met on the line being read. */
static void note_nuls(struct mp_logscan *s, size_t n)
{
    /* the rest of an over-long line (already handed on) is on that line */
    if (!s->nul_bytes)
        s->nul_line = s->lineno + 1 + s->held_lines - (mp_lines_skipping(&s->lines) ? 1 : 0);
    s->nul_bytes += n;
    s->nul_tail += n;
}

unsigned mp_logscan_line(struct mp_logscan *s, const char *line, size_t len)
{
    s->bytes += len + 1;
    const char *z = memchr(line, '\0', len);
    if (z) {
        /* the line without its NULs */
        if (!s->nonul)
            s->nonul = xmalloc(MP_LOGSCAN_MAX_LINE);
        size_t in = MP_MIN(len, (size_t)MP_LOGSCAN_MAX_LINE), out = 0, nuls = 0;
        for (size_t i = 0; i < in; i++) {
            if (line[i])
                s->nonul[out++] = line[i];
            else
                nuls++;
        }
        note_nuls(s, nuls + (len - in)); /* past the bound: not looked at, not text */
        if (len > MP_LOGSCAN_MAX_LINE)
            s->truncated++;
        s->nul_tail = 0;
        return mp_logs_process_line(s, s->nonul, out, 1);
    }
    s->nul_tail = 0;
    return line_bounded(s, line, len);
}

static unsigned flush_held(struct mp_logscan *s)
{
    if (!s->held_lines)
        return 0;
    unsigned ev = mp_logs_process_line(s, s->held, s->heldlen, s->held_lines);
    s->heldlen = 0;
    s->held_lines = 0;
    s->held_wide = false;
    return ev;
}

/* Does p[0..len) reach WRAP_COLUMNS columns (UTF-8 code points, as
 * mp_logs_columns counts them)? Stops counting there. */
static bool reaches_wrap(const char *p, size_t len)
{
    if (len >= WRAP_COLUMNS) {
        /* the usual case: the first WRAP_COLUMNS bytes are ASCII */
        _Static_assert(WRAP_COLUMNS % 8 == 0, "the ASCII check reads 8 bytes at a time");
        uint64_t acc = 0, w;
        for (size_t i = 0; i + 8 <= WRAP_COLUMNS; i += 8) {
            memcpy(&w, p + i, 8);
            acc |= w;
        }
        if (!(acc & 0x8080808080808080ull))
            return true;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)p[i] & 0xC0) != 0x80 && ++n >= WRAP_COLUMNS)
            return true;
    return false;
}

/* Is the line at least WRAP_COLUMNS terminal columns wide (ANSI escapes
 * aside)? A line shorter than that in bytes is not. */
static bool is_wide(struct mp_logscan *s, const char *p, size_t len)
{
    if (len && p[len - 1] == '\r')
        len--;
    if (len < WRAP_COLUMNS)
        return false;
    if (!memchr(p, 0x1b, len))
        return reaches_wrap(p, len);
    if (!s->clean)
        s->clean = xmalloc(MP_LOGSCAN_MAX_LINE);
    size_t n = mp_logs_strip_ansi(p, len, s->clean);
    return reaches_wrap(s->clean, n);
}

/* A complete physical line of a collected log (len <= MP_LOGSCAN_MAX_LINE):
 * joined to a held wide line it continues, held itself when it is wide. */
static unsigned collected_line(struct mp_logscan *s, const char *p, size_t len)
{
    unsigned ev = 0;
    if (s->held_lines) {
        if (s->held_wide && mp_logs_continues(p, len) && s->held_lines < 64) {
            if (s->heldlen && s->held[s->heldlen - 1] == '\r')
                s->heldlen--;
            size_t room = MP_LOGSCAN_MAX_LINE - s->heldlen, n = MP_MIN(len, room);
            memcpy(s->held + s->heldlen, p, n);
            s->heldlen += n;
            s->held_lines++;
            s->held_wide = is_wide(s, p, len);
            if (!s->held_wide)
                ev |= flush_held(s);
            return ev;
        }
        ev |= flush_held(s);
    }
    if (is_wide(s, p, len) && mp_logs_starts_record(p, len)) {
        /* only a log record is held: prose and traceback text never are */
        if (!s->held)
            s->held = xmalloc(MP_LOGSCAN_MAX_LINE);
        memcpy(s->held, p, len);
        s->heldlen = len;
        s->held_lines = 1;
        s->held_wide = true;
        return ev;
    }
    return ev | mp_logs_process_line(s, p, len, 1);
}

/* A line of the byte stream, from the splitter (no NUL, no '\n', no CR
 * before it): ud is the scanner's stream_ev. */
static void stream_line(void *ud, const char *p, size_t len, bool truncated)
{
    struct mp_logscan *s = ud;
    if (truncated)
        s->truncated++;
    s->stream_ev |= collected_line(s, p, len);
}

/* NUL-free text into line assembly. */
static unsigned feed_text(struct mp_logscan *s, const char *data, size_t len)
{
    s->stream_ev = 0;
    mp_lines_feed(&s->lines, data, len, stream_line, s);
    return s->stream_ev;
}

unsigned mp_logscan_feed(struct mp_logscan *s, const char *data, size_t len)
{
    unsigned ev = 0;
    s->bytes += len;
    s->finished = false;
    while (len) {
        const char *z = memchr(data, '\0', len);
        size_t n = z ? (size_t)(z - data) : len;
        if (n) {
            s->nul_tail = 0;
            ev |= feed_text(s, data, n);
        }
        if (!z)
            break;
        size_t k = n;
        while (k < len && data[k] == '\0')
            k++;
        note_nuls(s, k - n);
        data += k;
        len -= k;
    }
    return ev;
}

unsigned mp_logscan_finish(struct mp_logscan *s)
{
    unsigned ev = 0;
    s->stream_ev = 0;
    mp_lines_finish(&s->lines, stream_line, s);
    ev |= s->stream_ev;
    ev |= flush_held(s);
    if (s->finished)
        return ev;
    s->finished = true;
    if (s->frames_seen && s->crash_cls < 0)
        add_finding(s, 1, "traceback-without-error", s->last_frame_line,
                    xasprintf("a traceback without its error line (truncated log?); innermost "
                              "frame seen: %s",
                              s->last_frame_site ? s->last_frame_site : "?"));
    if (!s->fields[MP_KN_F_MOE_BACKEND] && s->lineno > 0)
        add_finding(s, 0, "no-moe-resolution", 0,
                    xstrdup("no MoE backend selection line in this log (the log starts late, the "
                            "model is not MoE, or a pre-v0.15 vLLM chose vLLM CUTLASS, which "
                            "prints none)"));
    if (s->nul_bytes && s->nul_tail == s->nul_bytes && s->lineno > 0)
        add_finding(s, 1, "nul-tail", s->lineno,
                    xasprintf("the log ends in %llu NUL bytes after line %ld: a zero-filled tail, as "
                              "a node that crashed before the log reached the disk leaves; what the "
                              "engine wrote last may be lost",
                              s->nul_tail, s->lineno));
    else if (s->nul_bytes)
        add_finding(s, 1, "nul-bytes", s->nul_line,
                    xasprintf("%llu NUL byte(s) skipped, the first on line %ld%s", s->nul_bytes,
                              s->nul_line,
                              s->nul_tail ? " (the log also ends in NUL bytes: a zero-filled tail?)"
                                          : ""));
    if (s->truncated)
        add_finding(s, 0, "long-lines", 0,
                    xasprintf("%ld line(s) longer than %u bytes; only their first %u bytes were read",
                              s->truncated, MP_LOGSCAN_MAX_LINE, MP_LOGSCAN_MAX_LINE));
    mp_logs_finish_more(s);
    match_issues(s);
    return ev;
}

const struct mp_logresult *mp_logscan_result(const struct mp_logscan *cs)
{
    struct mp_logscan *s = (struct mp_logscan *)cs; /* the view is a cache of the state */
    struct mp_logresult *r = &s->res;
    memset(r, 0, sizeof(*r));
    r->lines = s->lineno;
    r->engine_version = s->fields[MP_KN_F_ENGINE_VERSION];
    r->model = s->fields[MP_KN_F_MODEL];
    r->quantization = s->fields[MP_KN_F_QUANTIZATION];
    r->moe_backend = s->fields[MP_KN_F_MOE_BACKEND];
    r->moe_backend_line = r->moe_backend ? s->fline[MP_KN_F_MOE_BACKEND] : 0;
    r->moe_candidates = (const char **)s->cands.v;
    r->n_moe_candidates = s->cands.n;
    r->linear_kernel = s->fields[MP_KN_F_LINEAR_KERNEL];
    r->linear_kernel_line = r->linear_kernel ? s->fline[MP_KN_F_LINEAR_KERNEL] : 0;
    for (size_t i = 0; i < s->nlin; i++) {
        s->linres[i].method = s->lin_method[i];
        s->linres[i].kernel = s->lin_kernel[i];
        s->linres[i].line = s->lin_line[i];
    }
    r->linear_kernels = s->linres;
    r->n_linear_kernels = s->nlin;
    r->unquantized_moe_backend = s->fields[MP_KN_F_UNQUANT_MOE_BACKEND];
    r->unquantized_moe_backend_line =
        r->unquantized_moe_backend ? s->fline[MP_KN_F_UNQUANT_MOE_BACKEND] : 0;
    r->unquantized_moe_candidates = (const char **)s->uq_cands.v;
    r->n_unquantized_moe_candidates = s->uq_cands.n;
    r->attention_backend = s->fields[MP_KN_F_ATTENTION_BACKEND];
    r->attention_backend_line = r->attention_backend ? s->fline[MP_KN_F_ATTENTION_BACKEND] : 0;
    r->moe_backend_flag = s->fields[MP_KN_F_MOE_BACKEND_FLAG];
    r->unknown_env = (const char **)s->unknown_env.v;
    r->n_unknown_env = s->unknown_env.n;
    r->unknown_env_line = s->unknown_env.n ? s->fline[MP_KN_F_UNKNOWN_ENV] : 0;
    if (s->crash_cls >= 0) {
        r->has_crash = true;
        r->crash.cls = mp_kn_class_name(s->crash_cls);
        r->crash.message = s->crash_msg;
        r->crash.line = s->crash_line;
        r->crash.sites = (const char **)s->sites.v;
        r->crash.nsites = s->sites.n;
        r->crash.launch_site = s->launch_site;
        r->crash.engine_dead = s->engine_dead;
    }
    r->startup_error = s->startup_error;
    r->startup_error_line = s->startup_error ? s->startup_error_line : 0;
    r->ready = s->ready;
    r->ready_line = s->ready_line;
    r->findings = s->findings;
    r->nfindings = s->nfindings;
    r->truncated_lines = s->truncated;
    r->bytes = s->bytes;
    for (size_t i = 0; i < s->nerr; i++) {
        size_t slot = (s->errhead + i) % MP_LOGSCAN_ERRLINES;
        s->errres[i].line = s->errline[slot];
        s->errres[i].text = s->errtext[slot];
    }
    r->error_lines = s->errres;
    r->n_error_lines = s->nerr;
    r->nul_bytes = s->nul_bytes;
    r->nul_line = s->nul_bytes ? s->nul_line : 0;
    mp_logs_result_more(s, r);
    return r;
}

/* ------------------------------------------------------------ binary probe */

/* Bytes of the UTF-8 sequence a lead byte >= 0x80 starts, 0 for no lead. */
static size_t utf8_need(unsigned c)
{
    if (c >= 0xC2 && c <= 0xDF)
        return 2;
    if (c >= 0xE0 && c <= 0xEF)
        return 3;
    if (c >= 0xF0 && c <= 0xF4)
        return 4;
    return 0;
}

/* Is p[0..need) a valid sequence (no overlong form, no surrogate)? */
static bool utf8_valid(const unsigned char *p, size_t need)
{
    for (size_t i = 1; i < need; i++)
        if ((p[i] & 0xC0) != 0x80)
            return false;
    unsigned c = p[0];
    return !((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F) || (c == 0xF0 && p[1] < 0x90) ||
             (c == 0xF4 && p[1] > 0x8F));
}

bool mp_logscan_looks_binary(const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t text = 0, bad = 0;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c == 0) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t need = utf8_need(c);
            if (need && i + need > n)
                break; /* a sequence cut by the end of the probe: not held against it */
            if (need && utf8_valid(u + i, need)) {
                text += need;
                i += need;
            } else {
                bad++;
                i++;
            }
            continue;
        }
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\v' && c != '\f' && c != '\r' && c != '\b' &&
             c != 0x1b) || c == 0x7f)
            bad++;
        else
            text++;
        i++;
    }
    return bad * 10 > (text + bad) * 3;
}
