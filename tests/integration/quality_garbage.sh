#!/bin/bash
# quality_garbage.sh - the output check end to end: refengine's garbage mode
# gives garbage-output (quoted text, agreement in the report) while healthy
# backends of the same world stay stable, the garbage candidate is never
# recommended, and no world without a garbage backend raises a false alarm.
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
tmp=$(mktemp -d /tmp/quality-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed to read report.json"; exit 77; }
. "$ROOT/tests/integration/timeout_lib.sh"
# the output check alone: the scoring pass (q_correct*.sh tests it) is off
short=(--max-tokens 8 --seq 2 --conc 2:2 --no-diagnose --ready-timeout "$(tmul 30)" --agreement 0 --accuracy 0)

cat >"$tmp/mixed.ini" <<'W'
[engine]
version = 0.17.0
device = sm121
model = test/mixed-model
load_seconds = 0
[backend FLASHINFER_CUTLASS]
tokens_per_second = 4000
failure = garbage
[backend VLLM_CUTLASS]
tokens_per_second = 2000
[backend MARLIN]
# 10x slower than VLLM_CUTLASS: with 8-token answers a 2x gap is a few ms,
# within the scheduling jitter of a loaded sanitizer build
tokens_per_second = 200
W

"$MOEPROBE" qualify --out "$tmp/mixed" "${short[@]}" \
    --candidate 'auto:' --candidate 'cutlass: --moe-backend cutlass' \
    --candidate 'marlin: --moe-backend marlin' \
    -- "$REFENGINE" --world "$tmp/mixed.ini" --port '{port}' >"$tmp/mixed.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/mixed.out"; fail "mixed world: exit $rc, want 0"; }
python3 - "$tmp/mixed/report.json" <<'PY' || fail "mixed world report"
import json, sys
r = json.load(open(sys.argv[1]))
v = {c["name"]: c for c in r["candidates"]}
assert v["auto"]["verdict"] == "garbage-output", v["auto"]["verdict"]
assert v["cutlass"]["verdict"] == "stable" and v["marlin"]["verdict"] == "stable"
assert r["recommendation"]["candidate"] == "cutlass", r["recommendation"]
oc = v["auto"]["output_check"]
assert oc["result"] == "garbage" and oc["degenerate"] == oc["prompts"]
assert '"lock' in v["auto"]["why"], v["auto"]["why"]
assert oc["answers"][0]["output"].startswith('"locklock'), oc["answers"][0]
assert oc["agreement"]["reference"] in ("cutlass", "marlin")
fd = oc["agreement"]["first_difference"]
assert fd["token"] == 0 and fd["this"].startswith('"lock'), fd
m = v["marlin"]["output_check"]
assert m["result"] == "pass" and m["passed"] == m["prompts"]
assert r["output_check"]["status"] == "ok"
PY
grep -q '^## Output check' "$tmp/mixed/report.md" || fail "no output check in report.md"

# garbage alone: nothing qualifies (exit 1), the verdict is still garbage-output
"$MOEPROBE" qualify --out "$tmp/garbage" "${short[@]}" --candidate 'auto:' \
    -- "$REFENGINE" --world "$ROOT/tests/worlds/garbage.ini" --port '{port}' >"$tmp/g.out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$tmp/g.out"; fail "garbage world: exit $rc, want 1"; }
grep -q '"verdict":[[:space:]]*"garbage-output"' "$tmp/garbage/report.json" ||
    fail "garbage world: no garbage-output verdict"

# no false alarms: every shipped world without a garbage backend, default preset
n=0
for w in "$ROOT"/worlds/*.ini "$ROOT"/tests/worlds/*.ini; do
    # garbage is the positive case; a hang only tests the stall timeout
    grep -Eq '^[[:space:]]*failure[[:space:]]*=[[:space:]]*(garbage|hang)' "$w" && continue
    grep -Eq 'child_(ignores_sigterm|escapes_group)[[:space:]]*=[[:space:]]*true' "$w" && continue
    # a CUDA world needs the CUDA build of refengine (make cuda)
    grep -Eq "^[[:space:]]*cuda[[:space:]]*=[[:space:]]*true" "$w" && continue
    out="$tmp/w$n"; n=$((n + 1))
    "$MOEPROBE" qualify --out "$out" "${short[@]}" \
        -- "$REFENGINE" --world "$w" --port '{port}' >"$out.log" 2>&1
    rc=$?
    [ $rc -le 1 ] || { cat "$out.log"; fail "$w: exit $rc"; }
    if grep -q '"garbage-output"' "$out/report.json"; then
        fail "false alarm: garbage-output in $w"
    fi
    grep -q '"status":[[:space:]]*"ok"\|"status":[[:space:]]*"not-run"' "$out/report.json" ||
        fail "$w: output check not ok"
done
[ $n -ge 6 ] || fail "only $n worlds checked"
echo "ok: garbage told apart from healthy; $n worlds without false alarms"
