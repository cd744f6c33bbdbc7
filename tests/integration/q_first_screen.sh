#!/bin/bash
# tier: quick
# q_first_screen.sh - the reports' first screen (#29 items 5 and 1): one
# table, a line per candidate with its verdict, backend and the one-line
# reason linked to the log line it rests on; a crashed candidate shows how
# many requests it served ("n=2 before crash"), never the rate of a single
# request as a speed; the next steps give the exact serve command of the
# recommendation (with the inherited variable that acts on a selection), a
# soak and a bug report for the failing candidate; the inherited
# environment is on the first screen of report.md, report.html and in
# report.json, and in the bug report of `report --format issue`.
. "$(dirname "$0")/q_lib.sh"
VLLM_MARLIN_USE_ATOMIC_ADD=1 qualify fs "$ROOT/worlds/demo-nemotron-super.ini" "${Q_FAST[@]}" \
    --no-quality --no-diagnose --candidate 'auto:' --candidate 'cutlass: --moe-backend cutlass'
[ "$Q_RC" = 0 ] || { cat "$Q_TMP/fs.stderr"; fail "exit $Q_RC"; }
MD="$Q_DIR/report.md"
row=$(grep '^| auto |' "$MD")
echo "$row" | grep -q '^| auto | crashed, surfaced in `[^|]*` ([^|]*) | FLASHINFER_CUTLASS | ' || fail "auto's row: $row"
echo "$row" | grep -Eq '\| n=2 before crash \| — \|' || fail "auto's speed is not 'n=2 before crash': $row"
ev=$(echo "$row" | grep -Eo '\(\[attempts/auto-1/server\.log:[0-9]+\]\(attempts/auto-1/server\.log\)\)') ||
    fail "no evidence link in: $row"
n=$(echo "$ev" | grep -Eo ':[0-9]+' | tr -d :)
sed -n "${n}p" "$Q_DIR/attempts/auto-1/server.log" | grep -q "illegal memory access" ||
    fail "the evidence line $n is not the crash: $(sed -n "${n}p" "$Q_DIR/attempts/auto-1/server.log")"
grep -Eq '^\| cutlass \| stable \| VLLM_CUTLASS \| every phase ran with zero failures .* \| [0-9]+\.[0-9] \| 2: [0-9]+\.[0-9] \|' "$MD" ||
    fail "cutlass's row: $(grep '^| cutlass |' "$MD")"
# the next steps, in this order, after the table
awk '/^## Candidates/ {c = 1} /^## Next steps/ && c {n = 1} END {exit !n}' "$MD" || fail "no next steps after the table"
grep -q "^  VLLM_MARLIN_USE_ATOMIC_ADD=1 $REFENGINE --world .*demo-nemotron-super.ini --port 8000 --moe-backend cutlass$" "$MD" ||
    fail "no exact serve command: $(grep -A3 'serve with' "$MD")"
grep -q "^  moeprobe soak --duration 9h --candidate 'cutlass: --moe-backend cutlass' -- .* --port {port}$" "$MD" ||
    fail "no soak: $(grep -A3 'soak it' "$MD")"
grep -q "^  moeprobe report --format issue --candidate auto .* > auto-issue.md$" "$MD" || fail "no issue report"
# the inherited variable: first screen of every report
head -n 14 "$MD" | grep -q 'Inherited environment.*`VLLM_MARLIN_USE_ATOMIC_ADD=1` (\*\*acts on the dense kernel selection\*\*)' ||
    fail "report.md: the inherited variable is not on the first screen"
grep -q 'class="fp inh bad">.*VLLM_MARLIN_USE_ATOMIC_ADD=1' "$Q_DIR/report.html" || fail "report.html: inherited"
grep -q '<h2>Next steps</h2>' "$Q_DIR/report.html" || fail "report.html: next steps"
grep -q '<td class=n data-l="seq tok/s">n=2 before crash</td>' "$Q_DIR/report.html" || fail "report.html: crash speed"
check "$Q_DIR/report.json" 'r["fingerprint"]["inherited_env"]["VLLM_MARLIN_USE_ATOMIC_ADD"] == "1"' \
    '[x for x in r["fingerprint"]["inherited_env_detail"] if x["name"] == "VLLM_MARLIN_USE_ATOMIC_ADD"][0]["acts_on_selection"]' \
    || fail "report.json"
# the bug report for upstream says what the engine got from the shell too
# (its launch command alone does not show an exported variable)
"$MOEPROBE" report --format issue --candidate auto "$Q_DIR" >"$Q_TMP/issue.md" 2>/dev/null || fail "issue: exit $?"
grep -q '^\*\*Inherited environment\*\*.*`VLLM_MARLIN_USE_ATOMIC_ADD=1` (\*\*acts on the dense kernel selection\*\*)' "$Q_TMP/issue.md" ||
    fail "report --format issue lacks the inherited variable"
assert_no_leftovers
echo ok
