#!/bin/bash
# soak_basic.sh - a short soak runs until its duration with every request in
# the store; a soak on a crashing engine stops at the first failure, which
# is classified like in qualify; a run directory in use is refused.
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
T=$(mktemp -d /tmp/soak-basic.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.err; do echo "== $f"; tail -n 20 "$f"; done; exit 1; }

"$MOEPROBE" soak --duration 2s --concurrency 4 --max-tokens 32 --out "$T/ok" --json \
    -- "$REFENGINE" serve --world "$ROOT/tests/worlds/fast.ini" --port '{port}' >"$T/ok.json" 2>"$T/ok.err"
rc=$?
[ $rc -eq 0 ] || fail "healthy soak: exit $rc"
n=$(sqlite3 "$T/ok/moeprobe.db" "SELECT COUNT(*) FROM requests WHERE phase = 'soak' AND outcome = 'ok'")
[ "$n" -gt 4 ] || fail "only $n soak requests recorded"
[ "$(sqlite3 "$T/ok/moeprobe.db" "SELECT subcommand FROM run")" = soak ] || fail "run not recorded as a soak"
wall=$(sqlite3 "$T/ok/moeprobe.db" "SELECT wall_s FROM phases WHERE name = 'soak'")
awk -v w="$wall" 'BEGIN { exit !(w >= 2.0) }' || fail "soak phase ended before its duration ($wall s)"
cmp -s "$T/ok.json" "$T/ok/report.json" || fail "--json differs from report.json"
grep -Eq '"verdict":[[:space:]]*"stable"' "$T/ok/report.json" || fail "healthy soak not stable"

"$MOEPROBE" soak --duration 1h --concurrency 2 --max-tokens 16 --out "$T/bad" \
    -- "$REFENGINE" serve --world "$ROOT/tests/worlds/fault.ini" --port '{port}' >/dev/null 2>"$T/bad.err"
rc=$?
[ $rc -eq 1 ] || fail "crashing soak: exit $rc, want 1"
cls=$(sqlite3 "$T/bad/moeprobe.db" "SELECT outcome || ' ' || COALESCE(fail_class, '') FROM attempts")
case "$cls" in crashed\ ?*) ;; *) fail "failure not classified: '$cls'";; esac

"$MOEPROBE" soak --concurrency 2 -- true >/dev/null 2>"$T/usage.err"
[ $? -eq 2 ] || fail "soak without --duration must be a usage error"
echo "ok: $n soak requests in ${wall}s; crash classified as '$cls'"
