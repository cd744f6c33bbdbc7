#!/bin/bash
# refengine after the selection lines (#25): the target's prepare/finalize
# after its weights, then with --speculative-config "Loading drafter
# model..." and the drafter's own unquantized MoE selection (drafter.c)
# before "Model loading took" (as a real v0.20.0 log prints them); the FlashInfer autotuner's lines in FlashInfer's logger format
# in the warm-up, off with enable_flashinfer_autotune=false; a drafter whose
# profile run fails (vllm PR #39825); the v0.29.0 W4A16 dense kernel on SM12x
# and VLLM_DISABLED_KERNELS. moeprobe's scanner reads every one of them back,
# and names the known issues.
. "$(dirname "$0")/re_lib.sh"
: "${MOEPROBE:?}"
SPEC='{"method":"qwen3_next_mtp","num_speculative_tokens":2}'

run_ready() { # NAME WORLD [ARGS]: start, wait for ready, stop
    local name=$1; shift
    re_start "$name" "$@"
    re_ready
    kill -TERM "$RE_PID"
    re_wait_exit
}

# line_order PATTERN...: each pattern's first line comes after the previous one's
line_order() {
    local prev=0 n p
    for p in "$@"; do
        n=$(grep -n -m1 -F -- "$p" "$RE_LOG" | cut -d: -f1)
        [ -n "$n" ] || fail "no line with '$p'"
        [ "$n" -gt "$prev" ] || fail "'$p' (line $n) comes before line $prev"
        prev=$n
    done
}

scan_json() { "$MOEPROBE" scan --json "$RE_LOG" >"$RE_TMP/scan.json" || fail "scan: exit $?"; }
jcheck() { # PYTHON-EXPR over j (the log's scan result)
    python3 - "$RE_TMP/scan.json" "$1" <<'PY' || fail "scan: $2"
import json, sys
j = json.load(open(sys.argv[1]))[0]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

W20="$ROOT/worlds/era-0.20-mtp-drafter.ini"
run_ready mtp "$W20" --moe-backend flashinfer_cutlass --speculative-config "$SPEC"
line_order "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend" "Loading weights took" \
    "[nvfp4.py:485] Using MoEPrepareAndFinalizeNoDPEPModular" "Loading drafter model..." \
    "Using FlashInfer CUTLASS Unquantized MoE backend out of potential backends: ['FlashInfer TRTLLM', 'FlashInfer CUTLASS', 'TRITON', 'BATCHED_TRITON']." \
    "Model loading took" \
    "GPU KV cache size" "[Autotuner]: Autotuning process starts ..." \
    "[Autotuner]: Skipped 14 unsupported tactic(s) for trtllm::fused_moe::gemm1" \
    "[Autotuner]: Autotuning process ends" "init engine (profile, create kv cache, warmup model)" \
    "Application startup complete"
grep -qP '^\(EngineCore pid=\d+\) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - INFO - autotuner\.py:457 - flashinfer\.jit: \[Autotuner\]: Autotuning process starts \.\.\.$' "$RE_LOG" ||
    fail "FlashInfer's logger format"
grep -q "speculative_config=SpeculativeConfig(method='[a-z0-9_]*mtp', model='RedHatAI/Qwen3.6-35B-A3B-NVFP4', num_spec_tokens=2)" "$RE_LOG" ||
    fail "engine config: speculative_config"
grep -q "'speculative_config': {'method': 'qwen3_next_mtp', 'num_speculative_tokens': 2}" "$RE_LOG" ||
    fail "non-default args: speculative_config as a dict"
scan_json
jcheck 'j["resolved"]["moe_backend"] == "FLASHINFER_CUTLASS"' "target MoE"
jcheck 'j["resolved"]["drafter"]["moe_backend"] == "FlashInfer CUTLASS"' "drafter MoE"
jcheck 'j["tallies"]["autotuner-unsupported"]["count"] == 14' "autotuner tally"
jcheck '[o["value"] for o in j["resolved"]["other"] if o["what"] == "MoE prepare/finalize"] == ["MoEPrepareAndFinalizeNoDPEPModular"]' "prepare/finalize: the target's only"
jcheck 'any(f["code"] == "autotuner-tactics" for f in j["findings"])' "autotuner finding"

# no --speculative-config: no drafter; autotuning off: no autotuner lines
run_ready plain "$W20" --kernel-config '{"enable_flashinfer_autotune": false}'
grep -q "drafter" "$RE_LOG" && fail "a drafter without --speculative-config"
grep -q "Autotun" "$RE_LOG" && fail "autotuner lines with enable_flashinfer_autotune=false"
grep -q "enable_flashinfer_autotune=False" "$RE_LOG" || fail "KernelConfig shows the autotuner off"

# the drafter's profile run fails (vllm PR #39825); without the drafter it serves
re_start nemo "$ROOT/worlds/spark-nemotron-super-mtp.ini" --speculative-config '{"method":"mtp","num_speculative_tokens":1}'
re_wait_line 'Engine core initialization failed' || fail "the drafter's failure did not come"
re_wait_exit
[ "$RE_RC" = 1 ] || fail "drafter failure: exit $RE_RC"
grep -q "RuntimeError: Invalid activation type." "$RE_LOG" || fail "drafter error"
line_order "Loading drafter model..." "Using FlashInfer CUTLASS Unquantized MoE backend" \
    "Model loading took" "EngineCore failed to start." "Engine core initialization failed"
scan_json
jcheck 'j["crash"] is not None or j["startup_error"] is not None' "no failure read"
jcheck 'any(k["id"] == "vllm-39825-drafter-invalid-activation" for k in j["known_issues"])' "known issue #39825 not named"
run_ready nemo2 "$ROOT/worlds/spark-nemotron-super-mtp.ini"
[ "$RE_RC" = 0 ] || fail "without the drafter: exit $RE_RC"

# v0.29.0 on SM12x: the weight-only dense kernel, unless VLLM_DISABLED_KERNELS names it
printf '[engine]\nversion = 0.29.0\ndevice = sm121\nmodel = nvidia/Qwen3-30B-A3B-NVFP4\nload_seconds = 0.2\n' >"$RE_TMP/w29.ini"
run_ready w29 "$RE_TMP/w29.ini"
grep -q "Using FlashInferCuteDslNvFp4W4A16LinearKernel for NVFP4 GEMM" "$RE_LOG" || fail "0.29.0 W4A16"
scan_json
jcheck 'any(k["id"] == "unsloth-10417-w4a16-dense-sm12x" for k in j["known_issues"])' "known issue W4A16 not named"
VLLM_DISABLED_KERNELS=FlashInferCuteDslNvFp4W4A16LinearKernel run_ready w29d "$RE_TMP/w29.ini"
grep -q "Using FlashInferCutlassNvFp4LinearKernel for NVFP4 GEMM" "$RE_LOG" || fail "VLLM_DISABLED_KERNELS"

# moeprobe resolve reads the drafter's selection (logged before "Model loading
# took", where it stops) into report.json; a drafter makes another configuration
"$MOEPROBE" resolve --out "$RE_TMP/rs" --candidate "mtp: --speculative-config '$SPEC'" \
    --candidate 'plain:' -- "$REFENGINE" --world "$W20" --port '{port}' >/dev/null 2>"$RE_TMP/rs.err" ||
    { cat "$RE_TMP/rs.err"; fail "resolve: exit $?"; }
python3 - "$RE_TMP/rs/report.json" <<'PY' || fail "resolve: report.json resolved.drafter"
import json, sys
r = json.load(open(sys.argv[1]))
c = {x["name"]: x for x in r["candidates"]}
d = c["mtp"]["resolved"]["drafter"]
assert d["moe_backend"] == "FlashInfer CUTLASS" and d["moe_kind"] == "Unquantized", d
assert d["evidence"].startswith("attempts/mtp-1/server.log:"), d
assert c["plain"]["resolved"]["drafter"] is None
assert c["plain"]["same_as"] is None and c["mtp"]["same_as"] is None
PY
grep -q "^- MTP drafter: its own MoE selection FlashInfer CUTLASS (Unquantized)" "$RE_TMP/rs/report.md" ||
    fail "report.md: the drafter line"
echo ok
