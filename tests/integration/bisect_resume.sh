#!/bin/bash
# bisect_resume.sh - SIGTERM while the third probe's engine starts: the
# reports say the run did not finish (exit 143); `bisect --resume` (from
# another directory, the run's own arguments) keeps the two finished probes
# (their attempts are not run again), redoes the interrupted one under its
# next attempt number and finds the answer.
. "$(dirname "$0")/q_lib.sh"
WB="$W/bisect"

# every engine start takes 1 s: the signal lands inside the third probe
mkdir -p "$Q_TMP/w"
for f in "$WB"/verdict-v*.ini; do
    sed 's/^load_seconds = 0/load_seconds = 1/' "$f" >"$Q_TMP/w/$(basename "$f")"
done
grep -q '^load_seconds = 1' "$Q_TMP/w/verdict-v3.ini" || fail "world: no load_seconds to set"
R="$Q_TMP/resume"
CMD=("$REFENGINE" --world "$Q_TMP/w/verdict-{build}.ini" --port '{port}')
"$MOEPROBE" bisect --out "$R" --good v1 --bad v5 --build v1 --build v2 --build v3 --build v4 --build v5 \
    --quiet --no-diagnose --agreement 0 --accuracy 0 --seq 2 --conc 2:2 --max-tokens 8 -- "${CMD[@]}" >"$Q_TMP/r1.out" 2>"$Q_TMP/r1.err" &
mp=$!
# the third probe (v3, the middle) has started once its server.log has a line
for _ in $(seq 600); do
    [ -s "$R/attempts/v3-1/server.log" ] && break
    timeout 0.1 tail -n0 -F "$R/attempts/v3-1/server.log" 2>/dev/null | head -n1 >/dev/null
done
[ -s "$R/attempts/v3-1/server.log" ] || { kill -9 $mp; cat "$Q_TMP/r1.err"; fail "the third probe never started"; }
kill -TERM $mp
wait $mp
rc=$?
[ $rc -eq 143 ] || { cat "$Q_TMP/r1.err"; fail "interrupted: exit $rc, want 143"; }
check "$R/report.json" 'r["finished"] is False and r["first_bad"] is None' \
    '[(p["build"], p["outcome"]) for p in r["probes"]] == [("v5", "bad"), ("v1", "good"), ("v3", None)]' ||
    fail "interrupted: report.json"
grep -q 'This run did not finish' "$R/report.md" || fail "interrupted: no banner in report.md"
assert_no_leftovers
# resume from another directory: the run's own arguments
(cd / && "$MOEPROBE" bisect --resume "$R" --quiet --json) >"$Q_TMP/r2.json" 2>"$Q_TMP/r2.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/r2.err"; fail "resume: exit $rc"; }
check "$Q_TMP/r2.json" 'r["finished"] is True and r["first_bad"] == "v4" and r["last_good"] == "v3"' \
    '[(p["step"], p["build"]) for p in r["probes"]] == [(1, "v5"), (2, "v1"), (3, "v3"), (4, "v4")]' ||
    fail "resume: report"
[ -d "$R/attempts/v5-1" ] && [ ! -e "$R/attempts/v5-2" ] && [ ! -e "$R/attempts/v1-2" ] ||
    fail "resume: a finished probe ran again ($(ls "$R/attempts" | tr '\n' ' '))"
[ -d "$R/attempts/v3-2" ] || fail "resume: the interrupted probe was not redone ($(ls "$R/attempts" | tr '\n' ' '))"
assert_no_leftovers
echo "ok"
