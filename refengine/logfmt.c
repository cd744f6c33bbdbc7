/* logfmt.c - see logfmt.h. */
#include "compat.h"

#include "logfmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *level_name(enum re_level l)
{
    switch (l) {
    case RE_DEBUG:
        return "DEBUG";
    case RE_WARNING:
        return "WARNING";
    case RE_ERROR:
        return "ERROR";
    default:
        return "INFO";
    }
}

void re_log_format(char *out, size_t cap, const char *tag, int pid, enum re_level level,
                   time_t when, const char *file, int lineno, const char *text)
{
    struct tm tm;
    localtime_r(&when, &tm);
    size_t o = 0;
    if (tag)
        o = (size_t)snprintf(out, cap, "(%s pid=%d) ", tag, pid);
    if (o >= cap)
        return;
    snprintf(out + o, cap - o, "%s %02d-%02d %02d:%02d:%02d [%s:%d] %s", level_name(level),
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, file, lineno, text);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return; /* a closed log pipe must not kill the engine */
        }
        p += w;
        n -= (size_t)w;
    }
}

static void emit(int fd, const char *line)
{
    size_t n = strlen(line);
    char *tmp = malloc(n + 1);
    if (!tmp)
        return;
    memcpy(tmp, line, n);
    tmp[n] = '\n';
    write_all(fd, tmp, n + 1);
    free(tmp);
}

static char *vfmt(const char *fmt, va_list ap) MP_PRINTF(1, 0);
static char *vfmt(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    return s;
}

static void log_text(const struct re_log *lg, enum re_proc proc, enum re_level level,
                     const char *file, int lineno, const char *text)
{
    if (level == RE_DEBUG && !lg->debug)
        return;
    time_t now = time(NULL);
    const char *p = text;
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *piece = strndup(p, n);
        if (!piece)
            abort();
        size_t cap = n + 256;
        char *line = malloc(cap);
        if (!line)
            abort();
        re_log_format(line, cap, lg->tag[proc], lg->pid[proc], level, now, file, lineno, piece);
        emit(STDOUT_FILENO, line);
        free(line);
        free(piece);
        if (!nl)
            break;
        p = nl + 1;
    }
}

void re_log(const struct re_log *lg, enum re_proc proc, enum re_level level, const char *file,
            int lineno, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    log_text(lg, proc, level, file, lineno, s);
    free(s);
}

static void raw_line(const struct re_log *lg, enum re_proc proc, int fd, const char *text)
{
    char *line = NULL;
    int rc = lg->tag[proc] ? asprintf(&line, "(%s pid=%d) %s", lg->tag[proc], lg->pid[proc], text)
                           : asprintf(&line, "%s", text);
    if (rc < 0)
        abort();
    emit(fd, line);
    free(line);
}

void re_log_uvicorn(const struct re_log *lg, bool access, const char *level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    char pre[16];
    snprintf(pre, sizeof(pre), "%s:", level);
    char *line = NULL;
    if (asprintf(&line, "%-9s %s", pre, s) < 0)
        abort();
    raw_line(lg, RE_PROC_API, access ? STDOUT_FILENO : STDERR_FILENO, line);
    free(line);
    free(s);
}

void re_log_raw(const struct re_log *lg, enum re_proc proc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = vfmt(fmt, ap);
    va_end(ap);
    raw_line(lg, proc, STDERR_FILENO, s);
    free(s);
}

/* FlashInfer's own logger, as real logs show it ("2026-05-03
 * 18:41:37,368 - INFO - autotuner.py:457 - flashinfer.jit: [Autotuner]:
 * ..."), after the process prefix, on stderr. */
static void flashinfer_line(const struct re_log *lg, const struct re_line *ln)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
    re_log_raw(lg, ln->proc, "%s,%03ld - %s - %s:%d - flashinfer.jit: %s", when,
               ts.tv_nsec / 1000000, ln->level == RE_FI_WARNING ? "WARNING" : "INFO", ln->file,
               ln->lineno, ln->text);
}

void re_log_lines(const struct re_log *lg, const struct re_lines *l)
{
    for (size_t i = 0; i < l->n; i++) {
        const struct re_line *ln = &l->v[i];
        if (ln->level == RE_RAW)
            re_log_raw(lg, ln->proc, "%s", ln->text);
        else if (ln->level == RE_FI_INFO || ln->level == RE_FI_WARNING)
            flashinfer_line(lg, ln);
        else
            log_text(lg, ln->proc, ln->level, ln->file, ln->lineno, ln->text);
    }
}
