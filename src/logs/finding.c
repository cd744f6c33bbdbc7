/* finding.c - the two helpers every part of the scanner uses (scan_int.h):
 * a clean copy of a piece of a line, and a finding added to the scan's list
 * (deduplicated, bounded). Below logscan.c, selection.c and traceback.c,
 * which all call them. */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "logs/scan_int.h"
#include "vec.h"
#include "xalloc.h"

/* A copy of p[0..n) with surrounding blanks and backticks removed, cut at
 * max bytes (not inside a UTF-8 sequence), control bytes as spaces. */
char *clean_copy(const char *p, size_t n, size_t max)
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

/* A finding of severity sev (0 info, 1 warning, 2 error) with code and
 * text (owned: taken, or freed when it repeats one already listed) at line;
 * after MP_LOGSCAN_MAX_FINDINGS one "findings-truncated" and no more.
 * Returns its index, or -1 when the list is full. */
long add_finding(struct mp_logscan *s, int sev, const char *code, long line, char *text)
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
    mp_grow(s->findings, s->capfindings, s->nfindings + 1);
    struct mp_logfinding *f = &s->findings[s->nfindings];
    f->severity = sev;
    f->code = xstrdup(code);
    f->line = line;
    f->text = text;
    return (long)s->nfindings++;
}
