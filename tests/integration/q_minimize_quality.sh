#!/bin/bash
# minimize checks the output: of two fork knobs one leads to a backend that
# serves every request but answers garbage; it must never be "the minimal
# change that makes it work". --no-quality skips the check (and then that
# garbage knob is what ddmin finds first).
. "$(dirname "$0")/q_lib.sh"
to='VLLM_SCALED_MM_BACKEND=marlin VLLM_FORK_MOE_BACKEND=cutlass'
mini() {
    local out=$1; shift
    "$MOEPROBE" minimize --quiet --json --out "$Q_TMP/$out" --seq 2 --conc 2:2 --max-tokens 8 "$@" \
        --from '' --to "$to" -- "$REFENGINE" --world "$W/q-garbage-knob.ini" --port '{port}' \
        >"$Q_TMP/$out.json" 2>"$Q_TMP/$out.err"
}
mini q
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/q.err"; fail "minimize exit $rc"; }
check "$Q_TMP/q.json" \
  'r["minimal"] == ["VLLM_FORK_MOE_BACKEND=cutlass"]' \
  'r["minimal_moe_backend"] == "VLLM_CUTLASS"' \
  '[t for t in r["tests"] if t["moe_backend"] == "MARLIN"][0]["outcome"] == "fail"' \
  '[t for t in r["tests"] if t["moe_backend"] == "MARLIN"][0]["attempt"] == "clean"' \
  '[t for t in r["tests"] if t["moe_backend"] == "MARLIN"][0]["output_check"] == "garbage"' \
  '"lock" in [t for t in r["tests"] if t["moe_backend"] == "MARLIN"][0]["why"]' \
  'all(t["output_check"] == "pass" for t in r["tests"] if t["outcome"] == "pass")' \
  || fail "minimize with the output check"
if command -v sqlite3 >/dev/null; then
    [ "$(sqlite3 "$Q_TMP/q/moeprobe.db" "select passed from minimize_tests where knobs = 'VLLM_SCALED_MM_BACKEND=marlin'")" = 0 ] ||
        fail "the garbage test is stored as passed"
fi
# the --to configuration itself garbage: a false premise (exit 1)
to='VLLM_SCALED_MM_BACKEND=marlin'
mini g
rc=$?
[ $rc -eq 1 ] || { cat "$Q_TMP/g.err"; fail "garbage --to: exit $rc, want 1"; }
grep -q "the --to configuration does not work" "$Q_TMP/g.err" || fail "garbage --to message"
# --no-quality is honoured: no output check, the garbage knob passes (with
# the scoring pass off too: it would catch the garbage knob by itself,
# q_correct_minimize.sh)
to='VLLM_SCALED_MM_BACKEND=marlin VLLM_FORK_MOE_BACKEND=cutlass'
mini nq --no-quality --agreement 0 --accuracy 0
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/nq.err"; fail "--no-quality exit $rc"; }
check "$Q_TMP/nq.json" \
  'r["minimal"] == ["VLLM_SCALED_MM_BACKEND=marlin"]' \
  'all(t["output_check"] == "not-run" for t in r["tests"])' \
  || fail "minimize --no-quality"
assert_no_leftovers
echo ok
