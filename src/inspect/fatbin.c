/* fatbin.c - the pure reader of fatbin.h: ELF section table, fat binary
 * containers and entry headers. Field offsets are the ones docs/inspect.md
 * "The format" lists (checked against nvcc 13.0 output and cuobjdump). */
#include "inspect/fatbin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* entry header fields (offsets from the entry's start) */
#define FE_KIND 0      /* u16: 1 PTX, 2 ELF (SASS) */
#define FE_HSIZE 4     /* u32: header size, the payload follows it */
#define FE_PSIZE 8     /* u64: payload size (padded) */
#define FE_VMINOR 24   /* u16: PTX ISA minor (ELF: code version minor) */
#define FE_VMAJOR 26   /* u16: PTX ISA major */
#define FE_ARCH 28     /* u32: SM number */
#define FE_FLAGS 40    /* u64: flags */
#define FE_MIN 48      /* the fields above fit in this many bytes */
#define FF_ARCH_SPECIFIC 0x100000u /* `a` targets (sm_90a, compute_120a) */
#define FF_FAMILY 0x200000u        /* `f` targets (sm_120f) */

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

void mp_cu_targets_release(struct mp_cu_targets *t)
{
    free(t->v);
    memset(t, 0, sizeof(*t));
}

void mp_cu_target_name(const struct mp_cu_target *t, char *out, size_t n)
{
    char suffix[2] = {t->variant == MP_CU_ARCH ? 'a' : t->variant == MP_CU_FAMILY ? 'f' : 0, 0};
    snprintf(out, n, "%s_%u%s", t->kind == MP_CU_PTX ? "compute" : "sm", t->sm, suffix);
}

static int target_cmp(const struct mp_cu_target *a, const struct mp_cu_target *b)
{
    unsigned ka[5] = {a->kind, a->sm, a->variant, a->ptx_major, a->ptx_minor};
    unsigned kb[5] = {b->kind, b->sm, b->variant, b->ptx_major, b->ptx_minor};
    for (size_t i = 0; i < 5; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* Insert t in order unless it is there already (or the set is full). */
static void add_target(struct mp_cu_targets *out, const struct mp_cu_target *t)
{
    size_t i = 0;
    while (i < out->n && target_cmp(&out->v[i], t) < 0)
        i++;
    if ((i < out->n && target_cmp(&out->v[i], t) == 0) || out->n >= MP_CU_MAX_TARGETS)
        return;
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 8;
        out->v = xreallocarray(out->v, out->cap, sizeof(*out->v));
    }
    memmove(&out->v[i + 1], &out->v[i], (out->n - i) * sizeof(*out->v));
    out->v[i] = *t;
    out->n++;
}

static int broken(struct mp_cu_targets *out, struct mp_diag *d, const char *what, size_t off)
{
    out->truncated = true;
    return mp_diag_set(d, MP_EPARSE, 0, "%s at byte %zu", what, off);
}

/* The SM and `a` flag of a cubin's ELF header (p has >= 52 bytes): ABI
 * version 7 and older keep the SM in bits 0-7 and `a` in bit 11, version 8
 * (CUDA 13) the SM in bits 8-15 and `a` in bit 3 (LLVM's EF_CUDA_* names). */
static void cubin_arch(const unsigned char *p, unsigned *sm, bool *arch_specific)
{
    uint32_t fl = rd32(p + 48);
    if (p[8] >= 8) {
        *sm = (fl >> 8) & 0xff;
        *arch_specific = (fl & 0x8) != 0;
    } else {
        *sm = fl & 0xff;
        *arch_specific = (fl & 0x800) != 0;
    }
}

static bool is_elf64le(const unsigned char *p, size_t n)
{
    return n >= 64 && !memcmp(p, "\177ELF", 4) && p[4] == 2 && p[5] == 1;
}

/* One entry header at e (FE_MIN bytes readable), its payload pl of plen
 * bytes (readable). */
static void read_entry(struct mp_cu_targets *out, const unsigned char *e, const unsigned char *pl,
                       uint64_t plen)
{
    out->entries++;
    unsigned kind = rd16(e + FE_KIND);
    uint64_t flags = rd64(e + FE_FLAGS);
    struct mp_cu_target t = {.sm = rd32(e + FE_ARCH)};
    if (kind == 1) {
        t.kind = MP_CU_PTX;
        t.ptx_major = rd16(e + FE_VMAJOR);
        t.ptx_minor = rd16(e + FE_VMINOR);
    } else if (kind == 2) {
        t.kind = MP_CU_SASS;
    } else {
        out->other++;
        return;
    }
    if (flags & FF_ARCH_SPECIFIC)
        t.variant = MP_CU_ARCH;
    else if (flags & FF_FAMILY)
        t.variant = MP_CU_FAMILY;
    if (t.kind == MP_CU_SASS && t.variant == MP_CU_PLAIN && plen >= 64 && is_elf64le(pl, plen)) {
        /* an uncompressed cubin says `a` in its own header too (CUDA 12 builds) */
        unsigned sm;
        bool a;
        cubin_arch(pl, &sm, &a);
        if (a && sm == t.sm)
            t.variant = MP_CU_ARCH;
    }
    if (t.sm > 0 && t.sm < 1000)
        add_target(out, &t);
    else
        out->other++;
}

/* The entries of one container: [e, end) inside p[0..n). */
static int read_entries(const unsigned char *p, size_t e, size_t end, struct mp_cu_targets *out,
                        struct mp_diag *d)
{
    while (e < end) {
        if (end - e < FE_MIN)
            return broken(out, d, "fat binary entry header cut short", e);
        uint32_t hs = rd32(p + e + FE_HSIZE);
        uint64_t ps = rd64(p + e + FE_PSIZE);
        if (hs < FE_MIN || hs > end - e)
            return broken(out, d, "fat binary entry with a bad header size", e);
        if (ps > end - e - hs)
            return broken(out, d, "fat binary entry whose payload runs past its container", e);
        read_entry(out, p + e, p + e + hs, ps);
        e += hs + (size_t)ps;
    }
    return 0;
}

int mp_fatbin_parse(const unsigned char *p, size_t n, struct mp_cu_targets *out,
                    struct mp_diag *d)
{
    size_t off = 0;
    while (off < n) {
        if (p[off] == 0) {
            /* zero padding between containers (and at the end); a magic
             * starts with a non-zero byte */
            while (off < n && p[off] == 0)
                off++;
            continue;
        }
        if (n - off < 16)
            return broken(out, d, "fat binary header cut short", off);
        if (rd32(p + off) != MP_FATBIN_MAGIC)
            return broken(out, d, "no fat binary magic", off);
        uint16_t hs = rd16(p + off + 6);
        uint64_t fs = rd64(p + off + 8);
        if (hs < 16 || hs > n - off)
            return broken(out, d, "fat binary header with a bad size", off);
        if (fs > n - off - hs)
            return broken(out, d, "fat binary container runs past the end of its section", off);
        out->containers++;
        int rc = read_entries(p, off + hs, off + hs + (size_t)fs, out, d);
        if (rc)
            return rc;
        off += hs + (size_t)fs;
    }
    return 0;
}

static bool name_is(const char *name, size_t avail, const char *want)
{
    size_t l = strlen(want);
    return avail > l && !memcmp(name, want, l + 1);
}

/* Sections named want (want2 may be NULL) of an ELF: f(p + off, size)
 * for each, stopping at the first non-zero return. */
typedef int (*section_fn)(const unsigned char *s, size_t n, void *ud);
static int each_section(const unsigned char *p, size_t n, const char *want, const char *want2,
                        section_fn f, void *ud, struct mp_cu_targets *out, struct mp_diag *d)
{
    uint64_t shoff = rd64(p + 40);
    uint16_t shentsize = rd16(p + 58);
    uint64_t shnum = rd16(p + 60);
    uint32_t shstrndx = rd16(p + 62);
    if (shoff == 0)
        return 0; /* no section table: nothing we can find */
    if (shentsize < 64 || shoff > n || n - shoff < 64)
        return broken(out, d, "ELF section table outside the file", (size_t)shoff);
    const unsigned char *s0 = p + shoff;
    if (shnum == 0)
        shnum = rd64(s0 + 32); /* many sections: the count is in section 0 */
    if (shstrndx == 0xffff)
        shstrndx = rd32(s0 + 40);
    if (shnum > (n - shoff) / shentsize)
        return broken(out, d, "ELF section table cut short", (size_t)shoff);
    if (shstrndx >= shnum)
        return broken(out, d, "ELF section name table index out of range", 62);
    const unsigned char *str = s0 + (size_t)shstrndx * shentsize;
    uint64_t stroff = rd64(str + 24), strsize = rd64(str + 32);
    if (stroff > n || strsize > n - stroff)
        return broken(out, d, "ELF section names outside the file", (size_t)stroff);
    int rc = 0;
    for (uint64_t i = 0; i < shnum && rc == 0; i++) {
        const unsigned char *sh = s0 + (size_t)i * shentsize;
        uint32_t name = rd32(sh);
        if (rd32(sh + 4) == 8 /* SHT_NOBITS */ || name >= strsize)
            continue;
        const char *nm = (const char *)p + stroff + name;
        size_t avail = (size_t)(strsize - name);
        if (!name_is(nm, avail, want) && !(want2 && name_is(nm, avail, want2)))
            continue;
        uint64_t off = rd64(sh + 24), size = rd64(sh + 32);
        if (off > n || size > n - off)
            return broken(out, d, "section runs past the end of the file", (size_t)off);
        rc = f(p + off, (size_t)size, ud);
    }
    return rc;
}

struct fb_ctx {
    struct mp_cu_targets *out;
    struct mp_diag *d;
};

static int fatbin_section(const unsigned char *s, size_t n, void *ud)
{
    struct fb_ctx *c = ud;
    return mp_fatbin_parse(s, n, c->out, c->d);
}

/* A cubin's ptxas command line (the .note.nv.tkinfo note holds
 * "-arch sm_100a"): the `a` / `f` that e_flags may not carry. */
static int tkinfo_section(const unsigned char *s, size_t n, void *ud)
{
    struct mp_cu_target *t = ud;
    static const char key[] = "-arch sm_";
    const size_t kl = sizeof(key) - 1;
    for (size_t i = 0; i + kl < n; i++) {
        if (memcmp(s + i, key, kl) != 0)
            continue;
        size_t j = i + kl;
        unsigned sm = 0;
        while (j < n && s[j] >= '0' && s[j] <= '9' && sm < 1000)
            sm = sm * 10 + (unsigned)(s[j++] - '0');
        if (sm == t->sm && j < n && (s[j] == 'a' || s[j] == 'f'))
            t->variant = s[j] == 'a' ? MP_CU_ARCH : MP_CU_FAMILY;
        return 1;
    }
    return 0;
}

int mp_cu_scan(const unsigned char *p, size_t n, struct mp_cu_targets *out, struct mp_diag *d)
{
    if (n >= 16 && rd32(p) == MP_FATBIN_MAGIC)
        return mp_fatbin_parse(p, n, out, d);
    if (!is_elf64le(p, n))
        return 0;
    if (rd16(p + 18) == MP_EM_CUDA) {
        struct mp_cu_target t = {.kind = MP_CU_SASS};
        bool a;
        cubin_arch(p, &t.sm, &a);
        t.variant = a ? MP_CU_ARCH : MP_CU_PLAIN;
        if (!a) {
            int rc = each_section(p, n, ".note.nv.tkinfo", NULL, tkinfo_section, &t, out, d);
            if (rc < 0)
                return rc;
        }
        out->cubin = true;
        out->entries++;
        if (t.sm > 0)
            add_target(out, &t);
        return 0;
    }
    struct fb_ctx c = {out, d};
    return each_section(p, n, ".nv_fatbin", "__nv_relfatbin", fatbin_section, &c, out, d);
}
