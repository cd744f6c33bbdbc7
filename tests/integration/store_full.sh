#!/bin/bash
# store_full.sh - a run stopped by a full disk (here a file-size limit on the
# evidence store) leaves no attempt 'running': the attempt is recorded as
# interrupted by the I/O error, the run as stopped by it, so a later
# `moeprobe report` and `--resume` say what happened (instead of "moeprobe
# was killed, or the run is still going"), and the resume finishes the run.
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
T=$(mktemp -d /tmp/store-full.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.err; do echo "== $f"; tail -n 20 "$f"; done; exit 1; }
W="$ROOT/tests/worlds/fast.ini"
D="$T/full"
( ulimit -f 400; exec "$MOEPROBE" qualify --no-quality --out "$D" --seq 400 --conc 4:4000 \
    --max-tokens 8 --candidate 'a: ' -- "$REFENGINE" serve --world "$W" --port '{port}' ) \
    >"$T/full.out" 2>"$T/full.err"
rc=$?
[ $rc -eq 3 ] || fail "full disk: exit $rc, want 3"
[ "$(sqlite3 "$D/moeprobe.db" 'PRAGMA integrity_check')" = ok ] || fail "database damaged"
running=$(sqlite3 "$D/moeprobe.db" "SELECT count(*) FROM attempts WHERE status = 'running'")
[ "$running" -eq 0 ] || fail "$running attempt(s) left 'running' after the I/O error"
sqlite3 "$D/moeprobe.db" "SELECT status || ' ' || fail_class FROM attempts" | grep -qx 'interrupted io-error' ||
    fail "the attempt is not recorded as interrupted by the I/O error: $(sqlite3 "$D/moeprobe.db" 'SELECT status, fail_class FROM attempts')"
# a later report says what happened
"$MOEPROBE" report --no-write "$D" >"$T/report.md" 2>"$T/report.err" || fail "report: exit $?"
head -n 4 "$T/report.md" | grep -q 'This run was stopped by an I/O error' || { head -n 6 "$T/report.md"; fail "report.md does not say the run stopped on an I/O error"; }
"$MOEPROBE" report --no-write --format json "$D" >"$T/report.json" 2>>"$T/report.err" || fail "report json: exit $?"
python3 - "$T/report.json" <<'PY' || fail "report.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r.get("interrupted") is True and "I/O error" in r.get("interrupted_by", ""), r.get("interrupted_by")
a = r["candidates"][0]["attempts"][0]
assert a["outcome"] == "interrupted", a
PY
# the resume says so, and finishes the run
"$MOEPROBE" qualify --resume "$D" >/dev/null 2>"$T/resume.err"
rc=$?
[ $rc -eq 0 ] || fail "resume: exit $rc, want 0"
grep -q "stopped by an I/O error" "$T/resume.err" || fail "the resume does not say the run stopped on an I/O error"
echo "ok: the full-disk attempt is interrupted (I/O error); report and resume say so"
