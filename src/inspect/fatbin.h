/* fatbin.h - which GPU code a CUDA binary carries, read from its bytes
 * alone (no libelf, no CUDA): a host ELF's `.nv_fatbin` / `__nv_relfatbin`
 * sections, the fat binary containers in them and the header of each entry
 * (kind, SM number, the `a`/`f` variant, the PTX ISA version); a cubin (an
 * ELF for EM_CUDA) by its e_flags; a bare fat binary file by its magic.
 * Payloads are never decompressed: everything needed is in the headers
 * (docs/inspect.md "The format" has the layout and how it was checked).
 *
 * Partial-input contract (every function here): only p[0..n) is read,
 * with every offset and size checked against n before use, so a truncated
 * file, a section or container that runs past the end, or garbage anywhere
 * is never read out of bounds. Targets found before the point where the
 * input stops making sense are kept in *out (out->truncated says so) and
 * the function returns MP_EPARSE with d->msg naming the offset; a caller
 * that shows such a result must say it is partial. Pure: no I/O, no global
 * state; *out is grown with xalloc (release with mp_cu_targets_release). */
#ifndef MP_INSPECT_FATBIN_H
#define MP_INSPECT_FATBIN_H

#include "compat.h"

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define MP_FATBIN_MAGIC 0xBA55ED50u
#define MP_EM_CUDA 190
/* distinct targets kept per binary (SM numbers are < 256: far more than exist) */
#define MP_CU_MAX_TARGETS 256

enum mp_cu_kind {
    MP_CU_SASS = 0, /* machine code for one SM ("ELF" entry, a cubin) */
    MP_CU_PTX = 1,  /* PTX, compiled by the driver at load time */
};

enum mp_cu_variant {
    MP_CU_PLAIN = 0,  /* sm_120, compute_90 */
    MP_CU_ARCH = 'a', /* architecture-specific: sm_90a, sm_120a */
    MP_CU_FAMILY = 'f', /* family-specific: sm_100f, sm_120f */
};

struct mp_cu_target {
    unsigned kind;      /* enum mp_cu_kind */
    unsigned sm;        /* major * 10 + minor: 90, 100, 120, 121 */
    unsigned variant;   /* enum mp_cu_variant */
    unsigned ptx_major, ptx_minor; /* PTX ISA version of a PTX entry (0.0 unknown) */
};

struct mp_cu_targets {
    struct mp_cu_target *v; /* distinct targets, sorted (kind, sm, variant, ptx) */
    size_t n, cap;
    unsigned long containers; /* fat binary containers read */
    unsigned long entries;    /* entries read (duplicates included) */
    unsigned long other;      /* entries of another kind (e.g. LTO IR): listed nowhere */
    bool cubin;               /* the input was a cubin, not a host object */
    bool truncated;           /* the input ended or broke off: the list is partial */
};

void mp_cu_targets_release(struct mp_cu_targets *t);

/* "sm_120a", "compute_90", "compute_120f" into out (n >= 16). */
void mp_cu_target_name(const struct mp_cu_target *t, char *out, size_t n);

/* Fat binary containers in a section's bytes (one after the other, zero
 * padding between them allowed). 0 or MP_EPARSE (see the contract). */
int mp_fatbin_parse(const unsigned char *p, size_t n, struct mp_cu_targets *out,
                    struct mp_diag *d);

/* Any file's bytes: a 64-bit little-endian ELF (a host object's fat binary
 * sections, or a cubin's own target), or a bare fat binary. Anything else
 * (another format, a 32-bit or big-endian ELF, an ELF without a section
 * table) carries no CUDA code we can read: 0 with out->n == 0. 0 or
 * MP_EPARSE (see the contract). */
int mp_cu_scan(const unsigned char *p, size_t n, struct mp_cu_targets *out, struct mp_diag *d);

#endif
