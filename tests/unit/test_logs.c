/* test_logs.c - the streaming log scanner: chunking, prefixes, crash
 * classification and priority, sites, candidate-list findings, bounds. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "knowledge/knowledge.h"
#include "logs/logscan.h"
#include "xalloc.h"

static const char sample[] =
    "(APIServer pid=1) INFO 04-17 18:06:17 [utils.py:299]  \xe2\x96\x84\xe2\x96\x84 \xe2\x96\x88  version 0.19.0\n"
    "(APIServer pid=1) INFO 04-17 18:06:17 [utils.py:299]   \xe2\x96\x88  model   org/Model-NVFP4\n"
    "(APIServer pid=1) WARNING 04-17 18:06:17 [envs.py:1744] Unknown vLLM environment variable detected: VLLM_SCALED_MM_BACKEND\r\n"
    "(EngineCore pid=184) INFO 04-17 18:06:35 [nvfp4_utils.py:85] Using NvFp4LinearBackend.FLASHINFER_CUTLASS for NVFP4 GEMM\n"
    "(EngineCore pid=184) INFO 04-17 18:06:36 [nvfp4.py:256] Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN'].\n"
    "(EngineCore pid=184) INFO 04-17 18:06:36 [cuda.py:334] Using FLASHINFER attention backend out of potential backends: ['FLASHINFER', 'TRITON_ATTN'].\n"
    "(APIServer pid=1) INFO:     Application startup complete.\n"
    "(EngineCore pid=184) ERROR 04-17 18:09:00 [core.py:1] EngineCore encountered a fatal error.\n"
    "(EngineCore pid=184) ERROR 04-17 18:09:00 [core.py:1] Traceback (most recent call last):\n"
    "(EngineCore pid=184) ERROR 04-17 18:09:00 [core.py:1]   File \"/usr/lib/python3/site-packages/vllm/v1/engine/core.py\", line 10, in run_busy_loop\n"
    "(EngineCore pid=184) ERROR 04-17 18:09:00 [core.py:1]   File \"/usr/lib/python3/site-packages/vllm/v1/attention/backends/flashinfer.py\", line 1925, in forward\n"
    "(EngineCore pid=184) ERROR 04-17 18:09:00 [core.py:1]   File \"/usr/lib/python3/site-packages/flashinfer/prefill.py\", line 720, in paged_run\n"
    "(EngineCore pid=184) ERROR 04-17 18:09:00 [core.py:1] torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    "(EngineCore pid=184) ERROR 04-17 18:09:00 [core.py:1] CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
    "(APIServer pid=1) ERROR 04-17 18:09:00 [async_llm.py:1] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n";

static struct mp_logscan *scan_all(const char *text, size_t len, size_t chunk)
{
    struct mp_logscan *s = mp_logscan_new(mp_knowledge_builtin());
    for (size_t i = 0; i < len; i += chunk)
        mp_logscan_feed(s, text + i, MP_MIN(chunk, len - i));
    mp_logscan_finish(s);
    return s;
}

static char *json_of(struct mp_logscan *s)
{
    struct buf b = BUF_INIT;
    mp_logresult_to_json(mp_logscan_result(s), "x.log", &b);
    return buf_detach(&b, NULL);
}

static bool has_finding(const struct mp_logresult *r, const char *code)
{
    for (size_t i = 0; i < r->nfindings; i++)
        if (!strcmp(r->findings[i].code, code))
            return true;
    return false;
}

static void test_sample_fields(void **st)
{
    (void)st;
    struct mp_logscan *s = scan_all(sample, sizeof(sample) - 1, sizeof(sample));
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_int_equal(r->lines, 15);
    assert_string_equal(r->engine_version, "0.19.0");
    assert_string_equal(r->model, "org/Model-NVFP4");
    assert_string_equal(r->moe_backend, "FLASHINFER_CUTLASS");
    assert_int_equal(r->moe_backend_line, 5);
    assert_int_equal(r->n_moe_candidates, 5);
    assert_string_equal(r->moe_candidates[3], "VLLM_CUTLASS");
    assert_string_equal(r->linear_kernel, "NvFp4LinearBackend.FLASHINFER_CUTLASS");
    assert_string_equal(r->attention_backend, "FLASHINFER");
    assert_int_equal(r->n_unknown_env, 1);
    assert_string_equal(r->unknown_env[0], "VLLM_SCALED_MM_BACKEND");
    assert_int_equal(r->unknown_env_line, 3);
    assert_true(r->ready);
    assert_int_equal(r->ready_line, 7);
    /* EngineCore fatal first, then the CUDA root cause: the root cause wins */
    assert_true(r->has_crash);
    assert_string_equal(r->crash.cls, "illegal-address");
    assert_int_equal(r->crash.line, 13);
    assert_true(r->crash.engine_dead);
    assert_non_null(strstr(r->crash.message, "illegal memory access"));
    assert_int_equal(r->crash.nsites, 3);
    assert_string_equal(r->crash.sites[0], "flashinfer/prefill.py:paged_run");
    assert_string_equal(r->crash.sites[1], "vllm/v1/attention/backends/flashinfer.py:forward");
    assert_null(r->startup_error); /* it was ready */
    assert_true(has_finding(r, "unknown-env"));
    assert_true(has_finding(r, "async-report"));
    assert_true(has_finding(r, "moe-list-era"));
    assert_true(has_finding(r, "crash"));
    mp_logscan_free(s);
}

static void test_chunking_invariant(void **st)
{
    (void)st;
    struct mp_logscan *a = scan_all(sample, sizeof(sample) - 1, sizeof(sample));
    char *ja = json_of(a);
    size_t chunks[] = {1, 2, 3, 7, 64, 100};
    for (size_t i = 0; i < MP_ARRAY_SIZE(chunks); i++) {
        struct mp_logscan *b = scan_all(sample, sizeof(sample) - 1, chunks[i]);
        char *jb = json_of(b);
        assert_string_equal(ja, jb);
        free(jb);
        mp_logscan_free(b);
    }
    cJSON *j = cJSON_Parse(ja);
    assert_non_null(j);
    cJSON_Delete(j);
    free(ja);
    mp_logscan_free(a);
}

/* A log without "Application startup complete" (an excerpt) that shows the
 * server serving: a later crash is a serving crash, not a startup error. */
static void test_serving_without_ready_line(void **st)
{
    (void)st;
    struct mp_logscan *s = mp_logscan_new(mp_knowledge_builtin());
    const char *log =
        "INFO 07-28 10:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 10.0 tokens/s\n"
        "ERROR 07-28 10:00:05 [core.py:1] torch.AcceleratorError: CUDA error: misaligned address\n";
    mp_logscan_feed(s, log, strlen(log));
    mp_logscan_finish(s);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_true(r->ready);
    assert_int_equal(r->ready_line, 1);
    assert_true(r->has_crash);
    assert_string_equal(r->crash.cls, "misaligned-address");
    assert_null(r->startup_error);
    mp_logscan_free(s);
}

static void test_event_bits(void **st)
{
    (void)st;
    struct mp_logscan *s = mp_logscan_new(mp_knowledge_builtin());
    const char *l1 = "INFO 01-01 00:00:00 [nvfp4.py:1] Using 'MARLIN' NvFp4 MoE backend out of potential backends: ['VLLM_CUTLASS', 'MARLIN'].";
    assert_int_equal(mp_logscan_line(s, l1, strlen(l1)), MP_LOGEV_RESOLVED);
    const char *l2 = "INFO:     Application startup complete.";
    assert_int_equal(mp_logscan_line(s, l2, strlen(l2)), MP_LOGEV_READY);
    const char *l3 = "WARNING 01-01 [envs.py:1] Unknown vLLM environment variable detected: VLLM_FOO";
    assert_int_equal(mp_logscan_line(s, l3, strlen(l3)), MP_LOGEV_WARNING);
    const char *l4 = "INFO 01-01 00:00:01 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s";
    assert_int_equal(mp_logscan_line(s, l4, strlen(l4)), 0);
    /* partial line: no event until the newline */
    const char *l5 = "ERROR 01-01 [x.py:1] RuntimeError: CUDA error: misaligned address";
    assert_int_equal(mp_logscan_feed(s, l5, 20), 0);
    assert_int_equal(mp_logscan_feed(s, l5 + 20, strlen(l5) - 20), 0);
    assert_int_equal(mp_logscan_feed(s, "\n", 1), MP_LOGEV_FATAL);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_int_equal(r->lines, 5);
    assert_string_equal(r->crash.cls, "misaligned-address");
    assert_int_equal(r->crash.line, 5);
    assert_false(r->crash.engine_dead);
    assert_true(has_finding(r, "flashinfer-moe-filtered"));
    mp_logscan_free(s);
}

static void test_prefixes_quotes(void **st)
{
    (void)st;
    /* docker compose prefix + timestamp + curly quotes + CRLF; list on the next line */
    const char *t =
        "vllm-1  | 2026-04-19 13:04:53.989 | (EngineCore pid=196) INFO 04-19 11:05:22 [nvfp4.py:203] "
        "Using \xe2\x80\x98VLLM_CUTLASS\xe2\x80\x99 NvFp4 MoE backend out of potential backends:\r\n"
        "    ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTLASS', 'MARLIN']\r\n"
        "vllm-1  | (APIServer pid=1) INFO 04-19 [utils.py:233] non-default args: {'model': 'a/b', 'moe_backend': 'cutlass'}\n";
    struct mp_logscan *s = scan_all(t, strlen(t), 5);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_string_equal(r->moe_backend, "VLLM_CUTLASS");
    assert_int_equal(r->n_moe_candidates, 3);
    assert_string_equal(r->moe_backend_flag, "cutlass");
    assert_string_equal(r->model, "a/b");
    assert_true(has_finding(r, "swiglu-clamp"));
    assert_true(has_finding(r, "moe-explicit"));
    mp_logscan_free(s);
}

static void test_startup_error_and_levels(void **st)
{
    (void)st;
    const char *t =
        "DEBUG 06-25 [nvfp4.py:1] NvFp4 MoE backend 'FLASHINFER_TRTLLM' does not support the deployment configuration since kernel does not support current device.\n"
        "INFO 06-25 [x.py:1] tip: an illegal memory access is bad\n"
        "(Worker_TP0 pid=136) ERROR 06-25 02:49:28 [multiproc_executor.py:898] NotImplementedError: No NvFp4 MoE backend supports the deployment configuration.\n"
        "(EngineCore pid=1) ERROR 06-25 [core.py:1] EngineCore failed to start.\n"
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n";
    struct mp_logscan *s = scan_all(t, strlen(t), 4096);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_true(r->has_crash);
    assert_string_equal(r->crash.cls, "no-moe-backend");
    assert_int_equal(r->crash.line, 3); /* the INFO line 2 is not a crash */
    assert_true(r->crash.engine_dead);
    assert_string_equal(r->startup_error, "No NvFp4 MoE backend supports the deployment configuration.");
    assert_int_equal(r->startup_error_line, 3);
    assert_true(has_finding(r, "moe-backend-rejected"));
    assert_false(r->ready);
    mp_logscan_free(s);

    const char *u = "vllm serve: error: unrecognized arguments: --moe-backend cutlass\n";
    s = scan_all(u, strlen(u), 7);
    r = mp_logscan_result(s);
    assert_string_equal(r->crash.cls, "unsupported-backend");
    assert_string_equal(r->startup_error, "unrecognized arguments: --moe-backend cutlass");
    mp_logscan_free(s);
}

static void test_long_lines_and_binary(void **st)
{
    (void)st;
    size_t big = 3 * MP_LOGSCAN_MAX_LINE + 17;
    char *t = xmalloc(big + 300);
    memset(t, 'a', big);
    /* the literal sits beyond the kept part: it must not be seen */
    memcpy(t + big - 40, "CUDA error: misaligned address", 30);
    t[big] = '\n';
    const char *tail = "INFO [a.py:1] Using 'MARLIN' NvFp4 MoE backend out of potential backends: ['MARLIN'].\n";
    memcpy(t + big + 1, tail, strlen(tail));
    size_t len = big + 1 + strlen(tail);
    /* invalid UTF-8 and NULs inside a line */
    struct mp_logscan *s = scan_all(t, len, 4096);
    const char junk[] = "\xff\xfe\x00\xc3 Using 'B\xff' NvFp4 MoE backend out of potential backends: ['\xc3']\n";
    mp_logscan_feed(s, junk, sizeof(junk) - 1);
    mp_logscan_finish(s);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_int_equal(r->lines, 3);
    assert_int_equal(r->truncated_lines, 1);
    assert_false(r->has_crash);
    assert_string_equal(r->moe_backend, "MARLIN");
    assert_int_equal(r->moe_backend_line, 2);
    assert_true(has_finding(r, "long-lines"));
    char *j = json_of(s);
    cJSON *p = cJSON_Parse(j);
    assert_non_null(p);
    cJSON_Delete(p);
    free(j);
    mp_logscan_free(s);
    free(t);
}

/* The last 5 error-looking lines are kept with their numbers, whatever the
 * knowledge says; DEBUG/INFO lines are not error lines; chunking does not
 * change them; the live path (one line at a time) gives the same. */
static void test_error_lines(void **st)
{
    (void)st;
    const char *t =
        "INFO 12-03 08:00:00 [a.py:1] starting; 0 requests failed so far\n" /* 1: INFO: no */
        "plugin frobnicator: load failed\n"                                 /* 2 */
        "DEBUG 12-03 08:00:00 [a.py:2] Error counters reset\n"             /* 3: DEBUG: no */
        "WARNING 12-03 08:00:01 [x.py:2] retrying after Exception\n"       /* 4 */
        "quux: FATAL condition 7\n"                                        /* 5 */
        "nothing to see\n"                                                 /* 6 */
        "Traceback (most recent call last):\n"                             /* 7 */
        "  File \"/opt/x.py\", line 3, in f\n"                               /* 8 */
        "\x1b[31mMyError: the \x01widget\x1b[0m   \n"                       /* 9 */
        "giving up: error 42\n";                                          /* 10 */
    for (size_t chunk = 1; chunk <= 64; chunk *= 4) {
        struct mp_logscan *s = scan_all(t, strlen(t), chunk);
        const struct mp_logresult *r = mp_logscan_result(s);
        assert_int_equal(r->n_error_lines, 5);
        assert_int_equal(r->error_lines[0].line, 4);
        assert_string_equal(r->error_lines[0].text, "WARNING 12-03 08:00:01 [x.py:2] retrying after Exception");
        assert_int_equal(r->error_lines[1].line, 5);
        assert_int_equal(r->error_lines[2].line, 7);
        assert_int_equal(r->error_lines[3].line, 9);
        assert_string_equal(r->error_lines[3].text, "MyError: the  widget"); /* ANSI gone, control byte a space */
        assert_int_equal(r->error_lines[4].line, 10);
        assert_string_equal(r->error_lines[4].text, "giving up: error 42");
        struct buf q = BUF_INIT;
        mp_logresult_quote_errors(r, "server.log", &q);
        assert_non_null(strstr(q.data, "server.log:5: quux: FATAL condition 7; server.log:7: Traceback"));
        buf_release(&q);
        char *j = json_of(s);
        assert_non_null(strstr(j, "\"error_lines\": [{\"line\": 4, "));
        free(j);
        mp_logscan_free(s);
    }
    struct mp_logscan *s = mp_logscan_new(mp_knowledge_builtin());
    for (const char *p = t; *p;) {
        const char *nl = strchr(p, '\n');
        mp_logscan_line(s, p, (size_t)(nl - p));
        p = nl + 1;
    }
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_int_equal(r->n_error_lines, 5);
    assert_int_equal(r->error_lines[1].line, 5);
    mp_logscan_free(s);
    /* a long error line is cut, not inside a UTF-8 sequence */
    char *big = xmalloc(1000);
    memset(big, 'e', 1000);
    memcpy(big, "Error ", 6);
    for (size_t i = 200; i + 1 < 990; i += 2)
        big[i] = '\xc3', big[i + 1] = '\xa9';
    big[999] = '\n';
    s = scan_all(big, 1000, 1000);
    r = mp_logscan_result(s);
    assert_int_equal(r->n_error_lines, 1);
    size_t n = strlen(r->error_lines[0].text);
    assert_true(n <= MP_LOGSCAN_ERRLINE_MAX && n >= MP_LOGSCAN_ERRLINE_MAX - 1);
    assert_true(((unsigned char)r->error_lines[0].text[n - 1] & 0xC0) != 0xC0); /* no cut lead byte */
    mp_logscan_free(s);
    free(big);
}

/* NUL bytes are skipped wherever they are, the log keeps being read, and a
 * zero-filled tail is said so. */
static void test_nul_bytes(void **st)
{
    (void)st;
    static const char a[] =
        "INFO [a.py:1] Using 'MA\0RLIN' NvFp4 MoE backend out of potential backends: ['MARLIN'].\n"
        "\0\0\0"
        "INFO [cuda.py:1] Using FLASHINFER attention backend out of potential backends: ['FLASHINFER'].\n";
    for (size_t chunk = 1; chunk <= 256; chunk *= 4) {
        struct mp_logscan *s = scan_all(a, sizeof(a) - 1, chunk);
        const struct mp_logresult *r = mp_logscan_result(s);
        assert_int_equal(r->lines, 2);
        assert_string_equal(r->moe_backend, "MARLIN");
        assert_string_equal(r->attention_backend, "FLASHINFER");
        assert_int_equal(r->attention_backend_line, 2);
        assert_int_equal(r->nul_bytes, 4);
        assert_int_equal(r->nul_line, 1);
        assert_true(has_finding(r, "nul-bytes"));
        assert_false(has_finding(r, "nul-tail"));
        mp_logscan_free(s);
    }
    /* a crash log: text, then a zero-filled block (no newline) */
    size_t zeros = 3 * MP_LOGSCAN_MAX_LINE;
    const char *head = "(APIServer pid=1) INFO:     Application startup complete.\nlast words\n";
    char *t = xcalloc(strlen(head) + zeros, 1);
    memcpy(t, head, strlen(head));
    struct mp_logscan *s = scan_all(t, strlen(head) + zeros, 4096);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_int_equal(r->lines, 2);
    assert_true(r->ready);
    assert_int_equal(r->nul_bytes, zeros);
    assert_int_equal(r->truncated_lines, 0); /* the zeros are no (long) line */
    assert_true(has_finding(r, "nul-tail"));
    assert_false(has_finding(r, "long-lines"));
    mp_logscan_free(s);
    free(t);
    /* the live path: one line with NULs in it */
    s = mp_logscan_new(mp_knowledge_builtin());
    static const char l[] = "INFO:     Application\0 startup complete.";
    mp_logscan_line(s, l, sizeof(l) - 1);
    mp_logscan_finish(s);
    r = mp_logscan_result(s);
    assert_true(r->ready);
    assert_int_equal(r->nul_bytes, 1);
    mp_logscan_free(s);
}

static void test_looks_binary(void **st)
{
    (void)st;
    assert_false(mp_logscan_looks_binary("", 0));
    static const char zeros[4096] = { 0 };
    assert_false(mp_logscan_looks_binary(zeros, sizeof(zeros))); /* all NUL: holes, not binary */
    const char *log = "INFO \x1b[1mbold\x1b[0m caf\xc3\xa9 \xe2\x96\x84\ttab\r\n";
    assert_false(mp_logscan_looks_binary(log, strlen(log)));
    /* text with NUL runs between: still text */
    char mix[600];
    memset(mix, 0, sizeof(mix));
    memcpy(mix, "hello world\n", 12);
    memcpy(mix + 300, "more text\n", 10);
    assert_false(mp_logscan_looks_binary(mix, sizeof(mix)));
    /* a UTF-8 sequence cut by the end of the probe is not held against it */
    assert_false(mp_logscan_looks_binary("ab\xe2\x96", 4));
    /* control bytes and invalid UTF-8: binary */
    unsigned char bin[1000];
    for (size_t i = 0; i < sizeof(bin); i++)
        bin[i] = (unsigned char)(i * 37 + 11);
    assert_true(mp_logscan_looks_binary((const char *)bin, sizeof(bin)));
    /* the 30% line: 7 of 10 text bytes is text, 6 of 10 is not */
    assert_false(mp_logscan_looks_binary("abcdefg\x01\x02\x03", 10));
    assert_true(mp_logscan_looks_binary("abcdef\x01\x02\x03\x04", 10));
    assert_true(mp_logscan_looks_binary("\xc0\xaf\xed\xa0\x80xyz", 8)); /* overlong, surrogate */
}

static void test_sites_after_error(void **st)
{
    (void)st;
    const char *t =
        "torch.AcceleratorError: CUDA error: misaligned address\n"
        "  vllm/v1/worker/gpu_model_runner.py:313 in get_output\n"
        "    self.async_copy_ready_event.synchronize()\n"
        "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:455 'an illegal memory access was encountered'\n";
    struct mp_logscan *s = scan_all(t, strlen(t), 4096);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_string_equal(r->crash.cls, "misaligned-address");
    assert_true(r->crash.nsites >= 1);
    assert_string_equal(r->crash.sites[0], "vllm/v1/worker/gpu_model_runner.py:get_output");
    mp_logscan_free(s);
}

static void test_render_text(void **st)
{
    (void)st;
    struct mp_logscan *s = scan_all(sample, sizeof(sample) - 1, 33);
    struct buf b = BUF_INIT;
    mp_logresult_to_text(mp_logscan_result(s), "x.log", &b);
    assert_non_null(strstr(b.data, "FLASHINFER_CUTLASS  (line 5)"));
    assert_non_null(strstr(b.data, "illegal-address at line 13, engine dead"));
    buf_release(&b);
    mp_logscan_free(s);
}

static bool has_code(const struct mp_logresult *r, const char *code)
{
    for (size_t i = 0; i < r->nfindings; i++)
        if (!strcmp(r->findings[i].code, code))
            return true;
    return false;
}

/* Every kernel the engine resolves: the MTP drafter's own MoE selection
 * (after "Loading drafter model"), other selection lines, the FlashInfer
 * autotuner's failed tactics as counts (a TMA descriptor error while tuning
 * is no crash), a crash after them says so. */
static void test_drafter_other_autotuner(void **st)
{
    (void)st;
    const char *t =
        "(EngineCore pid=1) INFO 07-02 21:58:53 [nvfp4.py:222] Using 'FLASHINFER_CUTLASS' NvFp4 MoE "
        "backend out of potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTLASS'].\n"
        "(EngineCore pid=1) INFO 07-02 21:58:53 [mxfp8.py:88] Using 'MARLIN' MxFp8 MoE backend.\n"
        "(EngineCore pid=1) INFO 07-02 21:58:53 [cuda.py:542] Using backend "
        "AttentionBackendEnum.FLASH_ATTN for vit attention\n"
        "(EngineCore pid=1) INFO 07-02 22:01:01 [gpu_model_runner.py:5184] Loading drafter model...\n"
        "(EngineCore pid=1) INFO 07-02 22:01:02 [unquantized.py:282] Using TRITON Unquantized MoE "
        "backend out of potential backends: ['FlashInfer TRTLLM', 'FlashInfer CUTLASS', 'TRITON'].\n"
        "(EngineCore pid=1) 2026-07-02 22:02:00,001 - INFO - autotuner.py:446 - flashinfer.jit: "
        "[Autotuner]: Autotuning process starts ...\n"
        "Error: Failed to initialize the TMA descriptor 715\n"
        "Error: Failed to initialize the TMA descriptor 715\n"
        "(EngineCore pid=1) 2026-07-02 22:02:00,101 - WARNING - autotuner.py:503 - flashinfer.jit: "
        "[Autotuner]: Skipping tactic <MoERunner> 14, due to failure while profiling: x\n"
        "(EngineCore pid=1) 2026-07-02 22:02:01,101 - INFO - autotuner.py:455 - flashinfer.jit: "
        "[Autotuner]: Autotuning process ends\n"
        "(EngineCore pid=1) ERROR 07-02 22:03:01 [core.py:1100] torch.AcceleratorError: CUDA error: "
        "an illegal instruction was encountered\n";
    struct mp_logscan *s = scan_all(t, strlen(t), 64);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_string_equal(r->moe_backend, "FLASHINFER_CUTLASS"); /* the target's, not the drafter's */
    assert_string_equal(r->moe_kind, "NvFp4");
    assert_int_equal(r->drafter.loaded_line, 4);
    assert_string_equal(r->drafter.moe_backend, "TRITON");
    assert_string_equal(r->drafter.moe_kind, "Unquantized");
    assert_int_equal(r->drafter.n_moe_candidates, 3);
    assert_int_equal(r->drafter.line, 5);
    assert_null(r->unquantized_moe_backend);
    assert_int_equal(r->n_other, 2);
    assert_string_equal(r->other[0].what, "MxFp8 MoE");
    assert_string_equal(r->other[0].value, "MARLIN");
    assert_int_equal(r->other[0].line, 2);
    assert_string_equal(r->other[1].what, "ViT attention");
    assert_true(r->has_crash);
    assert_string_equal(r->crash.cls, "illegal-instruction");
    assert_int_equal(r->crash.line, 11);
    long tma = 0, skipped = 0;
    for (size_t i = 0; i < r->n_tallies; i++) {
        if (!strcmp(r->tallies[i].name, "autotuner-tma-descriptor"))
            tma = r->tallies[i].count;
        if (!strcmp(r->tallies[i].name, "autotuner-skipped"))
            skipped = r->tallies[i].count;
    }
    assert_int_equal(tma, 2);
    assert_int_equal(skipped, 1);
    assert_true(has_code(r, "autotuner-tactics"));
    assert_true(has_code(r, "autotuner-tma-descriptor"));
    assert_true(has_code(r, "crash-after-autotuner"));
    mp_logscan_free(s);
    /* outside an autotuning run a TMA descriptor error is the crash */
    const char *u = "Error: Failed to initialize the TMA descriptor 715\n";
    s = scan_all(u, strlen(u), 7);
    r = mp_logscan_result(s);
    assert_true(r->has_crash);
    assert_string_equal(r->crash.cls, "tma-descriptor");
    assert_false(has_code(r, "autotuner-tactics"));
    mp_logscan_free(s);
}

/* vLLM 0.20.0 with FlashInfer 0.6.x (a real DGX Spark log, Qwen3.6 NVFP4
 * with an MTP drafter): the target's prepare/finalize line, the drafter's
 * own FlashInfer CUTLASS selection and its prepare/finalize, and the
 * autotuner's summary lines "Skipped N unsupported tactic(s) for OP" after
 * a tqdm fragment: counted by N, a finding, no crash. */
static void test_autotuner_summary_counts(void **st)
{
    (void)st;
    const char *t =
        "(EngineCore pid=167) INFO 05-03 18:36:50 [nvfp4.py:209] Using 'FLASHINFER_CUTLASS' NvFp4 MoE "
        "backend out of potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTLASS'].\n"
        "(EngineCore pid=167) INFO 05-03 18:38:59 [default_loader.py:384] Loading weights took 126.70 seconds\n"
        "(EngineCore pid=167) INFO 05-03 18:38:59 [nvfp4.py:485] Using MoEPrepareAndFinalizeNoDPEPModular\n"
        "(EngineCore pid=167) INFO 05-03 18:38:59 [gpu_model_runner.py:4801] Loading drafter model...\n"
        "(EngineCore pid=167) INFO 05-03 18:38:59 [unquantized.py:213] Using FlashInfer CUTLASS Unquantized "
        "MoE backend out of potential backends: ['FlashInfer TRTLLM', 'FlashInfer CUTLASS', 'TRITON', "
        "'BATCHED_TRITON'].\n"
        "(EngineCore pid=167) INFO 05-03 18:39:15 [unquantized.py:343] Using MoEPrepareAndFinalizeNoDPEPModular\n"
        "(EngineCore pid=167) INFO 05-03 18:39:15 [gpu_model_runner.py:4879] Model loading took 23.43 GiB "
        "memory and 145.657922 seconds\n"
        "(EngineCore pid=167) 2026-05-03 18:41:37,368 - INFO - autotuner.py:457 - flashinfer.jit: "
        "[Autotuner]: Autotuning process starts ...\n"
        "(EngineCore pid=167) \n"
        "[AutoTuner]: Tuning trtllm::fused_moe::gemm1:   0%|          | 0/1 [00:00<?, ?profile/s]"
        "2026-05-03 18:41:38,575 - INFO - autotuner.py:833 - flashinfer.jit: [Autotuner]: Skipped 4 "
        "unsupported tactic(s) for trtllm::fused_moe::gemm1 (enable debug logs to see details)\n"
        "(EngineCore pid=167) \n"
        "[AutoTuner]: Tuning trtllm::fused_moe::gemm2:   0%|          | 0/1 [00:00<?, ?profile/s]"
        "2026-05-03 18:41:38,622 - INFO - autotuner.py:833 - flashinfer.jit: [Autotuner]: Skipped 10 "
        "unsupported tactic(s) for trtllm::fused_moe::gemm2 (enable debug logs to see details)\n"
        "(EngineCore pid=167) 2026-05-03 18:41:53,536 - INFO - autotuner.py:466 - flashinfer.jit: "
        "[Autotuner]: Autotuning process ends\n";
    struct mp_logscan *s = scan_all(t, strlen(t), 64);
    const struct mp_logresult *r = mp_logscan_result(s);
    assert_string_equal(r->moe_backend, "FLASHINFER_CUTLASS");
    assert_string_equal(r->drafter.moe_backend, "FlashInfer CUTLASS");
    assert_int_equal(r->drafter.line, 5);
    assert_false(r->has_crash);
    long unsup = -1, first = 0;
    for (size_t i = 0; i < r->n_tallies; i++) {
        if (!strcmp(r->tallies[i].name, "autotuner-unsupported")) {
            unsup = r->tallies[i].count;
            first = r->tallies[i].first_line;
        }
    }
    assert_int_equal(unsup, 14);
    assert_int_equal(first, 10);
    assert_true(has_code(r, "autotuner-tactics"));
    assert_false(has_code(r, "crash-after-autotuner"));
    bool said = false;
    for (size_t i = 0; i < r->nfindings; i++)
        if (!strcmp(r->findings[i].code, "autotuner-tactics"))
            said = strstr(r->findings[i].text, "14 tactic(s) the autotuner called unsupported") != NULL;
    assert_true(said);
    /* the target's prepare/finalize is recorded once, the drafter's is not the target's */
    size_t npf = 0;
    for (size_t i = 0; i < r->n_other; i++)
        if (!strcmp(r->other[i].what, "MoE prepare/finalize")) {
            npf++;
            assert_int_equal(r->other[i].line, 3);
        }
    assert_int_equal(npf, 1);
    mp_logscan_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_fields),       cmocka_unit_test(test_chunking_invariant),
        cmocka_unit_test(test_event_bits),
        cmocka_unit_test(test_serving_without_ready_line),          cmocka_unit_test(test_prefixes_quotes),
        cmocka_unit_test(test_startup_error_and_levels), cmocka_unit_test(test_long_lines_and_binary),
        cmocka_unit_test(test_error_lines),
        cmocka_unit_test(test_drafter_other_autotuner), cmocka_unit_test(test_autotuner_summary_counts),         cmocka_unit_test(test_nul_bytes),
        cmocka_unit_test(test_looks_binary),
        cmocka_unit_test(test_sites_after_error),   cmocka_unit_test(test_render_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
