/* vec.h - a typed growable array (value type), for the vectors the code
 * would otherwise write out privately each time.
 *
 *   MP_VEC(mp_dvec, double);            declares struct mp_dvec { double *v; size_t n, cap; }
 *   struct mp_dvec d = MP_VEC_INIT;
 *   mp_vec_push(&d, 1.5);               grows by doubling; aborts on OOM (xalloc)
 *   mp_vec_release(&d);                 frees v; d is MP_VEC_INIT again
 *
 * Elements are stored by value; a vector of pointers does not free what
 * they point at. */
#ifndef MP_VEC_H
#define MP_VEC_H

#include "compat.h"

#include <stdlib.h>

#include "xalloc.h"

#define MP_VEC(name, T) \
    struct name {       \
        T *v;           \
        size_t n, cap;  \
    }
#define MP_VEC_INIT { NULL, 0, 0 }

/* Room for at least extra more elements. */
#define mp_vec_reserve(vec, extra)                                                     \
    do {                                                                               \
        if ((vec)->n + (extra) > (vec)->cap) {                                         \
            size_t mp_vec__c = (vec)->cap ? (vec)->cap : 16;                           \
            while (mp_vec__c < (vec)->n + (extra))                                     \
                mp_vec__c *= 2;                                                        \
            (vec)->v = xreallocarray((vec)->v, mp_vec__c, sizeof(*(vec)->v));          \
            (vec)->cap = mp_vec__c;                                                    \
        }                                                                              \
    } while (0)
#define mp_vec_push(vec, x)             \
    do {                                \
        mp_vec_reserve((vec), 1);       \
        (vec)->v[(vec)->n++] = (x);     \
    } while (0)
#define mp_vec_release(vec)             \
    do {                                \
        free((vec)->v);                 \
        (vec)->v = NULL;                \
        (vec)->n = (vec)->cap = 0;      \
    } while (0)

MP_VEC(mp_dvec, double);

#endif
