/* test_selstop.c - the stop at the selection lines (logs/selstop.h): a
 * candidate that only needs its selections stops at the line that completes
 * them, not before (a line of its era still to come, the drafter's own MoE
 * selection) and not later (Model loading took) when the table vouches for
 * the era. The logs are lines of the shared corpus (file and timestamps
 * cited) and of refengine's eras, fed through the real scanner. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "knowledge/knowledge.h"
#include "logs/logscan.h"
#include "logs/selstop.h"

#define END NULL

/* Feed lines (END-terminated) to a scanner and a watch started for argv;
 * returns the 1-based index of the line that completed the selections, 0
 * when none did. *by gets what completed it. */
static int stop_at(const struct mp_seltiming *t, char *const *argv, size_t argc,
                   const char *const *lines, const char **by)
{
    struct mp_logscan *s = mp_logscan_new(mp_knowledge_builtin());
    struct mp_selstop w;
    mp_selstop_init(&w, t, argv, argc);
    int at = 0;
    for (int i = 0; lines[i] && !at; i++) {
        mp_logscan_line(s, lines[i], strlen(lines[i]));
        if (mp_selstop_line(&w, lines[i], strlen(lines[i]), mp_logscan_result(s)))
            at = i + 1;
    }
    assert_int_equal(w.complete, at != 0);
    if (by)
        *by = w.by;
    mp_logscan_free(s);
    return at;
}

static int stop_builtin(const char *const *lines)
{
    return stop_at(mp_seltiming_builtin(), NULL, 0, lines, NULL);
}

#define E19 "(EngineCore_DP0 pid=184) INFO 04-17 18:06:3"
#define CFG19 E19 "4 [core.py:105] Initializing a V1 LLM engine (v0.19.0) with config: model='m', "
#define LOADED19 E19 "9 [gpu_model_runner.py:4735] Model loading took 16.2 GiB memory and 3.9 seconds"

/* corpus 009 (v0.19.0): dense, MoE, attention while the model is built */
static const char *const log009[] = {
    CFG19 "speculative_config=None, tokenizer='m', quantization=modelopt_fp4",
    E19 "5 [gpu_model_runner.py:4735] Starting to load model m...",
    E19 "5 [nvfp4_utils.py:85] Using NvFp4LinearBackend.FLASHINFER_CUTLASS for NVFP4 GEMM",
    E19 "6 [nvfp4.py:256] Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: "
        "['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN'].",
    E19 "6 [cuda.py:334] Using FLASHINFER attention backend out of potential backends: "
        "['FLASHINFER', 'TRITON_ATTN'].",
    E19 "8 [default_loader.py:291] Loading weights took 2.10 seconds",
    LOADED19,
    END};

static void test_oracle_era_stops_at_last_selection(void **st)
{
    (void)st;
    const char *by = NULL;
    assert_int_equal(stop_at(mp_seltiming_builtin(), NULL, 0, log009, &by), 5);
    assert_non_null(strstr(by, "selection lines"));
}

/* corpus 001 (NGC 26.01, <= 0.13, TP=2): the dense line at 13:17:21, the
 * MoE and attention lines 12 s later, the weights 95 s after that */
static void test_preoracle_era(void **st)
{
    (void)st;
    static const char *const log001[] = {
        "(Worker_TP0 pid=271) INFO 02-02 13:17:19 [core.py:93] Initializing a V1 LLM engine "
        "(v0.13.0) with config: model='/model', speculative_config=None, tokenizer='/model'",
        "(Worker_TP0 pid=271) INFO 02-02 13:17:21 [gpu_model_runner.py:3562] Starting to load model /model...",
        "(Worker_TP0 pid=271) INFO 02-02 13:17:21 [modelopt.py:982] Using flashinfer-cutlass for NVFP4 GEMM",
        "(Worker_TP1 pid=272) INFO 02-02 13:17:33 [nvfp4_moe_support.py:42] Using FlashInfer kernels for ModelOptNvFp4FusedMoE.",
        "(Worker_TP1 pid=272) INFO 02-02 13:17:33 [modelopt.py:1191] Using FlashInfer CUTLASS kernels for ModelOptNvFp4FusedMoE.",
        "(Worker_TP0 pid=271) INFO 02-02 13:17:33 [cuda.py:351] Using FLASHINFER attention backend "
        "out of potential backends: ('FLASHINFER', 'TRITON_ATTN')",
        "(Worker_TP0 pid=271) INFO 02-02 13:19:09 [default_loader.py:308] Loading weights took 95.26 seconds",
        "(Worker_TP0 pid=271) INFO 02-02 13:19:10 [gpu_model_runner.py:3659] Model loading took 9.8291 GiB memory and 108.345254 seconds",
        END};
    assert_int_equal(stop_builtin(log001), 6);
}

/* corpus 012 (0.19.2rc1.dev8): dense, attention, then MoE; and the same
 * era in another model's order (a v0.23 log: MoE first, then dense): the
 * watch waits for every area whatever the order */
static void test_order_follows_the_model(void **st)
{
    (void)st;
#define E12 "(EngineCore pid=196) INFO 04-19 11:05:"
    static const char *const log012[] = {
        E12 "16 [core.py:107] Initializing a V1 LLM engine (v0.19.2rc1.dev8+g4b7f5ea1a) with "
            "config: model='RedHatAI/gemma-4-26B-A4B-it-NVFP4', speculative_config=None, x=1",
        E12 "22 [__init__.py:683] Using FlashInferCutlassNvFp4LinearKernel for NVFP4 GEMM",
        E12 "22 [cuda.py:308] Using AttentionBackendEnum.TRITON_ATTN backend.",
        E12 "22 [nvfp4.py:203] Using 'VLLM_CUTLASS' NvFp4 MoE backend out of potential backends: "
            "['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTEDSL_BATCHED', "
            "'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN'].",
        E12 "49 [default_loader.py:384] Loading weights took 25.31 seconds",
        E12 "50 [gpu_model_runner.py:4837] Model loading took 15.77 GiB memory and 27.614537 seconds",
        END};
    assert_int_equal(stop_builtin(log012), 4);
#define E23 "(EngineCore pid=1) INFO 07-02 21:58:"
    static const char *const moe_first[] = {
        E23 "42 [core.py:114] Initializing a V1 LLM engine (v0.23.1rc1.dev531+ga65f93fb2) with "
            "config: model='nvidia/X', speculative_config=None, quantization=modelopt_fp4",
        E23 "53 [nvfp4.py:222] Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential "
            "backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTEDSL_BATCHED', "
            "'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN', 'EMULATION'].",
        E23 "53 [cuda.py:334] Using FLASHINFER attention backend out of potential backends: "
            "['FLASHINFER', 'TRITON_ATTN'].",
        E23 "53 [__init__.py:683] Using FlashInferCutlassNvFp4LinearKernel for NVFP4 GEMM",
        END};
    /* a rule that stopped at the MoE line (or at MoE + attention) would
     * miss the dense kernel */
    assert_int_equal(stop_builtin(moe_first), 4);
}

/* An MTP drafter: its own MoE selection comes after the main model's
 * weights ("Loading drafter model..."), so the stop waits for it. */
#define E22 "(EngineCore pid=284) INFO 05-30 07:4"
#define CFG22 E22 "0:52 [core.py:112] Initializing a V1 LLM engine (v0.22.0) with config: model='m', "
static const char *const main22[] = {
    E22 "1:01 [__init__.py:683] Using FlashInferCutlassNvFp4LinearKernel for NVFP4 GEMM",
    E22 "1:01 [nvfp4.py:222] Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: "
        "['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN', 'EMULATION'].",
    E22 "1:01 [cuda.py:334] Using FLASHINFER attention backend out of potential backends: ['FLASHINFER', 'TRITON_ATTN'].",
    E22 "3:10 [default_loader.py:384] Loading weights took 128.40 seconds",
    E22 "3:10 [gpu_model_runner.py:5184] Loading drafter model...",
};
#define DRAFTER_MOE                                                                                \
    E22 "3:11 [unquantized.py:282] Using FlashInfer CUTLASS Unquantized MoE backend out of "       \
        "potential backends: ['FlashInfer TRTLLM', 'FlashInfer CUTLASS', 'TRITON', 'BATCHED_TRITON']."
#define LOADED22 E22 "3:12 [gpu_model_runner.py:5290] Model loading took 70.1 GiB memory and 140.2 seconds"

static void test_drafter_from_config_line(void **st)
{
    (void)st;
    const char *lines[] = {
        CFG22 "speculative_config=SpeculativeConfig(method='mtp', model='m', num_spec_tokens=3), x=1",
        main22[0], main22[1], main22[2], main22[3], main22[4], DRAFTER_MOE, LOADED22, END};
    const char *by = NULL;
    assert_int_equal(stop_at(mp_seltiming_builtin(), NULL, 0, lines, &by), 7);
    assert_non_null(strstr(by, "drafter"));
    /* the same engine without a drafter stops at its attention line */
    const char *plain[] = {CFG22 "speculative_config=None, x=1", main22[0], main22[1], main22[2],
                           main22[3], LOADED22, END};
    assert_int_equal(stop_builtin(plain), 4);
}

static void test_drafter_from_command(void **st)
{
    (void)st;
    /* no config line (or not yet): the command names the drafter */
    char *argv[] = {"vllm", "serve", "m", "--speculative-config", "{\"method\":\"mtp\"}"};
    const char *lines[] = {"(APIServer pid=1) INFO 05-30 07:40:50 [api_server.py:1869] vLLM API server version 0.22.0", main22[0], main22[1],
                           main22[2], main22[3], main22[4], DRAFTER_MOE, LOADED22, END};
    assert_int_equal(stop_at(mp_seltiming_builtin(), argv, 5, lines, NULL), 7);
    char *eq[] = {"vllm", "serve", "m", "--speculative-config={\"method\":\"mtp\"}"};
    assert_int_equal(stop_at(mp_seltiming_builtin(), eq, 4, lines, NULL), 7);
    char *sh[] = {"bash", "-c", "vllm serve m --num-speculative-tokens 2"};
    assert_int_equal(stop_at(mp_seltiming_builtin(), sh, 3, lines, NULL), 7);
    /* a flag that merely starts the same way is no drafter */
    char *other[] = {"vllm", "serve", "m", "--speculative-configs-are-not-a-flag"};
    assert_int_equal(stop_at(mp_seltiming_builtin(), other, 4, lines, NULL), 4);
    /* the engine's own config line wins over the command */
    const char *said_none[] = {CFG22 "speculative_config=None, x=1", main22[0], main22[1],
                               main22[2], LOADED22, END};
    assert_int_equal(stop_at(mp_seltiming_builtin(), argv, 5, said_none, NULL), 4);
}

/* A drafter without a MoE line of its own (a dense EAGLE head): nothing
 * vouches for it, so the stop is at Model loading took. */
static void test_drafter_without_moe_line(void **st)
{
    (void)st;
    const char *lines[] = {
        CFG22 "speculative_config=SpeculativeConfig(method='eagle3', model='d', num_spec_tokens=3), x=1",
        main22[0], main22[1], main22[2], main22[3], main22[4], LOADED22, END};
    const char *by = NULL;
    assert_int_equal(stop_at(mp_seltiming_builtin(), NULL, 0, lines, &by), 7);
    assert_non_null(strstr(by, "Model loading took"));
}

/* An unquantized MoE line before the NvFp4 one (unquantized shared
 * experts of a mixed checkpoint) is not the MoE selection. */
static void test_unquantized_line_is_not_the_moe_selection(void **st)
{
    (void)st;
    const char *lines[] = {CFG22 "speculative_config=None, x=1", main22[0],
                           E22 "1:01 [unquantized.py:282] Using TRITON Unquantized MoE backend out of "
                               "potential backends: ['TRITON', 'BATCHED_TRITON'].",
                           main22[2], main22[1], LOADED22, END};
    assert_int_equal(stop_builtin(lines), 5);
}

/* No era for the engine (version unknown): only Model loading took. */
static void test_unknown_era_waits_for_loading(void **st)
{
    (void)st;
    const char *lines[] = {main22[0], main22[1], main22[2], main22[3], LOADED22, END};
    const char *by = NULL;
    assert_int_equal(stop_at(mp_seltiming_builtin(), NULL, 0, lines, &by), 5);
    assert_non_null(strstr(by, "Model loading took"));
    /* and a log that ends before it never completes */
    const char *cut[] = {main22[0], main22[1], main22[2], END};
    assert_int_equal(stop_builtin(cut), 0);
}

/* The table decides per era: an era whose dense kernel comes after the
 * weights is waited for past the weights; an era that prints no dense line
 * is not waited for at all. */
static const char late_table[] =
    "{\"format\": 1, \"loaded\": {\"literal\": \"Model loading took\"},"
    " \"drafter\": {\"config_literal\": \"speculative_config=\", \"config_none\": \"None\","
    "  \"command_flags\": [\"--speculative-config\"], \"loading_literal\": \"Loading drafter model\","
    "  \"selection_literal\": \" MoE backend\", \"selection_also\": \"Using \"},"
    " \"eras\": [{\"from\": \"0.22.0\", \"until\": \"0.23.0\", \"construction\": [\"moe\", \"attention\"],"
    "             \"after_weights\": [\"linear\"]},"
    "            {\"from\": \"0.19.0\", \"until\": \"0.20.0\", \"construction\": [\"moe\", \"attention\"],"
    "             \"after_weights\": []}]}";

static void test_table_decides_per_era(void **st)
{
    (void)st;
    struct mp_seltiming *t = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_seltiming_parse(late_table, sizeof(late_table) - 1, &t, &d), 0);
    unsigned c, l;
    assert_true(mp_seltiming_areas(t, "0.22.0", &c, &l));
    assert_int_equal(c, MP_SEL_MOE | MP_SEL_ATTENTION);
    assert_int_equal(l, MP_SEL_LINEAR);
    assert_false(mp_seltiming_areas(t, "0.21.9", &c, &l));
    /* 0.22: the dense line after the weights */
    const char *late[] = {CFG22 "speculative_config=None, x=1", main22[1], main22[2], main22[3],
                          E22 "3:10 [__init__.py:683] Using MarlinNvFp4LinearKernel for NVFP4 GEMM",
                          LOADED22, END};
    assert_int_equal(stop_at(t, NULL, 0, late, NULL), 5);
    /* 0.19 without a dense area: MoE and attention are all */
    const char *nodense[] = {CFG19 "speculative_config=None, q=1", log009[3], log009[4], log009[5],
                             LOADED19, END};
    assert_int_equal(stop_at(t, NULL, 0, nodense, NULL), 3);
    mp_seltiming_free(t);
}

static void test_bad_tables(void **st)
{
    (void)st;
    static const char *const bad[] = {
        "[]",
        "{\"format\": 2}",
        "{\"format\": 1, \"loaded\": {\"literal\": \"x\"}, \"eras\": []}",
        "{\"format\": 1, \"surprise\": 1}",
    };
    for (size_t i = 0; i < MP_ARRAY_SIZE(bad); i++) {
        struct mp_seltiming *t = (struct mp_seltiming *)1;
        assert_int_equal(mp_seltiming_parse(bad[i], strlen(bad[i]), &t, NULL), MP_EPARSE);
        assert_null(t);
    }
    /* an unknown area name, a bad version */
    char buf[2048];
    snprintf(buf, sizeof(buf), "%.*s", (int)(strstr(late_table, "\"linear\"]") - late_table), late_table);
    strcat(buf, "\"dense\"]}]}");
    struct mp_seltiming *t = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_seltiming_parse(buf, strlen(buf), &t, &d), MP_EPARSE);
    assert_non_null(strstr(d.msg, "linear, moe, attention"));
    /* the built-in table parses and covers every version */
    unsigned c, l;
    assert_true(mp_seltiming_areas(mp_seltiming_builtin(), "0.9.2", &c, &l));
    assert_true(mp_seltiming_areas(mp_seltiming_builtin(), "0.31.0", &c, &l));
    assert_int_equal(c, MP_SEL_LINEAR | MP_SEL_MOE | MP_SEL_ATTENTION);
}

static void test_waiting_words(void **st)
{
    (void)st;
    struct mp_logscan *s = mp_logscan_new(mp_knowledge_builtin());
    struct mp_selstop w;
    mp_selstop_init(&w, mp_seltiming_builtin(), NULL, 0);
    char out[200];
    mp_selstop_waiting(&w, mp_logscan_result(s), out, sizeof(out));
    assert_non_null(strstr(out, "engine version"));
    const char *cfg = CFG22 "speculative_config=SpeculativeConfig(method='mtp'), x=1";
    mp_logscan_line(s, cfg, strlen(cfg));
    mp_selstop_line(&w, cfg, strlen(cfg), mp_logscan_result(s));
    mp_logscan_line(s, main22[1], strlen(main22[1]));
    mp_selstop_line(&w, main22[1], strlen(main22[1]), mp_logscan_result(s));
    mp_selstop_waiting(&w, mp_logscan_result(s), out, sizeof(out));
    assert_string_equal(out, "the dense kernel, the attention backend, the drafter's MoE selection");
    mp_logscan_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oracle_era_stops_at_last_selection),
        cmocka_unit_test(test_preoracle_era),
        cmocka_unit_test(test_order_follows_the_model),
        cmocka_unit_test(test_drafter_from_config_line),
        cmocka_unit_test(test_drafter_from_command),
        cmocka_unit_test(test_drafter_without_moe_line),
        cmocka_unit_test(test_unquantized_line_is_not_the_moe_selection),
        cmocka_unit_test(test_unknown_era_waits_for_loading),
        cmocka_unit_test(test_table_decides_per_era),
        cmocka_unit_test(test_bad_tables),
        cmocka_unit_test(test_waiting_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
