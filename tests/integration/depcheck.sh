#!/bin/bash
# tier: quick
# depcheck: scripts/depcheck.sh passes on this tree and fails, naming the
# include, on a tree with an upward include (store -> report), a same-rank
# include (proc -> http) and a module missing from the rank table.
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
exit 0
