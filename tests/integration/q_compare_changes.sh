#!/bin/bash
# tier: quick
# q_compare_changes.sh - `report --compare` opens with what changed from the
# first run to the last (#29): after an engine upgrade the candidate that was
# stable crashes, and another got slower; both are regressions, listed
# first and marked, beside the engine version that changed; a crashed
# attempt's few requests are no speed to compare (there was no
# summary: the regression was one cell among many). report.json's compare
# has the same as "changes". A variable exported for the second run only is
# a change of the run too (it may move every candidate).
. "$(dirname "$0")/q_lib.sh"
world() { # FILE VERSION MARLIN-FAILURE CUTLASS-RATE
    cat >"$1" <<EOF2
[engine]
version = $2
device = sm121
model = test/upgrade-model
load_seconds = 0
[backend VLLM_CUTLASS]
tokens_per_second = $4
contention = 0
[backend MARLIN]
tokens_per_second = 100
contention = 0
failure = $3
crash_after_requests = 3
sites = fused_marlin_moe
error = an illegal memory access was encountered
EOF2
}
world "$Q_TMP/old.ini" 0.17.0 none 800
world "$Q_TMP/new.ini" 0.19.0 async-race 100
C=(--no-quality --no-diagnose --candidate 'marlin: --moe-backend marlin' --candidate 'cutlass: --moe-backend cutlass')
qualify old "$Q_TMP/old.ini" "${Q_FAST[@]}" "${C[@]}"
[ "$Q_RC" = 0 ] || { cat "$Q_TMP/old.stderr"; fail "old: exit $Q_RC"; }
VLLM_MARLIN_USE_ATOMIC_ADD=1 qualify new "$Q_TMP/new.ini" "${Q_FAST[@]}" "${C[@]}"
"$MOEPROBE" report --compare "$Q_TMP/old" "$Q_TMP/new" >"$Q_TMP/cmp.md" 2>"$Q_TMP/cmp.err" ||
    { cat "$Q_TMP/cmp.err"; fail "compare: exit $?"; }
sed -n '/^## What changed/,/^| |/p' "$Q_TMP/cmp.md" >"$Q_TMP/changed.md"
grep -q '^\*\*3 regressions\*\* after the engine upgrade\.' "$Q_TMP/changed.md" || { cat "$Q_TMP/cmp.md"; fail "no regression count"; }
grep -E '^- ' "$Q_TMP/changed.md" | head -3 | grep -c '\*\*regression\*\*' | grep -qx 3 ||
    fail "the regressions are not first: $(cat "$Q_TMP/changed.md")"
! grep -q 'marlin sequential' "$Q_TMP/changed.md" || fail "a crashed attempt's speed was compared"
grep -q '^- \*\*regression\*\*: marlin verdict: stable → crashed$' "$Q_TMP/changed.md" || fail "marlin's verdict"
grep -Eq '^- \*\*regression\*\*: cutlass sequential tok/s: [0-9.]+ → [0-9.]+ \(-[0-9]+ %\)$' "$Q_TMP/changed.md" ||
    fail "cutlass's speed"
grep -q '^- engine version: 0.17.0 → 0.19.0$' "$Q_TMP/changed.md" || fail "engine version"
grep -q '^- inherited VLLM_MARLIN_USE_ATOMIC_ADD: (not set) → 1$' "$Q_TMP/changed.md" ||
    fail "the variable exported for the second run is not a change: $(cat "$Q_TMP/changed.md")"
"$MOEPROBE" report --compare --format json "$Q_TMP/old" "$Q_TMP/new" >"$Q_TMP/cmp.json" || fail "compare json"
check "$Q_TMP/cmp.json" \
    'sum(x["regression"] for x in r["changes"]) == 3' \
    '{"candidate": "marlin", "what": "verdict", "from": "stable", "to": "crashed", "regression": True, "improvement": False} in r["changes"]' \
    '[x["what"] for x in r["changes"] if x["candidate"] is None] == ["engine version", "inherited VLLM_MARLIN_USE_ATOMIC_ADD"]' || fail "report.json changes"
# the same run twice: nothing changed
"$MOEPROBE" report --compare "$Q_TMP/old" "$Q_TMP/old" | grep -q '^Nothing: the same verdicts' || fail "same runs"
assert_no_leftovers
echo ok
