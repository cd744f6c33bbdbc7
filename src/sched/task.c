/* task.c - task records (task.txt) and the task index. */
#include "compat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "sched/internal.h"
#include "buf.h"
#include "file.h"
#include "xalloc.h"

static void put(struct buf *b, const char *k, const char *v)
{
    if (!v)
        return;
    buf_printf(b, "%s=", k);
    for (const char *p = v; *p; p++)
        buf_addc(b, *p == '\n' || *p == '\r' ? ' ' : *p);
    buf_addc(b, '\n');
}

int mp_sched_rec_write(const char *task_dir, const struct mp_sched_rec *r)
{
    struct buf b = BUF_INIT;
    put(&b, "candidate", r->candidate);
    put(&b, "gpus", r->gpus ? r->gpus : "");
    put(&b, "host", r->host);
    put(&b, "job", r->job);
    buf_printf(&b, "start_ns=%" PRId64 "\nend_ns=%" PRId64 "\nexit=%d\n", r->start_ns, r->end_ns,
               r->exit_code);
    put(&b, "note", r->note);
    int rc = mp_write_file_atomic(task_dir, "task.txt", b.data, b.len);
    buf_release(&b);
    return rc;
}

/* task.txt is a few lines; anything larger is not ours */
#define TASK_FILE_MAX (1u << 20)

static char *read_all(const char *path, int *err)
{
    struct buf b = BUF_INIT;
    *err = mp_read_file(path, TASK_FILE_MAX, &b, NULL);
    if (*err) {
        buf_release(&b);
        return NULL;
    }
    return buf_detach(&b, NULL);
}

int mp_sched_rec_read(const char *task_dir, struct mp_sched_rec *r)
{
    memset(r, 0, sizeof(*r));
    r->exit_code = -1;
    char *path = xasprintf("%s/task.txt", task_dir);
    int err;
    char *text = read_all(path, &err);
    free(path);
    if (!text)
        return err;
    int rc = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq) {
            rc = MP_EPARSE;
            continue;
        }
        *eq = '\0';
        const char *v = eq + 1;
        char **field = NULL;
        if (!strcmp(line, "candidate"))
            field = &r->candidate;
        else if (!strcmp(line, "gpus"))
            field = &r->gpus;
        else if (!strcmp(line, "host"))
            field = &r->host;
        else if (!strcmp(line, "job"))
            field = &r->job;
        else if (!strcmp(line, "note"))
            field = &r->note;
        else if (!strcmp(line, "start_ns"))
            r->start_ns = strtoll(v, NULL, 10);
        else if (!strcmp(line, "end_ns"))
            r->end_ns = strtoll(v, NULL, 10);
        else if (!strcmp(line, "exit"))
            r->exit_code = *v ? (int)strtol(v, NULL, 10) : -1;
        if (field) {
            free(*field);
            *field = xstrdup(v);
        }
    }
    free(text);
    return rc;
}

void mp_sched_rec_release(struct mp_sched_rec *r)
{
    free(r->candidate);
    free(r->gpus);
    free(r->host);
    free(r->job);
    free(r->note);
    memset(r, 0, sizeof(*r));
}

int mp_sched_index_write(const char *run_dir, const struct mp_sched_plan *pl)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < pl->n; i++)
        buf_printf(&b, "%s\n", pl->t[i].name);
    char *dir = xasprintf("%s/tasks", run_dir);
    int rc = mp_write_file_atomic(dir, "index.txt", b.data ? b.data : "", b.len);
    free(dir);
    buf_release(&b);
    return rc;
}

int mp_sched_index_read(const char *run_dir, struct mp_strv *names)
{
    char *path = xasprintf("%s/tasks/index.txt", run_dir);
    int err;
    char *text = read_all(path, &err);
    free(path);
    if (!text)
        return err;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (*line)
            mp_strv_push(names, line);
    }
    free(text);
    return 0;
}
