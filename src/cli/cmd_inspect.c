/* cmd_inspect.c - `moeprobe inspect`: what in a checkpoint folder decides
 * MoE backend support, without loading weights; with --engine DIR, which
 * GPU architectures the engine's kernels carry (inspect/kernels.h). */
#include "compat.h"

#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "err.h"
#include "escape.h"
#include "inspect/inspect.h"
#include "inspect/kernels.h"
#include "model/fingerprint.h"
#include "report/fingerprint.h"

static const char inspect_usage[] =
    "usage: moeprobe inspect [--json] MODEL_DIR\n"
    "       moeprobe inspect [--json] --engine DIR [--sm 121]\n"
    "\n"
    "Reads a Hugging Face checkpoint folder without loading weights: config.json\n"
    "(architecture, experts and experts per token under the family's key, MoE\n"
    "intermediate size, activation, swiglu_limit, hybrid Mamba/attention layout),\n"
    "the quantization config (ModelOpt hf_quant_config.json or quantization_config\n"
    "in config.json) and the safetensors headers (tensor count, dtypes, bytes),\n"
    "and states the facts that decide which MoE backends can run it.\n"
    "\n"
    "With --engine DIR (a Python environment's site-packages, a vLLM or FlashInfer\n"
    "install, an unpacked image layer): finds the shared objects, cubins and fat\n"
    "binaries under DIR, reads the CUDA code each carries (SASS architectures and\n"
    "PTX versions, from the ELF .nv_fatbin sections) and judges it against the\n"
    "GPU's compute capability by CUDA's rules (docs/inspect.md): native (SASS\n"
    "for it), jit (only PTX, compiled by the driver at start-up) or no. Lists\n"
    "which MoE backends' kernels each library holds.\n"
    "\n"
    "options:\n"
    "  --json      print one JSON object\n"
    "  --engine DIR  inspect an engine installation instead of a checkpoint\n"
    "  --sm N      the GPU to judge against (121, 12.1 or sm_121; default: this\n"
    "              machine's GPU, from NVML or nvidia-smi)\n"
    "  -h, --help  this help\n"
    "\n"
    "exit codes: 0 inspected; 2 usage error, or a malformed or unreadable input\n"
    "(the message names the file)\n";

/* `inspect --engine DIR [--sm N]`: the GPU is --sm's, else this host's. */
static int inspect_engine(const char *dir, const char *sm_arg, bool json)
{
    unsigned sm = 0;
    const char *src = NULL;
    if (sm_arg) {
        if (mp_cu_parse_sm(sm_arg, &sm) != 0) {
            mp_error("inspect: --sm '%s' is not a compute capability (121, 12.1 or sm_121)", sm_arg);
            return MP_EXIT_USAGE;
        }
        src = "--sm";
    } else {
        struct mp_fingerprint fp = {0};
        mp_fingerprint_detect(&fp);
        if (fp.compute_capability && mp_cu_parse_sm(fp.compute_capability, &sm) == 0)
            src = "fingerprint";
        else
            sm = 0;
        mp_fingerprint_release(&fp);
    }
    struct mp_engine_kernels k;
    struct mp_diag d = MP_DIAG_INIT;
    if (mp_engine_scan(dir, sm, src, NULL, &k, &d) != 0) {
        char msg[600];
        mp_diag_format(&d, msg, sizeof(msg));
        mp_error("inspect: %s", msg);
        mp_engine_kernels_release(&k);
        return MP_EXIT_USAGE;
    }
    struct buf b = BUF_INIT;
    if (json)
        mp_engine_to_json(&k, &b);
    else
        mp_engine_to_text(&k, &b);
    if (json)
        fwrite(b.data, 1, b.len, stdout);
    else /* file names from the directory: no raw control character on the terminal */
        mp_term_write(stdout, b.data, b.len);
    buf_release(&b);
    mp_engine_kernels_release(&k);
    return fflush(stdout) == 0 ? MP_EXIT_OK : MP_EXIT_INTERNAL;
}

int cmd_inspect(int argc, char **argv)
{
    bool json = false;
    const char *dir = NULL, *engine = NULL, *sm = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if ((!strcmp(argv[i], "--engine") || !strcmp(argv[i], "--sm")) && i + 1 < argc) {
            *(argv[i][2] == 'e' ? &engine : &sm) = argv[i + 1];
            i++;
        } else if (!strncmp(argv[i], "--engine=", 9)) {
            engine = argv[i] + 9;
        } else if (!strncmp(argv[i], "--sm=", 5)) {
            sm = argv[i] + 5;
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
    if (engine && dir) {
        mp_error("inspect: give MODEL_DIR or --engine DIR, not both");
        return MP_EXIT_USAGE;
    }
    if (sm && !engine) {
        mp_error("inspect: --sm goes with --engine DIR");
        return MP_EXIT_USAGE;
    }
    if (engine)
        return inspect_engine(engine, sm, json);
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
