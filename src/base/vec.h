/* vec.h - a typed growable array (value type), for the vectors the code
 * would otherwise write out privately each time, and the one growth rule
 * for arrays that keep their own pointer/count/capacity fields.
 *
 *   MP_VEC(mp_dvec, double);        declares struct mp_dvec { double *v; size_t n, cap; }
 *   struct mp_dvec d = MP_VEC_INIT; allocates nothing
 *   mp_vec_push(&d, 1.5);           appends a copy of the value
 *   ... d.v[0 .. d.n) ...
 *   mp_vec_release(&d);             frees v; d is MP_VEC_INIT again
 *
 * Ownership: the vector owns its array v (free it with mp_vec_release, or
 * take it: the caller then frees v). Elements are stored by value; a vector
 * of pointers does not free what they point at (free them first, or use
 * strv.h's struct mp_strv for owned strings). v is NULL while nothing was
 * ever added, and a push may move it: pointers into v are valid until the
 * next push, reserve or release.
 *
 * Growth: capacity doubles (starting at 8), so n pushes cost O(n) copies.
 * Allocation failure and a size that overflows size_t abort (xalloc.h);
 * nothing here returns an error. Bound what comes from outside before it
 * gets here.
 *
 * The macros evaluate their vec argument more than once: pass a plain
 * variable or member (&d, &s->list), not an expression with side effects.
 * The pushed value x is evaluated once. */
#ifndef MP_VEC_H
#define MP_VEC_H

#include "compat.h"

#include <stdlib.h>

#define MP_VEC(name, T) \
    struct name {       \
        T *v;           \
        size_t n, cap;  \
    }
#define MP_VEC_INIT { NULL, 0, 0 }

/* The growth rule: p (an array of *cap elements of size bytes, NULL when
 * *cap is 0) reallocated to hold at least need elements, *cap updated.
 * Returns the (possibly moved) array; p is unchanged when need <= *cap.
 * Use it through mp_grow or mp_vec_reserve. */
void *mp_vec__grow(void *p, size_t *cap, size_t need, size_t size);

/* For arrays with their own fields (T *p; size_t cap): room for at least
 * need elements in p, e.g. mp_grow(s->items, s->capitems, s->nitems + 1).
 * p and cap are lvalues, assigned. */
#define mp_grow(p, cap, need) ((p) = mp_vec__grow((p), &(cap), (need), sizeof(*(p))))

/* Room for at least extra more elements (a push after it does not move v). */
#define mp_vec_reserve(vec, extra) mp_grow((vec)->v, (vec)->cap, (vec)->n + (extra))

/* Append x (by value). */
#define mp_vec_push(vec, x)         \
    do {                            \
        mp_vec_reserve((vec), 1);   \
        (vec)->v[(vec)->n++] = (x); \
    } while (0)

/* Free the array (not what elements point at); vec is MP_VEC_INIT again. */
#define mp_vec_release(vec)        \
    do {                           \
        free((vec)->v);            \
        (vec)->v = NULL;           \
        (vec)->n = (vec)->cap = 0; \
    } while (0)

MP_VEC(mp_dvec, double);

#endif
