/* test_inspect.c - safetensors header checks (truncation, huge declared
 * length, overlapping offsets, sizes, dtypes) and `inspect` on the fake
 * checkpoints in tests/data/checkpoints (family key names, quantization
 * producers, weight-only detection, hybrid layouts, notes). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inspect/inspect.h"
#include "xalloc.h"

/* A fixture folder: under $ROOT (tests/run.sh sets it) or the cwd. */
static char ckpt_buf[4096];
static const char *ckpt(const char *name)
{
    const char *root = getenv("ROOT");
    snprintf(ckpt_buf, sizeof(ckpt_buf), "%s%stests/data/checkpoints/%s", root ? root : "",
             root ? "/" : "", name);
    return ckpt_buf;
}

static size_t mkfile(unsigned char *out, size_t cap, const char *json, size_t data_len)
{
    size_t n = strlen(json);
    assert_true(8 + n + data_len <= cap);
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(out + 8, json, n);
    memset(out + 8 + n, 0, data_len);
    return 8 + n + data_len;
}

static int parse(const char *json, size_t data_len, struct mp_st_summary *acc, struct mp_diag *d)
{
    unsigned char buf[4096];
    size_t n = mkfile(buf, sizeof(buf), json, data_len);
    return mp_st_parse_buffer(buf, n, acc, d);
}

static void expect_err(const char *json, size_t data_len, const char *want)
{
    struct mp_st_summary acc;
    memset(&acc, 0, sizeof(acc));
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(parse(json, data_len, &acc, &d), MP_EPARSE);
    if (!strstr(d.msg, want)) {
        fprintf(stderr, "diag '%s' lacks '%s'\n", d.msg, want);
        fail();
    }
    assert_int_equal(acc.tensors, 0);
    assert_int_equal(acc.files, 0);
}

static void test_st_ok(void **state)
{
    MP_UNUSED(state);
    struct mp_st_summary acc;
    memset(&acc, 0, sizeof(acc));
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},"
                    "\"l.experts.0.w1.weight\":{\"dtype\":\"U8\",\"shape\":[4,8],\"data_offsets\":[0,32]},"
                    "\"l.experts.0.w1.weight_scale\":{\"dtype\":\"F8_E4M3\",\"shape\":[4,1],\"data_offsets\":[32,36]},"
                    "\"l.experts.0.w1.weight_scale_2\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[36,40]},"
                    "\"empty\":{\"dtype\":\"BF16\",\"shape\":[0,5],\"data_offsets\":[40,40]}}";
    assert_int_equal(parse(h, 40, &acc, NULL), 0);
    assert_int_equal(acc.files, 1);
    assert_int_equal(acc.tensors, 4);
    assert_int_equal(acc.bytes, 40);
    assert_int_equal(acc.fp4_weights, 1);
    assert_int_equal(acc.fp8_scales, 1);
    assert_int_equal(acc.f32_scales, 1);
    assert_int_equal(acc.ndtypes, 4);
    assert_string_equal(acc.dtypes[0].name, "U8");
    /* a second shard accumulates */
    assert_int_equal(parse("{\"x\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, &acc,
                           NULL), 0);
    assert_int_equal(acc.files, 2);
    assert_int_equal(acc.tensors, 5);
    assert_int_equal(acc.dtypes[0].count, 2);
}

static void test_st_errors(void **state)
{
    MP_UNUSED(state);
    expect_err("[]", 0, "not a JSON object");
    expect_err("{\"a\":{\"dtype\":\"F3", 0, "not a JSON object");
    expect_err("{\"a\":{\"dtype\":\"U8\",\"shape\":[2]}}", 2, "needs dtype, shape and data_offsets");
    expect_err("{\"a\":{\"dtype\":\"Q7\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "unknown dtype");
    expect_err("{\"a\":{\"dtype\":\"U8\",\"shape\":[-2],\"data_offsets\":[0,2]}}", 2, "non-integer");
    expect_err("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,0]}}", 2, "bad data_offsets");
    expect_err("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2.5]}}", 2, "bad data_offsets");
    expect_err("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}", 4, "beyond the data section");
    expect_err("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "another size");
    expect_err("{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,8]}}",
               8, "more than 2^64");
    expect_err("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
               "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}", 6, "overlap");
    expect_err("{\"__metadata__\":[1]}", 0, "__metadata__");

    /* the length prefix */
    struct mp_st_summary acc;
    memset(&acc, 0, sizeof(acc));
    struct mp_diag d = MP_DIAG_INIT;
    unsigned char b[16] = { 0 };
    assert_int_equal(mp_st_parse_buffer(b, 5, &acc, &d), MP_EPARSE);
    assert_non_null(strstr(d.msg, "truncated"));
    b[5] = 1; /* 2^40 */
    assert_int_equal(mp_st_parse_buffer(b, 16, &acc, &d), MP_ELIMIT);
    assert_non_null(strstr(d.msg, "exceeds"));
    memset(b, 0, sizeof(b));
    b[0] = 100;
    assert_int_equal(mp_st_parse_buffer(b, 16, &acc, &d), MP_EPARSE);
    assert_non_null(strstr(d.msg, "only 8 bytes follow"));
}

static void test_st_file(void **state)
{
    MP_UNUSED(state);
    char path[] = "/tmp/test_inspect_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unsigned char buf[256];
    size_t n = mkfile(buf, sizeof(buf), "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4);
    assert_int_equal(write(fd, buf, n - 2), (ssize_t)(n - 2)); /* data cut short */
    close(fd);
    struct mp_st_summary acc;
    memset(&acc, 0, sizeof(acc));
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_st_read_file(path, &acc, &d), MP_EPARSE);
    assert_string_equal(d.file, path);
    assert_non_null(strstr(d.msg, "beyond the data section"));
    unlink(path);
    assert_int_equal(mp_st_read_file(path, &acc, &d), -ENOENT);
}

static void test_nemotron(void **state)
{
    MP_UNUSED(state);
    struct mp_inspect in;
    assert_int_equal(mp_inspect_dir(ckpt("nemotron-h-nvfp4"), &in, NULL), 0);
    assert_string_equal(in.architecture, "NemotronHForCausalLM");
    assert_true(in.hybrid);
    assert_int_equal(in.mamba_layers, 5);
    assert_int_equal(in.attention_layers, 2);
    assert_int_equal(in.experts, 512);
    assert_string_equal(in.experts_key, "n_routed_experts");
    assert_int_equal(in.experts_per_token, 22);
    assert_int_equal(in.intermediate_size, 2688);
    assert_string_equal(in.activation, "relu2");
    assert_false(in.gated);
    assert_false(in.has_swiglu_limit);
    assert_string_equal(in.producer, "modelopt");
    assert_string_equal(in.quant_file, "hf_quant_config.json");
    assert_string_equal(in.algo, "NVFP4");
    assert_int_equal(in.group_size, 16);
    assert_int_equal(in.weight_only, 0);
    assert_string_equal(in.kv_cache, "FP8");
    assert_int_equal(in.nexclude, 2);
    assert_string_equal(in.exclude[0], "lm_head");
    assert_int_equal(in.st.files, 2);
    assert_int_equal(in.st.tensors, 9);
    assert_int_equal(in.st.fp4_weights, 2);
    assert_int_equal(in.st.fp8_scales, 2);
    bool act = false, hyb = false;
    for (size_t i = 0; i < in.nnotes; i++) {
        act = act || strstr(in.notes[i], "not gated");
        hyb = hyb || strstr(in.notes[i], "hybrid");
    }
    assert_true(act && hyb);
    struct buf b = BUF_INIT;
    mp_inspect_to_json(&in, &b);
    assert_non_null(strstr(b.data, "\"experts\":\t512"));
    assert_non_null(strstr(b.data, "\"weight_only\":\tfalse"));
    assert_non_null(strstr(b.data, "\"F8_E4M3\":\t2"));
    buf_release(&b);
    mp_inspect_release(&in);
}

static bool has_note(const struct mp_inspect *in, const char *s)
{
    for (size_t i = 0; i < in->nnotes; i++)
        if (strstr(in->notes[i], s))
            return true;
    return false;
}

static void test_families(void **state)
{
    MP_UNUSED(state);
    struct mp_inspect in;
    assert_int_equal(mp_inspect_dir(ckpt("qwen3-moe-w4a16"), &in, NULL), 0);
    assert_int_equal(in.experts, 128);
    assert_string_equal(in.experts_key, "num_experts");
    assert_string_equal(in.producer, "compressed-tensors");
    assert_string_equal(in.algo, "W4A16_NVFP4");
    assert_int_equal(in.weight_only, 1);
    assert_int_equal(in.st.fp4_weights, 1);
    assert_true(has_note(&in, "weight-only NVFP4"));
    assert_true(has_note(&in, "MARLIN"));
    mp_inspect_release(&in);

    assert_int_equal(mp_inspect_dir(ckpt("swiglu-clamp"), &in, NULL), 0);
    assert_string_equal(in.experts_key, "num_local_experts");
    assert_int_equal(in.experts_per_token, 4);
    assert_true(in.has_swiglu_limit);
    assert_true(in.swiglu_limit == 7.0);
    assert_string_equal(in.quant_file, "config.json");
    assert_true(has_note(&in, "swiglu_limit=7"));
    assert_true(has_note(&in, "SWIGLUOAI_UNINTERLEAVE"));
    assert_true(has_note(&in, "2880 is a multiple of 64 but not of 128"));
    mp_inspect_release(&in);

    assert_int_equal(mp_inspect_dir(ckpt("multimodal-moe"), &in, NULL), 0);
    assert_true(in.multimodal);
    assert_string_equal(in.model_type, "mistral3");
    assert_int_equal(in.experts, 128);
    assert_int_equal(in.intermediate_size, 1792);
    assert_int_equal(in.st.files, 0);
    assert_false(in.quantized);
    mp_inspect_release(&in);

    assert_int_equal(mp_inspect_dir(ckpt("dense"), &in, NULL), 0);
    assert_false(in.moe);
    assert_true(has_note(&in, "not a MoE model"));
    struct buf b = BUF_INIT;
    mp_inspect_to_json(&in, &b);
    assert_non_null(strstr(b.data, "\"moe\":\tnull"));
    buf_release(&b);
    mp_inspect_release(&in);
}

static void test_dir_errors(void **state)
{
    MP_UNUSED(state);
    struct mp_inspect in;
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_inspect_dir("/nonexistent-dir-xyz", &in, &d), MP_EPARSE);
    assert_string_equal(d.file, "/nonexistent-dir-xyz");
    mp_inspect_release(&in);

    char dir[] = "/tmp/test_inspect_dir_XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(mp_inspect_dir(dir, &in, &d), -ENOENT);
    assert_non_null(strstr(d.msg, "no config.json"));
    mp_inspect_release(&in);

    char *cfg = xasprintf("%s/config.json", dir);
    FILE *f = fopen(cfg, "w");
    fputs("{\n  \"num_experts\": 8,\n  \"hidden_size\": \n}\n", f);
    fclose(f);
    assert_int_equal(mp_inspect_dir(dir, &in, &d), MP_EPARSE);
    assert_string_equal(d.file, cfg);
    assert_int_equal(d.line, 4);
    assert_non_null(strstr(d.msg, "malformed JSON"));
    mp_inspect_release(&in);
    unlink(cfg);
    free(cfg);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_st_ok),       cmocka_unit_test(test_st_errors),
        cmocka_unit_test(test_st_file),     cmocka_unit_test(test_nemotron),
        cmocka_unit_test(test_families),    cmocka_unit_test(test_dir_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
