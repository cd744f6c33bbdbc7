/* cmd_scan.c - `moeprobe scan`: post-mortem of existing engine logs. */
#include "compat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/opts.h"
#include "err.h"
#include "escape.h"
#include "knowledge/knowledge.h"
#include "logs/logscan.h"
#include "xalloc.h"

#define SCAN_CHUNK (1u << 20)
#define BINARY_PROBE 65536 /* the start judged by mp_logscan_looks_binary */

static const char scan_usage[] =
    "usage: moeprobe scan [--json] [--knowledge FILE] LOGFILE...\n"
    "\n"
    "Reads existing vLLM logs ('-' is standard input) and reports what happened:\n"
    "engine version, model, the resolved MoE / linear / attention backends and\n"
    "the MoE candidate list, --moe-backend, unknown environment variables, the\n"
    "first fatal failure (class, message, line, sites; root cause preferred over\n"
    "EngineDeadError) and findings that explain what matters.\n"
    "\n"
    "options:\n"
    "  --json            print a JSON array, one object per file\n"
    "  --knowledge FILE  use FILE's knobs and log signatures (docs/knowledge.md)\n"
    "  -h, --help        this help\n"
    "\n"
    "NUL bytes (an engine printed one, a zero-filled tail after a node crash)\n"
    "are skipped and reported as a finding; a file is refused as binary only\n"
    "when over 30% of its first 64 KiB, NUL bytes aside, is not text (control\n"
    "bytes or invalid UTF-8).\n"
    "\n"
    "exit codes: 0 every file scanned; 2 usage error or a file could not be\n"
    "scanned (unreadable, a directory, binary or empty; the others are still\n"
    "scanned); 3 internal error\n";

/* Scan one file into s. The first BINARY_PROBE bytes are read before any
 * is scanned: a file whose start looks binary (mp_logscan_looks_binary:
 * NUL bytes do not count) is refused. Returns 0, or a negative code with
 * why set. */
static int scan_fd(int fd, struct mp_logscan *s, char *buf, const char **why)
{
    unsigned long long total = 0;
    size_t have = 0; /* probe bytes in buf, not yet scanned */
    bool probing = true;
    for (;;) {
        ssize_t n = read(fd, buf + have, probing ? BINARY_PROBE - have : SCAN_CHUNK);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            *why = strerror(errno);
            return -errno;
        }
        if (n == 0)
            break;
        total += (unsigned long long)n;
        if (probing) {
            have += (size_t)n;
            if (have < BINARY_PROBE)
                continue;
            if (mp_logscan_looks_binary(buf, have)) {
                *why = "binary file (over 30% of its first 64 KiB is not text), not a log";
                return MP_EPARSE;
            }
            mp_logscan_feed(s, buf, have);
            probing = false;
            have = 0;
            continue;
        }
        mp_logscan_feed(s, buf, (size_t)n);
    }
    if (total == 0) {
        *why = "empty file";
        return MP_EPARSE;
    }
    if (probing) {
        if (mp_logscan_looks_binary(buf, have)) {
            *why = "binary file (over 30% of its first 64 KiB is not text), not a log";
            return MP_EPARSE;
        }
        mp_logscan_feed(s, buf, have);
    }
    mp_logscan_finish(s);
    return 0;
}

int cmd_scan(int argc, char **argv)
{
    bool json = false;
    const char *kfile = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(scan_usage, stdout);
            return MP_EXIT_OK;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--knowledge") || !strncmp(a, "--knowledge=", 12)) {
            if (a[11] == '=')
                kfile = a + 12;
            else if (i + 1 < argc)
                kfile = argv[++i];
            else {
                mp_error("scan: --knowledge needs a FILE");
                return MP_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--")) {
            i++;
            break;
        } else if (a[0] == '-' && a[1]) {
            mp_error("scan: unknown option '%s' (see 'moeprobe scan --help')", a);
            return MP_EXIT_USAGE;
        } else {
            break;
        }
    }
    if (i >= argc) {
        mp_error("scan: no LOGFILE given (see 'moeprobe scan --help')");
        return MP_EXIT_USAGE;
    }
    struct mp_knowledge *own = NULL;
    const struct mp_knowledge *k = NULL;
    if (mp_cli_knowledge("scan", kfile, &own, &k) < 0)
        return MP_EXIT_USAGE;
    int rc = MP_EXIT_OK;
    char *buf = xmalloc(SCAN_CHUNK);
    struct buf out = BUF_INIT;
    if (json)
        buf_adds(&out, "[");
    bool first = true;
    for (; i < argc; i++) {
        const char *path = argv[i];
        const char *why = NULL;
        int fd = !strcmp(path, "-") ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
        struct mp_logscan *s = NULL;
        if (fd < 0) {
            why = strerror(errno);
        } else {
            struct stat st;
            if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
                why = "is a directory";
            } else {
                s = mp_logscan_new(k);
                if (scan_fd(fd, s, buf, &why) != 0 && !why)
                    why = "read error";
            }
            if (fd != STDIN_FILENO)
                close(fd);
        }
        if (json)
            buf_adds(&out, first ? "\n" : ",\n");
        else if (!first)
            buf_addc(&out, '\n');
        first = false;
        if (why) {
            mp_error("scan: %s: %s", path, why);
            rc = MP_EXIT_USAGE;
            if (json) {
                buf_adds(&out, "{\"file\": ");
                buf_add_json_str(&out, path, strlen(path));
                buf_adds(&out, ", \"error\": ");
                buf_add_json_str(&out, why, strlen(why));
                buf_adds(&out, "}");
            }
        } else if (json) {
            mp_logresult_to_json(mp_logscan_result(s), path, &out);
        } else {
            mp_logresult_to_text(mp_logscan_result(s), path, &out);
        }
        mp_logscan_free(s);
        if (json)
            fwrite(out.data, 1, out.len, stdout);
        else /* the log's words: no raw control character reaches the terminal */
            mp_term_write(stdout, out.data, out.len);
        buf_reset(&out);
    }
    if (json)
        fputs("\n]\n", stdout);
    if (fflush(stdout) != 0 && rc == MP_EXIT_OK)
        rc = MP_EXIT_INTERNAL;
    buf_release(&out);
    free(buf);
    mp_knowledge_free(own);
    return rc;
}
