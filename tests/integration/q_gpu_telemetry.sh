#!/bin/bash
# GPU telemetry: with NVML (a fake libnvidia-ml, loaded through
# MOEPROBE_NVML_LIB) every attempt records SM clock, temperature, power,
# memory and throttle reasons; two candidates measured at clocks more than
# 5 % apart are flagged as not comparable; without NVML gpu_telemetry is
# null and the report says so.
. "$(dirname "$0")/q_lib.sh"
: "${BUILD:?BUILD must point at the build directory}"
FAKE="$BUILD/tests/libfake_nvml.so"
[ -f "$FAKE" ] || { echo "skip: $FAKE not built (make unit-bins)"; exit 77; }
WF="$ROOT/tests/worlds/fast.ini"
C=(--candidate 'auto:' --candidate 'marlin: --moe-backend marlin')

# each engine start sees the clock 300 MHz lower (the fake counts nvmlInit
# calls in a state file; the fingerprint's own call is the first, the GPU
# memory wait's (run/gpuwait.h, opened once per run) the second)
MOEPROBE_NVML_LIB="$FAKE" FAKE_NVML_CLOCK=2700 FAKE_NVML_CLOCK_STEP=-300 FAKE_NVML_THROTTLE=0x41 \
FAKE_NVML_STATE="$Q_TMP/nvml.state" qualify nvml "$WF" "${Q_FAST[@]}" --no-quality "${C[@]}"
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/nvml.stderr"; fail "nvml: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'r["fingerprint"]["gpu"].startswith("NVIDIA RTX PRO 6000")' \
    'c["auto"]["attempts"][0]["gpu_telemetry"]["samples"] >= 1' \
    'c["auto"]["attempts"][0]["gpu_telemetry"]["sm_clock_mhz"]["median"] == 2100' \
    'c["marlin"]["attempts"][0]["gpu_telemetry"]["sm_clock_mhz"]["median"] == 1800' \
    'c["auto"]["attempts"][0]["gpu_telemetry"]["temperature_c"]["max"] == 71' \
    'c["auto"]["attempts"][0]["gpu_telemetry"]["power_w"]["median"] == 412' \
    'c["auto"]["attempts"][0]["gpu_telemetry"]["memory_used_mib"]["median"] == 81920' \
    'c["auto"]["attempts"][0]["gpu_telemetry"]["throttle_reasons"] == ["hw_thermal"]' \
    'any("14 % apart" in x and "not directly comparable" in x for x in r["comparability"])' \
    'any("marlin: the GPU throttled its clocks (hw_thermal)" in x for x in r["comparability"])' \
    || fail "nvml: report fields"
grep -q "^## Are the numbers comparable?" "$Q_DIR/report.md" || fail "report.md: no comparability section"
grep -q "^- GPU (first attempt, .* samples): SM clock median 2100 MHz" "$Q_DIR/report.md" || fail "report.md: GPU line"

# the same clock for both: nothing to flag but the throttling
MOEPROBE_NVML_LIB="$FAKE" FAKE_NVML_CLOCK=2400 qualify same "$WF" "${Q_FAST[@]}" --no-quality "${C[@]}"
check "$Q_DIR/report.json" 'not any("apart" in x for x in r["comparability"])' || fail "same clocks flagged"

# the engine's start-up is not in the figures: while the engine loads its model (4 s) the
# GPU idles at 600 MHz, under load it runs at 1800 MHz; the median (and min) SM clock must be
# the load's - start-up samples (four or five at 600) would outnumber the load's (one or two)
printf '[engine]\nversion = 0.19.0\ndevice = sm120\nmodel = test/slow-start\nload_seconds = 4\n[backend FLASHINFER_CUTLASS]\ntokens_per_second = 5000\ncontention = 0\n' >"$Q_TMP/slowstart.ini"
MOEPROBE_NVML_LIB="$FAKE" FAKE_NVML_CLOCK=1800 FAKE_NVML_STARTUP_S=3.5 FAKE_NVML_STARTUP_CLOCK=600 \
qualify startup "$Q_TMP/slowstart.ini" "${Q_FAST[@]}" --no-quality --candidate 'auto:'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/startup.stderr"; fail "startup: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'c["auto"]["attempts"][0]["ready_s"] >= 3.5' \
    'c["auto"]["attempts"][0]["gpu_telemetry"]["samples"] >= 1' \
    'c["auto"]["attempts"][0]["gpu_telemetry"]["sm_clock_mhz"]["median"] == 1800' \
    'c["auto"]["attempts"][0]["gpu_telemetry"]["sm_clock_mhz"]["min"] == 1800' \
    || fail "startup: start-up samples in the GPU figures"

# no NVML
MOEPROBE_NVML_LIB=none qualify none "$WF" "${Q_FAST[@]}" --no-quality "${C[@]}"
check "$Q_DIR/report.json" \
    'c["auto"]["attempts"][0]["gpu_telemetry"] is None' \
    'any("not sampled (no NVML)" in x for x in r["comparability"])' \
    || fail "none: report fields"
grep -q "^- GPU: not sampled (no NVML)" "$Q_DIR/report.md" || fail "report.md: no-NVML line"
assert_no_leftovers
echo "ok: gpu telemetry"
