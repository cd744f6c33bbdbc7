#!/bin/bash
# tier: quick
# explain_cli: `moeprobe explain` on launch commands: env words, docker -e,
# image-tag versions, JSON shape, secret redaction, the closing sentence.
set -u
: "${MOEPROBE:?}"
fail() { echo "FAIL: $*"; exit 1; }
# a clean environment so the caller's VLLM_*/CUDA_* do not leak in
run() { env -i PATH="$PATH" ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" "$MOEPROBE" "$@"; }

out=$(run explain -- VLLM_SCALED_MM_BACKEND=marlin vllm serve nvidia/X --port 8000) || fail "exit $?"
echo "$out" | tail -n 1 | grep -q "^VLLM_SCALED_MM_BACKEND is not a vLLM variable in any upstream release; .*moeprobe minimize" \
    || fail "closing sentence: $out"
echo "$out" | grep -q "engine version: unknown" || fail "unknown version not said"

out=$(run explain --json -- docker run --gpus all -e HF_TOKEN=secret123 --env VLLM_TEST_FORCE_FP8_MARLIN=1 \
      -p 8000:8000 vllm/vllm-openai:v0.17.0-cu130 --model m --moe-backend marlin) || fail "docker exit $?"
case "$out" in *secret123*) fail "secret printed";; esac
python3 - "$out" <<'PY' || fail "docker JSON"
import json, sys
d = json.loads(sys.argv[1])
assert d["engine_version"] == "0.17.0" and d["version_known"], d
k = {x["knob"]: x for x in d["knobs"]}
assert "HF_TOKEN=***" in k, k
assert k["--moe-backend marlin"]["status"] == "active" and k["--moe-backend marlin"]["affects"] == "moe"
assert k["VLLM_TEST_FORCE_FP8_MARLIN=1"]["status"] == "overridden", k
assert "--gpus all" not in k and "-p 8000:8000" not in k, k
assert d["predicted_moe_backend"] == "MARLIN", d
PY

out=$(VLLM_TEST_FORCE_FP8_MARLIN=1 env PATH="$PATH" "$MOEPROBE" explain --json --engine-version 0.16.0 -- vllm serve m) || fail "exit $?"
echo "$out" | grep -q '"predicted_moe_backend": "MARLIN"' || fail "current environment not used: $out"

run explain --engine-version 0.15.0 -- vllm serve m --moe-backend cutlass | tail -n 1 | grep -q "does not exist in vLLM 0.15.0" \
    || fail "--moe-backend before 0.17"
# the first line is the verdict with its fix; exit 1 when the server will not start
out=$(run explain --engine-version 0.18.0 -- vllm serve m --moe-backend humming); rc=$?
[ $rc -eq 1 ] || fail "will not start: want exit 1, got $rc"
echo "$out" | head -n 1 | grep -q "^will not start: --moe-backend 'humming' is not a choice of vLLM 0.18.0 .* fix: use an NvFp4 MoE backend" \
    || fail "verdict line: $(echo "$out" | head -n 1)"
out=$(run explain --engine-version 0.20.0 -- vllm serve m --moe-backend CUTLASS) || fail "CUTLASS: exit $? (argparse normalises the value)"
echo "$out" | head -n 1 | grep -q "^MoE backend VLLM_CUTLASS, chosen by --moe-backend cutlass" || fail "CUTLASS verdict: $out"
out=$(run explain --engine-version 0.20.0 -- VLLM_NVFP4_GEMM_BACKEND=fbgemm vllm serve m --moe-backend marlin); [ $? -eq 1 ] || fail "fbgemm: want exit 1"
echo "$out" | head -n 1 | grep -q "^will not start: ValueError: Unknown VLLM_NVFP4_GEMM_BACKEND='fbgemm'" || fail "fbgemm verdict: $out"

# NGC tags are NVIDIA releases, mapped through the release notes, never read as versions
out=$(run explain -- docker run --gpus all -e VLLM_USE_FLASHINFER_MOE_FP4=0 nvcr.io/nvidia/vllm:26.03-py3 vllm serve M) || fail "NGC exit $?"
echo "$out" | grep -q "^engine version: vLLM 0.17.1 (NGC image nvcr.io/nvidia/vllm:26.03-py3 ships it: https://docs.nvidia.com/" \
    || fail "NGC 26.03: $out"
echo "$out" | grep -A1 "VLLM_USE_FLASHINFER_MOE_FP4=0" | grep -q "affects moe, active" || fail "FP4 gone on NGC 26.03: $out"
case "$out" in *"vLLM 26.03"*) fail "NGC tag read as a vLLM version";; esac
out=$(run explain -- docker run nvcr.io/nvidia/vllm:26.07-py3 vllm serve M) || fail "unknown NGC exit $?"
echo "$out" | grep -q "^engine version: unknown: NGC image nvcr.io/nvidia/vllm:26.07-py3 .*pass --engine-version" \
    || fail "unknown NGC: $out"
case "$out" in *"vLLM 26.07"*) fail "unknown NGC tag guessed";; esac
# --engine-version 25.10 is NGC's release 25.10, never vLLM 25.10 (exit 2 with the mapping)
err=$(run explain --engine-version 25.10 -- vllm serve m 2>&1 >/dev/null); [ $? -eq 2 ] || fail "--engine-version 25.10: want 2"
echo "$err" | grep -q "NGC container release.*ships vLLM 0.10.2" || fail "--engine-version 25.10: $err"
err=$("$MOEPROBE" qualify --engine-version 26.03-py3 --dry-run -- vllm serve m 2>&1 >/dev/null); [ $? -eq 2 ] || fail "qualify --engine-version 26.03-py3: want 2"
echo "$err" | grep -q "ships vLLM 0.17.1" || fail "qualify --engine-version 26.03-py3: $err"
# another project's image tags its own version: never read as vLLM's
out=$(run explain -- docker run lmcache/vllm-openai:v0.3.9 vllm serve M) || fail "lmcache exit $?"
echo "$out" | grep -q "^engine version: unknown: image lmcache/vllm-openai:v0.3.9 is not vLLM's own" || fail "lmcache: $out"

run explain --engine-version nonsense -- vllm serve m 2>/dev/null; [ $? -eq 2 ] || fail "bad version: want 2"
run explain 2>/dev/null; [ $? -eq 2 ] || fail "no command: want 2"
run explain --help | grep -q "usage: moeprobe explain" || fail "--help"
exit 0
