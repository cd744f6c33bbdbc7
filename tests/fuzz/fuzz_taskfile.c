/* fuzz_taskfile.c - the --accuracy-file reader (quality/task.h: gsm8k JSON
 * lines) and the answer extraction (the last number of a reply) under
 * arbitrary input.
 *
 * Invariants: no crash or leak; a parsed file has at least one problem,
 * every question non-empty and every answer a normalised number (it
 * normalises to itself); an error names the file and keeps nothing.
 * Partial-input contract: the file cut anywhere parses the same problems up
 * to the cut line, or fails naming that line (a cut JSON line is never read
 * as a problem). */
#include "compat.h"

#include <stdlib.h>
#include <string.h>

#include "quality/task.h"

static void check_set(const struct mp_task_set *s)
{
    if (!s->n || !s->source || strcmp(s->source, "f"))
        abort();
    for (size_t i = 0; i < s->n; i++) {
        if (!s->t[i].question || !s->t[i].question[0] || !s->t[i].answer)
            abort();
        char *again = mp_task_norm_number(s->t[i].answer);
        if (!again || strcmp(again, s->t[i].answer))
            abort();
        free(again);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    struct mp_task_set whole, part;
    struct mp_diag d = MP_DIAG_INIT;
    int rw = mp_task_parse_jsonl(s, size, "f", 0, &whole, &d);
    if (rw == 0)
        check_set(&whole);
    else if (whole.t || whole.n || strncmp(d.msg, "f", 1))
        abort();
    size_t cut = size / 2;
    int rp = mp_task_parse_jsonl(s, cut, "f", 0, &part, &d);
    if (rp == 0) {
        check_set(&part);
        /* the prefix's problems are the whole file's first ones */
        if (rw == 0)
            for (size_t i = 0; i + 1 < part.n && i < whole.n; i++)
                if (strcmp(part.t[i].question, whole.t[i].question))
                    abort();
    }
    mp_task_set_release(&whole);
    mp_task_set_release(&part);
    char *reply = malloc(size + 1);
    memcpy(reply, s, size);
    reply[size] = '\0';
    char *n = mp_task_last_number(reply);
    if (n) {
        char *again = mp_task_norm_number(n);
        if (!again || strcmp(again, n) || !mp_task_same_number(n, again))
            abort();
        free(again);
    }
    free(n);
    free(reply);
    return 0;
}
