#!/bin/bash
# tier: quick
# crash_kernel.sh - the faulting kernel (#24): refengine imitates the CUDA
# driver's core dump where moeprobe turns it on. The faulty backend's kernel
# is named in crash.kernel from its CUDA_LAUNCH_BLOCKING=1 run (not
# surfaced_only: "kernel-fault in `...`" next to the verdict); the racy one's
# from a normal-mode run, "surfaced in `...`" with the words that the kernel
# that faults is where a race surfaces, not necessarily its cause; the first
# normal run of each keeps its Python traceback (no dump on exception); no
# dump file is left; --keep-coredumps keeps them; --no-coredump sets no
# variable and names no kernel.
. "$(dirname "$0")/q_lib.sh"
WC="$W/crash-gpu.ini"
C=(--candidate 'racy: --moe-backend flashinfer_cutlass' --candidate 'faulty: --moe-backend cutlass')
export MOEPROBE_KMSG=none MOEPROBE_NVML_LIB=none

qualify dump "$WC" "${Q_FAST[@]}" --no-quality "${C[@]}"
[ "$Q_RC" -eq 1 ] || { cat "$Q_TMP/dump.stderr"; fail "dump: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'c["faulty"]["verdict"] == "kernel-fault"' \
    'c["faulty"]["crash"]["kernel"]["family"] == "cutlass-grouped-gemm"' \
    'c["faulty"]["crash"]["kernel"]["surfaced_only"] is False' \
    'c["faulty"]["crash"]["kernel"]["attempt"].endswith("-blocking")' \
    'c["faulty"]["crash"]["kernel"]["exception"] == "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS"' \
    'c["faulty"]["crash"]["kernel"]["name"].startswith("cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<")' \
    'c["faulty"]["crash"]["kernel"]["mangled"].startswith("_ZN7cutlass13device_kernel")' \
    'c["faulty"]["crash"]["kernel"]["evidence"].endswith("/server.log:" + str(c["faulty"]["crash"]["kernel"]["line"]))' \
    'c["racy"]["verdict"] == "async-race"' \
    'c["racy"]["crash"]["kernel"]["surfaced_only"] is True' \
    'c["racy"]["crash"]["kernel"]["family"] == "flashinfer-cutlass-moe"' \
    'c["racy"]["crash"]["kernel"]["evidence"] is not None' \
    'all(not x["attempts"][0]["launch_blocking"] and "CUDA_ENABLE_COREDUMP_ON_EXCEPTION" not in x["attempts"][0]["command"] for x in r["candidates"])' \
    'all("CUDA_COREDUMP_PIPE=" in x["attempts"][0]["command"] for x in r["candidates"])' \
    'all(x["attempts"][0]["gpu_fault"]["kernels"] == [] for x in r["candidates"])' \
    'all(len(x["crash"]["sites"]) >= 1 for x in r["candidates"])' \
    'all("CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1" in a["command"] for x in r["candidates"] for a in x["attempts"] if a["launch_blocking"])' \
    'all(not k["knob"].startswith("CUDA_COREDUMP") for x in r["candidates"] for k in x["knob_delivery"])' \
    || fail "dump: crash.kernel"
md="$Q_DIR/report.md"
grep -q '| kernel-fault in `cutlass::device_kernel<…MainloopSm120ArrayTmaWarpSpecialized…>` (CUTLASS grouped GEMM) |' "$md" ||
    fail "report.md: the faulty kernel is not named next to the verdict"
grep -q '| async-race, surfaced in `cutlass::device_kernel<…tensorrt_llm…>` (FlashInfer CUTLASS fused MoE' "$md" ||
    { grep async-race "$md"; fail "report.md: the racy kernel is not named as where it surfaced"; }
grep -q 'the kernel that faults is where an asynchronous fault surfaces, which for a race is not necessarily its cause' "$md" ||
    fail "report.md: the race wording"
grep -q 'kernel-fault</span> <span class=note>in cutlass::device_kernel&lt;…MainloopSm120ArrayTmaWarpSpecialized…&gt; (CUTLASS grouped GEMM)</span>' "$Q_DIR/report.html" ||
    fail "report.html: the faulty kernel is not named next to the badge"
if ls "$Q_DIR"/attempts/*/core_* "$Q_DIR"/attempts/*/pipe_* >/dev/null 2>&1; then
    fail "a dump file or a pipe was left: $(ls "$Q_DIR"/attempts/*/core_* "$Q_DIR"/attempts/*/pipe_* 2>/dev/null)"
fi

qualify keep "$WC" "${Q_FAST[@]}" --no-quality --keep-coredumps --candidate 'faulty: --moe-backend cutlass'
ls "$Q_DIR"/attempts/faulty-*-blocking/core_* >/dev/null 2>&1 || fail "--keep-coredumps: no dump kept"
check "$Q_DIR/report.json" '"kept" == c["faulty"]["crash"]["kernel"]["dump"]["state"]' || fail "keep: state"

qualify off "$WC" "${Q_FAST[@]}" --no-quality --no-coredump --candidate 'faulty: --moe-backend cutlass'
check "$Q_DIR/report.json" \
    'c["faulty"]["verdict"] == "kernel-fault"' \
    'c["faulty"]["crash"]["kernel"] is None' \
    'all("CUDA_COREDUMP" not in a["command"] and "COREDUMP" not in a["command"] for a in c["faulty"]["attempts"])' \
    '"pinned at vllm/model_executor/layers/fused_moe/experts/cutlass_moe.py" in c["faulty"]["why"]' \
    || fail "--no-coredump"
assert_no_leftovers
echo ok
