#!/bin/bash
# q_era_preset.sh - the default preset fits the engine's version (#29 item
# 2): on vLLM 0.15 (no --moe-backend) its cutlass, marlin and
# flashinfer_cutlass candidates take the environment roads of that era and
# reach their backends instead of dying on 'unrecognized arguments'; on 0.13
# marlin has no road (VLLM_TEST_FORCE_FP8_MARLIN does not select the NvFp4
# MoE backend before 0.15) and is not-applicable, never started;
# --engine-version fits the candidates before the first start.
. "$(dirname "$0")/q_lib.sh"
"$MOEPROBE" resolve --quiet --out "$Q_TMP/r15" -- "$REFENGINE" --world "$ROOT/worlds/era-0.15-oracle.ini" \
    --port '{port}' >/dev/null 2>"$Q_TMP/r15.err" || { cat "$Q_TMP/r15.err"; fail "resolve 0.15: exit $?"; }
check "$Q_TMP/r15/report.json" \
    'r["preset_version"] == "0.15.1"' \
    'c["cutlass"]["knobs"] == {"env": {"VLLM_USE_FLASHINFER_MOE_FP4": "0"}, "args": []}' \
    'c["cutlass"]["resolved"]["moe_backend"] == "VLLM_CUTLASS"' \
    'c["marlin"]["knobs"]["env"] == {"VLLM_TEST_FORCE_FP8_MARLIN": "1"}' \
    'c["marlin"]["resolved"]["moe_backend"] == "MARLIN"' \
    'c["flashinfer_cutlass"]["knobs"]["env"]["VLLM_USE_FLASHINFER_MOE_FP4"] == "1"' \
    'not any("unrecognized arguments" in (x.get("why") or "") for x in r["candidates"])' \
    'not any(x["verdict"] == "not-applicable" for x in r["candidates"])' \
    || fail "0.15: the preset did not take the era's roads"

qualify e13 "$ROOT/worlds/era-0.13-preoracle.ini" "${Q_FAST[@]}" --no-quality --only auto,marlin
[ "$Q_RC" = 0 ] || { cat "$Q_TMP/e13.stderr"; fail "0.13: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'c["marlin"]["verdict"] == "not-applicable"' \
    'c["marlin"]["why"].startswith("not applicable to vLLM 0.13.0")' \
    '"VLLM_TEST_FORCE_FP8_MARLIN" in c["marlin"]["why"]' \
    'c["marlin"]["attempts"] == [] and c["marlin"]["finished"]' \
    'c["auto"]["verdict"] == "stable"' \
    || fail "0.13: marlin"
[ ! -e "$Q_DIR/attempts/marlin-1" ] || fail "0.13: a not-applicable candidate was started"
grep -q "not-applicable" "$Q_DIR/report.md" || fail "0.13: report.md lacks the verdict"

# --engine-version: the first (and only) candidate started already has its 0.15 knobs
qualify ev "$ROOT/worlds/era-0.15-oracle.ini" "${Q_FAST[@]}" --no-quality --only marlin --engine-version 0.15.1
[ "$Q_RC" = 0 ] || { cat "$Q_TMP/ev.stderr"; fail "--engine-version: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'c["marlin"]["knobs"]["env"] == {"VLLM_TEST_FORCE_FP8_MARLIN": "1"}' \
    'c["marlin"]["resolved"]["moe_backend"] == "MARLIN"' 'c["marlin"]["verdict"] == "stable"' \
    || fail "--engine-version 0.15.1"
assert_no_leftovers
echo ok
