#!/bin/bash
# tier: quick
# golden_report.sh - a fixed evidence store renders byte-exact report.md and
# report.json: tests/golden/qualify-verdicts.sql is the dump of a real
# qualify run (async-race, kernel-fault, stable, startup-failure and a
# shared result); its renderings are tests/golden/qualify-verdicts.{md,json}.
# Any change to what a report says about the same evidence shows here as a
# diff. When the change is intended, regenerate the expected files with
#   GOLDEN_UPDATE=1 tests/integration/golden_report.sh
# and commit them with the change that explains it.
set -u
: "${MOEPROBE:?}" "${ROOT:?}"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
G="$ROOT/tests/golden"
T=$(mktemp -d /tmp/golden.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The dump was taken of a run in /tmp/moeprobe-golden/run (attempt
# directories are stored absolute); load it where this test runs. Its first
# line sets the schema version (PRAGMA user_version), which .dump omits:
# a later moeprobe migrates it forward on open, as it would a real store.
mkdir -p "$T/run"
sed "s#/tmp/moeprobe-golden/run#$T/run#g" "$G/qualify-verdicts.sql" | sqlite3 "$T/run/moeprobe.db" ||
    fail "cannot load the golden dump"
for fmt in md json; do
    "$MOEPROBE" report --no-write --format "$fmt" "$T/run" >"$T/out.$fmt" 2>"$T/err.$fmt"
    rc=$?
    [ $rc -eq 0 ] || { cat "$T/err.$fmt"; fail "report --format $fmt: exit $rc"; }
    [ ! -s "$T/err.$fmt" ] || { cat "$T/err.$fmt"; fail "report --format $fmt wrote to stderr"; }
    sed -i "s#$T/run#RUNDIR#g" "$T/out.$fmt"
    if [ "${GOLDEN_UPDATE:-0}" = 1 ]; then
        cp "$T/out.$fmt" "$G/qualify-verdicts.$fmt"
        echo "updated $G/qualify-verdicts.$fmt"
        continue
    fi
    cmp -s "$T/out.$fmt" "$G/qualify-verdicts.$fmt" || {
        diff -u "$G/qualify-verdicts.$fmt" "$T/out.$fmt" | head -40
        fail "report.$fmt differs from tests/golden/qualify-verdicts.$fmt (GOLDEN_UPDATE=1 regenerates it)"
    }
done
# the files a run writes are the same renderings
"$MOEPROBE" report --format md "$T/run" >/dev/null 2>&1 || fail "report (writing files) failed"
sed "s#$T/run#RUNDIR#g" "$T/run/report.md" | cmp -s - "$G/qualify-verdicts.md" ||
    fail "the report.md written differs from what --no-write printed"
echo "ok: report.md and report.json of the golden store are byte-exact"
