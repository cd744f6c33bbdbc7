#!/bin/bash
# report_issue.sh - `moeprobe report --format issue` (#24): the failed
# candidate as Markdown for an upstream bug report: environment, the launch
# command with the candidate's knobs and without moeprobe's core-dump
# variables, the verdict with the launch-blocking result, the faulting
# kernel, the engine's and the driver's own lines in fences that a backtick
# run in them cannot close, a reproducer; a secret knob masked everywhere;
# --candidate picks another, an unknown one or a run without a failure is a
# usage error (exit 2).
. "$(dirname "$0")/q_lib.sh"
WI="$W/crash-issue.ini"
export MOEPROBE_KMSG=none MOEPROBE_NVML_LIB=none
SECRET=hf_abcdefgh0123456789
qualify run "$WI" "${Q_FAST[@]}" --no-quality \
    --candidate "faulty: HF_TOKEN=$SECRET --moe-backend cutlass" --candidate 'marlin: --moe-backend marlin'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/run.stderr"; fail "qualify: exit $Q_RC"; }
out="$Q_TMP/issue.md"
"$MOEPROBE" report --format issue "$Q_DIR" >"$out" 2>"$Q_TMP/issue.err" ||
    { cat "$Q_TMP/issue.err"; fail "report --format issue: exit $?"; }
want() { grep -qF -- "$1" "$out" || { cat "$out"; fail "issue: missing '$1'"; }; }
want '### VLLM_CUTLASS: kernel-fault in `cutlass::device_kernel<…MainloopSm120ArrayTmaWarpSpecialized…>` (CUTLASS grouped GEMM)'
want '| vLLM | 0.20.0 |'
want '#### Launch command'
want ' --moe-backend cutlass'
want 'HF_TOKEN=***'
want '- with `CUDA_LAUNCH_BLOCKING=1`: crashed too, after 2 request(s)'
want '- normal mode: '
want 'faulting kernel `cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<'
want '#### The GPU core dump ('
want 'coredump: Detected an exception of type CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)'
want '#### Reproduce'
want "moeprobe diagnose --candidate 'faulty: "
grep -qF "$SECRET" "$out" && fail "issue: the secret is in the report"
# the launch command carries no instrument of moeprobe's
sed -n '/#### Launch command/,/^The candidate/p' "$out" | grep -q 'COREDUMP\|CUDA_LAUNCH_BLOCKING' &&
    fail "issue: moeprobe's variables in the launch command"
# the error text's ``` stays inside a longer fence: every fence is closed
python3 - "$out" <<'PY' || fail "issue: a fence is broken"
import re, sys
t = open(sys.argv[1]).read()
open_f = None
for ln in t.split("\n"):
    m = re.match(r"^(`{3,})(\w*)$", ln)
    if open_f is None and m:
        open_f = m.group(1)
    elif open_f is not None and ln == open_f:
        open_f = None
    elif open_f is not None and ln.startswith("```") and len(ln) >= len(open_f) and set(ln) == {"`"}:
        sys.exit(1)
assert open_f is None
assert "````text" in t, "the fence of the traceback must be longer than its ```"
PY
"$MOEPROBE" report --format issue --candidate marlin "$Q_DIR" >"$Q_TMP/m.md" || fail "--candidate marlin"
grep -q '^### MARLIN: stable' "$Q_TMP/m.md" || fail "--candidate marlin: heading"
"$MOEPROBE" report --format issue --candidate nope "$Q_DIR" >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown candidate"
"$MOEPROBE" report --candidate marlin "$Q_DIR" >/dev/null 2>&1; [ $? -eq 2 ] || fail "--candidate without --format issue"
qualify ok "$WI" "${Q_FAST[@]}" --no-quality --candidate 'marlin: --moe-backend marlin'
"$MOEPROBE" report --format issue "$Q_DIR" >/dev/null 2>"$Q_TMP/none.err"; rc=$?
[ $rc -eq 2 ] && grep -q 'no candidate of this run failed' "$Q_TMP/none.err" || fail "no failure: exit $rc"
assert_no_leftovers
echo ok
