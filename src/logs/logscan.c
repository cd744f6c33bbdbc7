/* logscan.c - the streaming vLLM log scanner (see logscan.h). */
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/knowledge.h"
#include "logs/logscan.h"
#include "xalloc.h"

#define FRAME_RING 32
#define FRAME_WINDOW 40   /* frames further than this many lines above an error do not explain it */
#define AFTER_WINDOW 60   /* frames after an error line, within this many lines */
#define MSG_MAX 400       /* bytes of an error message kept */

enum { LV_NONE, LV_DEBUG, LV_INFO, LV_WARNING, LV_ERROR, LV_CRITICAL };

struct pf_ent {
    int32_t next;
    uint16_t lit, off;
};

struct strvec {
    char **v;
    size_t n, cap;
};

struct frame {
    char *site;
    long line;
    bool cpp;
};

struct mp_logscan {
    const struct mp_knowledge *k;
    /* literal prefilter: 2-byte grams */
    uint64_t bits[1024];
    int32_t *head; /* 65536 */
    struct pf_ent *ents;
    size_t nents;
    char **lits;
    size_t *litlen;
    size_t nlits;
    size_t **litsigs; /* per literal: signature indices */
    size_t *nlitsigs;
    uint8_t *hit;
    uint16_t *hitlist;
    size_t *sigbuf;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    /* line assembly */
    char *part;
    size_t partlen;
    bool overflow, finished;
    /* state */
    long lineno;
    char *fields[MP_KN_NFIELDS];
    int prio[MP_KN_NFIELDS];
    long fline[MP_KN_NFIELDS];
    struct strvec cands, unknown_env;
    bool pending_list;
    struct frame frames[FRAME_RING];
    size_t nframes; /* ring count; newest at (fhead-1) */
    size_t fhead;
    long tb_line;
    bool frames_seen;
    long last_frame_line;
    char *last_frame_site;
    /* crash */
    int crash_cls;
    char *crash_msg;
    long crash_line;
    struct strvec sites, line_cpp, after;
    bool collecting_after;
    bool engine_dead;
    long engine_dead_line;
    char *startup_error;
    long startup_error_line;
    bool ready;
    long ready_line;
    long truncated;
    unsigned long long bytes;
    /* findings */
    struct mp_logfinding *findings;
    size_t nfindings, capfindings;
    long crash_finding; /* index or -1 */
    bool async_hint, findings_full;
    struct mp_logresult res;
};

/* ------------------------------------------------------------- small utils */

static void sv_push(struct strvec *v, char *owned)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 8;
        v->v = xreallocarray(v->v, v->cap, sizeof(char *));
    }
    v->v[v->n++] = owned;
}

static void sv_clear(struct strvec *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->v[i]);
    v->n = 0;
}

static void sv_release(struct strvec *v)
{
    sv_clear(v);
    free(v->v);
    v->v = NULL;
    v->cap = 0;
}

static bool sv_has(const struct strvec *v, const char *s)
{
    for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->v[i], s))
            return true;
    return false;
}

static bool is_ident(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A copy of p[0..n) with surrounding blanks and backticks removed, cut at
 * max bytes (not inside a UTF-8 sequence), control bytes as spaces. */
static char *clean_copy(const char *p, size_t n, size_t max)
{
    while (n && (*p == ' ' || *p == '\t' || *p == '`'))
        p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '`' || p[n - 1] == '\r'))
        n--;
    if (n > max) {
        n = max;
        while (n && ((unsigned char)p[n] & 0xC0) == 0x80)
            n--;
    }
    char *s = xstrndup(p, n);
    for (char *q = s; *q; q++)
        if ((unsigned char)*q < 0x20)
            *q = ' ';
    return s;
}

/* ------------------------------------------------------------ construction */

static int gram_score(unsigned char c)
{
    if (c >= 'a' && c <= 'z')
        return 4;
    if (c == ' ')
        return 5;
    if (c >= 'A' && c <= 'Z')
        return 1;
    if (c >= '0' && c <= '9')
        return 2;
    return 1;
}

/* Typical high-volume log text: prefilter grams that occur here are avoided,
 * so ordinary lines rarely reach the verification step. */
static const char typical_text[] =
    "(APIServer pid=1) INFO:     127.0.0.1:40000 - \"POST /v1/completions HTTP/1.1\" 200 OK\n"
    "(APIServer pid=1) INFO:     127.0.0.1:40000 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"
    "(APIServer pid=1) INFO:     127.0.0.1:40000 - \"GET /health HTTP/1.1\" 200 OK\n"
    "(APIServer pid=1) INFO 04-17 18:06:17 [loggers.py:248] Engine 000: Avg prompt throughput: "
    "1234.5 tokens/s, Avg generation throughput: 456.7 tokens/s, Running: 8 reqs, Waiting: 0 "
    "reqs, GPU KV cache usage: 12.3%, Prefix cache hit rate: 45.6%\n"
    "(EngineCore_DP0 pid=184) INFO 04-17 18:06:36 [gpu_model_runner.py:4735] Model loading took "
    "15.77 GiB memory and 27.6 seconds\n"
    "(Worker_TP0 pid=271) INFO 02-02 13:19:36 [backends.py:643] Using cache directory: "
    "/root/.cache/vllm/torch_compile_cache for vLLM's torch.compile\n"
    "(EngineCore_DP0 pid=214) INFO 02-02 13:20:32 [shm_broadcast.py:542] No available shared "
    "memory broadcast block found in 60 seconds.\n"
    "Loading safetensors checkpoint shards:  20% Completed | 1/5 [00:17<01:10, 17.52s/it]\n"
    "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%| 5/5 [00:00<00:00, 8.66it/s]\n";

static void count_typical(uint16_t *cnt)
{
    const unsigned char *u = (const unsigned char *)typical_text;
    for (size_t i = 0; i + 1 < sizeof(typical_text) - 1; i++) {
        unsigned g = u[i] | ((unsigned)u[i + 1] << 8);
        if (cnt[g] < 60000)
            cnt[g]++;
    }
}

static size_t add_literal(struct mp_logscan *s, const char *lit, const uint16_t *typical)
{
    for (size_t i = 0; i < s->nlits; i++)
        if (!strcmp(s->lits[i], lit))
            return i;
    size_t id = s->nlits++;
    s->lits = xreallocarray(s->lits, s->nlits, sizeof(char *));
    s->litlen = xreallocarray(s->litlen, s->nlits, sizeof(size_t));
    s->litsigs = xreallocarray(s->litsigs, s->nlits, sizeof(size_t *));
    s->nlitsigs = xreallocarray(s->nlitsigs, s->nlits, sizeof(size_t));
    s->lits[id] = (char *)lit;
    size_t len = strlen(lit);
    s->litlen[id] = len;
    s->litsigs[id] = NULL;
    s->nlitsigs[id] = 0;
    /* index the rarest-looking 2-byte window of the literal */
    size_t best = 0;
    int bs = 1 << 30;
    for (size_t o = 0; o + 1 < len; o++) {
        unsigned g0 = (unsigned char)lit[o] | ((unsigned)(unsigned char)lit[o + 1] << 8);
        int sc = gram_score((unsigned char)lit[o]) + gram_score((unsigned char)lit[o + 1]) +
                 16 * typical[g0];
        if (sc < bs) {
            bs = sc;
            best = o;
        }
    }
    unsigned g = (unsigned char)lit[best] | ((unsigned)(unsigned char)lit[best + 1] << 8);
    s->ents = xreallocarray(s->ents, s->nents + 1, sizeof(*s->ents));
    s->ents[s->nents].lit = (uint16_t)id;
    s->ents[s->nents].off = (uint16_t)best;
    s->ents[s->nents].next = s->head[g];
    s->head[g] = (int32_t)s->nents++;
    s->bits[g >> 6] |= 1ull << (g & 63);
    return id;
}

struct mp_logscan *mp_logscan_new(const struct mp_knowledge *k)
{
    struct mp_logscan *s = xcalloc(1, sizeof(*s));
    s->k = k;
    s->head = xmalloc(65536 * sizeof(int32_t));
    for (size_t i = 0; i < 65536; i++)
        s->head[i] = -1;
    uint16_t *typical = xcalloc(65536, sizeof(uint16_t));
    count_typical(typical);
    for (size_t i = 0; i < k->nsigs; i++) {
        size_t id = add_literal(s, k->sigs[i].literal, typical);
        s->litsigs[id] = xreallocarray(s->litsigs[id], s->nlitsigs[id] + 1, sizeof(size_t));
        s->litsigs[id][s->nlitsigs[id]++] = i;
    }
    free(typical);
    s->hit = xcalloc(s->nlits + 1, 1);
    s->hitlist = xcalloc(s->nlits + 1, sizeof(uint16_t));
    s->sigbuf = xcalloc(k->nsigs + 1, sizeof(size_t));
    uint32_t maxcap = 1;
    for (size_t i = 0; i < k->nsigs; i++)
        if (k->sigs[i].re_ncap + 1 > maxcap)
            maxcap = k->sigs[i].re_ncap + 1;
    s->md = pcre2_match_data_create(maxcap, NULL);
    s->mctx = pcre2_match_context_create(NULL);
    pcre2_set_match_limit(s->mctx, 1000000);
    if (!s->md || !s->mctx) {
        fputs("fatal: out of memory\n", stderr);
        abort();
    }
    s->crash_cls = -1;
    s->crash_finding = -1;
    s->tb_line = 0;
    return s;
}

void mp_logscan_free(struct mp_logscan *s)
{
    if (!s)
        return;
    free(s->head);
    free(s->ents);
    free(s->lits); /* the strings belong to the knowledge */
    free(s->litlen);
    for (size_t i = 0; i < s->nlits; i++)
        free(s->litsigs[i]);
    free(s->litsigs);
    free(s->nlitsigs);
    free(s->hit);
    free(s->hitlist);
    free(s->sigbuf);
    pcre2_match_data_free(s->md);
    pcre2_match_context_free(s->mctx);
    free(s->part);
    for (int i = 0; i < MP_KN_NFIELDS; i++)
        free(s->fields[i]);
    sv_release(&s->cands);
    sv_release(&s->unknown_env);
    for (size_t i = 0; i < FRAME_RING; i++)
        free(s->frames[i].site);
    free(s->last_frame_site);
    free(s->crash_msg);
    sv_release(&s->sites);
    sv_release(&s->line_cpp);
    sv_release(&s->after);
    free(s->startup_error);
    for (size_t i = 0; i < s->nfindings; i++) {
        free((char *)s->findings[i].code);
        free((char *)s->findings[i].text);
    }
    free(s->findings);
    free(s);
}

/* ---------------------------------------------------------------- findings */

static long add_finding(struct mp_logscan *s, int sev, const char *code, long line, char *text)
{
    for (size_t i = 0; i < s->nfindings; i++) {
        if (!strcmp(s->findings[i].code, code) && !strcmp(s->findings[i].text, text)) {
            free(text);
            return (long)i;
        }
    }
    if (s->nfindings >= MP_LOGSCAN_MAX_FINDINGS) {
        free(text);
        if (s->findings_full)
            return -1;
        s->findings_full = true;
        code = "findings-truncated";
        text = xasprintf("more than %d findings; the rest are not listed", MP_LOGSCAN_MAX_FINDINGS);
        sev = 0;
    }
    if (s->nfindings == s->capfindings) {
        s->capfindings = s->capfindings ? s->capfindings * 2 : 16;
        s->findings = xreallocarray(s->findings, s->capfindings, sizeof(*s->findings));
    }
    struct mp_logfinding *f = &s->findings[s->nfindings];
    f->severity = sev;
    f->code = xstrdup(code);
    f->line = line;
    f->text = text;
    return (long)s->nfindings++;
}

/* ----------------------------------------------------------------- prefix */

static bool word_at(const char *p, size_t len, size_t i, const char *w)
{
    size_t n = strlen(w);
    return i + n <= len && !memcmp(p + i, w, n);
}

/* Offset of the message after docker/timestamp/process/level prefixes. */
static size_t strip_prefix(const char *p, size_t len, int *level)
{
    static const struct {
        const char *w;
        int lv;
    } levels[] = {{"DEBUG", LV_DEBUG},     {"INFO", LV_INFO},         {"WARNING", LV_WARNING},
                  {"ERROR", LV_ERROR},     {"CRITICAL", LV_CRITICAL}, {"WARN", LV_WARNING}};
    size_t i = 0;
    *level = LV_NONE;
    for (int round = 0; round < 6 && i < len; round++) {
        while (i + 1 < len && p[i] == 0x1b && p[i + 1] == '[') {
            size_t j = i + 2;
            while (j < len && j < i + 16 && p[j] != 'm')
                j++;
            i = j < len ? j + 1 : len;
        }
        if (i >= len)
            break;
        /* "2026-04-19 13:04:53.989 | " / ISO timestamps */
        if (i + 5 <= len && is_digit(p[i]) && is_digit(p[i + 1]) && is_digit(p[i + 2]) &&
            is_digit(p[i + 3]) && p[i + 4] == '-') {
            size_t j = i + 4;
            while (j < len && (is_digit(p[j]) || p[j] == '-'))
                j++;
            if (j + 1 < len && (p[j] == 'T' || p[j] == ' ') && is_digit(p[j + 1])) {
                j++;
                while (j < len && (is_digit(p[j]) || p[j] == ':' || p[j] == '.' || p[j] == ',' ||
                                   p[j] == 'Z' || p[j] == '+'))
                    j++;
            }
            while (j < len && p[j] == ' ')
                j++;
            if (j + 1 < len && (p[j] == '|' || p[j] == '-') && p[j + 1] == ' ')
                j += 2;
            i = j;
            continue;
        }
        /* "(EngineCore_DP0 pid=214) " */
        if (p[i] == '(') {
            size_t j = i + 1, lim = MP_MIN(len, i + 80);
            while (j < lim && p[j] != ')')
                j++;
            if (j < lim && memmem(p + i, j - i, "pid=", 4)) {
                i = j + 1;
                while (i < len && p[i] == ' ')
                    i++;
                continue;
            }
        }
        /* "vllm-1  | " (docker compose) */
        {
            size_t j = i;
            while (j < len && j < i + 64 && is_ident((unsigned char)p[j]))
                j++;
            if (j > i) {
                size_t k2 = j;
                while (k2 < len && p[k2] == ' ')
                    k2++;
                if (k2 < len && p[k2] == '|' && (k2 + 1 == len || p[k2 + 1] == ' ')) {
                    i = k2 + 1 < len ? k2 + 2 : len;
                    continue;
                }
            }
        }
        /* level: "INFO 02-02 13:17:21 [file.py:42] " or uvicorn "INFO:     " */
        bool got = false;
        for (size_t l = 0; l < MP_ARRAY_SIZE(levels); l++) {
            size_t n = strlen(levels[l].w);
            if (!word_at(p, len, i, levels[l].w) || i + n >= len ||
                (p[i + n] != ' ' && p[i + n] != ':'))
                continue;
            *level = levels[l].lv;
            i += n;
            if (p[i] == ':') {
                i++;
                while (i < len && p[i] == ' ')
                    i++;
            } else {
                while (i < len && p[i] == ' ')
                    i++;
                size_t j = i;
                while (j < len && j < i + 24 &&
                       (is_digit(p[j]) || p[j] == '-' || p[j] == ':' || p[j] == ' '))
                    j++;
                i = j;
                if (i < len && p[i] == '[') {
                    const char *e = memchr(p + i, ']', MP_MIN(len - i, (size_t)200));
                    if (e) {
                        i = (size_t)(e - p) + 1;
                        while (i < len && p[i] == ' ')
                            i++;
                    }
                } else if (i + 1 < len && p[i] == '-' && p[i + 1] == ' ') {
                    /* python logging "- INFO - file.py:256 - msg" */
                    i += 2;
                }
            }
            got = true;
            break;
        }
        (void)got;
        break;
    }
    return MP_MIN(i, len);
}

/* ------------------------------------------------------------------ fields */

static void set_candidates(struct mp_logscan *s, const char *p, size_t n)
{
    sv_clear(&s->cands);
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)p[i];
        if ((c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9')) {
            size_t j = i;
            while (j < n && ((p[j] >= 'A' && p[j] <= 'Z') || p[j] == '_' || is_digit(p[j])))
                j++;
            if (j - i >= 2 && !(p[i] >= '0' && p[i] <= '9'))
                sv_push(&s->cands, xstrndup(p + i, j - i));
            i = j;
        } else if (c == ']' || c == ')') {
            break;
        } else {
            i++;
        }
    }
}

/* Returns true when the field took the value. */
static bool set_field(struct mp_logscan *s, int f, const char *v, size_t n, int prio)
{
    if (f == MP_KN_F_UNKNOWN_ENV) {
        char *x = xstrndup(v, n);
        if (sv_has(&s->unknown_env, x)) {
            free(x);
            return false;
        }
        if (s->unknown_env.n == 0)
            s->fline[f] = s->lineno;
        sv_push(&s->unknown_env, x);
        return true;
    }
    if (s->fields[f] && s->prio[f] >= prio)
        return false;
    if (f == MP_KN_F_MOE_CANDIDATES) {
        set_candidates(s, v, n);
        s->prio[f] = prio;
        s->fields[f] = s->fields[f] ? s->fields[f] : xstrdup("");
        return true;
    }
    free(s->fields[f]);
    s->fields[f] = clean_copy(v, n, 256);
    s->prio[f] = prio;
    s->fline[f] = s->lineno;
    if (f == MP_KN_F_MOE_BACKEND) {
        /* a new resolution: the old candidate list does not belong to it */
        sv_clear(&s->cands);
        free(s->fields[MP_KN_F_MOE_CANDIDATES]);
        s->fields[MP_KN_F_MOE_CANDIDATES] = NULL;
        s->prio[MP_KN_F_MOE_CANDIDATES] = 0;
        s->pending_list = false;
    }
    return true;
}

/* --------------------------------------------------------- regex captures */

struct capctx {
    const struct mp_kn_sig *sig;
    const char *subj;
    PCRE2_SIZE *ov;
    int rc;
};

static bool cap_get(const struct capctx *c, const char *name, const char **p, size_t *n)
{
    if (!c->sig->re || c->rc <= 0)
        return false;
    int num = pcre2_substring_number_from_name(c->sig->re, (PCRE2_SPTR)name);
    if (num < 0 || num >= c->rc)
        return false;
    PCRE2_SIZE a = c->ov[2 * num], b = c->ov[2 * num + 1];
    if (a == PCRE2_UNSET || b < a)
        return false;
    *p = c->subj + a;
    *n = b - a;
    return true;
}

static char *render_template(const struct capctx *c, const char *tpl)
{
    struct buf b = BUF_INIT;
    for (const char *t = tpl; *t; t++) {
        if (*t == '{') {
            const char *e = strchr(t, '}');
            if (e && e - t < 40) {
                char name[48];
                memcpy(name, t + 1, (size_t)(e - t - 1));
                name[e - t - 1] = 0;
                const char *v;
                size_t n;
                if (cap_get(c, name, &v, &n)) {
                    char *x = clean_copy(v, n, 200);
                    buf_adds(&b, x);
                    free(x);
                } else {
                    buf_adds(&b, "?");
                }
                t = e;
                continue;
            }
        }
        buf_addc(&b, *t);
    }
    return buf_detach(&b, NULL);
}

/* ------------------------------------------------------------------ crash */

/* The part of a message around the literal that matched: the backtick span
 * it is in (prose and Markdown), else a window of words around it. */
static char *message_window(const char *m, size_t n, const char *lit, size_t litlen)
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

static const char *site_root(const char *path, size_t n)
{
    static const char *const roots[] = {"vllm/", "flashinfer/", "torch/"};
    const char *best = NULL;
    for (size_t r = 0; r < MP_ARRAY_SIZE(roots); r++) {
        size_t rl = strlen(roots[r]);
        for (size_t i = 0; i + rl <= n; i++) {
            if ((i == 0 || path[i - 1] == '/') && !memcmp(path + i, roots[r], rl)) {
                if (!best || path + i > best)
                    best = path + i;
            }
        }
    }
    return best;
}

static void rebuild_sites(struct mp_logscan *s)
{
    sv_clear(&s->sites);
    for (size_t i = 0; i < s->line_cpp.n && s->sites.n < MP_LOGSCAN_MAX_SITES; i++)
        if (!sv_has(&s->sites, s->line_cpp.v[i]))
            sv_push(&s->sites, xstrdup(s->line_cpp.v[i]));
    /* frames before the error line, innermost (newest) first */
    size_t used = 0;
    for (size_t i = 0; i < s->nframes && s->sites.n < MP_LOGSCAN_MAX_SITES; i++) {
        const struct frame *f = &s->frames[(s->fhead + FRAME_RING - 1 - i) % FRAME_RING];
        if (f->line < s->tb_line || s->crash_line - f->line > FRAME_WINDOW || f->line > s->crash_line)
            continue;
        if (f->line == s->crash_line && f->cpp)
            continue; /* already in line_cpp */
        used++;
        if (!sv_has(&s->sites, f->site))
            sv_push(&s->sites, xstrdup(f->site));
    }
    for (size_t i = s->after.n; i-- > 0 && s->sites.n < MP_LOGSCAN_MAX_SITES;)
        if (!sv_has(&s->sites, s->after.v[i]))
            sv_push(&s->sites, xstrdup(s->after.v[i]));
    if (used == 0 && s->after.n == 0)
        s->collecting_after = true;
}

static bool cuda_async_class(int cls)
{
    return cls == MP_KN_CLS_ILLEGAL_ADDRESS || cls == MP_KN_CLS_MISALIGNED_ADDRESS ||
           cls == MP_KN_CLS_ILLEGAL_INSTRUCTION || cls == MP_KN_CLS_LAUNCH_FAILURE;
}

static void update_crash_finding(struct mp_logscan *s)
{
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

static void record_fatal(struct mp_logscan *s, int cls, char *msg)
{
    if (cls == MP_KN_CLS_ENGINE_DEAD && !s->engine_dead) {
        s->engine_dead = true;
        s->engine_dead_line = s->lineno;
    }
    if (s->crash_cls < 0 || mp_kn_class_rank(cls) > mp_kn_class_rank(s->crash_cls)) {
        s->crash_cls = cls;
        free(s->crash_msg);
        s->crash_msg = msg;
        msg = NULL;
        s->crash_line = s->lineno;
        sv_clear(&s->after);
        s->collecting_after = false;
        rebuild_sites(s);
        if (!s->ready) {
            free(s->startup_error);
            s->startup_error = xstrdup(s->crash_msg);
            s->startup_error_line = s->lineno;
        }
        if (cuda_async_class(cls) && !s->async_hint) {
            s->async_hint = true;
            add_finding(s, 1, "async-site", s->lineno,
                        xstrdup("CUDA faults surface asynchronously: the traceback points where the "
                                "host synchronised, which need not be the faulty kernel; moeprobe "
                                "diagnose reruns with CUDA_LAUNCH_BLOCKING=1 to tell an async race "
                                "from a faulty kernel"));
        }
    }
    free(msg);
    update_crash_finding(s);
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
        if (!sv_has(&s->after, site))
            sv_push(&s->after, xstrdup(site));
        rebuild_sites(s);
        s->collecting_after = true;
    }
}

static void handle_frame(struct mp_logscan *s, const struct capctx *c)
{
    const char *path, *fn;
    size_t pn, fnn;
    if (!cap_get(c, "path", &path, &pn))
        return;
    if (pn >= 5 && !memcmp(path, "csrc/", 5)) {
        char *site = xstrndup(path, pn);
        if (!sv_has(&s->line_cpp, site))
            sv_push(&s->line_cpp, xstrdup(site));
        add_frame(s, site, true);
        free(site);
        return;
    }
    const char *root = site_root(path, pn);
    if (!root)
        return;
    size_t rn = pn - (size_t)(root - path);
    char *site;
    if (cap_get(c, "fn", &fn, &fnn))
        site = xasprintf("%.*s:%.*s", (int)rn, root, (int)fnn, fn);
    else
        site = xstrndup(root, rn);
    add_frame(s, site, false);
    free(site);
}

/* ------------------------------------------------------------- candidates */

static bool in_list(char **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], s))
            return true;
    return false;
}

static void analyse_resolution(struct mp_logscan *s)
{
    const struct mp_knowledge *k = s->k;
    const char *b = s->fields[MP_KN_F_MOE_BACKEND];
    long line = s->fline[MP_KN_F_MOE_BACKEND];
    if (!b)
        return;
    const struct mp_kn_backend *kb = mp_kn_find_backend(k, b);
    if (kb)
        add_finding(s, 0, "moe-backend", line,
                    xasprintf("MoE backend %s%s%s%s: %s (devices: %s)", b,
                              kb->flag ? " (--moe-backend " : "", kb->flag ? kb->flag : "",
                              kb->flag ? ")" : "", kb->note ? kb->note : "",
                              kb->devices ? kb->devices : "?"));
    else
        add_finding(s, 0, "moe-backend", line, xasprintf("MoE backend %s", b));
    size_t n = s->cands.n;
    if (n == 0)
        return;
    size_t known = 0;
    bool any_fi = false;
    for (size_t i = 0; i < n; i++) {
        if (mp_kn_find_backend(k, s->cands.v[i]))
            known++;
        if (!strncmp(s->cands.v[i], "FLASHINFER_", 11))
            any_fi = true;
    }
    if (known == 0)
        return; /* another oracle's list (unquantized, FP8 ...) */
    const struct mp_kn_autolist *match = NULL;
    for (size_t i = 0; i < k->nautolists && !match; i++) {
        const struct mp_kn_autolist *a = &k->autolists[i];
        if (a->n != n)
            continue;
        bool eq = true;
        for (size_t j = 0; j < n && eq; j++)
            eq = !strcmp(a->list[j], s->cands.v[j]);
        if (eq)
            match = a;
    }
    if (match) {
        add_finding(s, 0, "moe-list-era", line,
                    xasprintf("the candidate list (%zu entries) is the auto list of vLLM %s", n,
                              match->era));
        struct mp_kn_ver v;
        const char *ev = s->fields[MP_KN_F_ENGINE_VERSION];
        if (ev && mp_kn_ver_parse(ev, &v) == 0 &&
            ((match->has_from && mp_kn_ver_cmp(&v, &match->from) < 0) ||
             (match->has_until && mp_kn_ver_cmp(&v, &match->until) >= 0)))
            add_finding(s, 1, "moe-list-version-mismatch", line,
                        xasprintf("the candidate list is that of vLLM %s but the log reports "
                                  "version %s: a fork or patched build?",
                                  match->era, ev));
    } else if (!any_fi) {
        add_finding(s, 1, "flashinfer-moe-filtered", line,
                    xstrdup("no FlashInfer backend in the candidate list: VLLM_USE_FLASHINFER_MOE_FP4=0 "
                            "was set, which removes the FlashInfer NvFp4 MoE backends"));
    } else {
        bool all_clamp = true;
        for (size_t i = 0; i < n; i++)
            all_clamp = all_clamp && in_list(k->clamp, k->nclamp, s->cands.v[i]);
        if (all_clamp && n <= 4)
            add_finding(s, 0, "swiglu-clamp", line,
                        xasprintf("short candidate list (%zu entries): the model sets swiglu_limit, "
                                  "so only backends that apply the SwiGLU clamp are eligible",
                                  n));
        else
            add_finding(s, 0, "moe-list-unknown", line,
                        xstrdup("this candidate list is not in moeprobe's knowledge (a newer vLLM "
                                "or a fork?)"));
    }
    bool listed = false;
    for (size_t i = 0; i < n; i++)
        listed = listed || !strcmp(s->cands.v[i], b);
    if (!listed)
        add_finding(s, 0, "moe-explicit", line,
                    xasprintf("%s is not in the auto list: it was requested explicitly "
                              "(--moe-backend); an explicit choice never falls back",
                              b));
}

/* ----------------------------------------------------------- line handling */

static void sort_sizes(size_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        size_t x = v[i], j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

static size_t prefilter(struct mp_logscan *s, const char *p, size_t len)
{
    size_t nhit = 0;
    const unsigned char *u = (const unsigned char *)p;
    if (len < 2)
        return 0;
    const uint64_t *bits = s->bits;
    for (size_t i = 0; i + 1 < len; i++) {
        unsigned g = u[i] | ((unsigned)u[i + 1] << 8);
        if (!((bits[g >> 6] >> (g & 63)) & 1))
            continue;
        for (int32_t e = s->head[g]; e >= 0; e = s->ents[e].next) {
            unsigned lit = s->ents[e].lit, off = s->ents[e].off;
            if (s->hit[lit] || i < off)
                continue;
            size_t st = i - off, ll = s->litlen[lit];
            if (st + ll > len || memcmp(p + st, s->lits[lit], ll) != 0)
                continue;
            s->hit[lit] = 1;
            s->hitlist[nhit++] = (uint16_t)lit;
        }
    }
    return nhit;
}

static unsigned process_line(struct mp_logscan *s, const char *p, size_t len)
{
    unsigned ev = 0;
    s->lineno++;
    if (len && p[len - 1] == '\r')
        len--;
    if (s->pending_list) {
        s->pending_list = false;
        size_t i = 0;
        while (i < len && (p[i] == ' ' || p[i] == '\t'))
            i++;
        if (i < len && p[i] == '[') {
            set_candidates(s, p + i, len - i);
            if (!s->fields[MP_KN_F_MOE_CANDIDATES])
                s->fields[MP_KN_F_MOE_CANDIDATES] = xstrdup("");
            analyse_resolution(s);
        }
    }
    if (s->collecting_after && s->lineno - s->crash_line > AFTER_WINDOW)
        s->collecting_after = false;
    size_t nhit = prefilter(s, p, len);
    if (!nhit)
        return 0;
    size_t nsig = 0;
    for (size_t h = 0; h < nhit; h++) {
        unsigned lit = s->hitlist[h];
        s->hit[lit] = 0;
        for (size_t j = 0; j < s->nlitsigs[lit]; j++)
            s->sigbuf[nsig++] = s->litsigs[lit][j];
    }
    sort_sizes(s->sigbuf, nsig);
    int level;
    size_t moff = strip_prefix(p, len, &level);
    const char *msg = p + moff;
    size_t msglen = len - moff;
    int best_cls = -1;
    char *best_msg = NULL;
    bool resolved = false;
    sv_clear(&s->line_cpp);
    for (size_t si = 0; si < nsig; si++) {
        const struct mp_kn_sig *sig = &s->k->sigs[s->sigbuf[si]];
        if (sig->exclude && memmem(p, len, sig->exclude, strlen(sig->exclude)))
            continue;
        if (sig->also && !memmem(p, len, sig->also, strlen(sig->also)))
            continue;
        if (sig->min_level_error && (level == LV_DEBUG || level == LV_INFO || level == LV_WARNING))
            continue;
        if (sig->event == MP_KN_EV_FATAL && (level == LV_DEBUG || level == LV_INFO))
            continue;
        struct capctx c = {sig, sig->anchor_message ? msg : p, NULL, 0};
        if (sig->re) {
            size_t sl = sig->anchor_message ? msglen : len;
            c.rc = pcre2_match(sig->re, (PCRE2_SPTR)c.subj, sl, 0, 0, s->md, s->mctx);
            if (c.rc < 0)
                continue;
            if (c.rc == 0)
                c.rc = (int)pcre2_get_ovector_count(s->md);
            c.ov = pcre2_get_ovector_pointer(s->md);
        }
        bool set_backend = false, cands_missing = false;
        for (size_t i = 0; i < sig->nsets; i++) {
            const char *v;
            size_t n;
            const char *g = sig->sets[i].group;
            int f = sig->sets[i].field;
            if (g[0] == '=') {
                v = g + 1;
                n = strlen(v);
            } else if (!cap_get(&c, g, &v, &n) || n == 0) {
                if (f == MP_KN_F_MOE_CANDIDATES)
                    cands_missing = true;
                continue;
            }
            for (size_t m = 0; m < sig->nmap; m++)
                if (strlen(sig->map[m].key) == n && !memcmp(sig->map[m].key, v, n)) {
                    v = sig->map[m].value;
                    n = strlen(v);
                    break;
                }
            bool ign = false;
            for (size_t m = 0; m < sig->nignore; m++)
                ign = ign || (strlen(sig->ignore[m]) == n && !memcmp(sig->ignore[m], v, n));
            if (ign)
                continue;
            if (set_field(s, f, v, n, sig->priority) && f == MP_KN_F_MOE_BACKEND)
                set_backend = true;
        }
        if (set_backend && cands_missing)
            s->pending_list = true;
        if (sig->severity >= 0) {
            char *text = render_template(&c, sig->text);
            for (size_t i = 0; i < sig->nsets; i++) {
                const char *v;
                size_t n;
                if (sig->sets[i].field != MP_KN_F_UNKNOWN_ENV ||
                    !cap_get(&c, sig->sets[i].group, &v, &n))
                    continue;
                char *name = xstrndup(v, n);
                const struct mp_kn_knob *kb = mp_kn_find_knob(s->k, name);
                if (kb && kb->neras) {
                    const struct mp_kn_era *e = &kb->eras[kb->neras - 1];
                    char *t2 = xasprintf("%s (moeprobe knows: %s)", text, e->note);
                    free(text);
                    text = t2;
                }
                free(name);
            }
            add_finding(s, sig->severity, sig->code, s->lineno, text);
        }
        switch (sig->event) {
        case MP_KN_EV_WARNING:
            ev |= MP_LOGEV_WARNING;
            break;
        case MP_KN_EV_RESOLVED:
            if (set_backend)
                resolved = true;
            ev |= MP_LOGEV_RESOLVED;
            break;
        case MP_KN_EV_READY:
            /* the first sign of readiness: the startup line, or serving
             * (access-log lines, throughput stats) in a log without it */
            if (!s->ready) {
                s->ready = true;
                s->ready_line = s->lineno;
                ev |= MP_LOGEV_READY;
            }
            break;
        case MP_KN_EV_TRACEBACK:
            s->tb_line = s->lineno;
            s->collecting_after = false;
            break;
        case MP_KN_EV_FRAME:
            handle_frame(s, &c);
            break;
        case MP_KN_EV_FATAL: {
            ev |= MP_LOGEV_FATAL;
            if (sig->cls == MP_KN_CLS_ENGINE_DEAD && !s->engine_dead) {
                s->engine_dead = true;
                s->engine_dead_line = s->lineno;
            }
            if (best_cls >= 0 && mp_kn_class_rank(sig->cls) <= mp_kn_class_rank(best_cls))
                break;
            const char *mv;
            size_t mn;
            free(best_msg);
            if (cap_get(&c, "msg", &mv, &mn))
                best_msg = clean_copy(mv, mn, MSG_MAX);
            else
                best_msg = message_window(msg, msglen, sig->literal, sig->literal_len);
            best_cls = sig->cls;
            break;
        }
        default:
            break;
        }
    }
    if (resolved && !s->pending_list)
        analyse_resolution(s);
    if (best_cls >= 0)
        record_fatal(s, best_cls, best_msg);
    return ev;
}

/* ------------------------------------------------------------------ public */

static unsigned line_bounded(struct mp_logscan *s, const char *p, size_t len)
{
    if (len > MP_LOGSCAN_MAX_LINE) {
        s->truncated++;
        len = MP_LOGSCAN_MAX_LINE;
    }
    return process_line(s, p, len);
}

unsigned mp_logscan_line(struct mp_logscan *s, const char *line, size_t len)
{
    s->bytes += len + 1;
    return line_bounded(s, line, len);
}

static void part_add(struct mp_logscan *s, const char *p, size_t n)
{
    if (!s->part)
        s->part = xmalloc(MP_LOGSCAN_MAX_LINE);
    size_t room = MP_LOGSCAN_MAX_LINE - s->partlen;
    if (n > room) {
        s->overflow = true;
        n = room;
    }
    memcpy(s->part + s->partlen, p, n);
    s->partlen += n;
}

static unsigned flush_part(struct mp_logscan *s)
{
    if (s->overflow)
        s->truncated++;
    unsigned ev = process_line(s, s->part ? s->part : "", s->partlen);
    s->partlen = 0;
    s->overflow = false;
    return ev;
}

unsigned mp_logscan_feed(struct mp_logscan *s, const char *data, size_t len)
{
    unsigned ev = 0;
    s->bytes += len;
    s->finished = false;
    while (len) {
        const char *nl = memchr(data, '\n', len);
        if (!nl) {
            part_add(s, data, len);
            break;
        }
        size_t seg = (size_t)(nl - data);
        if (s->partlen || s->overflow) {
            part_add(s, data, seg);
            ev |= flush_part(s);
        } else {
            ev |= line_bounded(s, data, seg);
        }
        data = nl + 1;
        len -= seg + 1;
    }
    return ev;
}

unsigned mp_logscan_finish(struct mp_logscan *s)
{
    unsigned ev = 0;
    if (s->partlen || s->overflow)
        ev |= flush_part(s);
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
    if (s->truncated)
        add_finding(s, 0, "long-lines", 0,
                    xasprintf("%ld line(s) longer than %u bytes; only their first %u bytes were read",
                              s->truncated, MP_LOGSCAN_MAX_LINE, MP_LOGSCAN_MAX_LINE));
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
    return r;
}
