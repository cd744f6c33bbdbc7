#!/bin/bash
# crash_kernel.sh - the faulting kernel (#24): refengine imitates the CUDA
# driver's core dump, which moeprobe turns on in every run with skip_abort
# (docs/verdicts.md "GPU core dumps"). Every run has the variables, the
# hang's pipe, its kernel named and its Python traceback (sites, the CUDA
# error). The faulty backend's kernel is named in crash.kernel from its
# CUDA_LAUNCH_BLOCKING=1 run (not surfaced_only: "kernel-fault in `...`"
# next to the verdict) and its pinned site is the traceback's frame; the
# racy one's from a normal-mode run, "surfaced in `...`" with the words that
# the kernel that faults is where a race surfaces, not necessarily its
# cause; no dump file is left; --keep-coredumps keeps them. A candidate's
# own generation flags without skip_abort win: the process aborts, the dump
# replaces the traceback and gives the crash's class, message and the
# pinned site. A candidate that turns the dump off, and --no-coredump, get
# no variable and no kernel.
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
    'all("CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1" in a["command"] and ",skip_abort " in a["command"] and "CUDA_COREDUMP_PIPE=" in a["command"] for x in r["candidates"] for a in x["attempts"])' \
    'all(any(k["exception"] == "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS" for k in a["gpu_fault"]["kernels"]) for x in r["candidates"] for a in x["attempts"] if a["outcome"] == "crashed")' \
    'all("Traceback (most recent call last)" in open("'"$Q_DIR"'/" + a["dir"] + "/server.log").read() for x in r["candidates"] for a in x["attempts"] if a["outcome"] == "crashed")' \
    'all(len(x["crash"]["sites"]) >= 1 and "illegal memory access" in x["crash"]["message"] for x in r["candidates"])' \
    'c["faulty"]["diagnosis"]["pinned_site"] == "vllm/model_executor/layers/fused_moe/experts/cutlass_moe.py:apply"' \
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

# the candidate's own flags without skip_abort: the dump replaces the traceback
qualify abort "$WC" "${Q_FAST[@]}" --no-quality \
    --candidate 'faulty: --moe-backend cutlass CUDA_COREDUMP_GENERATION_FLAGS=skip_global_memory'
check "$Q_DIR/report.json" \
    'c["faulty"]["verdict"] == "kernel-fault"' \
    'c["faulty"]["crash"]["class"] == "illegal-address"' \
    '"(GPU core dump; it replaces the Python traceback)" in c["faulty"]["crash"]["message"]' \
    'c["faulty"]["diagnosis"]["pinned_site"].startswith("CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS in kernel cutlass::device_kernel<")' \
    'c["faulty"]["crash"]["kernel"]["attempt"].endswith("-blocking")' \
    'all("have no skip_abort: a fault aborts" in a["gpu_fault"]["coredump"] and "skip_abort" not in a["command"] for a in c["faulty"]["attempts"])' \
    'not any("Traceback (most recent" in open("'"$Q_DIR"'/" + a["dir"] + "/server.log").read() for a in c["faulty"]["attempts"])' \
    || fail "abort: the dump replaced the traceback"

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
# the candidate turns the dump off: nothing of moeprobe's either (the pipe's
# variables alone would make the dump)
qualify candoff "$WC" "${Q_FAST[@]}" --no-quality --no-diagnose \
    --candidate 'faulty: --moe-backend cutlass CUDA_ENABLE_COREDUMP_ON_EXCEPTION=0'
check "$Q_DIR/report.json" \
    'c["faulty"]["verdict"] == "crashed"' \
    'c["faulty"]["crash"]["kernel"] is None' \
    'all("CUDA_COREDUMP" not in a["command"] and "USER_TRIGGERED" not in a["command"] for a in c["faulty"]["attempts"])' \
    'all(a["gpu_fault"]["coredump"].startswith("off: the candidate") for a in c["faulty"]["attempts"])' \
    || fail "the candidate turns the dump off"
assert_no_leftovers
echo ok
