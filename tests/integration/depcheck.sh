#!/bin/bash
# tier: quick
# depcheck: scripts/depcheck.sh passes on this tree and fails, naming the
# include, on a tree with an upward include (store -> report), a same-rank
# include (proc -> http), a module missing from the rank table and an include
# circle (two headers of one folder, or three in a ring); and,
# naming the files and the symbols that tie them, on a file-level circle
# inside a folder (two files that call each other, or three in a ring, even
# when both include only a shared internal header), but not on a chain, or a
# static function or struct tag that shares a name. No circle is tolerated:
# a circle in run/ (the last one listed as "being removed") fails too.
set -u
: "${ROOT:?}"
t=$(mktemp -d /tmp/mp-depcheck.XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$ROOT/scripts/depcheck.sh" >"$t/ok.out" || { cat "$t/ok.out"; fail "depcheck fails on the tree itself"; }
grep -qx "depcheck: ok" "$t/ok.out" || fail "no ok line"

mk() { mkdir -p "$t/tree/src/$(dirname "$1")"; printf '%s\n' "$2" >"$t/tree/src/$1"; }
mk base/buf.h '/* base */'
mk model/candidate.h '#include "buf.h"'
mk store/store.c '#include "model/candidate.h"'
mk report/report.h '#include "store/store.h"'
mk store/store.h '#include "buf.h"'
DEPCHECK_ROOT="$t/tree" "$ROOT/scripts/depcheck.sh" >"$t/good.out" || fail "a clean tree fails: $(cat "$t/good.out")"

mk store/load.c '#include "report/report.h"'
DEPCHECK_ROOT="$t/tree" "$ROOT/scripts/depcheck.sh" >"$t/up.out" && fail "upward include passes"
grep -q 'src/store/load.c includes "report/report.h": store (rank 4) may not include report (rank 5)' "$t/up.out" ||
    fail "upward include not named: $(cat "$t/up.out")"
rm "$t/tree/src/store/load.c"

mk http/hist.h '/* http */'
mk proc/proc.c '#include "http/hist.h"'
DEPCHECK_ROOT="$t/tree" "$ROOT/scripts/depcheck.sh" >"$t/same.out" && fail "same-rank include passes"
grep -q 'src/proc/proc.c includes "http/hist.h"' "$t/same.out" || fail "same-rank include not named"
rm "$t/tree/src/proc/proc.c"

mk gadgets/g.c '#include "buf.h"'
DEPCHECK_ROOT="$t/tree" "$ROOT/scripts/depcheck.sh" >"$t/unk.out" && fail "a module without a rank passes"
grep -q 'src/gadgets/g.c' "$t/unk.out" || fail "unranked module not named"
rm "$t/tree/src/gadgets/g.c"

# include circles: two headers of one folder that include each other (include
# guards make it compile), and a ring of three through a .c file's header
mk store/load.h '#include "store/store.h"'
mk store/store.h '#include "buf.h"
#include "store/load.h"'
DEPCHECK_ROOT="$t/tree" "$ROOT/scripts/depcheck.sh" >"$t/inc.out" && fail "an include circle passes"
grep -qxF 'depcheck: include circle: src/store/load.h -> src/store/store.h -> src/store/load.h' "$t/inc.out" ||
    fail "the include circle is not named: $(cat "$t/inc.out")"
mk store/store.h '#include "buf.h"
#include "store/row.h"'
mk store/row.h '#include "store/load.h"'
DEPCHECK_ROOT="$t/tree" "$ROOT/scripts/depcheck.sh" >"$t/inc.out" && fail "an include ring of three passes"
grep -q 'depcheck: include circle: .*src/store/row.h' "$t/inc.out" || fail "the include ring is not named: $(cat "$t/inc.out")"
rm "$t/tree/src/store/load.h" "$t/tree/src/store/row.h"
mk store/store.h '#include "buf.h"'
DEPCHECK_ROOT="$t/tree" "$ROOT/scripts/depcheck.sh" >"$t/good.out" || fail "the clean tree fails again: $(cat "$t/good.out")"

# file-level circles inside a folder (through a shared internal header)
dc() { DEPCHECK_ROOT="$t/tree" "$ROOT/scripts/depcheck.sh" >"$t/c.out"; }
mk store/internal.h 'int mp_a(void); int mp_b(void); int mp_c(void); struct mp_a { int x; };'
mk store/a.c '#include "store/internal.h"
/* the top file: uses b */
int mp_a(void)
{
    return mp_b() + 1;
}'
mk store/b.c '#include "store/internal.h"
int mp_b(void)
{
    return 2;
}'
dc || fail "a chain a -> b fails: $(cat "$t/c.out")"
mk store/c.c '#include "store/internal.h"
static int mp_a(void) { return 3; } /* its own, not a.c s */
int mp_c(const struct mp_a *p)
{
    return mp_a() + p->x;
}'
mk store/b.c '#include "store/internal.h"
int mp_b(void)
{
    return mp_c(0);
}'
dc || fail "a static function or a struct tag named like a.c's function makes a circle: $(cat "$t/c.out")"
mk store/b.c '#include "store/internal.h"
int mp_b(void)
{
    return mp_a() - 1; /* back up into the top file */
}'
dc && fail "a <-> b passes"
grep -qF 'depcheck: file circle in src/store: a.c b.c | a.c -> b.c (mp_b), b.c -> a.c (mp_a)' "$t/c.out" ||
    fail "the circle is not named with files and symbols: $(cat "$t/c.out")"
mk store/b.c '#include "store/internal.h"
int mp_b(void)
{
    return mp_c(0);
}'
mk store/c.c '#include "store/internal.h"
int mp_c(const struct mp_a *p)
{
    return p ? p->x : mp_a();
}'
dc && fail "a ring a -> b -> c -> a passes"
grep -qF 'file circle in src/store: a.c b.c c.c |' "$t/c.out" || fail "the ring is not named: $(cat "$t/c.out")"
rm "$t/tree/src/store/"[abc].c
mk run/attempt.c 'int mp_att_a(void) { return mp_att_p(); }
int mp_att_b(void)
{
    return 1;
}'
mk run/phases.c 'int mp_att_p(void)
{
    return mp_att_b();
}'
DEPCHECK_KNOWN_CIRCLES='src/run: attempt.c phases.c' dc && fail "the old known run/ circle passes"
grep -qF 'file circle in src/run: attempt.c phases.c |' "$t/c.out" || fail "the run/ circle is not named: $(cat "$t/c.out")"
exit 0
