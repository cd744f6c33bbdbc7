/* md_prim.c - the Markdown report's primitives (report/md_int.h): a cell
 * of outside text, a list of them, a number, a figure, a path inside the run
 * directory. Every report.md section uses them; they use nothing of it. */
#include "compat.h"

#include <string.h>

#include "escape.h"

#include "report/md_int.h"

/* Outside text in Markdown (escape.h): table cells, list items, headings;
 * every field from the engine, the checkpoint or the store goes through it. */
void mp_rmd_cell(struct buf *b, const char *s, size_t max)
{
    mp_md_text(b, s, max, 0);
}

/* mp_rmd_cell of each word of v, separated by ", ". */
void mp_rmd_list(struct buf *b, const struct mp_strv *v, size_t max)
{
    for (size_t k = 0; k < v->n; k++) {
        buf_adds(b, k ? ", " : "");
        mp_rmd_cell(b, v->v[k], max);
    }
}

/* A tok/s figure with one decimal, "—" when unknown (< 0). */
void mp_rmd_num(struct buf *b, double v)
{
    if (v < 0)
        buf_adds(b, "—");
    else
        buf_printf(b, "%.1f", v);
}

/* dir relative to the run directory when it lies inside it. */
const char *mp_rmd_rel_dir(const struct mp_report *rep, const char *dir)
{
    size_t rl = strlen(rep->run_dir);
    if (!strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
        return dir + rl + 1;
    return dir;
}

/* A latency or rate in a table: 3 significant figures or so. */
void mp_rmd_fig(struct buf *b, double v)
{
    buf_printf(b, v < 10 ? "%.2f" : v < 100 ? "%.1f" : "%.0f", v);
}
