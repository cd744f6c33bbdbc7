#!/bin/bash
# A CUDA world on the normal (CPU) refengine fails at start-up with a clear
# message and exit 2; qualify reports it as a startup-failure quoting it.
# Malformed CUDA keys are world errors with file:line.
. "$(dirname "$0")/q_lib.sh"
"$REFENGINE" --world "$ROOT/worlds/cuda-h200.ini" --port 0 >"$Q_TMP/out" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "cuda world on the CPU build: exit $rc, want 2"
grep -q "needs the CUDA build of refengine" "$Q_TMP/out" || { cat "$Q_TMP/out"; fail "message"; }
qualify cuda "$ROOT/worlds/cuda-h200.ini" "${Q_FAST[@]}" --candidate 'auto:'
[ "$Q_RC" -eq 1 ] || fail "qualify exit $Q_RC, want 1"
check "$Q_DIR/report.json" 'c["auto"]["verdict"] == "startup-failure"' \
  '"exited with status 2" in c["auto"]["why"] or "CUDA build" in c["auto"]["why"]' || fail "report"
printf '[engine]\nversion = 0.25.0\ndevice = sm90\nmodel = m\ncuda = true\ncuda_experts = 4\ncuda_top_k = 8\n' >"$Q_TMP/bad.ini"
"$REFENGINE" --world "$Q_TMP/bad.ini" --port 0 >"$Q_TMP/out2" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "bad cuda keys: exit $rc, want 2"
grep -q "bad.ini.*cuda_top_k" "$Q_TMP/out2" || { cat "$Q_TMP/out2"; fail "no message naming the file and cuda_top_k"; }
assert_no_leftovers
echo ok
