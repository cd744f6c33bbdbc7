/* test_crash_parsers.c - the pure parsers behind crash.kernel and
 * crash.xid: the demangler (logs/demangle.h) against c++filt's output for
 * real and realistic kernel names, the core-dump lines (logs/coredump.h),
 * the kernel log's records and Xid lines (logs/xidline.h), and the catalog
 * of data/gpufault.json (logs/gpufault.h). Every expected value below was
 * written from the source it names (c++filt 2.40 for the demangled forms,
 * issue 24's H200 measurement and vLLM issues for the lines). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "logs/coredump.h"
#include "logs/demangle.h"
#include "logs/gpufault.h"
#include "logs/xidline.h"

/* mangled name -> what c++filt prints, without a leading "void " */
static const struct {
    const char *in, *want;
} demangled[] = {
        {"_ZN16marlin_moe_wna166MarlinILl5ELl13ELl5ELl12ELi256ELi1ELi8ELi8ELb1ELi4ELi1ELb0EEEvPK4int4S3_PS1_S4_S3_PKfS3_PKtS3_PKiSA_SA_SA_S6_ibbiiiiPibbb",
         "marlin_moe_wna16::Marlin<5l, 13l, 5l, 12l, 256, 1, 8, 8, true, 4, 1, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, float const*, int4 const*, unsigned short const*, int4 const*, int const*, int const*, int const*, int const*, float const*, int, bool, bool, int, int, int, int, int*, bool, bool, bool)"},
        {"_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalINS1_17GroupProblemShapeIN4cute5tupleIJiiiEEEEENS1_10collective13CollectiveMmaINS1_36MainloopSm120ArrayTmaWarpSpecializedILi3ELi2ENS6_IJNS5_1CILi1EEESD_SD_EEENS1_40KernelPtrArrayTmaWarpSpecializedPingpongEEENS6_IJNSC_ILi128EEESH_SH_EEENS_11nv_float4_tINS_12float_e2m1_tEEENS_13float_ue4m3_tESL_SM_EENS_8epilogue10collective18CollectiveEpilogueIN12tensorrt_llm18cutlass_extensions24EpilogueMoeFusedFinalizeENS_10bfloat16_tEEEvEEEEvNT_6ParamsE",
         "cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm120ArrayTmaWarpSpecialized<3, 2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong>, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cutlass::nv_float4_t<cutlass::float_e2m1_t>, cutlass::float_ue4m3_t, cutlass::nv_float4_t<cutlass::float_e2m1_t>, cutlass::float_ue4m3_t>, cutlass::epilogue::collective::CollectiveEpilogue<tensorrt_llm::cutlass_extensions::EpilogueMoeFusedFinalize, cutlass::bfloat16_t>, void> >(cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm120ArrayTmaWarpSpecialized<3, 2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong>, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cutlass::nv_float4_t<cutlass::float_e2m1_t>, cutlass::float_ue4m3_t, cutlass::nv_float4_t<cutlass::float_e2m1_t>, cutlass::float_ue4m3_t>, cutlass::epilogue::collective::CollectiveEpilogue<tensorrt_llm::cutlass_extensions::EpilogueMoeFusedFinalize, cutlass::bfloat16_t>, void>::Params)"},
        {"_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalINS1_17GroupProblemShapeIN4cute5tupleIJiiiEEEEENS1_10collective13CollectiveMmaINS1_36MainloopSm120ArrayTmaWarpSpecializedILi3ELi2ENS6_IJNS5_1CILi1EEESD_SD_EEENS1_40KernelPtrArrayTmaWarpSpecializedPingpongEEENS6_IJNSC_ILi128EEESH_SH_EEENS_11nv_float4_tINS_12float_e2m1_tEEENS_13float_ue4m3_tESL_SM_EENS_8epilogue10collective18CollectiveEpilogueINSO_34PtrArrayTmaWarpSpecializedPingpongENS_10bfloat16_tEEEvEEEEvNT_6ParamsE",
         "cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm120ArrayTmaWarpSpecialized<3, 2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong>, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cutlass::nv_float4_t<cutlass::float_e2m1_t>, cutlass::float_ue4m3_t, cutlass::nv_float4_t<cutlass::float_e2m1_t>, cutlass::float_ue4m3_t>, cutlass::epilogue::collective::CollectiveEpilogue<cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong, cutlass::bfloat16_t>, void> >(cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm120ArrayTmaWarpSpecialized<3, 2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelPtrArrayTmaWarpSpecializedPingpong>, cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cutlass::nv_float4_t<cutlass::float_e2m1_t>, cutlass::float_ue4m3_t, cutlass::nv_float4_t<cutlass::float_e2m1_t>, cutlass::float_ue4m3_t>, cutlass::epilogue::collective::CollectiveEpilogue<cutlass::epilogue::PtrArrayTmaWarpSpecializedPingpong, cutlass::bfloat16_t>, void>::Params)"},
        {"_ZN7humming15moe_gemm_kernelILi128ELi64EEEvPKvPvPKii",
         "humming::moe_gemm_kernel<128, 64>(void const*, void*, int const*, int)"},
        {"_ZN7cutlass13device_kernelIN4gemm6kernelIiEEEEvNT_6ParamsE",
         "cutlass::device_kernel<gemm::kernel<int> >(gemm::kernel<int>::Params)"},
        {"_Z9up_kernelPKfPKjiiiPKhS4_S0_Pfx",
         "up_kernel(float const*, unsigned int const*, int, int, int, unsigned char const*, unsigned char const*, float const*, float*, long long)"},
        {"_ZN16marlin_moe_wna166MarlinILl1ELl2ELi256ELb1EEEvPK4int4",
         "marlin_moe_wna16::Marlin<1l, 2l, 256, true>(int4 const*)"},
        {"_ZN2at6native24index_elementwise_kernelILi128ELi4EZNS0_16gpu_index_kernelIZNS0_17index_kernel_implINS0_10OpaqueTypeILi1EEEEEvRNS_18TensorIteratorBaseEN3c108ArrayRefIlEESA_EUlPcPKclE_EEvS7_SA_SA_RKT_bEUliE_EEvlT1_",
         "at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<1> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at::native::OpaqueType<1> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} const&, bool)::{lambda(int)#1}>(long, at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<1> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at::native::OpaqueType<1> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} const&, bool)::{lambda(int)#1})"},
        {"_ZN12_GLOBAL__N_16kernelILj5ELm3ELb0EEEvPf",
         "(anonymous namespace)::kernel<5u, 3ul, false>(float*)"},
        {"_ZN3foo3barISt6vectorIiSaIiEEEEvv",
         "foo::bar<std::vector<int, std::allocator<int> > >()"},
        {"_Z3fooILi3EEvT_",
         "foo<3>(3)"},
        {"_Z6gatherPfS_i",
         "gather(float*, float*, int)"},
        {"_ZN3c105ArrayIlLj4EEC2Ev",
         "c10::Array<long, 4u>::Array()"},
        {"_Z27moe_align_block_size_kernelIiEvPKT_PiS3_S3_iimS3_",
         "moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, unsigned long, int*)"},
        {"_ZN1A1BIiE1fEv",
         "A::B<int>::f()"},
        {"_ZNK1A1fEv",
         "A::f() const"},
        {"_Z28flash_fwd_mla_combine_kernelIN7cutlass10bfloat16_tELi512ELi8ELi32ELi256EEv14DecodingParams",
         "flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, 512, 8, 32, 256>(DecodingParams)"},
};

static void test_demangle_matches_cxxfilt(void **st)
{
    (void)st;
    for (size_t i = 0; i < sizeof(demangled) / sizeof(demangled[0]); i++) {
        struct buf b = BUF_INIT;
        int rc = mp_demangle(demangled[i].in, strlen(demangled[i].in), &b);
        if (rc != 0 || strcmp(b.data, demangled[i].want))
            fail_msg("%s:\n got %d '%s'\nwant '%s'", demangled[i].in, rc, b.data,
                     demangled[i].want);
        buf_release(&b);
    }
}

/* names it does not read: an error, and out untouched */
static void test_demangle_refuses(void **st)
{
    (void)st;
    static const char *const bad[] = {
        "gather",                /* not mangled */
        "_Z",                    /* empty */
        "_Z3fooPFivE",           /* a function type: not read */
        "_Z3fooILi1EXadL_Z3barEEEvv", /* an expression argument */
        "_ZN3foo3barE_junk",     /* trailing bytes */
        "_Z3foS_",               /* substitution before any candidate */
        "_Z1fT_",                /* template parameter outside a template */
        "_Z999foo",              /* length past the end */
        "_ZN3fooIiE",            /* unterminated nesting */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct buf b = BUF_INIT;
        buf_adds(&b, "kept");
        int rc = mp_demangle(bad[i], strlen(bad[i]), &b);
        if (rc == 0 || strcmp(b.data, "kept"))
            fail_msg("%s: got %d '%s', want an error and the buffer untouched", bad[i], rc, b.data);
        buf_release(&b);
    }
}

/* bounds: deep nesting and a huge expansion are MP_ELIMIT, never a crash */
static void test_demangle_bounds(void **st)
{
    (void)st;
    struct buf in = BUF_INIT, out = BUF_INIT;
    buf_adds(&in, "_Z1f");
    for (int i = 0; i < 500; i++)
        buf_adds(&in, "P");
    buf_adds(&in, "i");
    assert_int_equal(mp_demangle(in.data, in.len, &out), MP_ELIMIT);
    buf_reset(&in);
    /* AAA<x, x> of the previous argument, 40 times: 2^40 bytes if nothing
     * stopped it (S_ = AAA, S0_ = AAA<int>, each new one the next S) */
    buf_adds(&in, "_Z1fI3AAAIiE");
    for (int i = 0; i < 40; i++)
        buf_printf(&in, "S_IS%d_S%d_E", i, i);
    buf_adds(&in, "Evv");
    int rc = mp_demangle(in.data, in.len, &out);
    assert_true(rc == MP_ELIMIT || rc == MP_EPARSE);
    assert_int_equal(out.len, 0);
    buf_release(&in);
    buf_release(&out);
}

static void test_demangle_words_and_short(void **st)
{
    (void)st;
    struct mp_strv w = MP_STRV_INIT;
    const char *cut = "_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalINS1_17Group";
    mp_demangle_words(cut, strlen(cut), &w);
    assert_int_equal(w.n, 5);
    assert_string_equal(w.v[0], "cutlass");
    assert_string_equal(w.v[2], "gemm");
    assert_string_equal(w.v[4], "GemmUniversal");
    mp_strv_release(&w);
    mp_demangle_words("gather", 6, &w);
    assert_int_equal(w.n, 1);
    assert_string_equal(w.v[0], "gather");
    mp_strv_release(&w);

    static const struct {
        const char *readable, *key, *want;
    } rows[] = {
        {"cutlass::device_kernel<cutlass::gemm::MainloopSm120ArrayTmaWarpSpecialized<3> >(P)",
         "MainloopSm120ArrayTmaWarpSpecialized",
         "cutlass::device_kernel<…MainloopSm120ArrayTmaWarpSpecialized…>"},
        {"cutlass::device_kernel<x>(P)", NULL, "cutlass::device_kernel<…>"},
        {"marlin_moe_wna16::Marlin<5l>(int4 const*)", "marlin_moe_wna16", "marlin_moe_wna16::Marlin<…>"},
        {"gather", "gather", "gather"},
        {"up_kernel(float const*)", NULL, "up_kernel"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct buf b = BUF_INIT;
        mp_demangle_short(rows[i].readable, rows[i].key, &b);
        if (strcmp(b.data, rows[i].want))
            fail_msg("short of '%s': got '%s' want '%s'", rows[i].readable, b.data, rows[i].want);
        buf_release(&b);
    }
}

static void feed(struct mp_coredump *c, const char *text)
{
    long no = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        mp_coredump_line(c, p, n, ++no);
        p += n + (nl ? 1 : 0);
    }
}

/* issue 24's H200 lines, byte for byte (tabs in the frame line) */
static void test_coredump_h200(void **st)
{
    (void)st;
    struct mp_coredump c;
    mp_coredump_init(&c);
    feed(&c, "(EngineCore_DP0 pid=551) INFO something else\n"
             "[15:56:34.204002] coredump: Starting GPU coredump generation\n"
             "[15:56:34.206105] coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)\n"
             "[15:56:34.206134] coredump:   - Device: 0\n"
             "[15:56:34.206139] coredump:   - SM: 0\n"
             "[15:56:34.206142] coredump:   - Warp: 2\n"
             "[15:56:34.206145] coredump:   - PC 0x7f7ae77a6d70\n"
             "[15:56:34.206509] coredump: Stack trace (lane masks: active 0xFFFFFFFF, valid 0xFFFFFFFF):\n"
             "[15:56:34.206516] coredump:   #0\t0x7f7ae77a6e60\tgather\n"
             "[15:56:34.208288] coredump: SM 1/132 has finished state collection\n"
             "[15:56:34.425449] coredump: Writing ELF file to /run/a/core_457.1796399790\n"
             "[15:56:34.435534] coredump: All done (took 00s)\n");
    assert_int_equal(c.n, 1);
    const struct mp_cd_dump *d = mp_coredump_exception(&c);
    assert_non_null(d);
    assert_string_equal(d->exception, "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS");
    assert_int_equal(d->exception_code, 14);
    assert_int_equal(d->device, 0);
    assert_int_equal(d->sm, 0);
    assert_int_equal(d->warp, 2);
    assert_true(d->has_pc);
    assert_true(d->pc == 0x7f7ae77a6d70ULL);
    assert_int_equal(d->nframes, 1);
    assert_string_equal(d->frames[0].name, "gather");
    assert_true(d->frames[0].pc == 0x7f7ae77a6e60ULL);
    assert_string_equal(d->file, "/run/a/core_457.1796399790");
    assert_int_equal(d->pid, 457);
    assert_true(d->started && d->done);
    assert_int_equal(d->line_first, 2);
    assert_int_equal(d->line_exception, 3);
    assert_int_equal(d->line_frame, 9);
    assert_int_equal(c.lines, 11);
    mp_coredump_release(&c);
}

/* vLLM issue "DeepSeek v3.2 hits IMA on DP/EP setup": no Starting line,
 * spaces instead of tabs, a mangled name */
static void test_coredump_vllm_issue(void **st)
{
    (void)st;
    struct mp_coredump c;
    mp_coredump_init(&c);
    feed(&c, "[21:42:21.267000] coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)\n"
             "[21:42:21.267066] coredump: - Device: 0\n"
             "[21:42:21.267072] coredump: - SM: 0\n"
             "[21:42:21.267078] coredump: - Warp: 12\n"
             "[21:42:21.267085] coredump: - PC 0x7f49c2e9ca80\n"
             "[21:42:21.268575] coredump: Stack trace (lane masks: active 0xffffffff, valid 0xffffffff):\n"
             "[21:42:21.268586] coredump: #0 0x7f49c2e9caf0 _Z28flash_fwd_mla_combine_kernelIN7cutlass10bfloat16_tELi512ELi8ELi32ELi256EEv14DecodingParams\n");
    const struct mp_cd_dump *d = mp_coredump_exception(&c);
    assert_non_null(d);
    assert_int_equal(d->warp, 12);
    assert_int_equal(d->nframes, 1);
    assert_string_equal(d->frames[0].name, "_Z28flash_fwd_mla_combine_kernelIN7cutlass10bfloat16_tELi512ELi8ELi32ELi256EEv14DecodingParams");
    assert_false(d->done);
    assert_null(d->file);
    mp_coredump_release(&c);
}

/* two processes' lines interleaved, told apart by their tags; a field is
 * set once (a second Device line does not overwrite) */
static void test_coredump_two_processes(void **st)
{
    (void)st;
    struct mp_coredump c;
    mp_coredump_init(&c);
    feed(&c, "(Worker_TP0 pid=10) coredump: Starting GPU coredump generation\n"
             "(Worker_TP1 pid=11) coredump: Starting GPU coredump generation\n"
             "(Worker_TP1 pid=11) coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_MISALIGNED_ADDRESS (6)\n"
             "(Worker_TP0 pid=10) coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)\n"
             "(Worker_TP0 pid=10) coredump:   - Device: 0\n"
             "(Worker_TP0 pid=10) coredump:   - Device: 5\n"
             "(Worker_TP1 pid=11) coredump:   - Device: 1\n"
             "(Worker_TP1 pid=11) coredump:   #0 0x10 k1\n"
             "(Worker_TP0 pid=10) coredump:   #0 0x20 k0\n"
             "(Worker_TP0 pid=10) coredump:   #1 0x30 caller0\n");
    assert_int_equal(c.n, 2);
    assert_int_equal(c.d[0].pid, 10);
    assert_int_equal(c.d[0].device, 0);
    assert_int_equal(c.d[0].nframes, 2);
    assert_string_equal(c.d[0].frames[1].name, "caller0");
    assert_int_equal(c.d[1].pid, 11);
    assert_string_equal(c.d[1].exception, "CUDBG_EXCEPTION_WARP_MISALIGNED_ADDRESS");
    assert_string_equal(c.d[1].frames[0].name, "k1");
    /* the first dump with an exception is the first in log order */
    assert_ptr_equal(mp_coredump_exception(&c), &c.d[0]);
    mp_coredump_release(&c);
}

/* a user-triggered dump (vLLM blog 2025-11-27): no exception; a second
 * Starting line without tags begins a second dump; bounds */
static void test_coredump_user_and_bounds(void **st)
{
    (void)st;
    struct mp_coredump c;
    mp_coredump_init(&c);
    feed(&c, "[01:39:15.256278] coredump: Writing ELF file to /tmp/cuda_coredump_hostname.3000837.1764236276\n"
             "[01:39:15.292128] coredump: All done (took 00s)\n"
             "coredump: Starting GPU coredump generation\n"
             "coredump: Writing ELF file to /x/pipe_dump\n");
    assert_int_equal(c.n, 2);
    assert_null(mp_coredump_exception(&c));
    assert_int_equal(c.d[0].pid, 3000837);
    assert_true(c.d[0].done);
    assert_int_equal(c.d[1].pid, 0);
    mp_coredump_release(&c);
    mp_coredump_init(&c);
    for (int i = 0; i < 40; i++)
        feed(&c, "coredump: #0 0x1 k\n");
    assert_int_equal(c.d[0].nframes, MP_CD_FRAMES);
    assert_int_equal(c.d[0].frames_dropped, 40 - MP_CD_FRAMES);
    for (int i = 0; i < 20; i++)
        feed(&c, "coredump: Starting GPU coredump generation\n");
    assert_int_equal(c.n, MP_CD_RECORDS);
    assert_true(c.dropped > 0);
    assert_false(mp_coredump_line(&c, "no dump here", 12, 1));
    mp_coredump_release(&c);
    static const struct {
        const char *path;
        long pid;
    } pids[] = {{"d/core_457.1796399790", 457}, {"core_12", 12}, {"/a/b.3000837.1764236276", 3000837},
                {"/a/core_x.1", 0}, {"/a/plain", 0}, {"/a/b.c.1", 0}, {"", 0}};
    for (size_t i = 0; i < sizeof(pids) / sizeof(pids[0]); i++)
        if (mp_coredump_file_pid(pids[i].path) != pids[i].pid)
            fail_msg("pid of %s: got %ld want %ld", pids[i].path,
                     mp_coredump_file_pid(pids[i].path), pids[i].pid);
}

static void test_kmsg_split(void **st)
{
    (void)st;
    static const struct {
        const char *line;
        long long ts;
        const char *msg;
    } rows[] = {
        {"6,1234,8123456789,-;NVRM: Xid x", 8123456789LL, "NVRM: Xid x"},
        {"4,99,0,c;hello", 0, "hello"},
        {"<6>[ 8123.456789] NVRM: y", 8123456789LL, "NVRM: y"},
        {"[    1.5] boot", 1500000LL, "boot"},
        {"Oct 01 13:00:00 host kernel: NVRM: Xid", -1, "Oct 01 13:00:00 host kernel: NVRM: Xid"},
        {"6,12;no time", -1, "6,12;no time"},
        {"[12] x", 12000000LL, "x"},
        {"", -1, ""},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        long long ts;
        size_t off;
        mp_kmsg_split(rows[i].line, strlen(rows[i].line), &ts, &off);
        if (ts != rows[i].ts || strcmp(rows[i].line + off, rows[i].msg))
            fail_msg("'%s': got %lld '%s'", rows[i].line, ts, rows[i].line + off);
    }
}

static void test_xid_lines(void **st)
{
    (void)st;
    static const struct {
        const char *line;
        int xid;
        const char *pci;
        long pid;
        const char *name, *fault_type, *esr, *detail_prefix;
    } rows[] = {
        {"NVRM: Xid (PCI:0000:00:06): 13, Graphics SM Warp Exception on (GPC 7, TPC 6, SM 0): MMU Fault",
         13, "0000:00:06", 0, "", "", "", "Graphics SM Warp Exception"},
        {"NVRM: Xid (PCI:0000:00:06): 13, Graphics Exception: ESR 0x57b730=0x8000017 0x57b734=0x20 0x57b728=0x1f81fb60 0x57b72c=0x1174",
         13, "0000:00:06", 0, "", "", "ESR 0x57b730=0x8000017 0x57b734=0x20 0x57b728=0x1f81fb60 0x57b72c=0x1174",
         "Graphics Exception"},
        {"NVRM: Xid (PCI:0000:00:06): 31, pid=552, name=python3, channel 0x0000000a, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC0 UNRECOGNIZED_CLIENT faulted @ 0x1827e2_000345d0. Fault is of type UNRECOGNIZED_FAULT UNRECOGNIZED_ACCESS_TYPE",
         31, "0000:00:06", 552, "python3", "UNRECOGNIZED_FAULT UNRECOGNIZED_ACCESS_TYPE", "", "channel"},
        {"NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
         79, "0000:05:00", 0, "", "", "", "GPU has fallen off the bus."},
        {"[ 8123.4] NVRM: Xid (PCI:0000:01:00): 43, pid=13705, name=VLLM::EngineCor, Ch 0000000c",
         43, "0000:01:00", 13705, "VLLM::EngineCor", "", "", "Ch 0000000c"},
        {"NVRM: Xid (PCI:0000:c1:00): 119, pid=9, name=x, Timeout after 6s of waiting for RPC response from GPU0 GSP!",
         119, "0000:c1:00", 9, "x", "", "", "Timeout after 6s"},
        /* older drivers: no "PCI:" and no pid (a 2012 syslog: "NVRM: Xid
         * (0000:03:00): 13, 0003 00000000 ..."); the address still tells
         * the GPU apart from another tenant's */
        {"May 10 22:25:01 jambi kernel: [176830.774761] NVRM: Xid (0000:03:00): 13, 0003 00000000 00008297 00001098 00000000 00000044",
         13, "0000:03:00", 0, "", "", "", "0003 00000000"},
        /* NVIDIA/open-gpu-kernel-modules issue 1150 (driver 590) */
        {"kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
         45, "0000:dc:00", 1818990, "python3", "", "", "Ch 00000001 caused"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct mp_xid_line x;
        if (!mp_xid_parse(rows[i].line, strlen(rows[i].line), &x))
            fail_msg("not read: %s", rows[i].line);
        if (x.xid != rows[i].xid || strcmp(x.pci, rows[i].pci) || x.pid != rows[i].pid ||
            strcmp(x.name, rows[i].name) || strcmp(x.fault_type, rows[i].fault_type) ||
            strcmp(x.esr, rows[i].esr) ||
            strncmp(x.detail, rows[i].detail_prefix, strlen(rows[i].detail_prefix)))
            fail_msg("%s:\n got xid %d pci '%s' pid %ld name '%s' type '%s' esr '%s' detail '%s'",
                     rows[i].line, x.xid, x.pci, x.pid, x.name, x.fault_type, x.esr, x.detail);
    }
    static const char *const not_xid[] = {"NVRM: GPU at PCI:0000:01:00: GPU-1234", "Xid 13",
                                          "NVRM: Xid (PCI:0000:00:06", "NVRM: Xid (PCI:1): abc", ""};
    for (size_t i = 0; i < sizeof(not_xid) / sizeof(not_xid[0]); i++) {
        struct mp_xid_line x;
        if (mp_xid_parse(not_xid[i], strlen(not_xid[i]), &x) || x.xid != 0)
            fail_msg("read as an Xid: '%s'", not_xid[i]);
    }
}

/* the catalog: families in order, classes of exceptions, causes of Xids */
static void test_catalog(void **st)
{
    (void)st;
    size_t nf, ne, nx;
    mp_gf_counts(&nf, &ne, &nx);
    assert_true(nf >= 12 && ne >= 15 && nx >= 15);
    static const struct {
        const char *readable, *raw, *family, *key;
    } fams[] = {
        {"cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<x>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm120ArrayTmaWarpSpecialized<3> > > >(P)",
         NULL, "cutlass-grouped-gemm", "MainloopSm120ArrayTmaWarpSpecialized"},
        {"cutlass::device_kernel<G<cutlass::gemm::MainloopSm120ArrayTmaWarpSpecialized<3>, tensorrt_llm::cutlass_extensions::EpilogueMoeFusedFinalize> >(P)",
         NULL, "flashinfer-cutlass-moe", "tensorrt_llm"},
        {"cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<int> >(P)", NULL, "cutlass-gemm", "cutlass"},
        {"marlin_moe_wna16::Marlin<5l>(int4 const*)", NULL, "marlin-moe", "marlin_moe_wna16"},
        {"marlin::Marlin<5l>(int4 const*)", NULL, "marlin", "marlin"},
        {"GemmGatedActKernel_E4m3_E4m3_Fp32_tile128x8x256_epilogueTile128x8_mma128x8x32_cluster1x1x1_transposeMmaOutput_sm100a",
         NULL, "trtllm-gen-moe", "GemmGatedActKernel_E4m3_E4m3_Fp32_tile128x8x256_epilogueTile128x8_mma128x8x32_cluster1x1x1_transposeMmaOutput_sm100a"},
        {"kernel_cutlass_grouped_gemm_0", NULL, "cute-dsl", "kernel_cutlass_grouped_gemm_0"},
        {"flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, 512>(DecodingParams)", NULL, "flash-attention", "flash_fwd_mla_combine_kernel"},
        {"count_and_sort_expert_tokens_kernel", NULL, "moe-routing", "count_and_sort_expert_tokens_kernel"},
        {"fused_moe_kernel", NULL, "triton-fused-moe", "fused_moe_kernel"},
        {"at::native::index_elementwise_kernel<128, 4>(long)", NULL, "pytorch", "at"},
        {NULL, "_ZN16marlin_moe_wna166MarlinILl5EEEvv", "marlin-moe", ""},
        {"gather", "gather", NULL, NULL},
        {"up_kernel(float const*)", "_Z9up_kernelPKf", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
        struct mp_kfamily f;
        bool got = mp_gf_family(fams[i].readable, fams[i].raw, &f);
        if (got != (fams[i].family != NULL) || (got && strcmp(f.id, fams[i].family)) ||
            (got && strcmp(f.key, fams[i].key)))
            fail_msg("family of '%s': got %s key '%s', want %s key '%s'",
                     fams[i].readable ? fams[i].readable : fams[i].raw, got ? f.id : "none",
                     got ? f.key : "", fams[i].family ? fams[i].family : "none",
                     fams[i].key ? fams[i].key : "");
        if (got && (!f.label || !*f.label))
            fail_msg("family %s has no label", f.id);
    }
    static const struct {
        const char *exc, *cls;
    } excs[] = {{"CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS", "illegal-address"},
                {"CUDBG_EXCEPTION_WARP_MISALIGNED_ADDRESS", "misaligned-address"},
                {"CUDBG_EXCEPTION_WARP_ILLEGAL_INSTRUCTION", "illegal-instruction"},
                {"CUDBG_EXCEPTION_WARP_OUT_OF_RANGE_ADDRESS", "illegal-address"},
                {"CUDBG_EXCEPTION_WARP_ASSERT", "cuda-other"},
                {"CUDBG_EXCEPTION_NOT_A_THING", NULL},
                {NULL, NULL}};
    for (size_t i = 0; i < sizeof(excs) / sizeof(excs[0]); i++) {
        const char *m = NULL;
        const char *cls = mp_gf_exception_class(excs[i].exc, &m);
        if ((cls == NULL) != (excs[i].cls == NULL) || (cls && strcmp(cls, excs[i].cls)) ||
            (cls && !m))
            fail_msg("class of %s: got %s", excs[i].exc ? excs[i].exc : "NULL", cls ? cls : "NULL");
    }
    static const struct {
        int xid;
        enum mp_xid_cause cause;
    } xids[] = {{13, MP_XID_APPLICATION}, {31, MP_XID_APPLICATION}, {43, MP_XID_APPLICATION},
                {45, MP_XID_APPLICATION}, {48, MP_XID_HARDWARE},    {63, MP_XID_HARDWARE},
                {64, MP_XID_HARDWARE},    {74, MP_XID_HARDWARE},    {79, MP_XID_HARDWARE},
                {92, MP_XID_HARDWARE},    {94, MP_XID_HARDWARE},    {95, MP_XID_HARDWARE},
                {119, MP_XID_DRIVER},     {120, MP_XID_DRIVER},     {154, MP_XID_INFO},
                {12345, MP_XID_UNKNOWN}};
    for (size_t i = 0; i < sizeof(xids) / sizeof(xids[0]); i++) {
        struct mp_xid_info x;
        bool known = mp_gf_xid(xids[i].xid, &x);
        if (x.cause != xids[i].cause || known != (xids[i].cause != MP_XID_UNKNOWN) ||
            (known && (!x.meaning || !x.mnemonic)))
            fail_msg("Xid %d: cause %s", xids[i].xid, mp_xid_cause_name(x.cause));
        bool blames = xids[i].cause == MP_XID_HARDWARE || xids[i].cause == MP_XID_DRIVER;
        if (mp_xid_cause_blames_system(x.cause) != blames)
            fail_msg("Xid %d: blames the system %d", xids[i].xid, !blames);
        assert_int_equal(mp_xid_cause_from_name(mp_xid_cause_name(x.cause)), x.cause);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demangle_matches_cxxfilt),
        cmocka_unit_test(test_demangle_refuses),
        cmocka_unit_test(test_demangle_bounds),
        cmocka_unit_test(test_demangle_words_and_short),
        cmocka_unit_test(test_coredump_h200),
        cmocka_unit_test(test_coredump_vllm_issue),
        cmocka_unit_test(test_coredump_two_processes),
        cmocka_unit_test(test_coredump_user_and_bounds),
        cmocka_unit_test(test_kmsg_split),
        cmocka_unit_test(test_xid_lines),
        cmocka_unit_test(test_catalog),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
