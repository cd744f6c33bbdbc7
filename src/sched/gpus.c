/* gpus.c - GPU sets for local tasks, what nvidia-smi can tell about them,
 * and running the scheduler's helper commands (through proc/: this module
 * neither forks nor reads /proc itself). */
#include "compat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/proc.h"
#include "sched/internal.h"
#include "xalloc.h"

/* nvidia-smi answers in well under a second; a hung driver must not hang us */
#define NVSMI_TIMEOUT_S 30.0

int mp_sched_gpu_sets(const char *list, int per, struct mp_strv *sets, struct mp_diag *d)
{
    struct mp_strv ids = MP_STRV_INIT;
    const char *p = list;
    int rc = 0;
    while (1) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        while (l && (*p == ' ')) {
            p++;
            l--;
        }
        while (l && p[l - 1] == ' ')
            l--;
        if (l == 0) {
            rc = mp_diag_set(d, MP_EUSAGE, 0, "--gpus: empty GPU id in '%s'", list);
            goto out;
        }
        for (size_t k = 0; k < l; k++) {
            char c = p[k];
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  c == '-' || c == '_' || c == ':' || c == '.')) {
                rc = mp_diag_set(d, MP_EUSAGE, 0, "--gpus: '%.*s' is not a GPU id or UUID",
                                 (int)l, p);
                goto out;
            }
        }
        char *id = xstrndup(p, l);
        for (size_t k = 0; k < ids.n; k++) {
            if (!strcmp(ids.v[k], id)) {
                rc = mp_diag_set(d, MP_EUSAGE, 0, "--gpus: GPU '%s' is listed twice", id);
                free(id);
                goto out;
            }
        }
        mp_strv_push_owned(&ids, id);
        if (!e)
            break;
        p = e + 1;
    }
    if (per < 1 || ids.n < (size_t)per) {
        rc = mp_diag_set(d, MP_EUSAGE, 0,
                         "--gpus-per-engine %d needs at least %d GPUs, --gpus lists %zu", per, per,
                         ids.n);
        goto out;
    }
    for (size_t i = 0; i + (size_t)per <= ids.n; i += (size_t)per) {
        struct buf b = BUF_INIT;
        for (size_t k = i; k < i + (size_t)per; k++)
            buf_printf(&b, "%s%s", k > i ? "," : "", ids.v[k]);
        mp_strv_push_owned(sets, buf_detach(&b, NULL));
    }
out:
    mp_strv_release(&ids);
    return rc;
}

int mp_sched_capture(char *const *argv, double timeout_s, struct buf *out)
{
    struct mp_capture c = {.argv = argv, .timeout_s = timeout_s, .with_stderr = true};
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_proc_run_capture(&c, out, &d);
    if (rc < 0)
        buf_adds(out, d.msg[0] ? d.msg : mp_strerror(rc)); /* the caller shows it */
    if (!out->data)
        buf_adds(out, "");
    return rc < 0 && rc != MP_ETIMEOUT ? 127 : rc;
}

char *mp_sched_gpus_detect(void)
{
    struct buf o = BUF_INIT;
    char *argv[] = {"nvidia-smi", "--query-gpu=index", "--format=csv,noheader", NULL};
    struct mp_capture c = {.argv = argv, .timeout_s = NVSMI_TIMEOUT_S};
    int rc = mp_proc_run_capture(&c, &o, NULL);
    char *res = NULL;
    if (rc == 0 && o.data) {
        struct buf ids = BUF_INIT;
        char *save = NULL;
        for (char *l = strtok_r(o.data, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            char *e = NULL;
            long v = strtol(l, &e, 10);
            if (e == l || v < 0)
                continue;
            buf_printf(&ids, "%s%ld", ids.len ? "," : "", v);
        }
        if (ids.len)
            res = buf_detach(&ids, NULL);
        buf_release(&ids);
    }
    buf_release(&o);
    return res;
}

int mp_sched_gpus_busy(const char *set)
{
    if (!set || !*set)
        return -1;
    struct buf o = BUF_INIT;
    char *argv[] = {"nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader", "-i",
                    (char *)set, NULL};
    struct mp_capture c = {.argv = argv, .timeout_s = NVSMI_TIMEOUT_S};
    int rc = mp_proc_run_capture(&c, &o, NULL);
    int busy = -1;
    if (rc == 0 && o.data) {
        busy = 0;
        for (const char *p = o.data; *p; p++) {
            if (*p >= '0' && *p <= '9') {
                busy = 1;
                break;
            }
        }
    }
    buf_release(&o);
    return busy;
}
