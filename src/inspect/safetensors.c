/* safetensors.c - reading safetensors headers without the data.
 *
 * Layout: u64 little-endian N, N bytes of JSON, then the data section.
 * The JSON maps tensor names to {"dtype", "shape", "data_offsets"} with
 * offsets relative to the data section; "__metadata__" holds strings. */
#include "inspect/inspect.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "xalloc.h"

#define EXACT_MAX 9007199254740992.0 /* 2^53: beyond it a JSON double is not exact */

struct span {
    uint64_t b, e;
    const char *name;
};

static int cmp_span(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->b < y->b ? -1 : x->b > y->b ? 1 : (x->e > y->e) - (x->e < y->e);
}

/* bytes per element; 0 = sub-byte or unknown (size not checked) */
static unsigned dtype_size(const char *dt, bool *known)
{
    static const struct {
        const char *n;
        unsigned sz;
    } t[] = {
        {"F64", 8},     {"F32", 4},     {"F16", 2},      {"BF16", 2},     {"I64", 8},
        {"I32", 4},     {"I16", 2},     {"I8", 1},       {"U64", 8},      {"U32", 4},
        {"U16", 2},     {"U8", 1},      {"BOOL", 1},     {"F8_E4M3", 1},  {"F8_E5M2", 1},
        {"F8_E8M0", 1}, {"F6_E2M3", 0}, {"F6_E3M2", 0},  {"F4", 0},       {"C64", 8},
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(t); i++) {
        if (!strcmp(dt, t[i].n)) {
            *known = true;
            return t[i].sz;
        }
    }
    *known = false;
    return 0;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

static void count_dtype(struct mp_st_summary *acc, const char *dt, uint64_t bytes)
{
    size_t i = 0;
    for (; i < acc->ndtypes; i++)
        if (!strcmp(acc->dtypes[i].name, dt))
            break;
    if (i == acc->ndtypes) {
        if (acc->ndtypes == MP_ST_MAX_DTYPES)
            return; /* cannot happen: dtypes are from a fixed table */
        snprintf(acc->dtypes[i].name, sizeof(acc->dtypes[i].name), "%s", dt);
        acc->ndtypes++;
    }
    acc->dtypes[i].count++;
    acc->dtypes[i].bytes += bytes;
}

static bool get_u64(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > EXACT_MAX ||
        v->valuedouble != floor(v->valuedouble))
        return false;
    *out = (uint64_t)v->valuedouble;
    return true;
}

int mp_st_parse_header(const char *json, size_t len, uint64_t data_len, struct mp_st_summary *acc,
                       struct mp_diag *d)
{
    int rc = 0;
    struct span *sp = NULL;
    size_t nsp = 0;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        rc = mp_diag_set(d, MP_EPARSE, 0, "safetensors header is not a JSON object");
        goto out;
    }
    int n = cJSON_GetArraySize(root);
    sp = xcalloc((size_t)n + 1, sizeof(*sp));
    unsigned long long tensors = 0, bytes = 0;
    struct mp_st_summary tmp = *acc;
    const cJSON *t;
    cJSON_ArrayForEach(t, root)
    {
        const char *name = t->string ? t->string : "";
        if (!strcmp(name, "__metadata__")) {
            if (!cJSON_IsObject(t)) {
                rc = mp_diag_set(d, MP_EPARSE, 0, "__metadata__ is not an object");
                goto out;
            }
            continue;
        }
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
        const cJSON *offs = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
        if (!cJSON_IsObject(t) || !cJSON_IsString(dt) || !cJSON_IsArray(shape) ||
            !cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2) {
            rc = mp_diag_set(d, MP_EPARSE, 0,
                             "tensor \"%.80s\": needs dtype, shape and data_offsets [begin, end]",
                             name);
            goto out;
        }
        bool known;
        unsigned esz = dtype_size(dt->valuestring, &known);
        if (!known) {
            rc = mp_diag_set(d, MP_EPARSE, 0, "tensor \"%.80s\": unknown dtype \"%.20s\"", name,
                             dt->valuestring);
            goto out;
        }
        uint64_t elems = 1;
        bool overflow = false;
        const cJSON *dim;
        cJSON_ArrayForEach(dim, shape)
        {
            uint64_t v;
            if (!get_u64(dim, &v)) {
                rc = mp_diag_set(d, MP_EPARSE, 0, "tensor \"%.80s\": shape holds a non-integer",
                                 name);
                goto out;
            }
            if (v && elems > UINT64_MAX / v)
                overflow = true;
            else
                elems *= v;
        }
        uint64_t b, e;
        if (!get_u64(cJSON_GetArrayItem(offs, 0), &b) || !get_u64(cJSON_GetArrayItem(offs, 1), &e) ||
            b > e) {
            rc = mp_diag_set(d, MP_EPARSE, 0, "tensor \"%.80s\": bad data_offsets", name);
            goto out;
        }
        if (e > data_len) {
            rc = mp_diag_set(d, MP_EPARSE, 0,
                             "tensor \"%.80s\": data_offsets end %llu beyond the data section "
                             "(%llu bytes)",
                             name, (unsigned long long)e, (unsigned long long)data_len);
            goto out;
        }
        if (esz && (overflow || elems > UINT64_MAX / esz || elems * esz != e - b)) {
            rc = mp_diag_set(d, MP_EPARSE, 0,
                             "tensor \"%.80s\": %llu bytes in data_offsets, but %s x shape needs "
                             "%s",
                             name, (unsigned long long)(e - b), dt->valuestring,
                             overflow || elems > UINT64_MAX / esz ? "more than 2^64" : "another size");
            goto out;
        }
        sp[nsp++] = (struct span){ b, e, name };
        tensors++;
        bytes += e - b;
        count_dtype(&tmp, dt->valuestring, e - b);
        if (!strcmp(dt->valuestring, "U8") && (ends_with(name, ".weight") ||
                                              ends_with(name, "weight_packed")))
            tmp.fp4_weights++;
        else if (!strcmp(dt->valuestring, "F8_E4M3") && strstr(name, "scale"))
            tmp.fp8_scales++;
        else if (!strcmp(dt->valuestring, "F32") &&
                 (ends_with(name, "scale_2") || ends_with(name, "global_scale") ||
                  ends_with(name, "input_scale")))
            tmp.f32_scales++;
    }
    qsort(sp, nsp, sizeof(*sp), cmp_span);
    for (size_t i = 1; i < nsp; i++) {
        if (sp[i].b < sp[i - 1].e && sp[i].e > sp[i].b) {
            rc = mp_diag_set(d, MP_EPARSE, 0, "tensors \"%.80s\" and \"%.80s\" overlap",
                             sp[i - 1].name, sp[i].name);
            goto out;
        }
    }
    tmp.files++;
    tmp.tensors += tensors;
    tmp.bytes += bytes;
    *acc = tmp;
out:
    free(sp);
    cJSON_Delete(root);
    return rc;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int check_len(uint64_t hlen, uint64_t file_len, struct mp_diag *d)
{
    if (file_len < 8)
        return mp_diag_set(d, MP_EPARSE, 0, "truncated: %llu bytes, shorter than the 8-byte "
                           "header length", (unsigned long long)file_len);
    if (hlen > MP_ST_MAX_HEADER)
        return mp_diag_set(d, MP_ELIMIT, 0, "declared header length %llu exceeds the %u-byte bound",
                           (unsigned long long)hlen, MP_ST_MAX_HEADER);
    if (hlen < 2 || hlen > file_len - 8)
        return mp_diag_set(d, MP_EPARSE, 0,
                           "truncated: header length %llu but only %llu bytes follow",
                           (unsigned long long)hlen, (unsigned long long)(file_len - 8));
    return 0;
}

int mp_st_parse_buffer(const unsigned char *p, size_t n, struct mp_st_summary *acc,
                       struct mp_diag *d)
{
    uint64_t hlen = n >= 8 ? le64(p) : 0;
    int rc = check_len(hlen, n, d);
    if (rc)
        return rc;
    return mp_st_parse_header((const char *)p + 8, (size_t)hlen, n - 8 - hlen, acc, d);
}

static int read_full(int fd, void *buf, size_t n, off_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return MP_EPARSE;
        got += (size_t)r;
    }
    return 0;
}

int mp_st_read_file(const char *path, struct mp_st_summary *acc, struct mp_diag *d)
{
    if (d)
        snprintf(d->file, sizeof(d->file), "%s", path);
    int fd = mp_open_regular(path, d); /* a FIFO there is an error, not a wait */
    if (fd < 0)
        return fd;
    int rc;
    char *hdr = NULL;
    struct stat st;
    unsigned char lenb[8];
    if (fstat(fd, &st) != 0) {
        rc = mp_diag_set(d, -errno, 0, "%s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = mp_diag_set(d, MP_EPARSE, 0, "not a regular file");
        goto out;
    }
    uint64_t flen = (uint64_t)st.st_size;
    uint64_t hlen = 0;
    if (flen >= 8) {
        rc = read_full(fd, lenb, 8, 0);
        if (rc) {
            rc = mp_diag_set(d, rc, 0, "cannot read the header length");
            goto out;
        }
        hlen = le64(lenb);
    }
    rc = check_len(hlen, flen, d);
    if (rc)
        goto out;
    hdr = xmalloc((size_t)hlen + 1);
    rc = read_full(fd, hdr, (size_t)hlen, 8);
    if (rc) {
        rc = mp_diag_set(d, rc, 0, "cannot read the %llu-byte header", (unsigned long long)hlen);
        goto out;
    }
    rc = mp_st_parse_header(hdr, (size_t)hlen, flen - 8 - hlen, acc, d);
out:
    free(hdr);
    close(fd);
    return rc;
}
