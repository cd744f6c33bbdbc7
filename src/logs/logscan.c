/* logscan.c - the streaming vLLM log scanner (see logscan.h): building it
 * from the knowledge, findings, and scanning one logical line. Feeding
 * bytes and lines, terminal-wrap joining, the result and the binary probe
 * are in feed.c. */
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logs/scan_int.h"
#include "xalloc.h"

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

/* Words that make a line error-looking (mp_logresult.error_lines). */
static const char *const error_words[] = {
    "Error", "error", "ERROR", "Exception", "exception", "Traceback",
    "fatal", "Fatal", "FATAL", "failed", "Failed", "FAILED",
};

struct mp_logscan *mp_logscan_new(const struct mp_knowledge *k)
{
    struct mp_logscan *s = xcalloc(1, sizeof(*s));
    s->k = k;
    mp_lines_init(&s->lines, MP_LOGSCAN_MAX_LINE);
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
    size_t nerrlit = 0, errids[MP_ARRAY_SIZE(error_words)];
    for (size_t i = 0; i < MP_ARRAY_SIZE(error_words); i++)
        errids[nerrlit++] = add_literal(s, error_words[i], typical);
    s->errlit = xcalloc(s->nlits + 1, 1);
    for (size_t i = 0; i < nerrlit; i++)
        s->errlit[errids[i]] = 1;
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
    free(s->errlit);
    free(s->nonul);
    free(s->hit);
    free(s->hitlist);
    free(s->sigbuf);
    pcre2_match_data_free(s->md);
    pcre2_match_context_free(s->mctx);
    mp_lines_release(&s->lines);
    for (int i = 0; i < MP_KN_NFIELDS; i++)
        free(s->fields[i]);
    free(s->clean);
    free(s->held);
    mp_logs_selection_free(s);
    mp_logs_more_free(s);
    mp_logs_traceback_free(s);
    for (size_t i = 0; i < s->nfindings; i++) {
        free((char *)s->findings[i].code);
        free((char *)s->findings[i].text);
    }
    free(s->findings);
    free(s);
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

/* A tallying signature's count: its regex group "count" (a number the
 * line states), else 1. */
static long tally_count(const struct capctx *c)
{
    const char *p;
    size_t n;
    if (!cap_get(c, "count", &p, &n) || n == 0 || n > 7)
        return 1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
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

static unsigned scan_line(struct mp_logscan *s, const char *p, size_t len);

/* Into the ring of error-looking lines: p[0..len) with control bytes as
 * spaces and surrounding blanks trimmed, cut at MP_LOGSCAN_ERRLINE_MAX
 * bytes (not inside a UTF-8 sequence). */
static void keep_error_line(struct mp_logscan *s, const char *p, size_t len)
{
    while (len && (*p == ' ' || *p == '\t'))
        p++, len--;
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r'))
        len--;
    if (len == 0)
        return;
    size_t slot;
    if (s->nerr < MP_LOGSCAN_ERRLINES) {
        slot = (s->errhead + s->nerr++) % MP_LOGSCAN_ERRLINES;
    } else {
        slot = s->errhead;
        s->errhead = (s->errhead + 1) % MP_LOGSCAN_ERRLINES;
    }
    size_t n = MP_MIN(len, (size_t)MP_LOGSCAN_ERRLINE_MAX);
    if (n < len)
        while (n && ((unsigned char)p[n] & 0xC0) == 0x80)
            n--;
    char *d = s->errtext[slot];
    for (size_t i = 0; i < n; i++)
        d[i] = (unsigned char)p[i] < 0x20 || p[i] == 0x7f ? ' ' : p[i];
    d[n] = '\0';
    s->errline[slot] = s->lineno;
}

/* One logical line: nphys physical lines (more than one when a terminal
 * wrapped it); it takes the number of its first line. */
unsigned mp_logs_process_line(struct mp_logscan *s, const char *p, size_t len, long nphys)
{
    unsigned ev = 0;
    s->lineno++;
    long first = s->lineno;
    if (len && p[len - 1] == '\r')
        len--;
    if (memchr(p, 0x1b, len)) {
        if (!s->clean)
            s->clean = xmalloc(MP_LOGSCAN_MAX_LINE);
        len = mp_logs_strip_ansi(p, MP_MIN(len, (size_t)MP_LOGSCAN_MAX_LINE), s->clean);
        p = s->clean;
    }
    ev = scan_line(s, p, len);
    s->lineno = first + nphys - 1;
    return ev;
}

/* A line's candidate list on the line after its selection line. */
static void pending_candidates(struct mp_logscan *s, const char *p, size_t len)
{
    s->pending_list = false;
    size_t i = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i < len && p[i] == '[') {
        mp_logs_set_candidates(&s->cands, p + i, len - i);
        if (!s->fields[MP_KN_F_MOE_CANDIDATES])
            s->fields[MP_KN_F_MOE_CANDIDATES] = xstrdup("");
        mp_logs_analyse_resolution(s);
    }
}

/* The signatures whose literals the line holds, in table order, into
 * s->sigbuf (*nsig); *errword: the line also holds an error word. Returns
 * false when the line holds no literal at all. */
static bool line_sigs(struct mp_logscan *s, const char *p, size_t len, bool *errword,
                      size_t *nsigp)
{
    size_t nhit = prefilter(s, p, len), nsig = 0;
    *errword = false;
    *nsigp = 0;
    if (!nhit)
        return false;
    for (size_t h = 0; h < nhit; h++) {
        unsigned lit = s->hitlist[h];
        s->hit[lit] = 0;
        *errword |= s->errlit[lit] != 0;
        for (size_t j = 0; j < s->nlitsigs[lit]; j++)
            s->sigbuf[nsig++] = s->litsigs[lit][j];
    }
    sort_sizes(s->sigbuf, nsig);
    *nsigp = nsig;
    return true;
}

/* What one line raised, across its signatures. */
struct lineacc {
    unsigned ev;
    int best_cls;
    bool best_weak;
    char *best_msg;
    bool resolved;
    bool tune_noise; /* a tactic the autotuner failed to set up: no fatal line */
};

/* The value of one `set` entry of a matched signature, mapped; false when
 * the group did not capture or the value is one the signature ignores. */
static bool set_value(const struct mp_kn_sig *sig, const struct capctx *c, size_t i,
                      const char **v, size_t *n)
{
    const char *g = sig->sets[i].group;
    if (g[0] == '=') {
        *v = g + 1;
        *n = strlen(*v);
    } else if (!cap_get(c, g, v, n) || *n == 0) {
        return false;
    }
    for (size_t m = 0; m < sig->nmap; m++)
        if (strlen(sig->map[m].key) == *n && !memcmp(sig->map[m].key, *v, *n)) {
            *v = sig->map[m].value;
            *n = strlen(*v);
            break;
        }
    for (size_t m = 0; m < sig->nignore; m++)
        if (strlen(sig->ignore[m]) == *n && !memcmp(sig->ignore[m], *v, *n))
            return false;
    return true;
}

/* One field of the main resolution; true when it set a new MoE backend. */
static bool set_main(struct mp_logscan *s, const struct mp_kn_sig *sig, const struct capctx *c,
                     int f, const char *v, size_t n)
{
    const char *aux = NULL;
    size_t auxn = 0;
    bool aux_method = false;
    if (f == MP_KN_F_LINEAR_KERNELS) {
        aux_method = cap_get(c, "method", &aux, &auxn);
        if (!aux_method && !cap_get(c, "m", &aux, &auxn))
            aux = NULL, auxn = 0;
    }
    if (f == MP_KN_F_OTHER) {
        mp_logs_add_other(s, render_template(c, sig->what), v, n);
        return false;
    }
    if (f == MP_KN_F_DEVICE) {
        char *d = mp_logs_device(v, n);
        if (d)
            mp_logs_set_field(s, f, d, strlen(d), sig->priority, NULL, 0, false);
        free(d);
        return false;
    }
    return mp_logs_set_field(s, f, v, n, sig->priority, aux, auxn, aux_method) &&
           f == MP_KN_F_MOE_BACKEND;
}

/* The fields a matched signature sets (the drafter's after its load line). */
static void apply_sets(struct mp_logscan *s, const struct mp_kn_sig *sig, const struct capctx *c,
                       bool *set_backend)
{
    bool cands_missing = false;
    for (size_t i = 0; i < sig->nsets; i++) {
        const char *v;
        size_t n;
        int f = sig->sets[i].field;
        if (!set_value(sig, c, i, &v, &n)) {
            cands_missing |= f == MP_KN_F_MOE_CANDIDATES && sig->sets[i].group[0] != '=';
            continue;
        }
        if (mp_logs_drafter_field(s, f))
            mp_logs_set_drafter(s, f, v, n);
        else if (set_main(s, sig, c, f, v, n))
            *set_backend = true;
    }
    if (*set_backend && cands_missing)
        s->pending_list = true;
}

/* The finding of a matched signature (an unknown variable gets what
 * moeprobe knows of it). */
static void sig_finding(struct mp_logscan *s, const struct mp_kn_sig *sig, const struct capctx *c)
{
    char *text = render_template(c, sig->text);
    for (size_t i = 0; i < sig->nsets; i++) {
        const char *v;
        size_t n;
        if (sig->sets[i].field != MP_KN_F_UNKNOWN_ENV || !cap_get(c, sig->sets[i].group, &v, &n))
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

static void on_ready(struct mp_logscan *s, struct lineacc *a)
{
    /* the first sign of readiness: the startup line, or serving (access-log
     * lines, throughput stats) in a log without it */
    if (s->ready)
        return;
    s->ready = true;
    s->ready_line = s->lineno;
    a->ev |= MP_LOGEV_READY;
    if (s->crash_cls >= 0) {
        /* an excerpt that shows serving after its error: the error was a
         * runtime one, not a startup failure */
        free(s->startup_error);
        s->startup_error = NULL;
        s->startup_error_line = 0;
        mp_logs_crash_finding(s);
    }
}

static void on_fatal(struct mp_logscan *s, const struct mp_kn_sig *sig, const struct capctx *c,
                     const char *msg, size_t msglen, struct lineacc *a)
{
    if (sig->cls == MP_KN_CLS_TMA_DESCRIPTOR && s->in_autotune) {
        /* a tactic the autotuner failed to set up while profiling: not the
         * crash, whatever else on the line looks like an error */
        mp_logs_tally(s, "autotuner-tma-descriptor");
        a->tune_noise = true;
        return;
    }
    a->ev |= MP_LOGEV_FATAL;
    if (sig->cls == MP_KN_CLS_ENGINE_DEAD && !s->engine_dead) {
        s->engine_dead = true;
        s->engine_dead_line = s->lineno;
    }
    if (a->best_cls >= 0 && mp_kn_class_rank(sig->cls) <= mp_kn_class_rank(a->best_cls))
        return;
    a->best_weak = sig->weak;
    const char *mv;
    size_t mn;
    free(a->best_msg);
    if (cap_get(c, "msg", &mv, &mn))
        a->best_msg = clean_copy(mv, mn, MSG_MAX);
    else
        a->best_msg = mp_logs_message_window(msg, msglen, sig->literal, sig->literal_len);
    a->best_cls = sig->cls;
}

static void on_event(struct mp_logscan *s, const struct mp_kn_sig *sig, const struct capctx *c,
                     const char *msg, size_t msglen, bool set_backend, struct lineacc *a)
{
    switch (sig->event) {
    case MP_KN_EV_WARNING:
        a->ev |= MP_LOGEV_WARNING;
        break;
    case MP_KN_EV_RESOLVED:
        a->resolved |= set_backend;
        a->ev |= MP_LOGEV_RESOLVED;
        break;
    case MP_KN_EV_READY:
        on_ready(s, a);
        break;
    case MP_KN_EV_TRACEBACK:
        s->tb_line = s->lineno;
        s->collecting_after = false;
        break;
    case MP_KN_EV_FRAME: {
        const char *path, *fn;
        size_t pn, fnn;
        if (!cap_get(c, "path", &path, &pn))
            break;
        if (!cap_get(c, "fn", &fn, &fnn))
            fn = NULL, fnn = 0;
        mp_logs_frame(s, path, pn, fn, fnn);
        break;
    }
    case MP_KN_EV_FATAL:
        on_fatal(s, sig, c, msg, msglen, a);
        break;
    case MP_KN_EV_DRAFTER:
        s->drafter_mode = true;
        if (!s->drafter_loaded)
            s->drafter_loaded = s->lineno;
        break;
    case MP_KN_EV_TUNE_BEGIN:
        s->in_autotune = true;
        break;
    case MP_KN_EV_TUNE_END:
        s->in_autotune = false;
        break;
    default:
        break;
    }
}

/* Does signature sig apply to this line (substrings, level, regex)? c gets
 * the captures. */
static bool sig_matches(struct mp_logscan *s, const struct mp_kn_sig *sig, const char *p,
                        size_t len, const char *msg, size_t msglen, int level, struct capctx *c)
{
    if (sig->exclude && memmem(p, len, sig->exclude, strlen(sig->exclude)))
        return false;
    if (sig->also && !memmem(p, len, sig->also, strlen(sig->also)))
        return false;
    if (sig->min_level_error && (level == LV_DEBUG || level == LV_INFO || level == LV_WARNING))
        return false;
    if (sig->event == MP_KN_EV_FATAL && (level == LV_DEBUG || level == LV_INFO))
        return false;
    *c = (struct capctx){sig, sig->anchor_message ? msg : p, NULL, 0};
    if (!sig->re)
        return true;
    size_t sl = sig->anchor_message ? msglen : len;
    c->rc = pcre2_match(sig->re, (PCRE2_SPTR)c->subj, sl, 0, 0, s->md, s->mctx);
    if (c->rc < 0)
        return false;
    if (c->rc == 0)
        c->rc = (int)pcre2_get_ovector_count(s->md);
    c->ov = pcre2_get_ovector_pointer(s->md);
    return true;
}

static unsigned scan_line(struct mp_logscan *s, const char *p, size_t len)
{
    if (s->pending_list)
        pending_candidates(s, p, len);
    if (s->collecting_after && s->lineno - s->crash_line > AFTER_WINDOW)
        s->collecting_after = false;
    bool errword;
    size_t nsig;
    if (!line_sigs(s, p, len, &errword, &nsig))
        return 0;
    int level;
    size_t moff = mp_logs_strip_prefix(p, len, &level);
    if (errword && level != LV_DEBUG && level != LV_INFO)
        keep_error_line(s, p, len);
    const char *msg = p + moff;
    size_t msglen = len - moff;
    struct lineacc a = {0, -1, false, NULL, false, false};
    mp_strv_clear(&s->line_cpp);
    for (size_t si = 0; si < nsig; si++) {
        const struct mp_kn_sig *sig = &s->k->sigs[s->sigbuf[si]];
        struct capctx c;
        if (!sig_matches(s, sig, p, len, msg, msglen, level, &c))
            continue;
        bool set_backend = false;
        apply_sets(s, sig, &c, &set_backend);
        if (sig->tally)
            mp_logs_tally_add(s, sig->tally, tally_count(&c));
        if (sig->severity >= 0)
            sig_finding(s, sig, &c);
        on_event(s, sig, &c, msg, msglen, set_backend, &a);
    }
    if (a.resolved && !s->pending_list)
        mp_logs_analyse_resolution(s);
    if (a.tune_noise) {
        free(a.best_msg);
        a.best_cls = -1;
        a.ev &= ~(unsigned)MP_LOGEV_FATAL;
    }
    if (a.best_cls >= 0) {
        mp_logs_keep_fatal(s, a.best_msg);
        mp_logs_record_fatal(s, a.best_cls, a.best_msg, a.best_weak);
    }
    return a.ev;
}
