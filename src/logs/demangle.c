/* demangle.c - a small Itanium C++ ABI demangler for kernel names (see
 * demangle.h). Recursive descent over the grammar of the ABI document
 * (itanium-cxx-abi.github.io/cxx-abi/abi.html#mangling), written for
 * moeprobe; the output follows c++filt's spacing so tests compare with it.
 * Every parse function appends to a bounded buffer and returns false on the
 * first thing it does not read (d->err says why). */
#include "logs/demangle.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "xalloc.h"

#define ARENA_MAX (256u * 1024u) /* bytes of substitution text kept */

struct dm {
    const char *p, *end;
    int depth;
    int err;                       /* MP_EPARSE or MP_ELIMIT once failed */
    struct buf arena;              /* substitution candidates, NUL-separated */
    size_t sub[MP_DEMANGLE_SUBS];  /* their offsets in arena */
    size_t nsubs;
    struct mp_strv params;         /* template arguments T_ refers to */
    char last[256];                /* the last source name (constructors) */
    bool cv_const;                 /* the last nested name was NK...: a const method */
};

static bool fail(struct dm *d, int code)
{
    if (!d->err)
        d->err = code;
    return false;
}

static char peek(const struct dm *d)
{
    return d->p < d->end ? *d->p : '\0';
}

static char peek2(const struct dm *d)
{
    return d->p + 1 < d->end ? d->p[1] : '\0';
}

static bool eat(struct dm *d, char c)
{
    if (peek(d) != c)
        return false;
    d->p++;
    return true;
}

static bool room(struct dm *d, const struct buf *o)
{
    return o->toobig ? fail(d, MP_ELIMIT) : true;
}

static bool add_sub(struct dm *d, const char *s, size_t n)
{
    if (d->nsubs >= MP_DEMANGLE_SUBS || d->arena.len + n + 1 > ARENA_MAX)
        return fail(d, MP_ELIMIT);
    d->sub[d->nsubs++] = d->arena.len;
    buf_add(&d->arena, s, n);
    buf_addc(&d->arena, '\0');
    return true;
}

/* the text of o from start on becomes a substitution candidate */
static bool add_from(struct dm *d, const struct buf *o, size_t start)
{
    return add_sub(d, o->data + start, o->len - start);
}

static void init_out(struct buf *b)
{
    *b = (struct buf)BUF_INIT;
    buf_set_max(b, MP_DEMANGLE_MAX);
}

/* <number> ::= [n] <decimal>; returns false without digits */
static bool number(struct dm *d, unsigned long *v, bool *neg)
{
    if (neg)
        *neg = eat(d, 'n');
    if (!isdigit((unsigned char)peek(d)))
        return false;
    unsigned long x = 0;
    while (isdigit((unsigned char)peek(d))) {
        if (x > 100000000UL)
            return fail(d, MP_ELIMIT);
        x = x * 10 + (unsigned long)(*d->p++ - '0');
    }
    *v = x;
    return true;
}

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.';
}

/* <source-name> ::= <length> <identifier> */
static bool source_name(struct dm *d, struct buf *o)
{
    unsigned long n;
    if (!number(d, &n, NULL) || n == 0 || n > (unsigned long)(d->end - d->p))
        return fail(d, MP_EPARSE);
    for (unsigned long i = 0; i < n; i++)
        if (!ident_char(d->p[i]))
            return fail(d, MP_EPARSE);
    if (n >= 10 && !strncmp(d->p, "_GLOBAL__N", 10))
        buf_adds(o, "(anonymous namespace)");
    else
        buf_add(o, d->p, n);
    snprintf(d->last, sizeof(d->last), "%.*s", (int)MP_MIN(n, sizeof(d->last) - 1), d->p);
    d->p += n;
    return room(d, o);
}

static bool type(struct dm *d, struct buf *o);
static bool name(struct dm *d, struct buf *o, struct mp_strv *targs, bool *cdc);
static bool encoding(struct dm *d, struct buf *o, bool nested);

/* [_ | <number> _]: the discriminator of a lambda or unnamed type (#N) */
static bool seq_number(struct dm *d, unsigned long *nr)
{
    unsigned long v = 0;
    *nr = 1;
    if (number(d, &v, NULL))
        *nr = v + 2;
    return eat(d, '_') ? true : fail(d, MP_EPARSE);
}

/* Ul <lambda-sig> E [<number>] _  |  Ut [<number>] _ */
static bool unnamed(struct dm *d, struct buf *o)
{
    unsigned long nr;
    d->p++; /* U */
    if (eat(d, 't')) {
        if (!seq_number(d, &nr))
            return false;
        buf_printf(o, "{unnamed type#%lu}", nr);
        return room(d, o);
    }
    if (!eat(d, 'l'))
        return fail(d, MP_EPARSE);
    buf_adds(o, "{lambda(");
    if (peek(d) == 'v' && peek2(d) == 'E') {
        d->p++;
    } else {
        for (bool first = true; peek(d) != 'E'; first = false) {
            if (!first)
                buf_adds(o, ", ");
            if (d->p >= d->end || !type(d, o))
                return fail(d, MP_EPARSE);
        }
    }
    d->p++; /* E */
    if (!seq_number(d, &nr))
        return false;
    buf_printf(o, ")#%lu}", nr);
    return room(d, o);
}

/* <unqualified-name> [<abi-tags>] */
static bool unqualified(struct dm *d, struct buf *o)
{
    eat(d, 'L'); /* internal linkage */
    if (peek(d) == 'U') {
        if (!unnamed(d, o))
            return false;
    } else if (!source_name(d, o)) {
        return false;
    }
    while (eat(d, 'B')) {
        buf_adds(o, "[abi:");
        if (!source_name(d, o))
            return false;
        buf_addc(o, ']');
    }
    return room(d, o);
}

/* <substitution> ::= S_ | S <seq-id> _ | Sa | Sb | Ss | Si | So | Sd (not St) */
static bool substitution(struct dm *d, struct buf *o)
{
    static const char *const abbr[][2] = {{"a", "std::allocator"}, {"b", "std::basic_string"},
                                          {"s", "std::string"},    {"i", "std::istream"},
                                          {"o", "std::ostream"},   {"d", "std::iostream"}};
    d->p++; /* S */
    for (size_t i = 0; i < MP_ARRAY_SIZE(abbr); i++)
        if (eat(d, abbr[i][0][0])) {
            buf_adds(o, abbr[i][1]);
            return room(d, o);
        }
    unsigned long idx = 0;
    if (!eat(d, '_')) {
        unsigned long v = 0;
        bool any = false;
        while (isdigit((unsigned char)peek(d)) || isupper((unsigned char)peek(d))) {
            char c = *d->p++;
            v = v * 36 + (unsigned long)(isdigit((unsigned char)c) ? c - '0' : c - 'A' + 10);
            if (v > MP_DEMANGLE_SUBS)
                return fail(d, MP_EPARSE);
            any = true;
        }
        if (!any || !eat(d, '_'))
            return fail(d, MP_EPARSE);
        idx = v + 1;
    }
    if (idx >= d->nsubs)
        return fail(d, MP_EPARSE);
    buf_adds(o, d->arena.data + d->sub[idx]);
    return room(d, o);
}

/* <template-param> ::= T_ | T <number> _ */
static bool template_param(struct dm *d, struct buf *o)
{
    d->p++; /* T */
    unsigned long i = 0, v;
    if (number(d, &v, NULL))
        i = v + 1;
    if (!eat(d, '_') || i >= d->params.n)
        return fail(d, MP_EPARSE);
    buf_adds(o, d->params.v[i]);
    return room(d, o);
}

/* L <type> <value> E | L _Z <encoding> E */
static bool literal(struct dm *d, struct buf *o)
{
    static const char *const suffix[][2] = {{"i", ""}, {"j", "u"}, {"l", "l"},
                                            {"m", "ul"}, {"x", "ll"}, {"y", "ull"}};
    static const char *const cast[][2] = {{"c", "char"},  {"a", "signed char"},
                                          {"h", "unsigned char"}, {"s", "short"},
                                          {"t", "unsigned short"}};
    d->p++; /* L */
    if (peek(d) == '_' && peek2(d) == 'Z') {
        d->p += 2;
        return encoding(d, o, true) && (eat(d, 'E') ? true : fail(d, MP_EPARSE));
    }
    char t = peek(d);
    unsigned long v;
    bool neg;
    d->p++;
    if (!number(d, &v, &neg) || !eat(d, 'E'))
        return fail(d, MP_EPARSE);
    if (t == 'b' && !neg && v <= 1) {
        buf_adds(o, v ? "true" : "false");
        return room(d, o);
    }
    for (size_t i = 0; i < MP_ARRAY_SIZE(suffix); i++)
        if (t == suffix[i][0][0]) {
            buf_printf(o, "%s%lu%s", neg ? "-" : "", v, suffix[i][1]);
            return room(d, o);
        }
    for (size_t i = 0; i < MP_ARRAY_SIZE(cast); i++)
        if (t == cast[i][0][0]) {
            buf_printf(o, "(%s)%s%lu", cast[i][1], neg ? "-" : "", v);
            return room(d, o);
        }
    return fail(d, MP_EPARSE);
}

static bool template_arg(struct dm *d, struct buf *o);

/* J <template-arg>* E: an argument pack, its members joined */
static bool pack(struct dm *d, struct buf *o)
{
    d->p++; /* J */
    for (bool first = true; !eat(d, 'E'); first = false) {
        if (d->p >= d->end)
            return fail(d, MP_EPARSE);
        if (!first)
            buf_adds(o, ", ");
        if (!template_arg(d, o))
            return false;
    }
    return room(d, o);
}

static bool template_arg(struct dm *d, struct buf *o)
{
    switch (peek(d)) {
    case 'L':
        return literal(d, o);
    case 'J':
        return pack(d, o);
    case 'X':
        return fail(d, MP_EPARSE); /* expressions are not read */
    default:
        return type(d, o);
    }
}

/* I <template-arg>+ E; each argument's text also into targs (may be NULL) */
static bool template_args(struct dm *d, struct buf *o, struct mp_strv *targs)
{
    if (++d->depth > MP_DEMANGLE_DEPTH)
        return fail(d, MP_ELIMIT);
    d->p++; /* I */
    if (targs)
        mp_strv_clear(targs);
    buf_addc(o, '<');
    for (bool first = true; !eat(d, 'E'); first = false) {
        if (d->p >= d->end)
            return fail(d, MP_EPARSE);
        if (!first)
            buf_adds(o, ", ");
        size_t at = o->len;
        if (!template_arg(d, o))
            return false;
        if (targs)
            mp_strv_push_owned(targs, xstrndup(o->data + at, o->len - at));
    }
    buf_adds(o, o->len && o->data[o->len - 1] == '>' ? " >" : ">");
    d->depth--;
    return room(d, o);
}

/* C1-C5 | CI1 <type> | CI2 <type> | D0-D5: the enclosing class's name */
static bool ctor_dtor(struct dm *d, struct buf *o)
{
    bool dtor = *d->p == 'D';
    d->p++;
    if (!dtor && eat(d, 'I')) { /* inheriting constructor */
        d->p++;
        struct buf skip;
        init_out(&skip);
        bool ok = type(d, &skip);
        buf_release(&skip);
        if (!ok)
            return false;
    } else if (!isdigit((unsigned char)peek(d))) {
        return fail(d, MP_EPARSE);
    } else {
        d->p++;
    }
    buf_printf(o, "::%s%s", dtor ? "~" : "", d->last);
    return room(d, o);
}

static bool is_ctor_dtor(const struct dm *d)
{
    char a = peek(d), b = peek2(d);
    return (a == 'C' && (isdigit((unsigned char)b) || b == 'I')) ||
           (a == 'D' && b >= '0' && b <= '5');
}

/* N [<CV-qualifiers>] [<ref-qualifier>] <prefix> <unqualified-name> E */
static bool nested(struct dm *d, struct buf *o, struct mp_strv *targs, bool *cdc)
{
    d->p++; /* N */
    d->cv_const = false;
    while (peek(d) == 'K' || peek(d) == 'V' || peek(d) == 'r' || peek(d) == 'R' || peek(d) == 'O')
        d->cv_const |= *d->p++ == 'K';
    size_t start = o->len;
    for (bool first = true; !eat(d, 'E'); first = false) {
        char c = peek(d);
        *cdc = false;
        if (d->p >= d->end)
            return fail(d, MP_EPARSE);
        if (c == 'I') {
            if (first || !template_args(d, o, targs))
                return first ? fail(d, MP_EPARSE) : false;
        } else if (first && c == 'S' && peek2(d) == 't') {
            d->p += 2;
            buf_adds(o, "std");
            continue; /* "std" alone is no candidate */
        } else if (first && c == 'S') {
            if (!substitution(d, o))
                return false;
            continue; /* not added again */
        } else if (c == 'T') {
            if (!template_param(d, o))
                return false;
        } else if (!first && is_ctor_dtor(d)) {
            if (!ctor_dtor(d, o))
                return false;
            *cdc = true;
        } else {
            if (!first)
                buf_adds(o, "::");
            if (targs)
                mp_strv_clear(targs);
            if (!unqualified(d, o))
                return false;
        }
        if (peek(d) != 'E' && !add_from(d, o, start))
            return false;
    }
    return room(d, o);
}

/* Z <encoding> E <entity name> [<discriminator>] | Z <encoding> E s [...] */
static bool local(struct dm *d, struct buf *o, struct mp_strv *targs, bool *cdc)
{
    d->p++; /* Z */
    if (!encoding(d, o, true) || !eat(d, 'E'))
        return fail(d, MP_EPARSE);
    buf_adds(o, "::");
    if (eat(d, 's')) {
        buf_adds(o, "string literal");
    } else if (!name(d, o, targs, cdc)) {
        return false;
    }
    if (eat(d, '_')) { /* discriminator: _ <digit> | __ <number> _ */
        unsigned long v;
        if (eat(d, '_')) {
            if (!number(d, &v, NULL) || !eat(d, '_'))
                return fail(d, MP_EPARSE);
        } else if (!isdigit((unsigned char)peek(d))) {
            return fail(d, MP_EPARSE);
        } else {
            d->p++;
        }
    }
    return room(d, o);
}

/* <name>; targs gets the template arguments of its last component (cleared
 * when it has none), *cdc whether that is a constructor or destructor */
static bool name(struct dm *d, struct buf *o, struct mp_strv *targs, bool *cdc)
{
    if (++d->depth > MP_DEMANGLE_DEPTH)
        return fail(d, MP_ELIMIT);
    bool ok;
    *cdc = false;
    if (targs)
        mp_strv_clear(targs);
    size_t start = o->len;
    if (peek(d) == 'N') {
        ok = nested(d, o, targs, cdc);
    } else if (peek(d) == 'Z') {
        ok = local(d, o, targs, cdc);
    } else {
        bool from_sub = false;
        if (peek(d) == 'S' && peek2(d) == 't') {
            d->p += 2;
            buf_adds(o, "std::");
            ok = unqualified(d, o);
        } else if (peek(d) == 'S') {
            /* a substitution names a template here: arguments must follow */
            ok = substitution(d, o) && (peek(d) == 'I' ? true : fail(d, MP_EPARSE));
            from_sub = true;
        } else {
            ok = unqualified(d, o);
        }
        if (ok && peek(d) == 'I')
            ok = (from_sub || add_from(d, o, start)) && template_args(d, o, targs);
    }
    d->depth--;
    return ok;
}

static bool builtin(struct dm *d, struct buf *o)
{
    static const char *const names[26] = {
        ['v' - 'a'] = "void",         ['w' - 'a'] = "wchar_t",
        ['b' - 'a'] = "bool",         ['c' - 'a'] = "char",
        ['a' - 'a'] = "signed char",  ['h' - 'a'] = "unsigned char",
        ['s' - 'a'] = "short",        ['t' - 'a'] = "unsigned short",
        ['i' - 'a'] = "int",          ['j' - 'a'] = "unsigned int",
        ['l' - 'a'] = "long",         ['m' - 'a'] = "unsigned long",
        ['x' - 'a'] = "long long",    ['y' - 'a'] = "unsigned long long",
        ['n' - 'a'] = "__int128",     ['o' - 'a'] = "unsigned __int128",
        ['f' - 'a'] = "float",        ['d' - 'a'] = "double",
        ['e' - 'a'] = "long double",  ['g' - 'a'] = "__float128",
        ['z' - 'a'] = "...",
    };
    char c = peek(d);
    if (c < 'a' || c > 'z' || !names[c - 'a'])
        return false;
    d->p++;
    buf_adds(o, names[c - 'a']);
    return true;
}

/* D-prefixed builtins: Dh half, DF16_ _Float16, Dn, Da, Dc, Di, Ds, Du */
static bool builtin_d(struct dm *d, struct buf *o)
{
    static const char *const dn[][2] = {{"h", "half"}, {"n", "decltype(nullptr)"},
                                        {"a", "auto"}, {"c", "decltype(auto)"},
                                        {"i", "char32_t"}, {"s", "char16_t"},
                                        {"u", "char8_t"}};
    d->p++; /* D */
    if (eat(d, 'F')) {
        unsigned long bits;
        if (!number(d, &bits, NULL) || !eat(d, '_'))
            return fail(d, MP_EPARSE);
        buf_printf(o, "_Float%lu", bits);
        return room(d, o);
    }
    for (size_t i = 0; i < MP_ARRAY_SIZE(dn); i++)
        if (eat(d, dn[i][0][0])) {
            buf_adds(o, dn[i][1]);
            return room(d, o);
        }
    return fail(d, MP_EPARSE);
}

/* a type that names a class: <name>, St..., or a substitution [+ args] */
static bool class_type(struct dm *d, struct buf *o, size_t start)
{
    if (peek(d) == 'S' && peek2(d) != 't') {
        if (!substitution(d, o))
            return false;
        if (peek(d) != 'I')
            return true; /* a substitution is not a new candidate */
        if (!template_args(d, o, NULL))
            return false;
        return add_from(d, o, start);
    }
    bool cdc;
    return name(d, o, NULL, &cdc) && add_from(d, o, start);
}

static bool type(struct dm *d, struct buf *o)
{
    if (++d->depth > MP_DEMANGLE_DEPTH)
        return fail(d, MP_ELIMIT);
    size_t start = o->len;
    char c = peek(d);
    bool ok = true;
    if (c == 'K' || c == 'V' || c == 'r') {
        d->p++;
        ok = type(d, o);
        buf_adds(o, c == 'K' ? " const" : c == 'V' ? " volatile" : " restrict");
        ok = ok && add_from(d, o, start);
    } else if (c == 'P' || c == 'R' || c == 'O') {
        d->p++;
        ok = type(d, o);
        buf_adds(o, c == 'P' ? "*" : c == 'R' ? "&" : "&&");
        ok = ok && add_from(d, o, start);
    } else if (c == 'T') {
        ok = template_param(d, o) && add_from(d, o, start);
        if (ok && peek(d) == 'I')
            ok = template_args(d, o, NULL) && add_from(d, o, start);
    } else if (c == 'D' && peek2(d) == 'p') {
        d->p += 2;
        ok = type(d, o) && add_from(d, o, start);
    } else if (c == 'D') {
        ok = builtin_d(d, o);
    } else if (c == 'u') {
        d->p++;
        ok = source_name(d, o) && add_from(d, o, start);
    } else if (c == 'N' || c == 'Z' || c == 'S' || isdigit((unsigned char)c)) {
        ok = class_type(d, o, start);
    } else if (!builtin(d, o)) {
        ok = fail(d, MP_EPARSE); /* function, array, member pointer types... */
    }
    d->depth--;
    return ok && room(d, o);
}

/* <bare-function-type>: the return type first for a template function
 * (read, not shown), then the parameters "(a, b)"; "v" alone is "()" */
static bool parameters(struct dm *d, struct buf *o, bool has_return)
{
    if (has_return) {
        struct buf skip;
        init_out(&skip);
        bool ok = type(d, &skip);
        buf_release(&skip);
        if (!ok)
            return false;
    }
    buf_addc(o, '(');
    if (peek(d) == 'v' && (d->p + 1 == d->end || peek2(d) == 'E' || peek2(d) == '.')) {
        d->p++;
    } else {
        for (bool first = true; d->p < d->end && peek(d) != 'E' && peek(d) != '.'; first = false) {
            if (!first)
                buf_adds(o, ", ");
            if (!type(d, o))
                return false;
        }
    }
    buf_addc(o, ')');
    return room(d, o);
}

/* <encoding> ::= <name> [<bare-function-type>]; nested: inside Z...E or
 * L_Z...E, where an 'E' ends it */
static bool encoding(struct dm *d, struct buf *o, bool nested)
{
    if (++d->depth > MP_DEMANGLE_DEPTH)
        return fail(d, MP_ELIMIT);
    struct mp_strv targs = MP_STRV_INIT;
    bool cdc = false;
    d->cv_const = false;
    bool ok = name(d, o, &targs, &cdc);
    bool is_const = d->cv_const;
    bool ends = d->p >= d->end || peek(d) == '.' || (nested && peek(d) == 'E');
    if (ok && !ends) {
        struct mp_strv saved = d->params;
        if (targs.n) { /* T_ in the parameters names these arguments */
            d->params = targs;
            targs = (struct mp_strv)MP_STRV_INIT;
        } else {
            d->params = (struct mp_strv)MP_STRV_INIT;
        }
        ok = parameters(d, o, d->params.n && !cdc);
        mp_strv_release(&d->params);
        d->params = saved;
        if (ok && is_const)
            buf_adds(o, " const");
    }
    mp_strv_release(&targs);
    d->depth--;
    return ok;
}

bool mp_demangle_is_mangled(const char *s, size_t n)
{
    if (n >= 9 && !strncmp(s, "_GLOBAL__", 9))
        return true;
    return n >= 3 && s[0] == '_' && s[1] == 'Z' &&
           (isalnum((unsigned char)s[2]) || s[2] == '_');
}

/* ".constprop.0", ".part.1" ... after the encoding: c++filt's [clone ...] */
static bool clone_suffix(struct dm *d, struct buf *o)
{
    while (d->p < d->end && *d->p == '.') {
        const char *q = d->p + 1;
        while (q < d->end && (isalnum((unsigned char)*q) || *q == '_'))
            q++;
        if (q == d->p + 1)
            return fail(d, MP_EPARSE);
        buf_adds(o, " [clone ");
        buf_add(o, d->p, (size_t)(q - d->p));
        buf_addc(o, ']');
        d->p = q;
    }
    return room(d, o);
}

int mp_demangle(const char *s, size_t n, struct buf *out)
{
    if (n < 3 || s[0] != '_' || s[1] != 'Z')
        return MP_EPARSE;
    struct dm d;
    memset(&d, 0, sizeof(d));
    d.p = s + 2;
    d.end = s + n;
    d.arena = (struct buf)BUF_INIT;
    struct buf o;
    init_out(&o);
    bool ok = encoding(&d, &o, false) && clone_suffix(&d, &o);
    if (ok && d.p != d.end)
        ok = fail(&d, MP_EPARSE);
    int rc = ok ? 0 : (d.err ? d.err : MP_EPARSE);
    if (rc == 0)
        buf_add(out, o.data, o.len);
    buf_release(&o);
    buf_release(&d.arena);
    mp_strv_release(&d.params);
    return rc;
}

void mp_demangle_words(const char *s, size_t n, struct mp_strv *words)
{
    size_t added = 0;
    if (!mp_demangle_is_mangled(s, n)) {
        size_t k = 0;
        while (k < n && k < 256 && ident_char(s[k]))
            k++;
        if (k) {
            char *w = xstrndup(s, k);
            mp_strv_push_owned(words, w);
        }
        return;
    }
    for (size_t i = 2; i < n && added < 64;) {
        /* a length starts a source name, unless it is a substitution or
         * template parameter index (S1_, T0_) or a literal's value (Li128E) */
        char prev = s[i - 1];
        bool literal = (i >= 3 && s[i - 2] == 'L') || (i >= 4 && prev == 'n' && s[i - 3] == 'L');
        if (!isdigit((unsigned char)s[i]) || isdigit((unsigned char)prev) || prev == 'S' ||
            prev == 'T' || literal) {
            i++;
            continue;
        }
        size_t len = 0, j = i;
        while (j < n && isdigit((unsigned char)s[j]) && len < 100000)
            len = len * 10 + (size_t)(s[j++] - '0');
        bool ok = len > 0 && len <= 256 && len <= n - j &&
                  (isalpha((unsigned char)s[j]) || (s[j] == '_' && len > 1));
        for (size_t k = 0; ok && k < len; k++)
            ok = ident_char(s[j + k]);
        if (!ok) {
            i = j;
            continue;
        }
        char *w = xstrndup(s + j, len);
        if (!mp_strv_has(words, w)) {
            mp_strv_push_owned(words, w);
            added++;
        } else {
            free(w);
        }
        i = j + len;
    }
}

void mp_demangle_short(const char *readable, const char *key, struct buf *out)
{
    /* the outer name: up to its first '<' or '(' at depth 0 */
    size_t n = strcspn(readable, "<(");
    buf_add(out, readable, n);
    bool more = readable[n] != '\0';
    bool show_key = key && *key && !memmem(readable, n, key, strlen(key)) && strstr(readable, key);
    if (readable[n] == '<') {
        buf_adds(out, "<…");
        if (show_key) {
            buf_adds(out, key);
            buf_adds(out, "…");
        }
        buf_adds(out, ">");
    } else if (more && show_key) {
        buf_adds(out, "(…");
        buf_adds(out, key);
        buf_adds(out, "…)");
    }
}
