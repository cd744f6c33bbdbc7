/* task.h - the task gate's problems and answers (docs/quality.md "The task
 * gate"). Pure: no I/O.
 *
 * Built-in problems are generated deterministically: short multi-step
 * arithmetic and counting word problems ("Mia has 12 apples. She buys 3 bags
 * of apples with 4 apples in each bag. She gives 5 apples to Leo. How many
 * apples does Mia have now?") whose answer is computed as they are built.
 * A user's own problems come as JSON lines in gsm8k's format: {"question":
 * "...", "answer": "... #### 72"}. Every problem is asked with the same
 * few-shot prompt in the gsm8k style ("Question: ...\nAnswer: ... The answer
 * is N.\n\n"), greedy, and the answer is the last number of the reply (cut
 * at the next "Question:"). */
#ifndef MP_QUALITY_TASK_H
#define MP_QUALITY_TASK_H

#include "compat.h"

#include <stddef.h>

#include "err.h"

#define MP_TASK_DEFAULT_N 64
#define MP_TASK_MAX_N 100000
#define MP_TASK_BUILTIN_MAX_TOKENS 96   /* replies in the few-shot style are ~30 tokens */
#define MP_TASK_FILE_MAX_TOKENS 256     /* gsm8k reasoning is longer */

struct mp_task {
    char *question;
    char *answer;    /* the expected number, normalised ("19", "-3.5") */
};

struct mp_task_set {
    struct mp_task *t;
    size_t n;
    char *source;    /* "built-in" or the file's name */
    int max_tokens;
};

/* Problems 0..n-1 of the built-in generator (the same n always gives the
 * same problems; problem i does not depend on n). */
void mp_task_builtin(size_t n, struct mp_task_set *out);
/* Parse JSON lines in gsm8k's format (text of len bytes; name labels
 * messages). Blank lines are skipped; every other line must be an object
 * with a string "question" and a string "answer" whose last "####" is
 * followed by a number (not one that goes on as "3/4", "10:30", "1 234"). At most max problems are kept (0 = all, up to
 * MP_TASK_MAX_N). 0, or MP_EPARSE with "NAME:LINE: what" in d (nothing
 * kept). Partial input: a cut last line is an error naming that line. */
int mp_task_parse_jsonl(const char *text, size_t len, const char *name, size_t max,
                        struct mp_task_set *out, struct mp_diag *d);
void mp_task_set_release(struct mp_task_set *s);

/* The prompt for question q: the few-shot examples, then "Question: q\nAnswer:"
 * (caller frees). */
char *mp_task_prompt(const char *q);
/* Stop strings of a task request (NULL-terminated, static). */
const char *const *mp_task_stop(void);

/* The last number of a reply, cut at its first "Question:" (a model that
 * goes on to invent the next problem), normalised: thousands separators
 * (a ',' before exactly three digits: "3,4,5" ends in 5) and a trailing
 * '.' dropped, "+" and leading zeros removed, "-0" as "0"
 * (caller frees); NULL when the reply has none. */
char *mp_task_last_number(const char *reply);
/* Normalise a number written in an answer key ("1,234" -> "1234",
 * "72.0" -> "72", "$5" -> "5"): caller frees; NULL when it is not one. */
char *mp_task_norm_number(const char *s);
/* Do two normalised numbers name the same value (1e-9 relative)? */
bool mp_task_same_number(const char *a, const char *b);

#endif
