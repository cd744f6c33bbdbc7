/* Unit tests: deterministic text, sanity answers, HTTP request parsing and
 * the API's request validation and chunk shapes. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "gen.h"
#include "http.h"

static void text_of(const char *prompt, uint64_t seed, bool garbage, unsigned n, char *out,
                    size_t cap)
{
    struct re_gen g;
    re_gen_init(&g, prompt, strlen(prompt), seed, garbage);
    out[0] = 0;
    for (unsigned i = 0; i < n; i++)
        strncat(out, re_gen_token(&g, i), cap - strlen(out) - 1);
}

static void test_determinism(void **st)
{
    MP_UNUSED(st);
    char a[4096], b[4096], c[4096];
    text_of("Tell me about kernels", 1, false, 64, a, sizeof(a));
    text_of("Tell me about kernels", 1, false, 64, b, sizeof(b));
    text_of("Tell me about kernels", 2, false, 64, c, sizeof(c));
    assert_string_equal(a, b);
    assert_true(strcmp(a, c) != 0);
    text_of("Something else", 1, false, 64, c, sizeof(c));
    assert_true(strcmp(a, c) != 0);
}

static void test_sanity_and_garbage(void **st)
{
    MP_UNUSED(st);
    for (const struct re_sanity *s = re_gen_sanity; s->prompt; s++) {
        struct re_gen g;
        re_gen_init(&g, s->prompt, strlen(s->prompt), 99, false);
        char out[256] = "";
        unsigned i = 0;
        while (!re_gen_is_eos(&g, i) && i < 10)
            strcat(out, re_gen_token(&g, i++));
        assert_string_equal(out, s->answer);
    }
    char out[512];
    text_of("The capital of France is", 1, true, 3, out, sizeof(out));
    assert_string_equal(out, "locklocklock");
    struct re_gen g;
    re_gen_init(&g, "x", 1, 1, true);
    for (unsigned i = 0; i < 1000; i++)
        assert_false(re_gen_is_eos(&g, i));
}

static void test_http_parse(void **st)
{
    MP_UNUSED(st);
    struct re_http_req r;
    const char *ok = "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json"
                     "\r\nContent-Length: 2\r\nX-Request-Id: abc\r\n\r\n{}GET";
    long n = re_http_parse(ok, strlen(ok), 1024, &r);
    assert_int_equal(n, (long)strlen(ok) - 3);
    assert_string_equal(r.method, "POST");
    assert_string_equal(r.path, "/v1/completions");
    assert_string_equal(r.request_id, "abc");
    assert_true(r.keep_alive);
    assert_int_equal(r.body_len, 2);
    assert_int_equal(re_http_parse(ok, 20, 1024, &r), 0); /* incomplete */
    const char *big = "POST / HTTP/1.1\r\nContent-Length: 99999\r\n\r\n";
    assert_int_equal(re_http_parse(big, strlen(big), 1024, &r), -413);
    const char *chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_int_equal(re_http_parse(chunked, strlen(chunked), 1024, &r), -501);
    const char *bad = "get / HTTP/1.1\r\n\r\n";
    assert_int_equal(re_http_parse(bad, strlen(bad), 1024, &r), -400);
    const char *close10 = "GET /health HTTP/1.0\r\n\r\n";
    assert_true(re_http_parse(close10, strlen(close10), 1024, &r) > 0);
    assert_false(r.keep_alive);
}

static void test_api_parse_and_shapes(void **st)
{
    MP_UNUSED(st);
    char msg[512], type[64], param[64];
    struct re_api_req q;
    const char *body = "{\"prompt\":\"hi\",\"max_tokens\":8,\"stream\":true,\"stream_options\":{}}";
    assert_int_equal(re_api_parse(false, body, strlen(body), &q, msg, sizeof(msg), type,
                                  sizeof(type), param, sizeof(param)),
                     0);
    assert_true(q.include_usage); /* {} enables usage, like vLLM */
    assert_int_equal(q.max_tokens, 8);
    re_api_req_free(&q);
    const char *bad = "{\"prompt\": ";
    assert_int_equal(re_api_parse(false, bad, strlen(bad), &q, msg, sizeof(msg), type,
                                  sizeof(type), param, sizeof(param)),
                     400);
    assert_string_equal(type, "Bad Request");
    assert_non_null(strstr(msg, "json_invalid"));
    const char *so = "{\"prompt\":\"x\",\"stream_options\":{\"include_usage\":true}}";
    assert_int_equal(re_api_parse(false, so, strlen(so), &q, msg, sizeof(msg), type, sizeof(type),
                                  param, sizeof(param)),
                     400);
    assert_string_equal(param, "stream_options");

    struct re_api_shape shape = {.nested_errors = true, .token_fields = true, .usage_key = true,
                                 .version = "0.17.0"};
    struct re_api_ctx ctx = {.shape = &shape, .id = "cmpl-1", .created = 5, .model = "m",
                             .prompt_tokens = 3};
    struct buf b = BUF_INIT;
    re_api_chunk(&b, &ctx, " a", 2, NULL, false, 1, false);
    assert_string_equal(b.data,
                        "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":5,\"model\":"
                        "\"m\",\"choices\":[{\"index\":0,\"text\":\" a\",\"logprobs\":null,"
                        "\"finish_reason\":null,\"stop_reason\":null,\"prompt_token_ids\":null,"
                        "\"token_ids\":null}],\"usage\":null}");
    buf_reset(&b);
    re_api_usage_chunk(&b, &ctx, 4);
    assert_non_null(strstr(b.data, "\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"total_tokens\":7,\"completion_tokens\":4}"));
    buf_reset(&b);
    re_api_stream_error(&b, &shape, "boom");
    assert_string_equal(b.data, "{\"error\": {\"message\": \"boom\", \"type\": \"BadRequestError\", "
                                "\"param\": null, \"code\": 400}}");
    buf_reset(&b);
    re_api_error(&b, &shape, 404, "NotFoundError", "The model `x` does not exist.", NULL);
    assert_string_equal(b.data, "{\"error\":{\"message\":\"The model `x` does not exist.\","
                                "\"type\":\"NotFoundError\",\"param\":null,\"code\":404}}");
    buf_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_sanity_and_garbage),
        cmocka_unit_test(test_http_parse),
        cmocka_unit_test(test_api_parse_and_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
