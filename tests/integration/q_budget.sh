#!/bin/bash
# The diagnosis within a stated budget: before the CUDA_LAUNCH_BLOCKING=1 run
# moeprobe prints what it will cost; over --diagnose-budget it says so, stops
# there and reports `crashed` with how many more clean requests would decide
# it; within the budget the same race is an async race. The blocked run
# serves at the highest concurrency step only (after warm-up and sequential). With a cheap start-up
# a second normal run pays for itself (it sharpens the estimate first).
. "$(dirname "$0")/q_lib.sh"
WS="$ROOT/tests/worlds/slow-race.ini"
run() { # NAME BUDGET
    local name=$1 budget=$2
    Q_DIR="$Q_TMP/$name"
    "$MOEPROBE" qualify --out "$Q_DIR" --seq 3 --conc 2:4 --conc 3:3 --max-tokens 8 --grace 3 --no-quality \
        --candidate 'auto:' --diagnose-budget "$budget" -- "$REFENGINE" --world "$WS" --port '{port}' \
        >"$Q_TMP/$name.stdout" 2>"$Q_TMP/$name.stderr"
    Q_RC=$?
}

run short 2s
[ "$Q_RC" -eq 1 ] || { cat "$Q_TMP/short.stderr"; fail "short: exit $Q_RC, want 1"; }
check "$Q_DIR/report.json" \
    'c["auto"]["verdict"] == "crashed"' \
    '"stopped at --diagnose-budget" in c["auto"]["diagnosis"]["note"]' \
    '"more clean requests" in c["auto"]["diagnosis"]["note"]' \
    '"over the --diagnose-budget of 2 s" in c["auto"]["diagnosis"]["reasoning"]' \
    'c["auto"]["diagnosis"]["requests_clean"] < c["auto"]["diagnosis"]["requests_required"]' \
    'sum(not a["launch_blocking"] for a in c["auto"]["attempts"]) >= 2' \
    || fail "short budget"
grep -q "the CUDA_LAUNCH_BLOCKING=1 run needs .* clean requests: about .* at concurrency 3" \
    "$Q_TMP/short.stderr" || { cat "$Q_TMP/short.stderr"; fail "no estimate before the blocked run"; }
grep -q "running to the budget" "$Q_TMP/short.stderr" || fail "the budget is not announced"
grep -q "one more normal run first: it should cost about" "$Q_TMP/short.stderr" ||
    fail "no sharpening with a cheap start"

run long 1h
[ "$Q_RC" -eq 1 ] || { cat "$Q_TMP/long.stderr"; fail "long: exit $Q_RC, want 1 (an async race is not recommended)"; }
check "$Q_DIR/report.json" 'c["auto"]["verdict"] == "async-race"' || fail "within budget"
python3 - "$Q_DIR" <<'PY' || fail "the blocked run does not serve at the highest concurrency step only"
import json, os, sys
d = sys.argv[1]
c = json.load(open(os.path.join(d, "report.json")))["candidates"][0]
b = [a for a in c["attempts"] if a["launch_blocking"]][0]
phases = [json.loads(l)["phase"] for l in open(os.path.join(d, b["dir"], "requests.jsonl"))]
assert "concurrency-2" not in phases and "concurrency-3" in phases, sorted(set(phases))
assert phases[0] == "warmup" and "sequential" in phases, phases[:5]
PY
"$MOEPROBE" qualify --out "$Q_TMP/bad" --diagnose-budget 0 -- true >/dev/null 2>&1
[ $? -eq 2 ] || fail "--diagnose-budget 0 is not a usage error"
assert_no_leftovers
echo "ok: diagnosis budget"
