/* framing.c - the ways a log line reaches a user: prefixes added by journald
 * and syslog, docker compose, kubectl / podman / docker timestamps, " | "
 * timestamp columns, vLLM's own process tag and level, ANSI colours, and
 * lines a terminal wrapped (see scan_int.h). */
#include "compat.h"

#include <string.h>

#include "logs/scan_int.h"

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_ident(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

static bool word_at(const char *p, size_t len, size_t i, const char *w)
{
    if (i >= len || p[i] != w[0])
        return false; /* the common case, before strlen and memcmp */
    size_t n = strlen(w);
    return i + n <= len && !memcmp(p + i, w, n);
}

size_t mp_logs_strip_ansi(const char *p, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != 0x1b) {
            out[o++] = p[i];
            continue;
        }
        if (i + 1 < len && p[i + 1] == '[') { /* CSI: parameters, then a final byte */
            size_t j = i + 2;
            while (j < len && (unsigned char)p[j] >= 0x20 && (unsigned char)p[j] <= 0x3f)
                j++;
            i = j < len ? j : len - 1; /* skip the final byte too */
        } else if (i + 1 < len && p[i + 1] == ']') { /* OSC: up to BEL or ESC \ */
            size_t j = i + 2;
            while (j < len && p[j] != 0x07 && !(p[j] == 0x1b && j + 1 < len && p[j + 1] == '\\'))
                j++;
            i = j < len && p[j] == 0x1b ? j + 1 : j;
        } else if (i + 1 < len) {
            i++; /* a two-byte escape */
        }
    }
    return o;
}

/* "pid=" within p[0..n) (a short span: no memmem set-up cost). */
static bool has_pid_tag(const char *p, size_t n)
{
    for (size_t k = 0; k + 4 <= n; k++)
        if (p[k] == 'p' && p[k + 1] == 'i' && p[k + 2] == 'd' && p[k + 3] == '=')
            return true;
    return false;
}

/* vLLM's process tag "(EngineCore_DP0 pid=214) " at i: the offset after it
 * and the blanks that follow, or 0. */
static size_t process_tag(const char *p, size_t len, size_t i)
{
    if (i >= len || p[i] != '(')
        return 0;
    size_t lim = MP_MIN(len, i + 80);
    const char *close = memchr(p + i + 1, ')', lim - i - 1);
    if (!close || !has_pid_tag(p + i, (size_t)(close - p) - i))
        return 0;
    size_t j = (size_t)(close - p) + 1;
    while (j < len && p[j] == ' ')
        j++;
    return j;
}

static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* "Aug 19 18:34:27[.123456] " (syslog / journalctl short): the offset after
 * it, or 0. */
static size_t syslog_time(const char *p, size_t len, size_t i)
{
    bool mon = false;
    if (i + 4 >= len || p[i + 3] != ' ' || p[i] < 'A' || p[i] > 'S')
        return 0; /* no "Mon " here: skip the month names */
    for (size_t m = 0; m < MP_ARRAY_SIZE(months) && !mon; m++)
        mon = word_at(p, len, i, months[m]);
    if (!mon || i + 4 >= len || p[i + 3] != ' ')
        return 0;
    size_t j = i + 4;
    if (j < len && p[j] == ' ')
        j++;
    if (!(j < len && is_digit(p[j])))
        return 0;
    while (j < len && is_digit(p[j]))
        j++;
    if (!(j + 8 < len && p[j] == ' ' && is_digit(p[j + 1]) && is_digit(p[j + 2]) && p[j + 3] == ':'))
        return 0;
    j++;
    while (j < len && (is_digit(p[j]) || p[j] == ':' || p[j] == '.'))
        j++;
    return j < len && p[j] == ' ' ? j + 1 : 0;
}

/* After a syslog or ISO timestamp: "host unit[pid]: " or "host unit: " (the
 * unit never holds a blank). Returns the offset after it, or i. */
static size_t syslog_source(const char *p, size_t len, size_t i, bool need_pid)
{
    size_t j = i;
    while (j < len && j < i + 128 && p[j] != ' ' && p[j] != ':' && p[j] != '(' && p[j] != '[')
        j++;
    if (j == i || j >= len || p[j] != ' ')
        return i;
    size_t u = ++j;
    while (j < len && j < u + 128 && p[j] != ' ' && p[j] != '[' && p[j] != ':')
        j++;
    if (j == u || j >= len)
        return i;
    bool pid = false;
    if (p[j] == '[') {
        size_t d = ++j;
        while (j < len && is_digit(p[j]))
            j++;
        if (j == d || j >= len || p[j] != ']')
            return i;
        j++;
        pid = true;
    }
    if (need_pid && !pid)
        return i;
    if (!(j + 1 < len && p[j] == ':' && p[j + 1] == ' '))
        return i;
    return j + 2;
}

/* ISO or "YYYY-MM-DD HH:MM:SS" timestamps, with fraction, Z or an offset. */
static size_t iso_time(const char *p, size_t len, size_t i)
{
    if (!(i + 5 <= len && is_digit(p[i]) && is_digit(p[i + 1]) && is_digit(p[i + 2]) &&
          is_digit(p[i + 3]) && p[i + 4] == '-'))
        return 0;
    size_t j = i + 4;
    while (j < len && (is_digit(p[j]) || p[j] == '-'))
        j++;
    if (j + 1 < len && (p[j] == 'T' || p[j] == ' ') && is_digit(p[j + 1])) {
        j++;
        while (j < len && (is_digit(p[j]) || p[j] == ':' || p[j] == '.' || p[j] == ','))
            j++;
        if (j < len && p[j] == 'Z')
            j++;
        else if (j + 1 < len && (p[j] == '+' || p[j] == '-') && is_digit(p[j + 1]))
            while (++j < len && (is_digit(p[j]) || p[j] == ':'))
                ;
    }
    return j;
}

/* "[ 1234.567890] " (dmesg, journalctl -o short-monotonic): offset after, or 0. */
static size_t mono_time(const char *p, size_t len, size_t i)
{
    if (i >= len || p[i] != '[')
        return 0;
    size_t j = i + 1;
    while (j < len && p[j] == ' ')
        j++;
    size_t d = j;
    while (j < len && (is_digit(p[j]) || p[j] == '.'))
        j++;
    if (j == d || j >= len || p[j] != ']' || !memchr(p + d, '.', j - d))
        return 0;
    j++;
    while (j < len && p[j] == ' ')
        j++;
    return j;
}

size_t mp_logs_strip_prefix(const char *p, size_t len, int *level)
{
    static const struct {
        const char *w;
        int lv;
    } levels[] = {{"DEBUG", LV_DEBUG},     {"INFO", LV_INFO},         {"WARNING", LV_WARNING},
                  {"ERROR", LV_ERROR},     {"CRITICAL", LV_CRITICAL}, {"WARN", LV_WARNING}};
    size_t i = 0;
    *level = LV_NONE;
    for (int round = 0; round < 8 && i < len; round++) {
        /* journald / syslog: "Aug 19 18:34:27 host unit[pid]: " */
        size_t j = syslog_time(p, len, i);
        if (j) {
            i = syslog_source(p, len, j, false);
            continue;
        }
        j = mono_time(p, len, i);
        if (j) {
            i = syslog_source(p, len, j, true);
            continue;
        }
        /* "2026-04-19 13:04:53.989 | ", kubectl/podman/docker "2026-...Z ",
         * journalctl -o short-iso "2026-...+0000 host unit[pid]: " */
        j = iso_time(p, len, i);
        if (j) {
            while (j < len && p[j] == ' ')
                j++;
            if (j + 1 < len && (p[j] == '|' || p[j] == '-') && p[j + 1] == ' ')
                j += 2;
            else
                j = syslog_source(p, len, j, true);
            i = j;
            continue;
        }
        /* kubectl logs --prefix: "[pod/name/container] " */
        if (word_at(p, len, i, "[pod/")) {
            const char *e = memchr(p + i, ']', MP_MIN(len - i, (size_t)256));
            if (e) {
                i = (size_t)(e - p) + 1;
                while (i < len && p[i] == ' ')
                    i++;
                continue;
            }
        }
        /* "(EngineCore_DP0 pid=214) " */
        j = process_tag(p, len, i);
        if (j) {
            i = j;
            continue;
        }
        /* "vllm-1  | " (docker compose) */
        j = i;
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
        /* level: "INFO 02-02 13:17:21 [file.py:42] " or uvicorn "INFO:     " */
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
                j = i;
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
            break;
        }
        break;
    }
    return MP_MIN(i, len);
}

/* A Python exception line: "[pkg.]Name(Error|Exception|Warning|...)" then ':' or the end. */
static bool exception_start(const char *p, size_t len)
{
    size_t i = 0;
    while (i < len && (is_ident((unsigned char)p[i]) && p[i] != '-'))
        i++;
    if (i == 0 || i > 120)
        return false;
    if (i < len && p[i] != ':')
        return false;
    static const char *const ends[] = {"Error", "Exception", "Warning", "Interrupt", "Exit",
                                       "Failure"};
    for (size_t e = 0; e < MP_ARRAY_SIZE(ends); e++) {
        size_t n = strlen(ends[e]);
        if (i >= n && !memcmp(p + i - n, ends[e], n))
            return true;
    }
    return false;
}

bool mp_logs_starts_record(const char *p, size_t len)
{
    if (process_tag(p, len, 0))
        return true; /* vLLM's usual start: no need for the whole prefix walk */
    int level;
    return mp_logs_strip_prefix(p, len, &level) > 0 || level != LV_NONE;
}

bool mp_logs_continues(const char *p, size_t len)
{
    if (len == 0)
        return false;
    size_t i = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i == len)
        return false;
    static const char *const starts[] = {"Traceback (", "File \"", "During handling",
                                         "The above exception", "```", "- ", "* ", "#", "|",
                                         "[rank", "[pod/", "--", "> "};
    for (size_t s = 0; s < MP_ARRAY_SIZE(starts); s++)
        if (word_at(p, len, i, starts[s]))
            return false;
    if (i == 0) {
        if (mp_logs_starts_record(p, len))
            return false; /* a timestamp, a process tag, a level: a new record */
        if (p[0] == '(' || exception_start(p, len))
            return false;
    }
    return true;
}
