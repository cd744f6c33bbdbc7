/* fuzz_shape.c - command-shape recognition, launch building and the
 * non-default-args reader under arbitrary words.
 *
 * The input's lines are the command's words. Invariants: every index the
 * shape reports lies inside the command and in order (client < sub <= run <
 * image <= argc); a container run gets every env knob right after its run
 * word, a host command in its environment (through sudo: `env` words after
 * sudo's options); the whole input as one log line
 * never makes the non-default-args reader read past it. */
#include "compat.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/candidate.h"
#include "engine/delivery.h"
#include "engine/launch.h"
#include "engine/shape.h"
#include "strv.h"
#include "xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *s = xmalloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    for (size_t i = 0; i < size; i++)
        if (s[i] == '\0')
            s[i] = ' ';
    struct mp_strv w = MP_STRV_INIT;
    for (char *p = s, *e; p && *p; p = e ? e + 1 : NULL) {
        e = strchr(p, '\n');
        mp_strv_push_owned(&w, xstrndup(p, e ? (size_t)(e - p) : strlen(p)));
    }
    mp_strv_array(&w);
    struct mp_shape sh;
    mp_shape_parse(w.v, w.n, &sh);
    if (sh.kind != MP_SHAPE_HOST) {
        if (!sh.runtime || sh.client >= sh.sub || sh.sub > sh.run || sh.run >= w.n)
            abort();
        if (sh.kind == MP_SHAPE_DOCKER && (sh.image <= sh.run || sh.image > w.n))
            abort();
        bool inside = !sh.name;
        for (size_t i = 0; i < w.n && !inside; i++)
            inside = sh.name >= w.v[i] && sh.name <= w.v[i] + strlen(w.v[i]);
        if (!inside)
            abort();
    } else if (sh.runtime) {
        abort();
    }
    if (w.n) {
        struct mp_candidate c;
        memset(&c, 0, sizeof(c));
        c.name = xstrdup("f");
        mp_strv_push(&c.env, "VLLM_FUZZ=1");
        struct mp_launch l;
        mp_launch_build(&l, w.v, w.n, &c, 9, NULL, "moeprobe-1-f-1");
        if (sh.kind == MP_SHAPE_HOST && sh.elevated) {
            if (sh.elevated >= w.n || l.env.n != 0 || strcmp(l.argv.v[sh.elevated], "env") ||
                strcmp(l.argv.v[sh.elevated + 1], "VLLM_FUZZ=1"))
                abort();
        } else if (sh.kind == MP_SHAPE_HOST) {
            if (l.env.n != 1 || strcmp(l.env.v[0], "VLLM_FUZZ=1"))
                abort();
        } else {
            if (l.env.n != 0 || l.argv.n < sh.run + 3 ||
                strcmp(l.argv.v[sh.run + 1], sh.kind == MP_SHAPE_DOCKER ? "-e" : "--env") ||
                strcmp(l.argv.v[sh.run + 2], "VLLM_FUZZ=1"))
                abort();
        }
        mp_launch_release(&l);
        mp_candidate_release(&c);
    }
    char v[64];
    mp_nondefault_find(s, "moe_backend", v, sizeof(v));
    struct mp_knob k;
    memset(&k, 0, sizeof(k));
    mp_strv_push(&k.words, "--moe-backend");
    mp_strv_push(&k.words, "marlin");
    char *ev = NULL;
    mp_delivery_judge_flag(&k, s, 1, &ev);
    free(ev);
    mp_strv_release(&k.words);
    mp_strv_release(&w);
    free(s);
    return 0;
}
