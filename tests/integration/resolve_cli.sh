#!/bin/bash
# moeprobe resolve: every candidate's engine is started and stopped as soon
# as its kernel selections are logged; no load. The report maps knob sets to
# resolved backends (same destination, different road), unknown variables
# and start-up failures seen before the selection lines.
. "$(dirname "$0")/q_lib.sh"
# dedupe.ini with the weights taking 3 s instead of 0.4 s after the selection
# lines: "stopped before ready" must not depend on how loaded the machine is
# (a stop at the selection lines costs none of it)
WR="$Q_TMP/dedupe-slow.ini"
sed 's/^load_seconds = .*/load_seconds = 3/' "$ROOT/tests/worlds/dedupe.ini" >"$WR"
grep -q '^load_seconds = 3$' "$WR" || fail "the world copy has no load_seconds line"
Q_DIR="$Q_TMP/rs"
t0=$(date +%s.%N)
"$MOEPROBE" resolve --out "$Q_DIR" --candidate 'auto:' --candidate 'fc: --moe-backend flashinfer_cutlass' \
    --candidate 'trt: --moe-backend flashinfer_trtllm' --candidate 'unk: VLLM_DEFAULT_MOE_BACKEND=marlin' \
    --candidate 'marlin: --moe-backend marlin' -- "$REFENGINE" --world "$WR" --port '{port}' \
    >"$Q_TMP/rs.md" 2>"$Q_TMP/rs.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/rs.err"; fail "resolve: exit $rc"; }
check "$Q_DIR/report.json" \
    '[a["outcome"] for a in c["auto"]["attempts"]] == ["resolved"]' \
    'c["auto"]["verdict"] is None and "resolved only" in c["auto"]["why"]' \
    'c["auto"]["resolved"]["moe_backend"] == "FLASHINFER_CUTLASS"' \
    'c["marlin"]["resolved"]["moe_backend"] == "MARLIN"' \
    'c["trt"]["verdict"] == "startup-failure"' \
    'c["unk"]["unknown_env"] == ["VLLM_DEFAULT_MOE_BACKEND"]' \
    'sorted(r["same_backend_groups"][0]["candidates"]) == ["auto", "fc", "unk"]' \
    'all(x["requests"]["ok"] == 0 and x["requests"]["failed"] == 0 for x in r["candidates"])' \
    'r["recommendation"] is None or r["recommendation"].get("candidate") is None' \
    || fail "resolve: report fields"
for n in auto fc unk marlin; do
    [ ! -s "$Q_DIR/attempts/$n-1/requests.jsonl" ] || fail "$n: load was driven"
    ! grep -q "Application startup complete" "$Q_DIR/attempts/$n-1/server.log" ||
        fail "$n: the engine was not stopped before ready"
done
grep -q "^# moeprobe resolve report" "$Q_TMP/rs.md" || fail "stdout is not the resolve report"
grep -q "^## Resolution only" "$Q_DIR/report.md" || fail "report.md"
grep -q "stopped after .* s, once resolved (no load)" "$Q_DIR/report.md" || fail "report.md attempt line"
grep -q "Resolution only" "$Q_DIR/report.html" || fail "report.html"
grep -q "auto .*resolved .*FLASHINFER_CUTLASS" "$Q_TMP/rs.err" || fail "summary"
grep -q "resolution only: no load was driven" "$Q_TMP/rs.err" || fail "summary: no recommendation line"
# rendered again from the store
"$MOEPROBE" report "$Q_DIR" >"$Q_TMP/again.md" 2>/dev/null || fail "report: exit $?"
grep -q "^# moeprobe resolve report" "$Q_TMP/again.md" || fail "report from the store is not a resolve map"
"$MOEPROBE" resolve --help | grep -q "Which road leads where" || fail "--help"
assert_no_leftovers
echo "ok: resolve"
