#!/bin/bash
# qualify across vLLM eras: the flag before 0.17 is an argparse error quoted
# as the startup failure; a removed env var in 0.23 is an unknown variable
# that changes nothing; the pre-oracle era still resolves.
. "$(dirname "$0")/q_lib.sh"
qualify e15 "$ROOT/worlds/era-0.15-oracle.ini" "${Q_FAST[@]}" --no-quality \
    --candidate 'auto:' --candidate 'cutlass: --moe-backend cutlass'
check "$Q_DIR/report.json" \
  'c["cutlass"]["verdict"] == "startup-failure"' \
  '"unrecognized arguments: --moe-backend cutlass" in c["cutlass"]["crash"]["message"]' \
  'c["cutlass"]["evidence"] and c["cutlass"]["evidence"][0].startswith("attempts/cutlass-1/server.log:")' \
  'c["auto"]["resolved"]["moe_backend"] is not None' \
  'r["fingerprint"]["engine_version"].startswith("0.15")' \
  || fail "era 0.15"
qualify e23 "$ROOT/worlds/era-0.23-removed-env.ini" "${Q_FAST[@]}" --no-quality \
    --candidate 'auto:' --candidate 'fi0: VLLM_USE_FLASHINFER_MOE_FP4=0'
check "$Q_DIR/report.json" \
  'c["fi0"]["resolved"]["moe_backend"] == c["auto"]["resolved"]["moe_backend"]' \
  '"VLLM_USE_FLASHINFER_MOE_FP4" in c["fi0"]["unknown_env"]' \
  'any(k["knob"] == "VLLM_USE_FLASHINFER_MOE_FP4=0" for k in r["noop_knobs"])' \
  || fail "era 0.23"
qualify e13 "$ROOT/worlds/era-0.13-preoracle.ini" "${Q_FAST[@]}" --no-quality \
    --candidate 'fi: VLLM_USE_FLASHINFER_MOE_FP4=1 VLLM_FLASHINFER_MOE_BACKEND=throughput'
check "$Q_DIR/report.json" \
  'c["fi"]["resolved"]["moe_backend"] == "FLASHINFER_CUTLASS"' \
  'r["fingerprint"]["engine_version"].startswith("0.13")' \
  || fail "era 0.13"
assert_no_leftovers
echo ok
