/* test_knowledge.c - loading knowledge: built-in data, errors with
 * positions, "extends": "builtin", versions. */
#include "compat.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "knowledge/knowledge.h"
#include "logs/logscan.h"

static void test_builtin(void **st)
{
    (void)st;
    const struct mp_knowledge *k = mp_knowledge_builtin();
    assert_ptr_equal(k, mp_knowledge_builtin());
    assert_true(k->nsigs > 40);
    assert_true(k->nknobs > 20);
    for (size_t i = 0; i < k->nsigs; i++)
        for (size_t j = i + 1; j < k->nsigs; j++)
            assert_string_not_equal(k->sigs[i].id, k->sigs[j].id);
    const struct mp_kn_knob *kb = mp_kn_find_knob(k, "--moe_backend"); /* '_' == '-' */
    assert_non_null(kb);
    struct mp_kn_ver v;
    assert_int_equal(mp_kn_ver_parse("0.16.9", &v), 0);
    assert_string_equal(mp_kn_knob_era(kb, &v)->status, "not-yet-available");
    assert_int_equal(mp_kn_ver_parse("v0.17.0rc2", &v), 0);
    assert_string_equal(mp_kn_knob_era(kb, &v)->status, "active");
    assert_non_null(mp_kn_find_backend(k, "FLASHINFER_B12X"));
    assert_false(mp_kn_find_backend(k, "FLASHINFER_B12X")->automatic);
}

static void test_versions(void **st)
{
    (void)st;
    struct mp_kn_ver a, b;
    assert_int_equal(mp_kn_ver_parse("0.19.2rc1.dev8+g4b7f5ea1a", &a), 0);
    /* a nightly built without tags (corpus 026): not vLLM 0.1, unknown */
    struct mp_kn_ver nightly;
    assert_int_equal(mp_kn_ver_parse("0.1.dev19908+g728d3ad09", &nightly), MP_EPARSE);
    assert_int_equal(mp_kn_ver_parse("0.0.dev1", &nightly), MP_EPARSE);
    assert_int_equal(mp_kn_ver_parse("0.1.2", &nightly), 0);
    assert_int_equal(a.v[0], 0);
    assert_int_equal(a.v[1], 19);
    assert_int_equal(a.v[2], 2);
    assert_int_equal(mp_kn_ver_parse("0.9", &b), 0);
    assert_true(mp_kn_ver_cmp(&b, &a) < 0);
    assert_int_equal(mp_kn_ver_parse("0.19.2", &b), 0);
    assert_int_equal(mp_kn_ver_cmp(&a, &b), 0);
    assert_int_equal(mp_kn_ver_parse("latest", &b), MP_EPARSE);
    assert_int_equal(mp_kn_ver_parse("", &b), MP_EPARSE);
}

static int load(const char *text, struct mp_diag *d)
{
    struct mp_knowledge *k = NULL;
    int rc = mp_knowledge_load_mem(text, strlen(text), &k, d);
    if (rc == 0)
        assert_non_null(k);
    else
        assert_null(k);
    mp_knowledge_free(k);
    return rc;
}

static void test_errors(void **st)
{
    (void)st;
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(load("{\"format\": 1,\n \"knobs\": [\n", &d), MP_EPARSE);
    assert_true(d.line >= 2);
    assert_int_equal(load("{\"format\": 2, \"newest_version\": \"0.1.0\"}", &d), MP_EPARSE);
    assert_non_null(strstr(d.msg, "format"));
    assert_int_equal(load("{\"format\": 1, \"newest_version\": \"0.1.0\", \"bogus\": 1}", &d), MP_EPARSE);
    assert_non_null(strstr(d.msg, "bogus"));
    assert_int_equal(load("{\"format\": 1, \"newest_version\": \"0.1.0\", \"signatures\": "
                          "[{\"id\": \"x\", \"literal\": \"ab\", \"regex\": \"(\", \"event\": \"info\"}]}",
                          &d),
                     MP_EPARSE);
    assert_non_null(strstr(d.msg, "regex"));
    assert_int_equal(load("{\"format\": 1, \"newest_version\": \"0.1.0\", \"signatures\": "
                          "[{\"id\": \"x\", \"literal\": \"ab\", \"event\": \"fatal\"}]}",
                          &d),
                     MP_EPARSE);
    assert_non_null(strstr(d.msg, "class"));
    assert_int_equal(load("{\"format\": 1, \"newest_version\": \"0.1.0\", \"signatures\": "
                          "[{\"id\": \"x\", \"literal\": \"ab\", \"regex\": \"a(?<g>b)\", \"event\": \"info\","
                          " \"set\": {\"moe_backend\": \"nope\"}}]}",
                          &d),
                     MP_EPARSE);
    assert_non_null(strstr(d.msg, "nope"));
    assert_int_equal(load("{\"format\": 1, \"newest_version\": \"0.1.0\", \"knobs\": "
                          "[{\"name\": \"X\", \"kind\": \"env\", \"eras\": [{\"affects\": \"gpu\", \"status\": \"active\", \"note\": \"n\"}]}]}",
                          &d),
                     MP_EPARSE);
    assert_non_null(strstr(d.msg, "affects"));
    assert_int_equal(load("{\"format\": 1, \"newest_version\": \"0.1.0\"}", &d), 0);
    assert_int_equal(load("[]", &d), MP_EPARSE);
}

static void test_files(void **st)
{
    (void)st;
    struct mp_diag d = MP_DIAG_INIT;
    struct mp_knowledge *k = NULL;
    assert_int_equal(mp_knowledge_load("/nonexistent/k.json", &k, &d), -ENOENT);
    assert_null(k);
    assert_int_equal(mp_knowledge_load("/", &k, &d), -EISDIR);
    char path[] = "/tmp/mp-kn-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "{\"format\": 1, \"extends\": \"builtin\", \"newest_version\": \"0.40.0\",\n"
                       " \"signatures\": [{\"id\": \"new-moe-line\", \"literal\": \"MoE kernel chosen:\","
                       " \"regex\": \"MoE kernel chosen: (?<b>[A-Z_]+)\", \"event\": \"resolved\","
                       " \"set\": {\"moe_backend\": \"b\"}, \"priority\": 3}],\n"
                       " \"knobs\": [{\"name\": \"VLLM_SCALED_MM_BACKEND\", \"kind\": \"env\", \"eras\": "
                       "[{\"from\": \"0.40.0\", \"until\": null, \"affects\": \"moe\", \"status\": \"active\", \"note\": \"now real\"}]}]}\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(mp_knowledge_load(path, &k, &d), 0);
    unlink(path);
    assert_string_equal(k->newest_version, "0.40.0");
    assert_int_equal(k->nsigs, mp_knowledge_builtin()->nsigs + 1);
    assert_int_equal(k->nknobs, mp_knowledge_builtin()->nknobs); /* replaced, not added */
    /* the taught line is understood by the scanner */
    struct mp_logscan *s = mp_logscan_new(k);
    const char *l = "INFO 09-01 [x.py:1] MoE kernel chosen: NEW_KERNEL";
    assert_int_equal(mp_logscan_line(s, l, strlen(l)), MP_LOGEV_RESOLVED);
    assert_string_equal(mp_logscan_result(s)->moe_backend, "NEW_KERNEL");
    mp_logscan_free(s);
    mp_knowledge_free(k);
}

/* Every fact of the built-in knowledge names its source; the facts the
 * audit could not verify are marked uncertain. */
static void test_sources(void **st)
{
    (void)st;
    const struct mp_knowledge *k = mp_knowledge_builtin();
    size_t uncertain = 0;
    for (size_t i = 0; i < k->nknobs; i++)
        for (size_t j = 0; j < k->knobs[i].neras; j++) {
            const struct mp_kn_era *e = &k->knobs[i].eras[j];
            if (!e->source || !e->source[0])
                fail_msg("%s era %zu has no source", k->knobs[i].name, j);
            uncertain += e->uncertain;
        }
    assert_true(uncertain > 0);
    struct mp_kn_ver v;
    assert_int_equal(mp_kn_ver_parse("0.19.1", &v), 0);
    const struct mp_kn_era *e = mp_kn_knob_era(mp_kn_find_knob(k, "--moe-backend"), &v);
    assert_non_null(e);
    bool humming = false;
    for (size_t i = 0; i < e->nvalues; i++)
        humming = humming || !strcmp(e->values[i], "humming");
    assert_true(e->nvalues > 0);
    assert_false(humming);
}

/* NGC tags are NVIDIA releases: the vLLM they ship comes from the release
 * notes in the knowledge, never from the tag; upstream tags name it. */
static void test_images(void **st)
{
    (void)st;
    const struct mp_knowledge *k = mp_knowledge_builtin();
    static const struct {
        const char *image;
        enum mp_kn_image_kind kind;
        const char *version;
    } rows[] = {
        {"nvcr.io/nvidia/vllm:26.03-py3", MP_KN_IMAGE_NGC, "0.17.1"},
        {"nvcr.io/nvidia/vllm:26.01-py3", MP_KN_IMAGE_NGC, "0.11.1"},
        {"nvcr.io/nvidia/vllm:25.10-py3", MP_KN_IMAGE_NGC, "0.10.2"},
        {"nvcr.io/nvidia/vllm:26.10", MP_KN_IMAGE_NGC, "0.31.0"},
        {"nvcr.io/nvidia/vllm:26.07-py3", MP_KN_IMAGE_NGC_UNKNOWN, ""},
        {"vllm/vllm-openai:v0.17.0-cu130", MP_KN_IMAGE_UPSTREAM, "0.17.0"},
        {"localhost:5000/vllm/vllm-openai:v0.20.1@sha256:abcd", MP_KN_IMAGE_UPSTREAM, "0.20.1"},
        {"docker.io/vllm/vllm-openai:0.19.0", MP_KN_IMAGE_UPSTREAM, "0.19.0"},
        {"vllm/vllm-openai:latest", MP_KN_IMAGE_NONE, ""},
        {"vllm/vllm-openai", MP_KN_IMAGE_NONE, ""},
        {"ubuntu:22.04", MP_KN_IMAGE_NONE, ""},
        {"nvcr.io/nvidia/pytorch:26.03-py3", MP_KN_IMAGE_NONE, ""},
        /* NVIDIA's image mirrored, and tags of it that are no release */
        {"registry.local/nvidia/vllm:26.03-py3", MP_KN_IMAGE_NGC, "0.17.1"},
        {"nvcr.io/nvidia/vllm:0.17.1", MP_KN_IMAGE_NGC_UNKNOWN, ""},
        /* another project's image: its tag is its own version, never vLLM's */
        {"lmcache/vllm-openai:v0.3.9", MP_KN_IMAGE_OTHER, ""},
        {"myorg/vllm:26.03-py3", MP_KN_IMAGE_OTHER, ""},
        {"ghcr.io/me/vllm-openai:v0.17.0", MP_KN_IMAGE_OTHER, ""},
        {"vllm/vllm-openai-rocm:v0.20.0", MP_KN_IMAGE_UPSTREAM, "0.20.0"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct mp_kn_image_version iv;
        enum mp_kn_image_kind kind = mp_kn_image_version(k, rows[i].image, &iv);
        if (kind != rows[i].kind || strcmp(iv.version, rows[i].version))
            fail_msg("%s: kind %d version '%s'", rows[i].image, kind, iv.version);
        if (kind == MP_KN_IMAGE_NGC)
            assert_non_null(strstr(iv.source, "docs.nvidia.com"));
    }
    const char *src = NULL;
    assert_string_equal(mp_kn_ngc_vllm(k, "26.05-py3", &src), "0.20.1");
    assert_non_null(strstr(src, "rel-26-05"));
    assert_null(mp_kn_ngc_vllm(k, "26.02", NULL));
    assert_null(mp_kn_ngc_vllm(k, "0.17", NULL));
    /* --engine-version 25.10 is NGC's release 25.10, never vLLM 25.10 */
    char why[512];
    assert_true(mp_kn_version_is_ngc_tag(k, "25.10", why, sizeof(why)));
    assert_non_null(strstr(why, "ships vLLM 0.10.2"));
    assert_true(mp_kn_version_is_ngc_tag(k, "26.07-py3", why, sizeof(why)));
    assert_non_null(strstr(why, "does not know"));
    assert_false(mp_kn_version_is_ngc_tag(k, "0.10.2", why, sizeof(why)));
    assert_false(mp_kn_version_is_ngc_tag(k, "v0.17.1", why, sizeof(why)));
    assert_false(mp_kn_version_is_ngc_tag(k, "1.10", why, sizeof(why)));
    struct mp_kn_ver v;
    assert_int_equal(mp_kn_ver_parse(k->newest_version, &v), 0);
    assert_int_equal(v.v[1], 31);
    assert_true(k->unknown_env.has_from);
    assert_int_equal(k->unknown_env.from.v[1], 17);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_sources),
        cmocka_unit_test(test_images),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
