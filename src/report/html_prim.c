/* html_prim.c - the HTML report's primitives (html_int.h): escaped text,
 * lists, verdict badges, in-page anchors, paths inside the run directory.
 * Every section file (html.c, html_cand.c, html_charts.c, html_evidence.c)
 * uses them; they use nothing of those. */
#include "report/html_int.h"

#include <string.h>

#include "escape.h"

void mp_html_text(struct buf *b, const char *s)
{
    mp_html_esc(b, s, 4000);
}

void mp_html_list(struct buf *b, const struct mp_strv *v)
{
    for (size_t k = 0; k < v->n; k++) {
        buf_adds(b, k ? ", " : "");
        mp_html_text(b, v->v[k]);
    }
}

void mp_html_badge(struct buf *b, const char *v)
{
    buf_adds(b, "<span class=\"v v-");
    mp_html_esc(b, v ? v : "none", 40);
    buf_adds(b, "\">");
    mp_html_esc(b, v ? v : "not run", 40);
    buf_adds(b, "</span>");
}

const char *mp_html_rel(const struct mp_report *rep, const char *dir)
{
    size_t rl = strlen(rep->run_dir);
    if (dir && !strncmp(dir, rep->run_dir, rl) && dir[rl] == '/')
        return dir + rl + 1;
    return dir;
}

/* An id usable in href="#..." (candidate names are [A-Za-z0-9._-]+). */
void mp_html_anchor(struct buf *b, const char *name)
{
    buf_adds(b, "c-");
    for (const char *p = name; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
        buf_addc(b, ok ? c : '_');
    }
}
