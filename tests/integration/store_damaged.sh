#!/bin/bash
# tier: quick
# store_damaged.sh - `moeprobe report` on a damaged evidence store is an
# error that names the file (exit 3), never a report that looks like an
# empty run ("No candidate qualified", exit 0): pages overwritten with
# garbage, a file that is no database, an empty file, a database without a
# schema version. The intact store still renders. And the documented limit:
# a byte changed inside a stored value passes the check and is shown.
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
T=$(mktemp -d /tmp/store-damaged.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.err; do echo "== $f"; tail -n 5 "$f"; done; exit 1; }

"$MOEPROBE" qualify --quiet --no-quality --out "$T/run" --seq 3 --conc 2:4 --max-tokens 8 \
    --candidate 'a: ' --candidate 'b: EXTRA=1' \
    -- "$REFENGINE" serve --world "$ROOT/tests/worlds/fast.ini" --port '{port}' >/dev/null 2>"$T/run.err"
[ $? -eq 0 ] || fail "qualify exit $?"
pages=$(sqlite3 "$T/run/moeprobe.db" 'PRAGMA page_count')
[ "$pages" -gt 6 ] || fail "database has only $pages pages"

# report DIR NAME: runs report, sets RC; stdout/stderr in $T/NAME.out/.err
report() { "$MOEPROBE" report --no-write "$1" >"$T/$2.out" 2>"$T/$2.err"; RC=$?; }

report "$T/run" intact
[ $RC -eq 0 ] || fail "intact store: exit $RC"
grep -q '^| a |' "$T/intact.out" || fail "intact store: candidate a missing"

# damaged DIR NAME WHY: report must exit 3, name the database, and show no report
damaged() {
    report "$1" "$2"
    [ $RC -eq 3 ] || fail "$3: exit $RC, want 3"
    grep -qF "$1/moeprobe.db" "$T/$2.err" || fail "$3: the message does not name the file"
    ! grep -q 'No candidate qualified' "$T/$2.out" || fail "$3: rendered as an empty run"
    ! grep -q 'schema version -1' "$T/$2.err" || fail "$3: misleading 'schema version -1'"
}

# 1. pages after the schema overwritten with garbage (a deterministic pattern)
mkdir "$T/pages" && cp "$T/run/moeprobe.db" "$T/pages/"
head -c $((4 * 4096)) /dev/zero | tr '\0' '\245' |
    dd of="$T/pages/moeprobe.db" bs=4096 seek=3 conv=notrunc status=none
damaged "$T/pages" pages "garbage pages"
grep -q 'damaged' "$T/pages.err" || fail "garbage pages: message does not say damaged"

# 2. the last page (rows, not the schema) overwritten
mkdir "$T/tail" && cp "$T/run/moeprobe.db" "$T/tail/"
head -c 4096 /dev/zero | tr '\0' '\132' |
    dd of="$T/tail/moeprobe.db" bs=4096 seek=$((pages - 1)) conv=notrunc status=none
if [ "$(sqlite3 "$T/tail/moeprobe.db" 'PRAGMA integrity_check' 2>&1)" != ok ]; then
    damaged "$T/tail" tail "garbage last page"
fi

# 3. not a database at all
mkdir "$T/text" && printf 'this is a text file, not an evidence store\n%.0s' $(seq 200) >"$T/text/moeprobe.db"
damaged "$T/text" text "text file"
grep -q 'not an SQLite database' "$T/text.err" || fail "text file: message does not say what it is"

# 4. an empty file, 5. an SQLite database that is not moeprobe's
mkdir "$T/empty" && : >"$T/empty/moeprobe.db"
damaged "$T/empty" empty "empty file"
mkdir "$T/other" && sqlite3 "$T/other/moeprobe.db" 'CREATE TABLE x(y); INSERT INTO x VALUES (1);'
damaged "$T/other" other "foreign database"
grep -q 'not a moeprobe evidence store' "$T/other.err" || fail "foreign database: unclear message"

# 6. what the check cannot see (docs/store.md "Reading a store"): a byte changed
# inside a stored value whose record header still holds passes PRAGMA
# integrity_check, and the report shows the changed data - the store has no
# checksum of its own. (If this starts failing, the docs promise too little.)
mkdir "$T/value" && cp "$T/run/moeprobe.db" "$T/value/"
python3 - "$T/value/moeprobe.db" <<'PY' || fail "could not change a stored value"
import sys
p = sys.argv[1]
b = open(p, "rb").read()
n = b.count(b"EXTRA=1")
assert n > 0, "the knob is not in the file"
open(p, "wb").write(b.replace(b"EXTRA=1", b"EXTRA=7"))
PY
[ "$(sqlite3 "$T/value/moeprobe.db" 'PRAGMA integrity_check')" = ok ] || fail "a changed value: integrity_check saw it (update docs/store.md)"
report "$T/value" value
[ $RC -eq 0 ] || fail "a changed value: exit $RC (update docs/store.md)"
grep -q 'EXTRA=7' "$T/value.out" || fail "a changed value: the report does not show it (update docs/store.md)"

echo "ok: intact store renders; garbage pages, a text file, an empty file and a foreign database exit 3 naming the file; a changed value inside a record passes the check and is shown (documented)"
