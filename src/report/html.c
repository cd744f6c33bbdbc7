/* html.c - placeholder: the HTML report work replaces this file. */
#include "report/report.h"

void mp_report_html(const struct mp_report *rep, struct buf *out)
{
    MP_UNUSED(rep);
    buf_adds(out, "<!doctype html><meta charset=utf-8><title>moeprobe report</title>"
                  "<p>The HTML report is not implemented in this version; see report.md.</p>\n");
}
