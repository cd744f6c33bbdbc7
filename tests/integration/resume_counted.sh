#!/bin/bash
# resume_counted.sh - a resume is counted honestly: kill -9 of moeprobe
# while the diagnosis runs its second extra normal run, then --resume.
# The "at most three extra normal runs" budget (docs/verdicts.md) spans both
# sessions (at most 4 normal starts and 1 blocked one in all, as an
# uninterrupted run), cost.engine_starts counts every engine started,
# the one the kill cut short included, and the reports say the run was
# interrupted and resumed (report.json "resumes", report.md, report.html).
. "$(dirname "$0")/q_lib.sh"
D="$Q_TMP/run"
run() {
    exec "$MOEPROBE" qualify "$@" >/dev/null 2>>"$Q_TMP/err"
}
wait_file() {
    local _
    for _ in $(seq 600); do
        [ -s "$1" ] && return 0
        timeout 0.1 tail -n0 -F "$1" 2>/dev/null | head -n1 >/dev/null
    done
    return 1
}
(run --out "$D" --seq 3 --conc 2:4 --conc 3:3 --max-tokens 8 --grace 3 --no-quality --candidate 'auto:' \
    --diagnose-budget 1h -- "$REFENGINE" --world "$ROOT/tests/worlds/slow-race.ini" --port '{port}') &
mp=$!
wait_file "$D/attempts/auto-3/server.log" || { kill -9 $mp; cat "$Q_TMP/err"; fail "no second extra normal run"; }
kill -9 $mp
wait $mp 2>/dev/null
(run --resume "$D")
rc=$?
[ $rc -eq 1 ] || { cat "$Q_TMP/err"; fail "resume: exit $rc, want 1 (an async race is not recommended)"; }
ls "$D/attempts"
normal=$(ls "$D/attempts" | grep -vc blocking)
blocked=$(ls "$D/attempts" | grep -c blocking)
echo "engine starts: $normal normal, $blocked blocked"
[ "$normal" -le 4 ] && [ "$blocked" -eq 1 ] ||
    fail "the rerun budget restarted on resume: $normal normal and $blocked blocked starts, want <= 4 and 1"
check "$D/report.json" 'c["auto"]["verdict"] == "async-race"' \
    "c['auto']['cost']['engine_starts'] == $((normal + blocked))" \
    'c["auto"]["cost"]["interrupted_starts"] == 1' \
    'r["resumes"] == 1' 'r.get("interrupted") is None' || fail "report.json"
grep -q '^| run | .*, interrupted and resumed once |' "$D/report.md" || { grep '^| run' "$D/report.md"; fail "report.md does not say the run was resumed"; }
grep -q "$((normal + blocked)) engine starts (1 cut short by the interruption)" "$D/report.md" || { grep 'cost:' "$D/report.md"; fail "report.md: cost"; }
grep -q 'interrupted and resumed once' "$D/report.html" || fail "report.html does not say the run was resumed"
assert_no_leftovers
echo ok
