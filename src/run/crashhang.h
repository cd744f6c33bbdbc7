/* crashhang.h - a hang's evidence and its GPU core dump (#24), gathered in
 * steps on the attempt's one loop: the HANGING state of run/attempt.c
 * drives them, and nothing here waits or polls. The looks go through the
 * attempt's load generator (its sockets are in the loop), the dump pipes
 * and cuda-gdb's output are fd watches of the loop, and each step has a
 * deadline, which the attempt's state timer keeps:
 *
 *   LOOK     GET /health and GET /metrics (the token counter), 2 s each;
 *            deadline: 3 s
 *   CONFIRM  the window between the two looks; deadline: 2 s
 *   LOOK     the second look, then the evidence sentence into g->hang
 *   TRIGGER  1 MiB of zeros into every FIFO DIR/pipe_<pid> (the driver's
 *            user-triggered dump), written as each pipe takes it;
 *            deadline: 5 s
 *   DUMPS    a look at DIR/core_<pid>.* every 0.5 s until each dump's size
 *            held for a look; MP_CD_HANG_WAIT_S in all
 *   GDB      cuda-gdb on each dump written, one at a time; deadline: 60 s
 *            each (then it is killed)
 *   DONE     g->hang_dump says what was triggered, written and read, and
 *            g->k has the kernels its warps were in.
 *
 * The engine gone (mp_hang_engine_gone) ends the waiting for it: no second
 * look, no new dump (one written by then is still read). Ended before DONE
 * (mp_hang_end: a signal, an I/O error), what was found is kept and the
 * sentences say where it stopped; its requests are cancelled, its pipes
 * closed, cuda-gdb killed and reaped. Loop-thread only. */
#ifndef MP_RUN_CRASHHANG_H
#define MP_RUN_CRASHHANG_H

#include "compat.h"

#include "model/gpufault.h"

/* The user_tag of the looks' results (mp_hang_take). */
#define MP_HANG_TAG (-3000000)

struct mp_hang;
struct mp_lg;
struct mp_lg_result;

struct mp_hang_in {
    const char *dir;              /* the attempt directory (its pipes, its dumps); borrowed */
    bool pipes;                   /* the engine was started with the pipe variables */
};

/* Begin: the first look is sent through lg (borrowed, as are dir and g;
 * all must outlive h). wake(ud) is called from a loop callback when a step
 * may advance before its deadline (a pipe took its bytes, cuda-gdb ended);
 * the caller then calls mp_hang_step. *deadline gets the first step's.
 * Never NULL. */
struct mp_hang *mp_hang_begin(const struct mp_hang_in *in, struct mp_lg *lg,
                              struct mp_gpu_fault *g, void (*wake)(void *ud), void *ud,
                              int64_t *deadline);
/* A load-generator result: true when it is one of the looks' (taken; the
 * caller releases it), false for any other. */
bool mp_hang_take(struct mp_hang *h, const struct mp_lg_result *res);
/* The engine exited or its output ended. */
void mp_hang_engine_gone(struct mp_hang *h);
/* Do what is due now. Returns the next step's deadline (mp_now_ns), or 0
 * when the evidence is complete (DONE). */
int64_t mp_hang_step(struct mp_hang *h);
/* Free h (accepts NULL); before DONE the sentences say it was cut short.
 * Returns the evidence sentence (borrowed from g) or NULL. */
const char *mp_hang_end(struct mp_hang *h);

#endif
