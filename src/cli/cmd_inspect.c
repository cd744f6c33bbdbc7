/* cmd_inspect.c - `moeprobe inspect`: what in a checkpoint folder decides
 * MoE backend support, without loading weights. */
#include "compat.h"

#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "err.h"
#include "escape.h"
#include "inspect/inspect.h"

static const char inspect_usage[] =
    "usage: moeprobe inspect [--json] MODEL_DIR\n"
    "\n"
    "Reads a Hugging Face checkpoint folder without loading weights: config.json\n"
    "(architecture, experts and experts per token under the family's key, MoE\n"
    "intermediate size, activation, swiglu_limit, hybrid Mamba/attention layout),\n"
    "the quantization config (ModelOpt hf_quant_config.json or quantization_config\n"
    "in config.json) and the safetensors headers (tensor count, dtypes, bytes),\n"
    "and states the facts that decide which MoE backends can run it.\n"
    "\n"
    "options:\n"
    "  --json      print one JSON object\n"
    "  -h, --help  this help\n"
    "\n"
    "exit codes: 0 inspected; 2 usage error, or a malformed or unreadable input\n"
    "(the message names the file)\n";

int cmd_inspect(int argc, char **argv)
{
    bool json = false;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(inspect_usage, stdout);
            return MP_EXIT_OK;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            mp_error("inspect: unknown option '%s'", argv[i]);
            fputs(inspect_usage, stderr);
            return MP_EXIT_USAGE;
        } else if (!dir) {
            dir = argv[i];
        } else {
            mp_error("inspect: one MODEL_DIR only");
            return MP_EXIT_USAGE;
        }
    }
    if (!dir) {
        fputs(inspect_usage, stderr);
        return MP_EXIT_USAGE;
    }
    struct mp_inspect in;
    struct mp_diag d = MP_DIAG_INIT;
    int rc = mp_inspect_dir(dir, &in, &d);
    if (rc) {
        char msg[600];
        mp_diag_format(&d, msg, sizeof(msg));
        mp_error("%s", msg);
        mp_inspect_release(&in);
        return MP_EXIT_USAGE;
    }
    struct buf b = BUF_INIT;
    if (json)
        mp_inspect_to_json(&in, &b);
    else
        mp_inspect_to_text(&in, &b);
    if (json)
        fwrite(b.data, 1, b.len, stdout);
    else /* the checkpoint's words: no raw control character reaches the terminal */
        mp_term_write(stdout, b.data, b.len);
    buf_release(&b);
    mp_inspect_release(&in);
    return fflush(stdout) == 0 ? MP_EXIT_OK : MP_EXIT_INTERNAL;
}
