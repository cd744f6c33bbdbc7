/* fuzz_opts.c - the shared command-line option parser (qualify, diagnose,
 * minimize, soak: mp_opts_parse) on arbitrary argument vectors.
 *
 * The input is split at NUL bytes into words (at most 64): argv[0] is the
 * subcommand, the rest its arguments. Invariants: a parse that succeeds has a
 * server command inside argv, an output directory, at least one candidate
 * (unless --from), candidate names that are unique, and a workload whose
 * phases fit MP_MAX_PHASES; whatever the outcome, mp_opts_release frees it
 * all (the leak checker sees the rest). Messages go to stderr (run libFuzzer
 * with -close_fd_mask=3). */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "cli/opts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_WORDS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    char *buf = malloc(size + 1);
    char *argv[MAX_WORDS + 2];
    int argc = 0;
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[argc++] = "qualify";
    for (size_t i = 0; i <= size && argc < MAX_WORDS + 1;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;

    struct mp_opts o;
    int rc = mp_opts_parse(&o, argc, argv, "usage: fuzz\n");
    if (rc == 0) {
        if (o.ncmd == 0 || !o.cmd || o.cmd < argv + 1 || o.cmd + o.ncmd != argv + argc)
            __builtin_trap();
        if (!o.out_dir)
            __builtin_trap();
        if (o.ncands == 0 && !o.from)
            __builtin_trap();
        for (size_t i = 0; i < o.ncands; i++)
            for (size_t j = i + 1; j < o.ncands; j++)
                if (!strcmp(o.cands[i].name, o.cands[j].name))
                    __builtin_trap();
        if (o.wl.nphases > MP_MAX_PHASES || o.wl.max_tokens < 1 || o.gpus_per_engine < 1)
            __builtin_trap();
        if (o.api_key && o.wl.api_key != o.api_key)
            __builtin_trap();
        struct mp_sched_cfg cfg;
        mp_opts_sched_cfg(&o, &cfg);
    } else if (rc != 1 && rc >= 0) {
        __builtin_trap();
    }
    mp_opts_release(&o);
    free(buf);
    return 0;
}
