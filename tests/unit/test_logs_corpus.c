/* test_logs_corpus.c - every real vLLM log of the shared corpus gives the
 * fields written down in tests/data/corpus-expected/NNN.json.
 * Corpus: ${MOEPROBE_CORPUS:-$ROOT/../shared/corpus}/vllm-logs; skips (77)
 * with a message when it is absent. Only the keys present in an expected
 * file are compared; "crash" compares the keys it lists; "finding_codes"
 * must all be present among the findings. */
#include "compat.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "file.h"
#include "knowledge/knowledge.h"
#include "logs/logscan.h"
#include "xalloc.h"

/* The whole file (base/file.h), or NULL when it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
    struct buf b = BUF_INIT;
    if (mp_read_file(path, (size_t)1 << 30, &b, NULL) < 0) {
        buf_release(&b);
        return NULL;
    }
    *len = b.len;
    return buf_detach(&b, NULL);
}

static int check_one(const char *logpath, const char *name, const cJSON *exp)
{
    size_t len;
    char *text = slurp(logpath, &len);
    if (!text) {
        printf("FAIL %s: cannot read\n", logpath);
        return 1;
    }
    struct mp_logscan *s = mp_logscan_new(mp_knowledge_builtin());
    /* odd chunking on purpose */
    for (size_t i = 0; i < len; i += 777)
        mp_logscan_feed(s, text + i, MP_MIN((size_t)777, len - i));
    mp_logscan_finish(s);
    struct buf b = BUF_INIT;
    mp_logresult_to_json(mp_logscan_result(s), name, &b);
    cJSON *got = cJSON_Parse(b.data);
    int fails = 0;
    if (!got) {
        printf("FAIL %s: invalid JSON output\n", name);
        fails++;
        goto out;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, exp)
    {
        const char *key = it->string;
        if (!strcmp(key, "file"))
            continue;
        if (!strcmp(key, "finding_codes")) {
            const cJSON *fs = cJSON_GetObjectItem(got, "findings");
            const cJSON *code;
            cJSON_ArrayForEach(code, it)
            {
                bool found = false;
                const cJSON *f;
                cJSON_ArrayForEach(f, fs)
                {
                    const cJSON *c = cJSON_GetObjectItem(f, "code");
                    found = found || (cJSON_IsString(c) && !strcmp(c->valuestring, code->valuestring));
                }
                if (!found) {
                    printf("FAIL %s: finding '%s' missing\n", name, code->valuestring);
                    fails++;
                }
            }
            continue;
        }
        const cJSON *g = cJSON_GetObjectItem(got, key);
        if (!strcmp(key, "crash") && cJSON_IsObject(it)) {
            const cJSON *sub;
            cJSON_ArrayForEach(sub, it)
            {
                const cJSON *gs = cJSON_IsObject(g) ? cJSON_GetObjectItem(g, sub->string) : NULL;
                if (!gs || !cJSON_Compare(sub, gs, 1)) {
                    char *want = cJSON_PrintUnformatted(sub);
                    char *have = gs ? cJSON_PrintUnformatted(gs) : xstrdup("(absent)");
                    printf("FAIL %s: crash.%s: want %s, got %s\n", name, sub->string, want, have);
                    free(want);
                    free(have);
                    fails++;
                }
            }
            continue;
        }
        if (!g || !cJSON_Compare(it, g, 1)) {
            char *want = cJSON_PrintUnformatted(it);
            char *have = g ? cJSON_PrintUnformatted(g) : xstrdup("(absent)");
            printf("FAIL %s: %s: want %s, got %s\n", name, key, want, have);
            free(want);
            free(have);
            fails++;
        }
    }
out:
    cJSON_Delete(got);
    buf_release(&b);
    mp_logscan_free(s);
    free(text);
    return fails;
}

int main(void)
{
    const char *root = getenv("ROOT") ? getenv("ROOT") : ".";
    char *corpus = getenv("MOEPROBE_CORPUS") ? xstrdup(getenv("MOEPROBE_CORPUS"))
                                             : xasprintf("%s/../shared/corpus", root);
    char *logs = xasprintf("%s/vllm-logs", corpus);
    char *expdir = xasprintf("%s/tests/data/corpus-expected", root);
    DIR *d = opendir(logs);
    if (!d) {
        printf("corpus not found at %s (set MOEPROBE_CORPUS)\n", logs);
        free(corpus);
        free(logs);
        free(expdir);
        return 77;
    }
    int fails = 0, checked = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".log"))
            continue;
        char num[16] = "";
        size_t dash = strcspn(e->d_name, "-");
        if (dash == 0 || dash >= sizeof(num))
            continue;
        memcpy(num, e->d_name, dash);
        num[dash] = 0;
        char *ep = xasprintf("%s/%s.json", expdir, num);
        char *lp = xasprintf("%s/%s", logs, e->d_name);
        size_t len;
        char *et = slurp(ep, &len);
        if (!et) {
            /* an unseen log must still scan to valid JSON */
            cJSON *none = cJSON_CreateObject();
            fails += check_one(lp, e->d_name, none);
            cJSON_Delete(none);
            printf("note %s: no expected file %s\n", e->d_name, ep);
        } else {
            cJSON *exp = cJSON_Parse(et);
            if (!exp) {
                printf("FAIL %s: invalid JSON\n", ep);
                fails++;
            } else {
                fails += check_one(lp, e->d_name, exp);
                checked++;
            }
            cJSON_Delete(exp);
            free(et);
        }
        free(ep);
        free(lp);
    }
    closedir(d);
    printf("%d corpus logs checked against expectations, %d mismatches\n", checked, fails);
    free(corpus);
    free(logs);
    free(expdir);
    return fails || checked == 0 ? 1 : 0;
}
