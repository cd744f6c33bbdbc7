#!/bin/bash
# tier: quick
# soak_duration.sh - `soak --duration` accepts at most 30 days: larger
# values, and ones that overflow any clock (99999999999999h), are a usage
# error (exit 2) with a message, before anything is started.
set -u
: "${MOEPROBE:?}"
T=$(mktemp -d /tmp/soak-duration.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; cat "$T/err" 2>/dev/null; exit 1; }

# refused D: exit 2 with a message about --duration, nothing run (the
# server command would leave a file behind)
refused() {
    "$MOEPROBE" soak --duration "$1" --out "$T/run" -- touch "$T/started" >/dev/null 2>"$T/err"
    local rc=$?
    [ $rc -eq 2 ] || fail "--duration $1: exit $rc, want 2"
    grep -q -- '--duration' "$T/err" || fail "--duration $1: no message"
    [ ! -e "$T/started" ] || fail "--duration $1: the server command was run"
}
refused 99999999999999h
refused 1e300
refused 31d
refused 721h
refused 2592001
refused 43201m
refused inf
refused 0
refused -5s

# accepted up to the bound: the next option is the first complaint
for d in 30d 720h 2592000 43200m 1.5h 90s; do
    "$MOEPROBE" soak --duration "$d" --concurrency 0 -- true >/dev/null 2>"$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "--duration $d --concurrency 0: exit $rc, want 2"
    grep -q -- '--concurrency' "$T/err" || fail "--duration $d refused: $(cat "$T/err")"
done
"$MOEPROBE" soak --duration 31d -- true >/dev/null 2>"$T/err"
grep -q '30 days' "$T/err" || fail "the message does not give the bound"
echo "ok: durations above 30 days refused, up to 30 days accepted"
