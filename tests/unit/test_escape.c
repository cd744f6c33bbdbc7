/* Unit tests: Markdown, terminal and HTML escaping of outside text
 * (base/escape.h) - links, images, raw HTML, table cells, code spans, line
 * starts, controls, C1 and bidi controls, invalid UTF-8, the length cut -
 * and JSON string literals (buf_add_json_str, base/buf.h). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "err.h"
#include "escape.h"

static char *md(const char *s, size_t max, unsigned flags)
{
    struct buf b = BUF_INIT;
    mp_md_text(&b, s, max, flags);
    return buf_detach(&b, NULL);
}

static char *code(const char *s, size_t max, unsigned flags)
{
    struct buf b = BUF_INIT;
    mp_md_code(&b, s, max, flags);
    return buf_detach(&b, NULL);
}

static char *term(const char *s, size_t n, unsigned flags)
{
    struct buf b = BUF_INIT;
    mp_term_esc(&b, s, n, flags);
    return buf_detach(&b, NULL);
}

#define EXPECT(got_expr, want)                                                                     \
    do {                                                                                           \
        char *got_ = (got_expr);                                                                   \
        assert_string_equal(got_, want);                                                           \
        free(got_);                                                                                \
    } while (0)

static void test_md_links_images_html(void **state)
{
    (void)state;
    EXPECT(md("[x](javascript:alert(1))", SIZE_MAX, 0), "\\[x\\](javascript:alert(1))");
    EXPECT(md("![img](http://evil/x.png)", SIZE_MAX, 0), "!\\[img\\](http://evil/x.png)");
    EXPECT(md("<script>alert(1)</script>", SIZE_MAX, 0), "&lt;script&gt;alert(1)&lt;/script&gt;");
    EXPECT(md("<img src=x onerror=alert(1)>", SIZE_MAX, 0), "&lt;img src=x onerror=alert(1)&gt;");
    EXPECT(md("<http://evil>", SIZE_MAX, 0), "&lt;http://evil&gt;");
    EXPECT(md("&lt;b&gt; & co", SIZE_MAX, 0), "&amp;lt;b&amp;gt; &amp; co");
    /* reference-style links and footnotes cannot start either */
    EXPECT(md("[a]: http://evil", SIZE_MAX, 0), "\\[a\\]: http://evil");
}

static void test_md_tables_and_spans(void **state)
{
    (void)state;
    EXPECT(md("a|b\nc\r\td", SIZE_MAX, 0), "a\\|b c  d");
    EXPECT(md("a `b` *c* ~~d~~ \\", SIZE_MAX, 0), "a \\`b\\` \\*c\\* \\~\\~d\\~\\~ \\\\");
    /* '_' only where it can delimit emphasis: names stay readable */
    EXPECT(md("FLASHINFER_CUTLASS _x_ __init__", SIZE_MAX, 0),
           "FLASHINFER_CUTLASS \\_x\\_ \\_\\_init\\_\\_");
    EXPECT(md("nvidia/Nemotron-3-Super-120B-A12B-NVFP4 (v0.19.1)", SIZE_MAX, 0),
           "nvidia/Nemotron-3-Super-120B-A12B-NVFP4 (v0.19.1)");
    EXPECT(md(NULL, SIZE_MAX, 0), "—");
}

static void test_md_line_start(void **state)
{
    (void)state;
    EXPECT(md("# heading", SIZE_MAX, MP_MD_START), "\\# heading");
    EXPECT(md("    code", SIZE_MAX, MP_MD_START), "code");
    EXPECT(md("> quote", SIZE_MAX, MP_MD_START), "&gt; quote");
    EXPECT(md("\n # hidden heading", SIZE_MAX, MP_MD_START), "\\# hidden heading");
    EXPECT(md("- item", SIZE_MAX, MP_MD_START), "\\- item");
    EXPECT(md("12. item", SIZE_MAX, MP_MD_START), "12\\. item");
    EXPECT(md("12) item", SIZE_MAX, MP_MD_START), "12\\) item");
    EXPECT(md("3 requests", SIZE_MAX, MP_MD_START), "3 requests");
    EXPECT(md("# not at a start", SIZE_MAX, 0), "# not at a start");
}

static void test_md_code(void **state)
{
    (void)state;
    EXPECT(code("--moe-backend cutlass", SIZE_MAX, 0), "`--moe-backend cutlass`");
    EXPECT(code("a`b", SIZE_MAX, 0), "``a`b``");
    EXPECT(code("`x``", SIZE_MAX, 0), "``` `x`` ```");
    EXPECT(code("a|b", SIZE_MAX, MP_MD_TABLE), "`a\\|b`");
    EXPECT(code("a|b", SIZE_MAX, 0), "`a|b`");
    EXPECT(code("<b>\n[x](y)", SIZE_MAX, 0), "`<b> [x](y)`");
    EXPECT(code("", SIZE_MAX, 0), "` `");
    EXPECT(code("\x1b[31mred", SIZE_MAX, 0), "`\\x1b[31mred`");
}

static void test_controls_everywhere(void **state)
{
    (void)state;
    /* C0, DEL, C1 (U+009B, the 8-bit CSI), bidi override U+202E */
    const char *s = "a\x1b[2Jb\x07\x7f\xc2\x9b" "c\xe2\x80\xae" "d";
    EXPECT(md(s, SIZE_MAX, 0), "a\\x1b\\[2Jb\\x07\\x7f\\u009bc\\u202ed");
    EXPECT(term(s, strlen(s), 0), "a\\x1b[2Jb\\x07\\x7f\\u009bc\\u202ed");
    EXPECT(term("x\r\ny\tz", 6, 0), "x\\x0d\\x0ay\\x09z");
    EXPECT(term("x\r\ny\tz", 6, MP_TERM_KEEP_NL), "x\\x0d\ny\tz");
    /* invalid UTF-8: U+FFFD in Markdown, the byte in the terminal */
    EXPECT(md("a\xff\xc0\x80z", SIZE_MAX, 0), "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz");
    EXPECT(term("a\xff\xed\xa0\x80z", 6, 0), "a\\xff\\xed\\xa0\\x80z");
    /* valid text passes unchanged */
    EXPECT(term("Grüße → ok", strlen("Grüße → ok"), 0), "Grüße → ok");
    /* NUL bytes in a counted string are shown */
    EXPECT(term("a\0b", 3, 0), "a\\x00b");
    char *d = mp_term_dup("moe\x1b]0;pwned\x07");
    assert_string_equal(d, "moe\\x1b]0;pwned\\x07");
    free(d);
    assert_null(mp_term_dup(NULL));
}

static void test_cut(void **state)
{
    (void)state;
    EXPECT(md("abcdef", 3, 0), "abc…");
    /* never inside a character: "é" is 2 bytes */
    EXPECT(md("aé", 2, 0), "a…");
    EXPECT(code("abcdef", 4, 0), "`abcd…`");
    EXPECT(md("abc", 3, 0), "abc");
}

static void test_term_write(void **state)
{
    (void)state;
    char path[] = "/tmp/test-escape-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w+");
    assert_int_equal(mp_term_write(f, "ok\n\x1b[1m\n", 8), 0);
    rewind(f);
    char got[64] = "";
    size_t n = fread(got, 1, sizeof(got) - 1, f);
    got[n] = '\0';
    assert_string_equal(got, "ok\n\\x1b[1m\n");
    fclose(f);
    unlink(path);
    /* a failing stream is reported */
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        setvbuf(full, NULL, _IONBF, 0);
        assert_int_equal(mp_term_write(full, "x\n", 2), -1);
        fclose(full);
    }
}

static void test_hidden_at(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    assert_int_equal(mp_esc_hidden_at(&b, "\xe2\x80\xaex", 4), 3);
    assert_int_equal(mp_esc_hidden_at(&b, "\x7f", 1), 1);
    assert_int_equal(mp_esc_hidden_at(&b, "\xc2\x85", 2), 2);
    assert_string_equal(b.data, "\\u202e\\x7f\\u0085");
    assert_int_equal(mp_esc_hidden_at(&b, "a", 1), 0);
    assert_int_equal(mp_esc_hidden_at(&b, "\xc3\xa9", 2), 0);
    assert_int_equal(mp_esc_hidden_at(&b, "\xe2\x80", 2), 0); /* cut short */
    assert_int_equal(mp_esc_hidden_at(&b, "", 0), 0);
    assert_string_equal(b.data, "\\u202e\\x7f\\u0085");
    buf_release(&b);
}

static char *html(const char *s, size_t max)
{
    struct buf b = BUF_INIT;
    mp_html_esc(&b, s, max);
    return buf_detach(&b, NULL);
}

static char *json(const char *s, size_t n)
{
    struct buf b = BUF_INIT;
    buf_add_json_str(&b, s, n);
    return buf_detach(&b, NULL);
}

static void test_html(void **state)
{
    (void)state;
    EXPECT(html("plain text, é ✓", 0), "plain text, é ✓");
    EXPECT(html("<script>alert('x')</script>", 0),
           "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
    EXPECT(html("a=\"1\" & b", 0), "a=&quot;1&quot; &amp; b");
    EXPECT(html("&amp;", 0), "&amp;amp;"); /* an entity in the input is text */
    /* \n and \t kept, \r dropped, other C0 as U+FFFD, DEL/C1/bidi visible */
    EXPECT(html("a\nb\tc\r\n", 0), "a\nb\tc\n");
    EXPECT(html("\x1b[31m\x07", 0), "\xEF\xBF\xBD[31m\xEF\xBF\xBD");
    EXPECT(html("x\x7fy\xc2\x9bz\xe2\x80\xaew", 0), "x\\x7fy\\u009bz\\u202ew");
    EXPECT(html("bad \xff\xfe end", 0), "bad \xEF\xBF\xBD\xEF\xBF\xBD end");
    /* the cut: at most max bytes of the input, at a character boundary */
    EXPECT(html("abcdef", 3), "abc…");
    EXPECT(html("abc", 3), "abc");
    EXPECT(html("aé<", 2), "a…");
    EXPECT(html("<<<<", 2), "&lt;&lt;…");
    EXPECT(html("", 0), "");
    EXPECT(html(NULL, 5), "—");
}

static void test_json_str(void **state)
{
    (void)state;
    EXPECT(json("plain", 5), "\"plain\"");
    EXPECT(json("", 0), "\"\"");
    EXPECT(json("say \"hi\" \\ bye", 14), "\"say \\\"hi\\\" \\\\ bye\"");
    EXPECT(json("a\nb\rc\td", 7), "\"a\\nb\\rc\\td\"");
    EXPECT(json("\x01\x1f\x7f", 3), "\"\\u0001\\u001f\\u007f\"");
    EXPECT(json("a\0b", 3), "\"a\\u0000b\""); /* n bytes, NUL included */
    EXPECT(json("abcdef", 3), "\"abc\"");
    /* valid UTF-8 passes as is (C1 and bidi controls too: JSON is data) */
    EXPECT(json("é ✓ \xf0\x9f\x98\x80 \xc2\x9b", 14), "\"é ✓ \xf0\x9f\x98\x80 \xc2\x9b\"");
    /* invalid bytes, overlong forms, surrogates, a cut sequence: U+FFFD each byte */
    EXPECT(json("\xff", 1), "\"\xEF\xBF\xBD\"");
    EXPECT(json("\xc0\xaf", 2), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
    EXPECT(json("\xed\xa0\x80", 3), "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
    EXPECT(json("\xe2\x9c", 2), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
    /* under a cap the literal may stop part-way, with toobig set */
    struct buf b = BUF_INIT;
    buf_set_max(&b, 4);
    buf_add_json_str(&b, "abcdef", 6);
    assert_true(b.toobig);
    assert_true(b.len <= 4);
    buf_release(&b);
}

/* mp_error and mp_warn quote outside text: what reaches stderr is escaped */
static void test_error_messages(void **state)
{
    (void)state;
    char path[] = "/tmp/test-escape-err-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    mp_error("engine said: %s", "boom\x1b]0;pwned\x07\r\xc2\x9b");
    mp_warn("%s", "a\nb");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char got[256] = "";
    ssize_t n = pread(fd, got, sizeof(got) - 1, 0);
    assert_true(n > 0);
    got[n] = '\0';
    close(fd);
    unlink(path);
    assert_non_null(strstr(got, "error: engine said: boom\\x1b]0;pwned\\x07\\x0d\\u009b\n"));
    assert_non_null(strstr(got, "warning: a\\x0ab\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_md_links_images_html),
        cmocka_unit_test(test_md_tables_and_spans),
        cmocka_unit_test(test_md_line_start),
        cmocka_unit_test(test_md_code),
        cmocka_unit_test(test_controls_everywhere),
        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_term_write),
        cmocka_unit_test(test_hidden_at),
        cmocka_unit_test(test_html),
        cmocka_unit_test(test_json_str),
        cmocka_unit_test(test_error_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
