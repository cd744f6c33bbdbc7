/* secret.c - the secret rule (see secret.h). Pure: no I/O, no globals. */
#include "secret.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "xalloc.h"

/* TOKEN as part of TOKENS / TOKENIZER names counts of text, not a credential */
static bool token_is_plural(const char *after, size_t left)
{
    if (left >= 1 && (after[0] == 's' || after[0] == 'S'))
        return true;
    return left >= 2 && strncasecmp(after, "iz", 2) == 0;
}

/* The name's last word (after the last '_', '-' or '.') when there is a
 * word before it: DB_PASS -> PASS, GITHUB_PAT -> PAT; PWD alone -> none. */
static bool last_word_is(const char *name, size_t len, const char *word)
{
    size_t wl = strlen(word);
    if (len <= wl + 1 || strncasecmp(name + len - wl, word, wl) != 0)
        return false;
    char sep = name[len - wl - 1];
    return sep == '_' || sep == '-' || sep == '.';
}

bool mp_is_secret_name(const char *name, size_t len)
{
    static const char *const marks[] = {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD",
                                        "PASSPHRASE", "AUTH", "CREDENTIAL"};
    /* short marks that are words of many other names (PATH, PATTERN,
     * BYPASS, the shell's PWD and OLDPWD): secret only as the last word */
    static const char *const last_words[] = {"PASS", "PWD", "PAT"};
    for (size_t m = 0; m < MP_ARRAY_SIZE(marks); m++) {
        size_t ml = strlen(marks[m]);
        for (size_t i = 0; i + ml <= len; i++) {
            if (strncasecmp(name + i, marks[m], ml) != 0)
                continue;
            if (m == 0 && token_is_plural(name + i + ml, len - i - ml))
                continue;
            return true;
        }
    }
    for (size_t m = 0; m < MP_ARRAY_SIZE(last_words); m++) {
        if (last_word_is(name, len, last_words[m]))
            return true;
    }
    return false;
}

static bool is_number(const char *v, size_t len)
{
    bool digit = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)v[i];
        if (isdigit(c))
            digit = true;
        else if (!strchr(".eE+-_xX", c) || c == '\0')
            return false;
    }
    return digit;
}

bool mp_secret_value_ok(const char *v, size_t len)
{
    /* words that are values of settings, never credentials (the short
     * ones are below the length bound anyway; listed for clarity) */
    static const char *const common[] = {
        "true", "false", "yes", "no", "on", "off", "none", "null", "auto", "default",
        "enabled", "disabled", "enable", "disable", "required", "optional", "unlimited",
        "infinity", "localhost", "notset", "trace", "debug", "info", "notice", "warn",
        "warning", "error", "critical", "fatal", "verbose", "undefined", "unknown",
    };
    if (!v || len < MP_SECRET_MIN_LEN)
        return false;
    if (memmem(v, len, "***", 3))
        return false;
    if (is_number(v, len))
        return false;
    for (size_t i = 0; i < MP_ARRAY_SIZE(common); i++) {
        if (strlen(common[i]) == len && strncasecmp(v, common[i], len) == 0)
            return false;
    }
    return true;
}

char *mp_redact_assignment(const char *assign)
{
    const char *eq = strchr(assign, '=');
    if (!eq || !mp_is_secret_name(assign, (size_t)(eq - assign)) ||
        !mp_secret_value_ok(eq + 1, strlen(eq + 1)))
        return xstrdup(assign);
    return xasprintf("%.*s=***", (int)(eq - assign), assign);
}

static bool ident_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* NAME=VALUE with NAME an identifier: the value when NAME is secret */
static void env_word(const char *w, mp_secret_cb cb, void *ud)
{
    const char *p = w;
    if (!ident_start(*p))
        return;
    while (ident_char(*p))
        p++;
    if (*p != '=' || !mp_is_secret_name(w, (size_t)(p - w)))
        return;
    if (mp_secret_value_ok(p + 1, strlen(p + 1)))
        cb(ud, p + 1, strlen(p + 1));
}

void mp_secret_scan_args(char *const *argv, size_t argc, mp_secret_cb cb, void *ud)
{
    for (size_t i = 0; i < argc; i++) {
        const char *w = argv[i];
        if (!w)
            continue;
        mp_secret_scan_text(w, strlen(w), cb, ud);
        if (w[0] != '-' || !w[1] || (w[1] == '-' && !w[2])) {
            env_word(w, cb, ud);
            continue;
        }
        const char *n = w + (w[1] == '-' ? 2 : 1);
        const char *eq = strchr(n, '=');
        size_t nlen = eq ? (size_t)(eq - n) : strlen(n);
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if ((nlen == 1 && *n == 'e') || (nlen == 3 && !strncmp(n, "env", 3))) {
            if (eq)
                env_word(eq + 1, cb, ud); /* --env=NAME=VALUE; the next word is seen anyway */
            continue;
        }
        if (!mp_is_secret_name(n, nlen))
            continue;
        const char *v = eq ? eq + 1 : (next && next[0] != '-' ? next : NULL);
        if (v && mp_secret_value_ok(v, strlen(v)))
            cb(ud, v, strlen(v));
    }
}

static bool stop_char(char c)
{
    return isspace((unsigned char)c) || c == '\'' || c == '"' || c == ',' || c == ';' ||
           c == '<' || c == '>' || c == '`' || c == '\0';
}

/* At s = "://": the password of the URL's user information. */
static bool url_password(const char *s, const char *end, size_t *skip, size_t *vlen)
{
    const char *a = s + 3, *p = a, *at = NULL, *colon = NULL;
    while (p < end && !stop_char(*p) && *p != '/' && *p != '?' && *p != '#') {
        if (*p == '@')
            at = p;
        p++;
    }
    if (!at)
        return false;
    for (const char *q = a; q < at; q++) {
        if (*q == ':') {
            colon = q;
            break;
        }
    }
    if (!colon || at - colon <= 1)
        return false;
    if (at - colon - 1 == 3 && !memcmp(colon + 1, "***", 3))
        return false;
    *skip = (size_t)(colon + 1 - s);
    *vlen = (size_t)(at - colon - 1);
    return true;
}

static bool word_start(const char *begin, const char *s)
{
    return s == begin || !isalnum((unsigned char)s[-1]);
}

static size_t token_len(const char *p, const char *end)
{
    const char *q = p;
    while (q < end && !stop_char(*q) && *q != ')' && *q != ']' && *q != '}')
        q++;
    return (size_t)(q - p);
}

static const char *skip_spaces(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* "Bearer TOKEN" at s */
static bool bearer(const char *begin, const char *s, const char *end, size_t *skip, size_t *vlen)
{
    if (end - s < 8 || strncasecmp(s, "bearer", 6) != 0 || !word_start(begin, s) ||
        (s[6] != ' ' && s[6] != '\t'))
        return false;
    const char *v = skip_spaces(s + 6, end);
    size_t n = token_len(v, end);
    if (!mp_secret_value_ok(v, n))
        return false;
    *skip = (size_t)(v - s);
    *vlen = n;
    return true;
}

/* "Authorization: [Scheme] CREDENTIAL" (also "authorization=", a quoted key) */
static bool authorization(const char *begin, const char *s, const char *end, size_t *skip,
                          size_t *vlen)
{
    static const char kw[] = "authorization";
    size_t kl = sizeof(kw) - 1;
    if ((size_t)(end - s) < kl + 2 || strncasecmp(s, kw, kl) != 0 || !word_start(begin, s))
        return false;
    const char *p = s + kl;
    if (p < end && (*p == '"' || *p == '\''))
        p++;
    p = skip_spaces(p, end);
    if (p >= end || (*p != ':' && *p != '='))
        return false;
    p = skip_spaces(p + 1, end);
    if (p < end && (*p == '"' || *p == '\''))
        p++;
    size_t n = token_len(p, end);
    const char *after = p + n;
    /* a scheme word (Bearer, Basic, Token, ...) then the credential */
    bool scheme = n > 0 && n <= 12 && after < end && *after == ' ';
    for (size_t i = 0; scheme && i < n; i++)
        scheme = isalpha((unsigned char)p[i]);
    if (scheme) {
        p = skip_spaces(after, end);
        n = token_len(p, end);
    }
    if (!mp_secret_value_ok(p, n))
        return false;
    *skip = (size_t)(p - s);
    *vlen = n;
    return true;
}

/* 'name': 'value' / "name": "value" / 'name': ['value'] with a secret name */
static bool quoted_pair(const char *s, const char *end, size_t *skip, size_t *vlen)
{
    char q = *s;
    const char *n = s + 1, *p = n;
    while (p < end && (ident_char(*p) || *p == '-' || *p == '.'))
        p++;
    if (p == n || p >= end || *p != q || !mp_is_secret_name(n, (size_t)(p - n)))
        return false;
    p = skip_spaces(p + 1, end);
    if (p >= end || (*p != ':' && *p != '='))
        return false;
    p = skip_spaces(p + 1, end);
    if (p < end && *p == '[')
        p = skip_spaces(p + 1, end);
    if (p >= end || (*p != '"' && *p != '\''))
        return false;
    char vq = *p++;
    const char *v = p;
    while (p < end && *p != vq) {
        if (*p == '\\' && p + 1 < end)
            p++;
        p++;
    }
    size_t n_v = (size_t)(p - v);
    if (!mp_secret_value_ok(v, n_v))
        return false;
    *skip = (size_t)(v - s);
    *vlen = n_v;
    return true;
}

bool mp_secret_match_at(const char *begin, const char *s, const char *end, size_t *skip,
                        size_t *vlen)
{
    switch (*s) {
    case ':':
        return end - s > 3 && s[1] == '/' && s[2] == '/' && url_password(s, end, skip, vlen);
    case 'b':
    case 'B':
        return bearer(begin, s, end, skip, vlen);
    case 'a':
    case 'A':
        return authorization(begin, s, end, skip, vlen);
    case '\'':
    case '"':
        return quoted_pair(s, end, skip, vlen);
    default:
        return false;
    }
}

void mp_secret_scan_text(const char *s, size_t len, mp_secret_cb cb, void *ud)
{
    const char *end = s + len;
    for (const char *p = s; p < end; p++) {
        size_t skip = 0, vlen = 0;
        if ((*p == ':' || *p == '\'' || *p == '"') && mp_secret_match_at(s, p, end, &skip, &vlen)) {
            cb(ud, p + skip, vlen);
            p += skip + vlen - 1;
        }
    }
}
