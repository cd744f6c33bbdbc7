/* html_crash.c - a GPU fault's kernel and details in report.html
 * (report/crash.h); every string escaped. */
#include "report/crash.h"

#include <stdlib.h>

#include "report/html_int.h"

void mp_html_kernel_note(struct buf *b, const struct mp_cand_report *c)
{
    char *note = mp_rep_kernel_note(c);
    if (!note)
        return;
    buf_adds(b, " <span class=note>");
    mp_html_text(b, note);
    buf_adds(b, "</span>");
    free(note);
}

void mp_html_crash_details(const struct mp_report *rep, const struct mp_cand_report *c,
                           struct buf *b)
{
    struct mp_strv lines = MP_STRV_INIT;
    mp_rep_crash_details_text(&lines, rep, c);
    if (lines.n) {
        buf_adds(b, "<ul class=gpufault>");
        for (size_t i = 0; i < lines.n; i++) {
            buf_adds(b, "<li>");
            mp_html_text(b, lines.v[i]);
            buf_adds(b, "</li>");
        }
        buf_adds(b, "</ul>\n");
    }
    mp_strv_release(&lines);
}
