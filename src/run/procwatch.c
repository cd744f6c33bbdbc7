/* procwatch.c - the engine's processes into the store as moeprobe sees them
 * (att_internal.h, mp_att_watch_procs). A kill -9 of moeprobe leaves no
 * teardown behind: what was recorded here is what a later --resume ends. */
#include "run/att_internal.h"
#include "run/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "proc/proc.h"
#include "store/store.h"
#include "vec.h"
#include "xalloc.h"

#define WATCH_EVERY_NS 500000000LL /* a /proc scan: about 1 ms with a few hundred processes */

struct seen {
    struct mp_store_proc *v;
    size_t n, cap;
};

static void on_seen(void *ud, pid_t pid, unsigned long long start)
{
    struct seen *s = ud;
    mp_grow(s->v, s->cap, s->n + 1);
    struct mp_store_proc *e = &s->v[s->n++];
    memset(e, 0, sizeof(*e));
    e->pid = pid;
    e->start = start;
    snprintf(e->boot_id, sizeof(e->boot_id), "%s", mp_proc_boot_id());
}

bool mp_att_watch_procs(struct att *a)
{
    if (!a->proc || !a->o->store || a->io_err)
        return true;
    int64_t now = mp_now_ns();
    bool ready_look = a->ready && !a->procs_ready;
    if (!ready_look && a->procs_at && now - a->procs_at < WATCH_EVERY_NS)
        return true;
    a->procs_at = now;
    a->procs_ready = a->procs_ready || a->ready;
    struct seen s = {NULL, 0, 0};
    a->procs_known = mp_proc_watch(a->proc, a->procs_known, on_seen, &s);
    for (size_t i = 0; i < s.n && a->ntree_pids < MP_ARRAY_SIZE(a->tree_pids); i++)
        a->tree_pids[a->ntree_pids++] = s.v[i].pid;
    bool ok = !s.n || mp_store_add_engine_procs(a->o->store, a->o->store_attempt, s.v, s.n) == 0;
    free(s.v);
    return ok;
}

int mp_run_end_seen_procs(struct mp_store *st)
{
    struct mp_store_proc *v = NULL;
    size_t n = 0;
    if (mp_store_engine_procs(st, &v, &n) < 0)
        return MP_EDB;
    int killed = 0;
    for (size_t i = 0; i < n; i++)
        killed += mp_proc_end_seen(v[i].pid, v[i].start, v[i].boot_id);
    free(v);
    return killed;
}
