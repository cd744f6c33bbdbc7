/* test_fatbin.c - the CUDA binary reader (inspect/fatbin.h) and the
 * compatibility judge (inspect/kernels.h): the targets of the nvcc-built
 * objects in tests/data/engine (tests/data/engine/make.sh; the same lists
 * cuobjdump gives, tests/integration/inspect_engine.sh), every prefix of
 * them (the partial-input contract), corrupted headers, CUDA's rules as a
 * table (sm_120 vs sm_121 above all), and the backend -> library map. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "inspect/fatbin.h"
#include "inspect/kernels.h"
#include "xalloc.h"

static char path_buf[4096];
static const char *data_path(const char *rel)
{
    const char *root = getenv("ROOT");
    snprintf(path_buf, sizeof(path_buf), "%s%stests/data/engine/site-packages/%s",
             root ? root : "", root ? "/" : "", rel);
    return path_buf;
}

static unsigned char *slurp(const char *rel, size_t *n)
{
    FILE *f = fopen(data_path(rel), "rb");
    assert_non_null(f);
    unsigned char *p = xmalloc(1 << 20);
    *n = fread(p, 1, 1 << 20, f);
    fclose(f);
    return p;
}

/* "sm_90 sm_100 compute_120" of a target list */
static void names(const struct mp_cu_targets *t, char *out, size_t n)
{
    out[0] = 0;
    char nm[24];
    for (size_t i = 0; i < t->n; i++) {
        mp_cu_target_name(&t->v[i], nm, sizeof(nm));
        size_t l = strlen(out);
        snprintf(out + l, n - l, "%s%s", l ? " " : "", nm);
    }
}

static void expect_file(const char *rel, const char *want)
{
    size_t n;
    unsigned char *p = slurp(rel, &n);
    struct mp_cu_targets t = {0};
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_cu_scan(p, n, &t, &d), 0);
    assert_false(t.truncated);
    char got[512];
    names(&t, got, sizeof(got));
    assert_string_equal(got, want);
    mp_cu_targets_release(&t);
    free(p);
}

/* What nvcc was asked for in make.sh, as cuobjdump --list-elf --list-ptx
 * names it (tests/data/engine/cuobjdump.txt holds its listing). */
static void test_objects(void **state)
{
    (void)state;
    expect_file("vllm/_C.abi3.so", "sm_90 sm_100 sm_120 compute_120");
    expect_file("vllm/_moe_C.abi3.so", "sm_90a sm_100a sm_120a");
    expect_file("flashinfer_jit_cache/jit_cache/fused_moe_120/fused_moe_120.so", "sm_120f");
    expect_file("other/_ptx_only.so", "compute_90");
    expect_file("other/_spark_only.so", "sm_121a compute_121");
    expect_file("other/libplain.so", "");
    /* a bare cubin: nvcc 13.0 left e_flags' `a` bit unset for this kernel (it
     * uses no arch-specific feature); the ptxas line in .note.nv.tkinfo says it */
    expect_file("flashinfer_cubin/moe_sm100a.cubin", "sm_100a");
    size_t n;
    unsigned char *p = slurp("other/_ptx_only.so", &n);
    struct mp_cu_targets t = {0};
    assert_int_equal(mp_cu_scan(p, n, &t, NULL), 0);
    assert_int_equal(t.v[0].ptx_major, 9); /* nvcc 13.0 writes PTX ISA 9.0 */
    assert_int_equal(t.v[0].ptx_minor, 0);
    mp_cu_targets_release(&t);
    free(p);
}

/* Every prefix of a real object, and of its fat binary section alone: no
 * out-of-bounds read (ASan), what is returned is a subset of the whole, and
 * a cut inside the section is reported as partial. */
static void test_prefixes(void **state)
{
    (void)state;
    size_t n;
    unsigned char *p = slurp("vllm/_C.abi3.so", &n);
    struct mp_cu_targets whole = {0};
    assert_int_equal(mp_cu_scan(p, n, &whole, NULL), 0);
    unsigned long partial = 0;
    for (size_t k = 0; k < n; k += (k < 8192 ? 1 : 97)) {
        unsigned char *cut = xmalloc(k ? k : 1);
        memcpy(cut, p, k);
        struct mp_cu_targets t = {0};
        struct mp_diag d = MP_DIAG_INIT;
        int rc = mp_cu_scan(cut, k, &t, &d);
        assert_true(rc == 0 || rc == MP_EPARSE);
        if (rc == MP_EPARSE) {
            assert_true(t.truncated && d.msg[0]);
            partial++;
        }
        assert_true(t.n <= whole.n);
        for (size_t i = 0; i < t.n; i++) {
            bool found = false;
            for (size_t j = 0; j < whole.n; j++)
                found |= !memcmp(&t.v[i], &whole.v[j], sizeof(t.v[i]));
            assert_true(found);
        }
        mp_cu_targets_release(&t);
        free(cut);
    }
    assert_true(partial > 0);
    mp_cu_targets_release(&whole);
    free(p);
}

/* A hand-made container: header, one PTX and one SASS entry. */
static size_t mkfatbin(unsigned char *b, unsigned sm, uint64_t flags)
{
    memset(b, 0, 256);
    const uint32_t magic = MP_FATBIN_MAGIC;
    memcpy(b, &magic, 4);
    b[4] = 1, b[6] = 16;
    uint64_t fat = 2 * (64 + 8);
    memcpy(b + 8, &fat, 8);
    for (int k = 0; k < 2; k++) {
        unsigned char *e = b + 16 + k * 72;
        e[0] = k ? 2 : 1;
        e[4] = 64;
        e[8] = 8;
        e[26] = 8, e[24] = 7; /* PTX ISA 8.7 */
        memcpy(e + 28, &sm, 4);
        memcpy(e + 40, &flags, 8);
    }
    return 16 + (size_t)fat;
}

static void test_handmade(void **state)
{
    (void)state;
    unsigned char b[512];
    size_t n = mkfatbin(b, 120, 0x100011);
    struct mp_cu_targets t = {0};
    assert_int_equal(mp_fatbin_parse(b, n, &t, NULL), 0);
    char got[128];
    names(&t, got, sizeof(got));
    assert_string_equal(got, "sm_120a compute_120a");
    assert_int_equal(t.v[1].ptx_major, 8);
    assert_int_equal(t.v[1].ptx_minor, 7);
    mp_cu_targets_release(&t);
    /* zero padding after it is fine; garbage is not */
    memset(b + n, 0, 24);
    assert_int_equal(mp_fatbin_parse(b, n + 24, &t, NULL), 0);
    mp_cu_targets_release(&t);
    b[n + 8] = 0x41;
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_fatbin_parse(b, n + 24, &t, &d), MP_EPARSE);
    assert_non_null(strstr(d.msg, "magic"));
    assert_int_equal(t.n, 2); /* the first container's targets are kept */
    mp_cu_targets_release(&t);
    /* a payload size that runs past the container */
    n = mkfatbin(b, 121, 0x200011);
    b[16 + 8] = 0xff;
    assert_int_equal(mp_fatbin_parse(b, n, &t, &d), MP_EPARSE);
    assert_non_null(strstr(d.msg, "payload"));
    mp_cu_targets_release(&t);
    /* an entry header size of 0 cannot loop forever */
    n = mkfatbin(b, 121, 0);
    b[16 + 4] = 0;
    assert_int_equal(mp_fatbin_parse(b, n, &t, &d), MP_EPARSE);
    mp_cu_targets_release(&t);
    /* a container size beyond the section */
    n = mkfatbin(b, 121, 0);
    b[15] = 0x10;
    assert_int_equal(mp_fatbin_parse(b, n, &t, &d), MP_EPARSE);
    assert_int_equal(t.n, 0);
    mp_cu_targets_release(&t);
}

struct rule {
    const char *target;
    unsigned dev;
    enum mp_cu_runs want;
};

static struct mp_cu_target tgt(const char *s)
{
    struct mp_cu_target t = {0};
    const char *p = s;
    if (!strncmp(p, "compute_", 8)) {
        t.kind = MP_CU_PTX;
        p += 8;
    } else {
        p += 3;
    }
    char *end;
    t.sm = (unsigned)strtoul(p, &end, 10);
    t.variant = *end == 'a' ? MP_CU_ARCH : *end == 'f' ? MP_CU_FAMILY : MP_CU_PLAIN;
    return t;
}

/* CUDA's rules (docs/inspect.md "The rules"), sm_120 against sm_121 first. */
static void test_rules(void **state)
{
    (void)state;
    static const struct rule rules[] = {
        {"sm_120", 121, MP_RUNS_NATIVE},    {"sm_120", 120, MP_RUNS_NATIVE},
        {"sm_121", 120, MP_RUNS_NO},        {"sm_121", 121, MP_RUNS_NATIVE},
        {"sm_120a", 121, MP_RUNS_NO},       {"sm_120a", 120, MP_RUNS_NATIVE},
        {"sm_121a", 121, MP_RUNS_NATIVE},   {"sm_121a", 120, MP_RUNS_NO},
        {"sm_120f", 121, MP_RUNS_NATIVE},   {"sm_120f", 120, MP_RUNS_NATIVE},
        {"sm_121f", 120, MP_RUNS_NO},       {"sm_100", 120, MP_RUNS_NO},
        {"sm_100f", 103, MP_RUNS_NATIVE},   {"sm_100a", 103, MP_RUNS_NO},
        {"sm_90", 120, MP_RUNS_NO},         {"sm_80", 86, MP_RUNS_NATIVE},
        {"sm_86", 80, MP_RUNS_NO},          {"compute_90", 121, MP_RUNS_JIT},
        {"compute_120", 121, MP_RUNS_JIT},  {"compute_121", 120, MP_RUNS_NO},
        {"compute_120a", 121, MP_RUNS_NO},  {"compute_120a", 120, MP_RUNS_JIT},
        {"compute_120f", 121, MP_RUNS_JIT}, {"compute_100f", 120, MP_RUNS_NO},
    };
    char why[256];
    for (size_t i = 0; i < MP_ARRAY_SIZE(rules); i++) {
        struct mp_cu_target t = tgt(rules[i].target);
        enum mp_cu_runs r = mp_cu_runs_on(&t, rules[i].dev, why, sizeof(why));
        if (r != rules[i].want)
            fail_msg("%s on %u: %s, want %s (%s)", rules[i].target, rules[i].dev,
                     mp_cu_runs_name(r), mp_cu_runs_name(rules[i].want), why);
    }
    /* a library: native beats jit beats no; unknown without a GPU */
    struct mp_cu_target v[2] = {tgt("sm_120a"), tgt("compute_90")};
    struct mp_cu_targets lib = {.v = v, .n = 2};
    assert_int_equal(mp_cu_judge(&lib, 120, why, sizeof(why)), MP_RUNS_NATIVE);
    assert_int_equal(mp_cu_judge(&lib, 121, why, sizeof(why)), MP_RUNS_JIT);
    assert_non_null(strstr(why, "compute_90"));
    assert_int_equal(mp_cu_judge(&lib, 89, why, sizeof(why)), MP_RUNS_NO);
    assert_int_equal(mp_cu_judge(&lib, 0, why, sizeof(why)), MP_RUNS_UNKNOWN);
    unsigned sm;
    assert_int_equal(mp_cu_parse_sm("12.1", &sm), 0);
    assert_int_equal(sm, 121);
    assert_int_equal(mp_cu_parse_sm("sm_120", &sm), 0);
    assert_int_equal(sm, 120);
    assert_int_equal(mp_cu_parse_sm("90", &sm), 0);
    assert_int_equal(sm, 90);
    assert_int_equal(mp_cu_parse_sm("12.x", &sm), MP_EUSAGE);
    assert_int_equal(mp_cu_parse_sm("7", &sm), MP_EUSAGE);
}

/* "sm_80 sm_90a compute_80" into targets (v holds at least 16) */
static struct mp_cu_targets listing(const char *s, struct mp_cu_target *v)
{
    struct mp_cu_targets t = {.v = v};
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *w = strtok(buf, " "); w; w = strtok(NULL, " "))
        v[t.n++] = tgt(w);
    return t;
}

/* Kernels that need arch-specific features (block-scaled FP4 MMA) are
 * judged by the a/f rules only. The first row is vllm#50925: the reporter's
 * cuobjdump listing of the published aarch64 nightly's
 * _moe_C_stable_libtorch.abi3.so (SASS sm_80 sm_87 sm_89 sm_90 sm_90a
 * sm_100 sm_110 sm_120, PTX sm_80): it loads on sm_121 by the plain rule,
 * but carries nothing an FP4 MoE kernel could be in. */
static void test_arch_specific(void **state)
{
    (void)state;
    static const struct {
        const char *targets;
        unsigned dev;
        enum mp_cu_runs plain, feat;
    } rows[] = {
        {"sm_80 sm_87 sm_89 sm_90 sm_90a sm_100 sm_110 sm_120 compute_80", 121,
         MP_RUNS_NATIVE, MP_RUNS_NO},
        {"sm_80 sm_87 sm_89 sm_90 sm_90a sm_100 sm_110 sm_120 compute_80", 120,
         MP_RUNS_NATIVE, MP_RUNS_NO},
        {"sm_80 sm_121a compute_80", 121, MP_RUNS_NATIVE, MP_RUNS_NATIVE}, /* the reporter's build */
        {"sm_80 sm_121a compute_80", 120, MP_RUNS_JIT, MP_RUNS_NO},
        {"sm_120f", 121, MP_RUNS_NATIVE, MP_RUNS_NATIVE}, /* the family target */
        {"sm_120f", 120, MP_RUNS_NATIVE, MP_RUNS_NATIVE},
        {"sm_120a", 121, MP_RUNS_NO, MP_RUNS_NO},
        {"sm_120 sm_120a", 121, MP_RUNS_NATIVE, MP_RUNS_NO},
        {"sm_120 compute_120f", 121, MP_RUNS_NATIVE, MP_RUNS_JIT},
        {"sm_100a sm_120 compute_120", 121, MP_RUNS_NATIVE, MP_RUNS_NO},
        {"sm_100f", 103, MP_RUNS_NATIVE, MP_RUNS_NATIVE},
        {"sm_100f", 120, MP_RUNS_NO, MP_RUNS_NO},
    };
    char why[512];
    struct mp_cu_target v[16];
    for (size_t i = 0; i < MP_ARRAY_SIZE(rows); i++) {
        struct mp_cu_targets t = listing(rows[i].targets, v);
        enum mp_cu_runs p = mp_cu_judge(&t, rows[i].dev, why, sizeof(why));
        enum mp_cu_runs f = mp_cu_judge_arch_specific(&t, rows[i].dev, why, sizeof(why));
        if (p != rows[i].plain || f != rows[i].feat)
            fail_msg("%s on %u: plain %s (want %s), arch-specific %s (want %s): %s",
                     rows[i].targets, rows[i].dev, mp_cu_runs_name(p),
                     mp_cu_runs_name(rows[i].plain), mp_cu_runs_name(f),
                     mp_cu_runs_name(rows[i].feat), why);
    }
    struct mp_cu_targets t = listing(rows[0].targets, v);
    assert_int_equal(mp_cu_judge_arch_specific(&t, 121, why, sizeof(why)), MP_RUNS_NO);
    assert_non_null(strstr(why, "loads (sm_120 on 12.1"));
    assert_int_equal(mp_cu_judge_arch_specific(&t, 0, why, sizeof(why)), MP_RUNS_UNKNOWN);
}

/* A bare fat binary file with the given targets (a: flag 0x100000, f:
 * 0x200000), each entry with an 8-byte payload. */
static void write_fatbin(const char *path, const char *targets)
{
    struct mp_cu_target v[16];
    struct mp_cu_targets t = listing(targets, v);
    unsigned char b[16 + 16 * 72] = {0};
    const uint32_t magic = MP_FATBIN_MAGIC;
    memcpy(b, &magic, 4);
    b[4] = 1, b[6] = 16;
    uint64_t fat = t.n * 72;
    memcpy(b + 8, &fat, 8);
    for (size_t k = 0; k < t.n; k++) {
        unsigned char *e = b + 16 + k * 72;
        e[0] = v[k].kind == MP_CU_PTX ? 1 : 2;
        e[4] = 64;
        e[8] = 8;
        e[26] = 9; /* PTX ISA 9.0 */
        memcpy(e + 28, &v[k].sm, 4);
        uint64_t flags = v[k].variant == MP_CU_ARCH ? 0x100000 : v[k].variant == MP_CU_FAMILY ? 0x200000 : 0;
        memcpy(e + 40, &flags, 8);
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, 16 + fat, f), 16 + fat);
    fclose(f);
}

static const char *backend_runs(const struct mp_engine_kernels *k, const char *name)
{
    for (size_t b = 0; b < k->nbackends; b++)
        if (!strcmp(k->backends[b].backend, name))
            return k->backends[b].library ? mp_cu_runs_name(k->backends[b].runs) : "none";
    return "absent";
}

/* The built-in map on a build laid out like v0.28+ vLLM with 50925's
 * listing in its FP4 MoE library: VLLM_CUTLASS (marked arch_specific) is
 * "no" on sm_121 though the library loads; Marlin (plain targets) runs;
 * FlashInfer's sm_120f module runs on sm_121. */
static void test_scan_50925(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_fatbin.XXXXXX", p[4200];
    assert_non_null(mkdtemp(dir));
    static const char *const files[][2] = {
        {"vllm/_C_stable_libtorch.abi3.so",
         "sm_80 sm_87 sm_89 sm_90 sm_90a sm_100 sm_110 sm_120 compute_80"},
        {"vllm/_moe_C_stable_libtorch.abi3.so",
         "sm_80 sm_87 sm_89 sm_90 sm_90a sm_100 sm_110 sm_120 compute_80"},
        {"flashinfer_jit_cache/fused_moe_120.so", "sm_120f"},
    };
    snprintf(p, sizeof(p), "%s/vllm", dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/flashinfer_jit_cache", dir);
    assert_int_equal(mkdir(p, 0700), 0);
    for (size_t i = 0; i < MP_ARRAY_SIZE(files); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, files[i][0]);
        write_fatbin(p, files[i][1]);
    }
    struct mp_engine_kernels k;
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_engine_scan(dir, 121, "--sm", NULL, &k, &d), 0);
    assert_int_equal(k.nlibs, 3);
    for (size_t i = 0; i < k.nlibs; i++)
        if (strstr(k.libs[i].path, "vllm/"))
            assert_int_equal(k.libs[i].runs, MP_RUNS_NATIVE); /* each library loads */
    assert_string_equal(backend_runs(&k, "VLLM_CUTLASS"), "no");
    assert_string_equal(backend_runs(&k, "MARLIN"), "native");
    assert_string_equal(backend_runs(&k, "FLASHINFER_CUTLASS"), "native");
    assert_non_null(strstr(k.summary, "VLLM_CUTLASS kernels (vllm/_C_stable_libtorch.abi3.so): "
                                      "the library loads, but"));
    mp_engine_kernels_release(&k);
    for (size_t i = 0; i < MP_ARRAY_SIZE(files); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, files[i][0]);
        assert_int_equal(unlink(p), 0);
    }
    snprintf(p, sizeof(p), "%s/vllm", dir);
    assert_int_equal(rmdir(p), 0);
    snprintf(p, sizeof(p), "%s/flashinfer_jit_cache", dir);
    assert_int_equal(rmdir(p), 0);
    assert_int_equal(rmdir(dir), 0);
}

/* The directory scan with the built-in map on the nvcc-built objects. */
static void test_engine_scan(void **state)
{
    (void)state;
    const struct mp_kernel_libs *map = mp_kernel_libs_builtin();
    assert_non_null(map);
    for (size_t i = 0; i < map->n; i++)
        assert_true(map->b[i].nsources > 0);
    struct mp_engine_kernels k;
    struct mp_diag d = MP_DIAG_INIT;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", data_path(""));
    assert_int_equal(mp_engine_scan(dir, 121, "--sm", NULL, &k, &d), 0);
    assert_int_equal(k.nlibs, 6); /* libplain.so has no CUDA code */
    /* _C.abi3.so: plain sm_120 and compute_120 only, no FP4 kernels for 12.x */
    const char *want[][2] = {{"VLLM_CUTLASS", "no"}, {"MARLIN", "no"},
                             {"FLASHINFER_CUTLASS", "native"}, {"FLASHINFER_TRTLLM", "no"}};
    for (size_t i = 0; i < MP_ARRAY_SIZE(want); i++) {
        bool seen = false;
        for (size_t b = 0; b < k.nbackends; b++) {
            if (strcmp(k.backends[b].backend, want[i][0]))
                continue;
            seen = true;
            assert_non_null(k.backends[b].library);
            assert_string_equal(mp_cu_runs_name(k.backends[b].runs), want[i][1]);
        }
        assert_true(seen);
    }
    assert_non_null(strstr(k.summary, "MARLIN"));
    mp_engine_kernels_release(&k);
    /* on sm_120 Marlin's sm_120a runs */
    assert_int_equal(mp_engine_scan(dir, 120, "--sm", NULL, &k, &d), 0);
    for (size_t b = 0; b < k.nbackends; b++)
        if (!strcmp(k.backends[b].backend, "MARLIN"))
            assert_int_equal(k.backends[b].runs, MP_RUNS_NATIVE);
    mp_engine_kernels_release(&k);
    assert_int_equal(mp_engine_scan("/nonexistent/engine", 121, "--sm", NULL, &k, &d), -2);
    mp_engine_kernels_release(&k);
    struct mp_kernel_libs bad;
    static const char badjson[] = "{\"backends\": [{\"backend\": \"X\", \"patterns\": [\"a\"]}]}";
    assert_int_equal(mp_kernel_libs_parse(badjson, sizeof(badjson) - 1, &bad, &d), MP_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_objects),  cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_handmade), cmocka_unit_test(test_rules),
        cmocka_unit_test(test_arch_specific), cmocka_unit_test(test_scan_50925),
        cmocka_unit_test(test_engine_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
