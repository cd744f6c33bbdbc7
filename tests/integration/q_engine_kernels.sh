#!/bin/bash
# q_engine_kernels.sh - qualify's and resolve's kernel coverage check on a
# GPU of compute capability 12.0 (the fake NVML): with --engine-dir, and
# found through a host `vllm` command's Python environment (its #! line).
# The engine's Marlin library carries only sm_121a SASS, so the plan names
# the candidate that picks Marlin and the fingerprint (report.json, report.md)
# has the coverage; an --engine-dir that is no directory is a usage error.
. "$(dirname "$0")/q_lib.sh"
NVML="$(dirname "$MOEPROBE")/../tests/libfake_nvml.so"
[ -f "$NVML" ] || NVML="$ROOT/build/rel/tests/libfake_nvml.so"
[ -f "$NVML" ] || { echo "SKIP: the fake NVML library is not built (make unit-bins)"; exit 77; }
export MOEPROBE_NVML_LIB=$NVML
SP="$ROOT/tests/data/engine/site-packages"
E="$Q_TMP/engine"
mkdir -p "$E/vllm"
# sm_120f: the FP4 kernels of VLLM_CUTLASS (arch_specific) can be in it on 12.x
cp "$SP/flashinfer_jit_cache/jit_cache/fused_moe_120/fused_moe_120.so" "$E/vllm/_C.abi3.so"
cp "$SP/other/_spark_only.so" "$E/vllm/_moe_C.abi3.so" # sm_121a only: no Marlin on 12.0
CANDS=(--candidate 'auto:' --candidate 'marlin: --moe-backend marlin' --candidate 'cutlass: --moe-backend cutlass')

"$MOEPROBE" qualify --out "$Q_TMP/q" --engine-dir "$E" "${CANDS[@]}" --seq 2 --conc 2:2 --max-tokens 8 \
    --no-diagnose --no-quality -- "$REFENGINE" --world "$ROOT/tests/worlds/fast.ini" --port '{port}' \
    >/dev/null 2>"$Q_TMP/q.err"
rc=$?
[ $rc -le 1 ] || { cat "$Q_TMP/q.err"; fail "qualify --engine-dir: exit $rc"; }
grep -q "^moeprobe: plan: candidate 'marlin' (MARLIN): vllm/_moe_C.abi3.so carries no SASS that sm_120 runs; it cannot run natively" "$Q_TMP/q.err" ||
    { cat "$Q_TMP/q.err"; fail "no plan line for marlin"; }
grep -q "plan: candidate 'cutlass'" "$Q_TMP/q.err" && fail "a plan line for cutlass, whose kernels run"
check "$Q_TMP/q/report.json" 'r["fingerprint"]["engine_kernels"]["sm"] == "120"' \
    '{b["backend"]: b["runs"] for b in r["fingerprint"]["engine_kernels"]["backends"]}["MARLIN"] == "no"' \
    '{b["backend"]: b["runs"] for b in r["fingerprint"]["engine_kernels"]["backends"]}["VLLM_CUTLASS"] == "native"' ||
    fail "qualify: fingerprint.engine_kernels"
grep -q '^| engine kernels | 2 libraries with CUDA code' "$Q_TMP/q/report.md" || fail "report.md: engine kernels"

# resolve, with the engine found through a host `vllm` (a venv's bin/vllm)
V="$Q_TMP/venv"
mkdir -p "$V/bin" "$V/lib/python3.12/site-packages/vllm" "$V/lib/python3.12/site-packages/torch"
cp "$E/vllm/"*.so "$V/lib/python3.12/site-packages/vllm/"
cp "$SP/vllm/_moe_C.abi3.so" "$V/lib/python3.12/site-packages/torch/libnot_the_engine.so"
ln -s /bin/sh "$V/bin/python3"
printf '#!%s\nshift; exec "%s" --world "%s" "$@"\n' "$V/bin/python3" "$REFENGINE" "$ROOT/tests/worlds/fast.ini" >"$V/bin/vllm"
chmod +x "$V/bin/vllm"
PATH="$V/bin:$PATH" "$MOEPROBE" resolve --out "$Q_TMP/r" "${CANDS[@]}" -- vllm serve m --port '{port}' \
    >/dev/null 2>"$Q_TMP/r.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/r.err"; fail "resolve: exit $rc"; }
grep -q "^moeprobe: engine kernels ($V/bin/../lib/python3.12/site-packages): 2 libraries" "$Q_TMP/r.err" ||
    { cat "$Q_TMP/r.err"; fail "resolve: the host vllm's environment was not found or scanned only the engine's packages"; }
grep -q "plan: candidate 'marlin' (MARLIN)" "$Q_TMP/r.err" || fail "resolve: no plan line for marlin"

"$MOEPROBE" qualify --out "$Q_TMP/bad" --engine-dir /nonexistent/dir -- "$REFENGINE" --port '{port}' \
    >/dev/null 2>"$Q_TMP/bad.err"
rc=$?
[ $rc -eq 2 ] || { cat "$Q_TMP/bad.err"; fail "--engine-dir /nonexistent: exit $rc, want 2"; }
assert_no_leftovers
echo "ok"
