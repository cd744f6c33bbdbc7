/* fuzz_xid.c - the kernel log's record splitter and the Xid line parser
 * (logs/xidline.h) under arbitrary input: each line of the input is split
 * and parsed. Invariants: the message offset stays inside the line, every
 * field is NUL-terminated within its array, a parsed Xid is >= 0 and the
 * pid >= 0, a line without "NVRM: Xid" is never an Xid, and the parse is
 * the same whether the record prefix is there or not. */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "logs/xidline.h"

static bool has_nvrm(const char *p, size_t n)
{
    for (size_t i = 0; i + 9 <= n; i++)
        if (!memcmp(p + i, "NVRM: Xid", 9))
            return true;
    return false;
}

static void one(const char *p, size_t n)
{
    long long ts;
    size_t off;
    mp_kmsg_split(p, n, &ts, &off);
    if (off > n || ts < -1)
        abort();
    struct mp_xid_line a, b;
    bool ra = mp_xid_parse(p + off, n - off, &a);
    bool rb = mp_xid_parse(p, n, &b);
    if (ra && !has_nvrm(p + off, n - off))
        abort();
    if (ra && (a.xid < 0 || a.pid < 0 || strlen(a.pci) >= sizeof(a.pci) ||
               strlen(a.name) >= sizeof(a.name) || strlen(a.detail) >= sizeof(a.detail) ||
               strlen(a.fault_type) >= sizeof(a.fault_type) || strlen(a.esr) >= sizeof(a.esr)))
        abort();
    /* the prefix never contains the Xid: parsing the whole line agrees */
    if (ra && has_nvrm(p, off) == false && (!rb || a.xid != b.xid || a.pid != b.pid ||
                                            strcmp(a.detail, b.detail)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    const char *s = (const char *)d, *e = s + n;
    while (s < e) {
        const char *nl = memchr(s, '\n', (size_t)(e - s));
        size_t len = nl ? (size_t)(nl - s) : (size_t)(e - s);
        one(s, len);
        s += len + (nl ? 1 : 0);
    }
    return 0;
}
