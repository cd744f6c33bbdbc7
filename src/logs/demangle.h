/* demangle.h - readable names for the C++ kernel names a CUDA core dump
 * prints (Itanium C++ ABI mangling, "_Z..."), written for moeprobe (no code
 * from a C++ runtime or another demangler; libstdc++'s __cxa_demangle is
 * not used: it has no pkg-config file, and a parser of outside input here is
 * fuzzed under ASan, which a system library's recursion is not).
 *
 * What it reads: nested and unscoped names, std:: abbreviations,
 * substitutions (S_, Sn_), template arguments (types, integer and bool
 * literals, L_Z...E addresses, argument packs), template parameters (T_,
 * Tn_), builtin and vendor types, const/volatile/restrict, pointers and
 * references, constructors/destructors, ABI tags, the anonymous namespace,
 * local names (Z...E) with lambdas ({lambda(...)#N}) and unnamed types.
 * What it does not read (MP_EPARSE; the caller falls back to
 * mp_demangle_words): expressions in template arguments (X...E, decltype),
 * function, array and member-pointer types, operator names, clones with
 * suffixes it does not know.
 *
 * The result has the form c++filt prints without the return type:
 * "cutlass::device_kernel<gemm::kernel<int> >(gemm::kernel<int>::Params)".
 *
 * Pure: no I/O, no global state. Bounded: at most MP_DEMANGLE_MAX bytes of
 * output, MP_DEMANGLE_DEPTH levels of nesting and MP_DEMANGLE_SUBS
 * substitution candidates; a name beyond any bound is MP_ELIMIT. */
#ifndef MP_LOGS_DEMANGLE_H
#define MP_LOGS_DEMANGLE_H

#include "compat.h"

#include "buf.h"
#include "strv.h"

#define MP_DEMANGLE_MAX 8192
#define MP_DEMANGLE_DEPTH 96
#define MP_DEMANGLE_SUBS 1024

/* True when s[0..n) looks like an Itanium-mangled name ("_Z" + a letter or
 * digit, or "_GLOBAL__"); Triton and CuTe DSL kernels have plain C names. */
bool mp_demangle_is_mangled(const char *s, size_t n);

/* Demangle s[0..n) and append the readable form to out. Returns 0, or
 * MP_EPARSE (not a mangled name, or a construct this demangler does not
 * read) or MP_ELIMIT (past a bound); on error out is left as it was. */
int mp_demangle(const char *s, size_t n, struct buf *out);

/* The fallback when mp_demangle fails: the identifiers (source names) the
 * mangled name spells, in order, without repeats, each once into words
 * (at most 64, each at most 256 bytes). A plain name gives itself. Never
 * fails; a string with no identifier gives nothing. */
void mp_demangle_words(const char *s, size_t n, struct mp_strv *words);

/* A short form for a report line: the demangled (or plain) name's qualified
 * outer name with its template arguments and parameters elided
 * ("cutlass::device_kernel<…>"); when key (may be NULL) is a word of the
 * name that the outer name does not show, it is shown inside the elision
 * ("cutlass::device_kernel<…MainloopSm120ArrayTmaWarpSpecialized…>").
 * readable is what mp_demangle produced, or the raw name. Appends to out. */
void mp_demangle_short(const char *readable, const char *key, struct buf *out);

#endif
