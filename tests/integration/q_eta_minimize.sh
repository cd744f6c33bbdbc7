#!/bin/bash
# q_eta_minimize.sh - minimize's ETA after its first test (--from, which
# crashes) is within 30 % of the time its other tests take (#29 item 6):
# the tests ddmin is expected to run for 3 differences, half failing like
# --from, half running a pass's workload (extended to the clean requests a
# pass needs). It printed "ETA 0 s" before.
. "$(dirname "$0")/q_lib.sh"
python3 "$ROOT/tests/integration/eta_lib.py" 'moeprobe: plan:' 0.3 -- \
    "$MOEPROBE" minimize --out "$Q_TMP/min" --max-tokens 32 --seq 3 --conc 4:8 --no-quality \
    --diagnose-max-requests 60 --from '' --to '--moe-backend cutlass VLLM_X=1 VLLM_Y=2' \
    -- "$REFENGINE" --world "$ROOT/worlds/demo-nemotron-super.ini" --port '{port}' ||
    fail "minimize: the ETA after the first test is off by more than 30 %"
assert_no_leftovers
echo ok
