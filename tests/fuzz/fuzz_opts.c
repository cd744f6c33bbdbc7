/* fuzz_opts.c - the shared command-line option parser (qualify, diagnose,
 * minimize, soak: mp_opts_parse) on arbitrary argument vectors.
 *
 * The input is split at NUL bytes into words (at most 64): a first word that
 * names a run command (qualify, diagnose, resolve, minimize, soak) picks it,
 * else it is qualify; the rest are its arguments. Invariants: a parse that
 * succeeds has a server command inside argv (or soak's --base-url), an
 * output directory, at least one candidate (not minimize), candidate names
 * that are unique, soak's duration, and a workload whose
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
    static const enum mp_cmd cmds[] = {MP_CMD_QUALIFY, MP_CMD_DIAGNOSE, MP_CMD_RESOLVE,
                                       MP_CMD_MINIMIZE, MP_CMD_SOAK};
    enum mp_cmd cmd = MP_CMD_QUALIFY;
    size_t i = 0;
    for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
        if (!strcmp(buf, mp_cmd_name(cmds[k]))) {
            cmd = cmds[k];
            i = strlen(buf) + 1;
        }
    }
    argv[argc++] = (char *)mp_cmd_name(cmd);
    while (i <= size && argc < MAX_WORDS + 1) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;

    struct mp_opts o;
    int rc = mp_opts_parse(&o, cmd, argc, argv, "usage: fuzz\n", NULL);
    if (rc == 0) {
        bool attached = o.base_url && o.cmd == o.attach_cmd && o.ncmd == 1;
        if (!attached &&
            (o.ncmd == 0 || !o.cmd || o.cmd < argv + 1 || o.cmd + o.ncmd != argv + argc))
            __builtin_trap();
        if (!o.out_dir)
            __builtin_trap();
        if (o.ncands == 0 && cmd != MP_CMD_MINIMIZE)
            __builtin_trap();
        if (cmd == MP_CMD_SOAK && !(o.duration_s > 0))
            __builtin_trap();
        for (size_t a = 0; a < o.ncands; a++)
            for (size_t j = a + 1; j < o.ncands; j++)
                if (!strcmp(o.cands[a].name, o.cands[j].name))
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
