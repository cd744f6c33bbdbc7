/* task.h - the reference engine answers the task problems moeprobe asks
 * (pure). It reads the last "Question: ..." of a few-shot prompt that ends
 * in "Answer:", works the problem out from its sentences ("X has 12
 * apples.", "She buys 3 bags of apples with 4 apples in each bag.", "She
 * gives 5 apples to Leo.", "... into 3 equal groups.", "A hall has 4 rows of
 * 5 chairs.", "3 chairs are taken away.", ...) and replies in the prompt's
 * style: " 3 * 4 = 12. 12 + 12 = 24. 24 - 5 = 19. The answer is 19."
 *
 * A backend's world key `accuracy` is the share of problems it answers
 * right: whether a problem is answered right is fixed by the question and
 * the backend (salt); a wrong answer keeps the form, with the last result
 * off by a few. A question it cannot read gets no fixed reply. */
#ifndef RE_TASK_H
#define RE_TASK_H

#include "compat.h"

#include <stddef.h>

/* The right answer of question q (q_len bytes); false when it cannot be
 * read. */
bool re_task_solve(const char *q, size_t q_len, long *answer);
/* The reply to a task prompt (prompt_len bytes) into out (cap bytes, NUL
 * terminated); false when the prompt is not one this engine answers. */
bool re_task_reply(const char *prompt, size_t prompt_len, double accuracy, uint64_t salt,
                   char *out, size_t cap);

#endif
