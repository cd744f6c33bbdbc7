/* test_known_issues_corpus.c - the known-issue matcher on the shared corpus
 * of real vLLM logs: every log names exactly the issues
 * tests/data/corpus-known-issues.json lists (an exact match of another
 * issue is a wrong name, a missing one a miss), and at least 10 logs name
 * one. Corpus: ${MOEPROBE_CORPUS:-$ROOT/../shared/corpus}/vllm-logs; skips
 * (77) with a message when it is absent. */
#include "compat.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "file.h"
#include "knowledge/issues.h"
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

static bool listed(const cJSON *want, const char *id)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, want)
        if (cJSON_IsString(it) && !strcmp(it->valuestring, id))
            return true;
    return false;
}

/* Scans one log; counts names right, wrong and missed. */
static void check_log(const char *path, const char *num, const cJSON *want, int *right, int *wrong,
                      int *missed)
{
    size_t len;
    char *text = slurp(path, &len);
    if (!text) {
        printf("FAIL %s: cannot read\n", path);
        (*wrong)++;
        return;
    }
    struct mp_logscan *s = mp_logscan_new(mp_knowledge_builtin());
    mp_logscan_feed(s, text, len);
    mp_logscan_finish(s);
    const struct mp_ki_hits *h = mp_logscan_result(s)->known_issues;
    int got = 0;
    for (size_t i = 0; h && i < h->n; i++) {
        if (h->v[i].kind != MP_KI_EXACT)
            continue;
        got++;
        if (listed(want, h->v[i].issue->id)) {
            (*right)++;
        } else {
            printf("FAIL %s: names %s, which is not its issue\n", num, h->v[i].issue->id);
            (*wrong)++;
        }
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, want)
    {
        bool found = false;
        for (size_t i = 0; h && i < h->n; i++)
            found |= h->v[i].kind == MP_KI_EXACT && !strcmp(h->v[i].issue->id, it->valuestring);
        if (!found) {
            printf("FAIL %s: does not name %s\n", num, it->valuestring);
            (*missed)++;
        }
    }
    printf("%s: %d known issue(s) named\n", num, got);
    mp_logscan_free(s);
    free(text);
}

int main(void)
{
    const char *root = getenv("ROOT") ? getenv("ROOT") : ".";
    char *corpus = getenv("MOEPROBE_CORPUS") ? xstrdup(getenv("MOEPROBE_CORPUS"))
                                             : xasprintf("%s/../shared/corpus", root);
    char *logs = xasprintf("%s/vllm-logs", corpus);
    char *ep = xasprintf("%s/tests/data/corpus-known-issues.json", root);
    DIR *d = opendir(logs);
    size_t elen;
    char *et = slurp(ep, &elen);
    cJSON *exp = et ? cJSON_Parse(et) : NULL;
    int rc = 0, right = 0, wrong = 0, missed = 0, logs_named = 0;
    if (!d) {
        printf("corpus not found at %s (set MOEPROBE_CORPUS)\n", logs);
        rc = 77;
        goto out;
    }
    if (!exp) {
        printf("FAIL cannot read %s\n", ep);
        rc = 1;
        goto out;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name), dash = strcspn(e->d_name, "-");
        if (n < 5 || strcmp(e->d_name + n - 4, ".log") || dash == 0 || dash >= 16)
            continue;
        char num[16];
        memcpy(num, e->d_name, dash);
        num[dash] = 0;
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(exp, num);
        char *lp = xasprintf("%s/%s", logs, e->d_name);
        int before = right;
        check_log(lp, num, want, &right, &wrong, &missed);
        logs_named += right > before;
        free(lp);
    }
    printf("known issues: %d named right, %d wrong, %d missed, %d logs named\n", right, wrong,
           missed, logs_named);
    rc = wrong || missed || logs_named < 10 ? 1 : 0;
out:
    if (d)
        closedir(d);
    cJSON_Delete(exp);
    free(et);
    free(ep);
    free(logs);
    free(corpus);
    return rc;
}
