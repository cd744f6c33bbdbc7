/* test_sse.c - SSE framing parser and vLLM chunk interpreter. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "err.h"
#include "http/sse.h"

/* Collected events: "event|id|data" records separated by \x1e. */
struct coll {
    struct buf out;
    int n;
    int stop_after; /* 0 = never */
};

static int collect(void *ud, const struct mp_sse_event *ev)
{
    struct coll *c = ud;
    buf_adds(&c->out, ev->event);
    buf_addc(&c->out, '|');
    buf_adds(&c->out, ev->id);
    buf_addc(&c->out, '|');
    buf_add(&c->out, ev->data, ev->data_len);
    buf_addc(&c->out, '\x1e');
    assert_int_equal(ev->data[ev->data_len], '\0');
    c->n++;
    return (c->stop_after && c->n >= c->stop_after) ? 7 : 0;
}

static char *parse_whole(const char *s, size_t n, size_t max_event, int *events, int *rc_out)
{
    struct mp_sse p = { 0 };
    mp_sse_init(&p, max_event);
    struct coll c = { BUF_INIT, 0, 0 };
    int rc = mp_sse_feed(&p, s, n, collect, &c);
    int rc2 = mp_sse_finish(&p, collect, &c);
    if (rc_out)
        *rc_out = rc ? rc : rc2;
    if (events)
        *events = c.n;
    mp_sse_free(&p);
    return buf_detach(&c.out, NULL);
}

static void t_basic(void **state)
{
    (void)state;
    const char *s = ": comment\n"
                    "data: a\n"
                    "data:b\n"
                    "\n"
                    "event: ping\r\n"
                    "id: 7\r\n"
                    "retry: 100\r\n"
                    "data\r\n"
                    "\r\n"
                    "data: x\r\r"
                    "unknown: y\n"
                    "\n" /* no data -> no event */
                    "data: second event with id kept\n\n";
    int n = 0, rc = 0;
    char *got = parse_whole(s, strlen(s), 0, &n, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(n, 4);
    assert_string_equal(got, "||a\nb\x1e"
                             "ping|7|\x1e"
                             "|7|x\x1e"
                             "|7|second event with id kept\x1e");
    free(got);
}

static void t_bom_and_finish(void **state)
{
    (void)state;
    const char *s = "\xEF\xBB\xBF" "data: one\n\ndata: [DONE]\n\n";
    int n = 0, rc = 0;
    char *got = parse_whole(s, strlen(s), 0, &n, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(n, 2);
    assert_string_equal(got, "||one\x1e||[DONE]\x1e");
    free(got);
    /* a partial BOM is data, not dropped */
    const char *s2 = "\xEF" "data: z\n\n";
    got = parse_whole(s2, strlen(s2), 0, &n, &rc);
    assert_int_equal(n, 0); /* field name "\xEF" "data" is unknown */
    free(got);
}

/* The stream ends inside an event: SSE discards it (never dispatched, so half
 * an event is never judged as JSON); finish says how many bytes it had. */
static void t_unterminated(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int events;
        bool cut;
    } cases[] = {
        {"data: {\"a\":1}\n\ndata: {\"choi", 1, true},   /* cut inside a line */
        {"data: {\"a\":1}\n\ndata: [DONE]\n", 1, true},  /* complete lines, no blank line */
        {"data: [DONE]", 0, true},
        {"data:\n", 0, true},                            /* an empty data line is an event too */
        {"data: x\n\n: keep-al", 1, false},              /* a partial comment is no event */
        {"data: x\n\n", 1, false},
        {"", 0, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mp_sse p = { 0 };
        struct coll c = { BUF_INIT, 0, 0 };
        assert_int_equal(mp_sse_feed(&p, cases[i].s, strlen(cases[i].s), collect, &c), 0);
        assert_int_equal(mp_sse_finish(&p, collect, &c), 0);
        assert_int_equal(c.n, cases[i].events);
        assert_int_equal(p.unterminated > 0, cases[i].cut);
        buf_release(&c.out);
        mp_sse_free(&p);
    }
}

/* a realistic vLLM completions stream (v0.11 shape, usage chunk, DONE) with CRLF variants */
static const char vllm_stream[] =
    "data: {\"id\":\"cmpl-d1eb817714c94cb2\",\"object\":\"text_completion\",\"created\":1761553358,"
    "\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" Sir\",\"logprobs\":null,\"finish_reason\":null,"
    "\"stop_reason\":null,\"prompt_token_ids\":null,\"token_ids\":null}],\"usage\":null}\n\n"
    "data: {\"id\":\"cmpl-d1eb817714c94cb2\",\"object\":\"text_completion\",\"created\":1761553358,"
    "\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" \xc3\xa9\xff\",\"logprobs\":null,\"finish_reason\":\"length\","
    "\"stop_reason\":null,\"prompt_token_ids\":null,\"token_ids\":null}],\"usage\":null}\r\n\r\n"
    ": keep-alive\r"
    "data: {\"id\":\"cmpl-d1eb817714c94cb2\",\"object\":\"text_completion\",\"created\":1761553358,"
    "\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":6,\"total_tokens\":8,\"completion_tokens\":2}}\r\r"
    "data: [DONE]\n\n";

static void t_every_split(void **state)
{
    (void)state;
    size_t n = sizeof(vllm_stream) - 1;
    int events = 0, rc = 0;
    char *whole = parse_whole(vllm_stream, n, 0, &events, &rc);
    assert_int_equal(events, 4);
    assert_int_equal(rc, 0);
    /* two pieces, split at every byte boundary */
    for (size_t k = 0; k <= n; k++) {
        struct mp_sse p = { 0 };
        struct coll c = { BUF_INIT, 0, 0 };
        assert_int_equal(mp_sse_feed(&p, vllm_stream, k, collect, &c), 0);
        assert_int_equal(mp_sse_feed(&p, vllm_stream + k, n - k, collect, &c), 0);
        assert_int_equal(mp_sse_finish(&p, collect, &c), 0);
        assert_string_equal(c.out.data, whole);
        buf_release(&c.out);
        mp_sse_free(&p);
    }
    /* one byte at a time, and in three pieces */
    struct mp_sse p = { 0 };
    struct coll c = { BUF_INIT, 0, 0 };
    for (size_t i = 0; i < n; i++)
        assert_int_equal(mp_sse_feed(&p, vllm_stream + i, 1, collect, &c), 0);
    assert_int_equal(mp_sse_finish(&p, collect, &c), 0);
    assert_string_equal(c.out.data, whole);
    buf_release(&c.out);
    for (size_t a = 0; a < n; a += 7) {
        for (size_t b = a; b <= n; b += 13) {
            struct coll c3 = { BUF_INIT, 0, 0 };
            mp_sse_feed(&p, vllm_stream, a, collect, &c3);
            mp_sse_feed(&p, vllm_stream + a, b - a, collect, &c3);
            mp_sse_feed(&p, vllm_stream + b, n - b, collect, &c3);
            mp_sse_finish(&p, collect, &c3);
            assert_string_equal(c3.out.data, whole);
            buf_release(&c3.out);
        }
    }
    mp_sse_free(&p);
    /* invalid UTF-8 (\xff) passed through untouched */
    assert_non_null(strstr(whole, " \xc3\xa9\xff"));
    free(whole);
}

static void t_oversize(void **state)
{
    (void)state;
    struct mp_sse p = { 0 };
    mp_sse_init(&p, 64);
    struct coll c = { BUF_INIT, 0, 0 };
    char big[300];
    memset(big, 'x', sizeof(big));
    /* oversize as many data lines */
    assert_int_equal(mp_sse_feed(&p, "data: ok1\n\n", 11, collect, &c), 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(mp_sse_feed(&p, "data: 0123456789\n", 17, collect, &c), 0);
    assert_int_equal(mp_sse_feed(&p, "\ndata: ok2\n\n", 12, collect, &c), MP_ELIMIT);
    /* oversize as one long line, split over feeds */
    assert_int_equal(mp_sse_feed(&p, "data: ", 6, collect, &c), 0);
    assert_int_equal(mp_sse_feed(&p, big, sizeof(big), collect, &c), 0);
    assert_int_equal(mp_sse_feed(&p, big, sizeof(big), collect, &c), 0);
    assert_int_equal(mp_sse_feed(&p, "\n\ndata: ok3\n\n", 13, collect, &c), MP_ELIMIT);
    assert_int_equal(p.oversize, 2);
    assert_string_equal(c.out.data, "||ok1\x1e||ok2\x1e||ok3\x1e");
    /* oversize at EOF is reported by finish */
    assert_int_equal(mp_sse_feed(&p, big, sizeof(big), collect, &c), 0);
    assert_int_equal(mp_sse_finish(&p, collect, &c), MP_ELIMIT);
    /* exactly max_event bytes of data is fine */
    char edge[64 + 8];
    memcpy(edge, "data:", 5);
    memset(edge + 5, 'y', 64);
    memcpy(edge + 69, "\n\n", 2);
    buf_reset(&c.out);
    assert_int_equal(mp_sse_feed(&p, edge, 71, collect, &c), 0);
    assert_int_equal(c.out.len, 64 + 3);
    buf_release(&c.out);
    mp_sse_free(&p);
}

static void t_stop(void **state)
{
    (void)state;
    struct mp_sse p = { 0 };
    struct coll c = { BUF_INIT, 0, 1 };
    assert_int_equal(mp_sse_feed(&p, "data: a\n\ndata: b\n\n", 18, collect, &c), 7);
    assert_int_equal(c.n, 1);
    buf_release(&c.out);
    mp_sse_free(&p);
}

static void t_nul_bytes(void **state)
{
    (void)state;
    const char s[] = "data: a\0b\n\n";
    struct mp_sse p = { 0 };
    struct coll c = { BUF_INIT, 0, 0 };
    assert_int_equal(mp_sse_feed(&p, s, sizeof(s) - 1, collect, &c), 0);
    assert_int_equal(c.out.len, 2 + 3 + 1);
    assert_memory_equal(c.out.data, "||a\0b\x1e", 6);
    buf_release(&c.out);
    mp_sse_free(&p);
}

/* ---- chunk interpreter ---- */

static void chunk(const char *s, struct mp_sse_chunk *c, int want_rc)
{
    assert_int_equal(mp_sse_chunk_parse(s, strlen(s), c), want_rc);
}

static void t_chunk_completions(void **state)
{
    (void)state;
    struct mp_sse_chunk c;
    /* v0.10.0 */
    chunk("{\"id\":\"cmpl-6f1c0e5f0b8a4b7e9d2c3a4b5c6d7e8f\",\"object\":\"text_completion\",\"created\":1753000000,"
          "\"model\":\"Qwen/Qwen2.5-0.5B\",\"choices\":[{\"index\":0,\"text\":\" Paris\",\"logprobs\":null,"
          "\"finish_reason\":null,\"stop_reason\":null}],\"usage\":null}", &c, 0);
    assert_int_equal(c.kind, MP_SSE_CHUNK_DATA);
    assert_true(c.has_choice);
    assert_false(c.role_only);
    assert_string_equal(c.text, " Paris");
    assert_int_equal(c.text_len, 6);
    assert_null(c.finish_reason);
    assert_false(c.has_usage);
    mp_sse_chunk_release(&c);
    /* v0.10.2: prompt_token_ids list on the first chunk */
    chunk("{\"id\":\"cmpl-bb3c414e6a24489c8a25bd07b6c86394\",\"object\":\"text_completion\",\"created\":1761553425,"
          "\"model\":\"/home/jovyan/qwen3-8b\",\"choices\":[{\"index\":0,\"text\":\" Sir\",\"logprobs\":null,"
          "\"finish_reason\":null,\"stop_reason\":null,\"prompt_token_ids\":[12522,5193,264,882,11,1052,572,"
          "264,33200,46609,6941],\"token_ids\":null}],\"usage\":null}", &c, 0);
    assert_string_equal(c.text, " Sir");
    mp_sse_chunk_release(&c);
    /* v0.20+: no usage key, terminal chunk with finish_reason and system_fingerprint */
    chunk("{\"id\":\"cmpl-9f8e7d6c5b4a3210\",\"object\":\"text_completion\",\"created\":1788000000,\"model\":\"m\","
          "\"choices\":[{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null,"
          "\"prompt_token_ids\":null,\"token_ids\":null}],\"system_fingerprint\":\"vllm-0.28.0-b8604cd9\"}", &c, 0);
    assert_true(c.has_choice);
    assert_string_equal(c.text, "");
    assert_string_equal(c.finish_reason, "length");
    mp_sse_chunk_release(&c);
    /* usage chunk */
    chunk("{\"id\":\"cmpl-x\",\"object\":\"text_completion\",\"created\":1753000000,\"model\":\"m\",\"choices\":[],"
          "\"usage\":{\"prompt_tokens\":6,\"total_tokens\":22,\"completion_tokens\":16}}", &c, 0);
    assert_false(c.has_choice);
    assert_true(c.has_usage);
    assert_int_equal(c.completion_tokens, 16);
    assert_int_equal(c.prompt_tokens, 6);
    mp_sse_chunk_release(&c);
    chunk("  [DONE] ", &c, 0);
    assert_int_equal(c.kind, MP_SSE_CHUNK_DONE);
    mp_sse_chunk_release(&c);
}

static void t_chunk_chat(void **state)
{
    (void)state;
    struct mp_sse_chunk c;
    chunk("{\"id\":\"chatcmpl-9814ea0f38ec847a\",\"object\":\"chat.completion.chunk\",\"created\":1778166117,"
          "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
          "\"logprobs\":null,\"finish_reason\":null}],\"prompt_token_ids\":null}", &c, 0);
    assert_true(c.has_choice);
    assert_true(c.role_only);
    mp_sse_chunk_release(&c);
    chunk("{\"id\":\"chatcmpl-9814ea0f38ec847a\",\"object\":\"chat.completion.chunk\",\"created\":1778166117,"
          "\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"logprobs\":null,"
          "\"finish_reason\":null,\"token_ids\":null}]}", &c, 0);
    assert_false(c.role_only);
    assert_string_equal(c.text, "Hello");
    mp_sse_chunk_release(&c);
    chunk("{\"id\":\"chatcmpl-a0e8\",\"object\":\"chat.completion.chunk\",\"created\":1749994809,"
          "\"model\":\"q\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"logprobs\":null,"
          "\"finish_reason\":\"stop\",\"stop_reason\":null}]}", &c, 0);
    assert_string_equal(c.finish_reason, "stop");
    mp_sse_chunk_release(&c);
    chunk("{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hmm\"}}]}", &c, 0);
    assert_string_equal(c.reasoning, "hmm");
    assert_null(c.text);
    mp_sse_chunk_release(&c);
    chunk("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning\":\"r\"}}]}", &c, 0);
    assert_string_equal(c.reasoning, "r");
    assert_false(c.role_only);
    mp_sse_chunk_release(&c);
    /* continuous usage stats on a content chunk */
    chunk("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":15,"
          "\"total_tokens\":16,\"completion_tokens\":1}}", &c, 0);
    assert_true(c.has_choice);
    assert_true(c.has_usage);
    assert_int_equal(c.completion_tokens, 1);
    mp_sse_chunk_release(&c);
}

static void t_chunk_errors(void **state)
{
    (void)state;
    struct mp_sse_chunk c;
    /* newer in-band error (json.dumps spacing) */
    chunk("{\"error\": {\"message\": \"EngineCore encountered an issue. See stack trace (above) for the root "
          "cause.\", \"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}", &c, 0);
    assert_int_equal(c.kind, MP_SSE_CHUNK_ERROR);
    assert_string_equal(c.err_message,
                        "EngineCore encountered an issue. See stack trace (above) for the root cause.");
    assert_string_equal(c.err_type, "InternalServerError");
    assert_int_equal(c.err_code, 500);
    mp_sse_chunk_release(&c);
    /* v0.10.0 flat */
    chunk("{\"object\": \"error\", \"message\": \"boom\", \"type\": \"BadRequestError\", \"param\": null, "
          "\"code\": 400}", &c, 0);
    assert_int_equal(c.kind, MP_SSE_CHUNK_ERROR);
    assert_string_equal(c.err_message, "boom");
    assert_int_equal(c.err_code, 400);
    mp_sse_chunk_release(&c);
    /* truncated JSON: malformed with a position */
    const char *t = "{\"id\":\"cmpl-1\",\"choices\":[{\"text\":\" tr";
    chunk(t, &c, MP_EPARSE);
    assert_int_equal(c.kind, MP_SSE_CHUNK_MALFORMED);
    assert_true(c.err_pos > 20 && c.err_pos <= strlen(t));
    mp_sse_chunk_release(&c);
    chunk("[1,2]", &c, MP_EPARSE);
    mp_sse_chunk_release(&c);
    chunk("", &c, MP_EPARSE);
    mp_sse_chunk_release(&c);
    chunk("garbage \xff\xfe", &c, MP_EPARSE);
    assert_int_equal(c.err_pos, 0);
    mp_sse_chunk_release(&c);
}

/* RFC 8259 is the judge, not cJSON: a lone surrogate escape is valid JSON
 * (read as U+FFFD); raw control bytes and invalid UTF-8 inside a string, and
 * what the grammar forbids (leading zeros, data after the value), are not. */
static void t_chunk_rfc8259(void **state)
{
    (void)state;
    struct mp_sse_chunk c;
    chunk("{\"choices\":[{\"index\":0,\"text\":\"a\\ud800b\"}]}", &c, 0);
    assert_int_equal(c.kind, MP_SSE_CHUNK_DATA);
    assert_string_equal(c.text, "a\xef\xbf\xbd" "b");
    mp_sse_chunk_release(&c);
    chunk("{\"choices\":[{\"text\":\"\\udc00\\ud83d\\ude00\"}]}", &c, 0); /* lone low, then a pair */
    assert_string_equal(c.text, "\xef\xbf\xbd\xf0\x9f\x98\x80");
    mp_sse_chunk_release(&c);
    static const struct {
        const char *s;
        size_t len;
        size_t pos;
        const char *why;
    } bad[] = {
        {"{\"choices\":[{\"text\":\"a\0b\"}]}", 28, 22, "a raw control byte inside a string"},
        {"{\"choices\":[{\"text\":\"a\x01\"}]}", 27, 22, "a raw control byte inside a string"},
        {"{\"choices\":[{\"text\":\"a\xff\"}]}", 27, 22, "invalid UTF-8 inside a string"},
        {"{\"choices\":[{\"text\":\"\xc0\xaf\"}]}", 27, 21, "invalid UTF-8 inside a string"},
        {"{\"choices\":[{\"text\":\"\xed\xa0\x80\"}]}", 28, 21, "invalid UTF-8 inside a string"},
        {"{\"a\":01}", 9, 6, "expected ',' or '}'"},
        {"{\"a\":1} x", 10, 8, "data after the JSON value"},
        {"{\"a\":+1}", 9, 5, "an unexpected character"},
        {"{\"a\":\"\\x\"}", 11, 7, "an invalid escape"},
        {"{\"a\":\"\\u12\"}", 12, 8, "a \\u escape without 4 hex digits"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(mp_sse_chunk_parse(bad[i].s, bad[i].len, &c), MP_EPARSE);
        assert_int_equal(c.kind, MP_SSE_CHUNK_MALFORMED);
        assert_int_equal(c.err_pos, bad[i].pos);
        assert_non_null(c.err_why);
        assert_non_null(strstr(c.err_why, bad[i].why));
        mp_sse_chunk_release(&c);
    }
}

static void t_error_body(void **state)
{
    (void)state;
    char m[128];
    const char *b1 = "{\"error\":{\"message\":\"The model `gpt-4` does not exist.\",\"type\":\"NotFoundError\","
                     "\"param\":\"model\",\"code\":404}}";
    mp_sse_error_body_message(b1, strlen(b1), m, sizeof(m));
    assert_string_equal(m, "The model `gpt-4` does not exist.");
    const char *b2 = "{\"object\":\"error\",\"message\":\"bad\\nthing\",\"type\":\"BadRequestError\",\"param\":null,"
                     "\"code\":400}";
    mp_sse_error_body_message(b2, strlen(b2), m, sizeof(m));
    assert_string_equal(m, "bad thing");
    mp_sse_error_body_message("{\"error\":\"Unauthorized\"}", 24, m, sizeof(m));
    assert_string_equal(m, "Unauthorized");
    mp_sse_error_body_message("{\"detail\":\"Not Found\"}", 22, m, sizeof(m));
    assert_string_equal(m, "Not Found");
    mp_sse_error_body_message("{\"detail\":[1]}", 14, m, sizeof(m));
    assert_string_equal(m, "[1]");
    mp_sse_error_body_message("Internal\r\nError", 15, m, sizeof(m));
    assert_string_equal(m, "Internal  Error");
    mp_sse_error_body_message("", 0, m, sizeof(m));
    assert_string_equal(m, "");
    mp_sse_error_body_message("abcdefgh", 8, m, 4);
    assert_string_equal(m, "abc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_basic),
        cmocka_unit_test(t_bom_and_finish),
        cmocka_unit_test(t_every_split),
        cmocka_unit_test(t_oversize),
        cmocka_unit_test(t_stop),
        cmocka_unit_test(t_nul_bytes),
        cmocka_unit_test(t_chunk_completions),
        cmocka_unit_test(t_chunk_chat),
        cmocka_unit_test(t_chunk_errors),
        cmocka_unit_test(t_chunk_rfc8259),
        cmocka_unit_test(t_unterminated),
        cmocka_unit_test(t_error_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
