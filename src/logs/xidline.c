/* xidline.c - kernel-log records and Xid lines (xidline.h). */
#include "logs/xidline.h"

#include <ctype.h>
#include <string.h>

static const char *find(const char *p, const char *e, const char *lit)
{
    size_t l = strlen(lit);
    for (; p + l <= e; p++)
        if (*p == lit[0] && !memcmp(p, lit, l))
            return p;
    return NULL;
}

/* digits at *pp into v (bounded), false when none */
static bool digits(const char **pp, const char *e, long long *v)
{
    const char *p = *pp;
    long long x = 0;
    if (p >= e || !isdigit((unsigned char)*p))
        return false;
    while (p < e && isdigit((unsigned char)*p)) {
        if (x < 1000000000000000LL)
            x = x * 10 + (*p - '0');
        p++;
    }
    *v = x;
    *pp = p;
    return true;
}

/* copy p[0..n) into out (size cap) with control bytes as spaces */
static void put(char *out, size_t cap, const char *p, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)p[i] < 0x20 || p[i] == 0x7f ? ' ' : p[i];
    out[n] = '\0';
}

/* "pri,seq,usec,flags;msg" */
static bool kmsg_record(const char *line, const char *e, long long *ts, size_t *off)
{
    const char *p = line;
    long long v;
    if (!digits(&p, e, &v) || p >= e || *p != ',')
        return false;
    p++;
    if (!digits(&p, e, &v) || p >= e || *p != ',')
        return false;
    p++;
    long long us;
    if (!digits(&p, e, &us) || p >= e || *p != ',')
        return false;
    const char *semi = memchr(p, ';', (size_t)(e - p));
    if (!semi)
        return false;
    *ts = us;
    *off = (size_t)(semi + 1 - line);
    return true;
}

/* "[ 8123.456789] " after an optional "<6>" */
static bool bracket_time(const char *line, const char *e, long long *ts, size_t *off)
{
    const char *p = line;
    if (p < e && *p == '<') {
        const char *gt = memchr(p, '>', (size_t)MP_MIN(e - p, 6));
        if (!gt)
            return false;
        p = gt + 1;
    }
    if (p >= e || *p != '[')
        return false;
    p++;
    while (p < e && *p == ' ')
        p++;
    long long sec, frac = 0;
    if (!digits(&p, e, &sec))
        return false;
    int nd = 0;
    if (p < e && *p == '.') {
        p++;
        while (p < e && isdigit((unsigned char)*p)) {
            if (nd < 6) {
                frac = frac * 10 + (*p - '0');
                nd++;
            }
            p++;
        }
    }
    if (p >= e || *p != ']' || sec > 1000000000000LL) /* 31,000 years of uptime */
        return false;
    for (; nd < 6; nd++)
        frac *= 10;
    *ts = sec * 1000000LL + frac;
    p++;
    if (p < e && *p == ' ')
        p++;
    *off = (size_t)(p - line);
    return true;
}

void mp_kmsg_split(const char *line, size_t len, long long *ts_us, size_t *msg_off)
{
    const char *e = line + len;
    *ts_us = -1;
    *msg_off = 0;
    if (!kmsg_record(line, e, ts_us, msg_off) && !bracket_time(line, e, ts_us, msg_off)) {
        *ts_us = -1;
        *msg_off = 0;
    }
}

/* "pid=552, " | "pid='<unknown>', " and "name=python3, " at *pp */
static void pid_name(const char **pp, const char *e, struct mp_xid_line *out)
{
    const char *p = *pp;
    if (e - p >= 4 && !memcmp(p, "pid=", 4)) {
        p += 4;
        long long v;
        if (digits(&p, e, &v))
            out->pid = (long)v;
        const char *c = memchr(p, ',', (size_t)(e - p));
        p = c ? c + 1 : e;
        while (p < e && *p == ' ')
            p++;
    }
    if (e - p >= 5 && !memcmp(p, "name=", 5)) {
        p += 5;
        const char *c = memchr(p, ',', (size_t)(e - p));
        const char *ne = c ? c : e;
        if (!(ne - p == 9 && !memcmp(p, "<unknown>", 9)))
            put(out->name, sizeof(out->name), p, (size_t)(ne - p));
        p = c ? c + 1 : e;
        while (p < e && *p == ' ')
            p++;
    }
    *pp = p;
}

/* "0000:03:00" as older drivers write it, without "PCI:" */
static bool bare_pci(const char *p, const char *e)
{
    if (p == e || !memchr(p, ':', (size_t)(e - p)))
        return false;
    for (; p < e; p++)
        if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
            return false;
    return true;
}

bool mp_xid_parse(const char *msg, size_t len, struct mp_xid_line *out)
{
    memset(out, 0, sizeof(*out));
    const char *e = msg + len;
    while (e > msg && (e[-1] == '\r' || e[-1] == ' '))
        e--;
    const char *p = find(msg, e, "NVRM: Xid");
    if (!p)
        return false;
    p += 9;
    while (p < e && *p == ' ')
        p++;
    if (p < e && *p == '(') {
        const char *close = memchr(p, ')', (size_t)(e - p));
        if (!close)
            return false;
        const char *pci = find(p, close, "PCI:");
        if (pci)
            put(out->pci, sizeof(out->pci), pci + 4, (size_t)(close - pci - 4));
        else if (bare_pci(p + 1, close))
            put(out->pci, sizeof(out->pci), p + 1, (size_t)(close - p - 1));
        p = close + 1;
    }
    if (p < e && *p == ':')
        p++;
    while (p < e && *p == ' ')
        p++;
    long long xid;
    if (!digits(&p, e, &xid) || xid > 100000) {
        memset(out, 0, sizeof(*out));
        return false;
    }
    out->xid = (int)xid;
    if (p < e && *p == ',')
        p++;
    while (p < e && *p == ' ')
        p++;
    pid_name(&p, e, out);
    put(out->detail, sizeof(out->detail), p, (size_t)(e - p));
    const char *ft = find(p, e, "Fault is of type ");
    if (ft)
        put(out->fault_type, sizeof(out->fault_type), ft + 17, (size_t)(e - ft - 17));
    const char *esr = find(p, e, "ESR ");
    if (esr)
        put(out->esr, sizeof(out->esr), esr, (size_t)(e - esr));
    return true;
}
