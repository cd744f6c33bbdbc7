#!/bin/bash
# qualify end to end: async-race, kernel-fault, stable, startup-failure and a
# no-op knob with the engine's unknown-variable warning, in one run. Every
# run has the GPU core dump with skip_abort, which keeps the traceback: the
# kernel-fault is pinned at the Python frame of its blocked run's traceback
# (the faulting launch) and its kernel is the one that run's dump names
# (docs/verdicts.md "GPU core dumps").
. "$(dirname "$0")/q_lib.sh"
qualify verdicts "$W/q-verdicts.ini" "${Q_FAST[@]}" \
    --candidate 'auto:' \
    --candidate 'cutlass: --moe-backend cutlass' \
    --candidate 'marlin: --moe-backend marlin' \
    --candidate 'trtllm: --moe-backend flashinfer_trtllm' \
    --candidate 'marlin-env: VLLM_SCALED_MM_BACKEND=marlin'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/verdicts.stderr"; fail "exit $Q_RC, want 0 (a recommendation)"; }
R="$Q_DIR/report.json"
check "$R" \
  'c["auto"]["verdict"] == "async-race"' \
  'c["auto"]["resolved"]["moe_backend"] == "FLASHINFER_CUTLASS"' \
  'c["auto"]["crash"]["class"] == "illegal-address"' \
  'c["auto"]["crash"]["after_requests"] == 2' \
  'c["auto"]["diagnosis"]["launch_blocking"] == "clean"' \
  'c["auto"]["diagnosis"]["requests_clean"] >= c["auto"]["diagnosis"]["requests_required"] > 0' \
  '0.05 < c["auto"]["diagnosis"]["throughput_ratio"] < 0.8' \
  'c["auto"]["crash"]["distinct_sites"] >= 2' \
  'c["cutlass"]["verdict"] == "kernel-fault"' \
  'c["cutlass"]["resolved"]["moe_backend"] == "VLLM_CUTLASS"' \
  'c["cutlass"]["diagnosis"]["launch_blocking"] == "crashed"' \
  '(c["cutlass"]["diagnosis"]["pinned_site"] or "").endswith(":cutlass_moe_fp4_grouped_gemm")' \
  'c["cutlass"]["crash"]["kernel"]["surfaced_only"] is False' \
  'c["cutlass"]["crash"]["kernel"]["attempt"].endswith("-blocking")' \
  'c["cutlass"]["crash"]["kernel"]["name"].startswith("cutlass::device_kernel<")' \
  'any("cutlass_moe_fp4_grouped_gemm" in s for s in c["cutlass"]["crash"]["sites"])' \
  '"launch_site" in c["cutlass"]["diagnosis"] and "launch_site" in c["auto"]["crash"]' \
  'c["auto"]["resolved"]["linear_kernels"].get("nvfp4") == c["auto"]["resolved"]["linear_kernel"] is not None' \
  'c["auto"]["resolved"]["unquantized_moe_backend"] is None' \
  'c["marlin"]["verdict"] == "stable"' \
  'c["marlin"]["requests"]["failed"] == 0 and c["marlin"]["requests"]["ok"] >= 11' \
  '0 < c["marlin"]["failure_rate_upper_95"] < 0.25' \
  'c["marlin"]["throughput"]["sequential_tok_s"] > 0' \
  '[x["level"] for x in c["marlin"]["throughput"]["concurrency"]] == [2]' \
  'c["marlin"]["latency_ms"]["ttft_p50"] is not None' \
  'c["trtllm"]["verdict"] == "startup-failure"' \
  '"does not support the deployment configuration" in c["trtllm"]["crash"]["message"] or "does not support" in c["trtllm"]["why"]' \
  'c["marlin-env"]["resolved"]["moe_backend"] == "FLASHINFER_CUTLASS"' \
  '"VLLM_SCALED_MM_BACKEND" in c["marlin-env"]["unknown_env"]' \
  'any(k["candidate"] == "marlin-env" and k["knob"] == "VLLM_SCALED_MM_BACKEND=marlin" and "Unknown vLLM environment variable" in k.get("engine_warning", "") for k in r["noop_knobs"])' \
  'any(set(g["candidates"]) >= {"auto", "marlin-env"} for g in r["same_backend_groups"])' \
  'r["recommendation"]["candidate"] == "marlin"' \
  'all(e.split(":")[0].endswith("server.log") for x in r["candidates"] for e in x["evidence"])' \
  'all(a["teardown"]["leftovers"] == 0 for x in r["candidates"] for a in x["attempts"])' \
  'r["fingerprint"]["engine_version"] == "0.19.0" and r["fingerprint"]["model"] == "test/q-verdicts-NVFP4"' \
  || fail "report fields"
# evidence points at real lines of the server logs
python3 - "$Q_DIR" <<'PY' || fail "evidence lines"
import json, sys, os
d = sys.argv[1]
r = json.load(open(os.path.join(d, "report.json")))
for c in r["candidates"]:
    for e in c["evidence"]:
        path, line = e.rsplit(":", 1)
        lines = open(os.path.join(d, path), errors="replace").read().split("\n")
        assert 1 <= int(line) <= len(lines), e
# the auto candidate's backend evidence is the selection line
line = [e for e in r["candidates"][0]["evidence"]][0]
path, n = line.rsplit(":", 1)
text = open(os.path.join(d, path), errors="replace").read().split("\n")[int(n) - 1]
assert "NvFp4 MoE backend" in text, text
PY
# the markdown report has the table and the recommendation
grep -q '^| candidate | verdict | resolved MoE backend | why (evidence)' "$Q_DIR/report.md" || fail "report.md table"
grep -q '^| marlin | stable | MARLIN | every phase ran with zero failures .* | `--moe-backend marlin` |$' "$Q_DIR/report.md" || fail "report.md marlin row"
grep -q 'server.log:' "$Q_DIR/report.md" || fail "report.md evidence"
# stdout is the markdown report, requests were recorded as they happened
cmp -s "$Q_TMP/verdicts.stdout" "$Q_DIR/report.md" || fail "stdout is not report.md"
[ "$(grep -c '"outcome":"ok"' "$Q_DIR/attempts/marlin-1/requests.jsonl")" -ge 11 ] || fail "requests.jsonl"
assert_no_leftovers
echo ok
