/* resume.c - what the store keeps so that an interrupted run is continued
 * honestly: the engine starts an interruption cut short (counted in the
 * cost and in the diagnosis budget, never results). See internal.h. */
#include "store/internal.h"

#include "model/report.h"

/* The first normal-mode attempt among c's loaded ones (its index), or -1. */
static int first_normal(const struct mp_cand_report *c)
{
    int first = -1;
    for (size_t j = 0; j < c->nattempts; j++) {
        const struct mp_attempt_result *a = &c->attempts[j];
        if (!a->launch_blocking && (first < 0 || a->index < first))
            first = a->index;
    }
    return first;
}

int mp_store_load_cut(struct mp_store *s, int64_t cand_id, bool interrupted,
                      struct mp_cand_report *c)
{
    sqlite3_stmt *st = NULL;
    /* the complement of what mp_store_load takes as results */
    if (mp_store_prep(s, &st,
                      interrupted ? "SELECT idx, launch_blocking, wall_s FROM attempts WHERE"
                                    " candidate_id = ? AND status != 'done' AND NOT"
                                    " (status = 'interrupted' AND outcome IS NOT NULL)"
                                  : "SELECT idx, launch_blocking, wall_s FROM attempts WHERE"
                                    " candidate_id = ? AND status != 'done'") < 0)
        return MP_EDB;
    sqlite3_bind_int64(st, 1, cand_id);
    int first = first_normal(c);
    c->cut_starts = c->cut_reruns = 0;
    c->cut_engine_s = 0;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        int idx = sqlite3_column_int(st, 0);
        bool blocking = sqlite3_column_int(st, 1) != 0;
        double wall = sqlite3_column_double(st, 2); /* NULL (killed before its summary): 0 */
        c->cut_starts++;
        c->cut_engine_s += wall > 0 ? wall : 0;
        if (!blocking && first >= 0 && idx > first)
            c->cut_reruns++;
    }
    return mp_store_read_end(s, st, sr, "read the interrupted attempts");
}
