/* escape.h - text from the engine, the checkpoint or any other outside
 * source, escaped for the format it lands in: Markdown (report.md, the
 * --compare and merged reports) and the terminal (stderr messages, stdout
 * summaries), and HTML/XML text (report.html and its SVG charts). Pure:
 * buffer in, buffer out; never fails (allocation failure aborts, as
 * everywhere in moeprobe). JSON strings are buf_add_json_str (buf.h).
 *
 * Shown escaped in every format: C0 controls (ESC, \r, BEL...) and DEL as
 * \xNN, C1 controls (U+0080..U+009F, e.g. the 8-bit CSI) and the bidi
 * controls that reorder what a reader sees (U+061C, U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069) as \uNNNN. */
#ifndef MP_ESCAPE_H
#define MP_ESCAPE_H

#include "compat.h"

#include <stdio.h>

#include "buf.h"

enum {
    MP_MD_START = 1, /* the text begins a line (a paragraph): leading white
                      * space is dropped and a leading '#', '-', '+', '=' or
                      * "1." escaped, so it cannot start a code block,
                      * heading, list or rule ('>' is an entity anyway) */
    MP_MD_TABLE = 2, /* inside a table cell: mp_md_code escapes '|' (text
                      * always escapes it) */
};

/* Append s as Markdown inline text: valid UTF-8 (invalid bytes become
 * U+FFFD, NUL bytes are dropped), newlines, tabs and \r as spaces,
 * controls as above; \ ` * [ ] | ~ and a '_' at a word boundary
 * backslash-escaped (no link, image, emphasis, code span or table cell can
 * start inside it); < > & as entities (no raw HTML). At most max bytes of s
 * are used, cut at a character boundary and followed by "…" when cut.
 * s == NULL appends "—". */
void mp_md_text(struct buf *b, const char *s, size_t max, unsigned flags);

/* Append s as one Markdown code span: a fence of backticks one longer than
 * the longest run inside (padded with spaces where the content begins or
 * ends with a backtick or a space), newlines as spaces, controls as above,
 * '|' as "\|" with MP_MD_TABLE. Same max and NULL rules as mp_md_text; an
 * empty s is "` `". */
void mp_md_code(struct buf *b, const char *s, size_t max, unsigned flags);

enum {
    MP_TERM_KEEP_NL = 1, /* pass '\n' and '\t' through (multi-line text) */
};

/* Append s[0..n) for a terminal: controls as above, invalid UTF-8 bytes as
 * \xNN; everything else unchanged. '\n' and '\t' are escaped too unless
 * MP_TERM_KEEP_NL. */
void mp_term_esc(struct buf *b, const char *s, size_t n, unsigned flags);

/* The terminal's secret mask: every text mp_term_dup and mp_term_write show
 * passes through fn(ud, s, n, &outlen) first (a new string, caller frees),
 * before it is escaped. moeprobe's main sets it once to the process's mask
 * (store/mask.c: mp_store_mask_process), so every message, note, summary and
 * progress text on stderr and stdout goes through the one mask. NULL fn:
 * shown as is (refengine, unit tests). */
typedef char *(*mp_term_mask_fn)(const void *ud, const char *s, size_t n, size_t *outlen);
void mp_term_set_mask(mp_term_mask_fn fn, const void *ud);
/* s[0..n) through the terminal's mask (a copy, NUL-terminated, caller
 * frees; *outlen may be NULL): for text that is cut before it is shown
 * (mask first, then cut, so no part of a secret is left). */
char *mp_term_mask(const char *s, size_t n, size_t *outlen);

/* mp_term_esc of the C string s masked (mp_term_set_mask), one line, as a
 * new string (caller frees); NULL gives NULL. */
char *mp_term_dup(const char *s);

/* Append s as HTML/XML text (element content or a quoted attribute value):
 * valid UTF-8 (invalid bytes become U+FFFD), & < > " ' as entities, C0
 * control characters except \n and \t shown as U+FFFD (\r dropped), DEL,
 * C1 and bidi controls as \x7f / \uNNNN text (a right-to-left override
 * reorders what the reader sees even as an entity). At most max bytes of s
 * are used (0 = no limit), cut at a character boundary and followed by "…"
 * when cut. s == NULL appends "—". */
void mp_html_esc(struct buf *b, const char *s, size_t max);

/* For other formats' escapers: when p[0..n) begins with DEL, a C1
 * control or a bidi control, append its visible form (\x7f, \uNNNN) and
 * return the bytes it took; else return 0 and append nothing. */
size_t mp_esc_hidden_at(struct buf *b, const char *p, size_t n);

/* Write s[0..n), masked (mp_term_set_mask), to f through mp_term_esc with
 * MP_TERM_KEEP_NL (the renderers' own line structure is kept). Returns 0, or -1 when the write
 * failed (errno set). */
int mp_term_write(FILE *f, const char *s, size_t n);

#endif
