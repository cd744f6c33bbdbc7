#!/bin/bash
# minimize: of three Marlin-flavoured variables only the fork's knob matters;
# a false premise (--from already works) is refused with exit 1.
. "$(dirname "$0")/q_lib.sh"
"$MOEPROBE" minimize --quiet --json --out "$Q_TMP/m" --seq 2 --conc 2:2 --max-tokens 8 --no-quality \
    --from '' --to 'VLLM_NVFP4_GEMM_BACKEND=marlin VLLM_SCALED_MM_BACKEND=marlin VLLM_MARLIN_USE_ATOMIC_ADD=1' \
    -- "$REFENGINE" --world "$W/q-fork.ini" --port '{port}' >"$Q_TMP/m.json" 2>"$Q_TMP/m.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/m.err"; fail "minimize exit $rc"; }
check "$Q_TMP/m.json" \
  'r["minimal"] == ["VLLM_SCALED_MM_BACKEND=marlin"]' \
  'r["minimal_moe_backend"] == "MARLIN"' \
  'r["tests"][0]["outcome"] == "fail" and r["tests"][0]["knobs"] == []' \
  'r["tests"][1]["outcome"] == "pass" and len(r["tests"][1]["knobs"]) == 3' \
  'all(t["outcome"] in ("pass", "fail") for t in r["tests"])' \
  'all(t["moe_backend"] in ("MARLIN", "FLASHINFER_CUTLASS") for t in r["tests"])' \
  'len({tuple(sorted(t["knobs"])) for t in r["tests"]}) == len(r["tests"])' \
  'r["requests_required_for_pass"] > 0' \
  || fail "minimize result"
cmp -s "$Q_TMP/m.json" "$Q_TMP/m/minimize.json" || fail "stdout differs from minimize.json"
# every test is in the evidence store, with its attempts
if command -v sqlite3 >/dev/null; then
    ntests=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tests"]))' "$Q_TMP/m.json")
    [ "$(sqlite3 "$Q_TMP/m/moeprobe.db" 'select count(*) from minimize_tests')" = "$ntests" ] || fail "minimize tests in the store"
    [ "$(sqlite3 "$Q_TMP/m/moeprobe.db" 'select count(*) from minimize_tests where passed = 1 and knobs = "VLLM_SCALED_MM_BACKEND=marlin"')" = 1 ] || fail "passing minimal test in the store"
    [ "$(sqlite3 "$Q_TMP/m/moeprobe.db" 'select count(*) from attempts')" -ge "$ntests" ] || fail "attempts in the store"
fi
"$MOEPROBE" minimize --quiet --out "$Q_TMP/m2" --seq 2 --conc 2:2 --max-tokens 8 --no-quality \
    --from 'VLLM_SCALED_MM_BACKEND=marlin' --to 'VLLM_SCALED_MM_BACKEND=marlin VLLM_MARLIN_USE_ATOMIC_ADD=1' \
    -- "$REFENGINE" --world "$W/q-fork.ini" --port '{port}' >/dev/null 2>"$Q_TMP/m2.err"
rc=$?
[ $rc -eq 1 ] || { cat "$Q_TMP/m2.err"; fail "premise false: exit $rc, want 1"; }
grep -q "the --from configuration works" "$Q_TMP/m2.err" || fail "premise message"
"$MOEPROBE" minimize --from 'A=1' -- true >/dev/null 2>"$Q_TMP/m3.err"
[ $? -eq 2 ] || fail "missing --to must be a usage error"
assert_no_leftovers
echo ok
