/* test_refengine_drafter.c - refengine's speculative drafter (drafter.h):
 * what its config line says, and the MoE selection its unquantized oracle
 * prints (or the ValueError of a --moe-backend value that oracle does not
 * take), per era. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "drafter.h"
#include "world.h"

static void mkworld(struct world *w, const char *version)
{
    char text[256];
    snprintf(text, sizeof(text), "[engine]\nversion = %s\ndevice = sm121\nmodel = m/x\n", version);
    struct mp_diag d = MP_DIAG_INIT;
    if (world_parse(text, strlen(text), "t.ini", w, &d) != 0)
        fail_msg("world: %zu: %s", d.line, d.msg);
}

static void test_parse_and_config_line(void **st)
{
    (void)st;
    struct re_drafter d;
    char err[160];
    assert_int_equal(re_drafter_parse("{\"method\": \"mtp\", \"num_speculative_tokens\": 3}", &d,
                                      err, sizeof(err)), 0);
    assert_true(d.on);
    struct buf b = BUF_INIT;
    re_drafter_config_repr(&d, "nvidia/M", &b);
    assert_string_equal(b.data, "SpeculativeConfig(method='mtp', model='nvidia/M', num_spec_tokens=3)");
    buf_release(&b);
    re_drafter_config_repr(NULL, "nvidia/M", &b);
    assert_string_equal(b.data, "None");
    buf_release(&b);
    assert_int_equal(re_drafter_parse("{\"num_speculative_tokens\": 3}", &d, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "method"));
    assert_int_equal(re_drafter_parse("mtp", &d, err, sizeof(err)), -1);
    assert_false(d.on);
}

static void test_moe_selection(void **st)
{
    (void)st;
    struct world w;
    mkworld(&w, "0.19.0");
    struct re_drafter d;
    char err[160], line[300];
    const char *file = NULL;
    int ln = 0;
    assert_int_equal(re_drafter_parse("{\"method\": \"mtp\"}", &d, err, sizeof(err)), 0);
    re_drafter_resolve(&w, NULL, &d); /* auto */
    assert_non_null(re_drafter_line(&w, &d, line, sizeof(line), &file, &ln));
    assert_string_equal(file, "unquantized.py");
    assert_non_null(strstr(line, "Using FlashInfer CUTLASS Unquantized MoE backend out of potential backends: ["));
    re_drafter_resolve(&w, "flashinfer_trtllm", &d);
    re_drafter_line(&w, &d, line, sizeof(line), &file, &ln);
    assert_non_null(strstr(line, "Using FlashInfer TRTLLM Unquantized"));
    /* the flag is global: a value the unquantized oracle does not take */
    re_drafter_resolve(&w, "marlin", &d);
    assert_null(re_drafter_line(&w, &d, line, sizeof(line), &file, &ln));
    assert_string_equal(d.error, "ValueError: moe_backend='marlin' is not supported for unquantized "
                                 "MoE. Expected one of ['triton', 'batched_triton', "
                                 "'flashinfer_trtllm', 'flashinfer_cutlass', 'aiter'].");
    re_drafter_resolve(&w, "cutlass", &d);
    assert_non_null(strstr(d.error, "moe_backend='cutlass'"));
    /* before the unquantized oracle (0.17.0) the drafter prints no MoE line */
    mkworld(&w, "0.15.1");
    re_drafter_resolve(&w, NULL, &d);
    assert_false(d.has_moe_line);
    assert_null(re_drafter_line(&w, &d, line, sizeof(line), &file, &ln));
    assert_string_equal(d.error, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_config_line),
        cmocka_unit_test(test_moe_selection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
