#!/bin/bash
# qualify against engines that resist teardown: an EngineCore child that
# ignores SIGTERM and escapes the process group (found by moeprobe's marker
# variable), and an engine that hangs (verdict hang after --stall-timeout).
. "$(dirname "$0")/q_lib.sh"
qualify hostile "$ROOT/tests/worlds/hostile.ini" "${Q_FAST[@]}" --grace 1 --candidate 'auto:'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/hostile.stderr"; fail "hostile: exit $Q_RC"; }
check "$Q_DIR/report.json" \
  'c["auto"]["verdict"] == "stable"' \
  'c["auto"]["attempts"][0]["teardown"]["leftovers"] == 0' \
  'c["auto"]["attempts"][0]["teardown"]["escapees_killed"] + int(c["auto"]["attempts"][0]["teardown"]["killed"]) >= 1' \
  || fail "hostile report"
assert_no_leftovers

qualify hang "$ROOT/tests/worlds/hang.ini" "${Q_FAST[@]}" --stall-timeout "$(tmul 1)" --candidate 'auto:'
[ "$Q_RC" -eq 1 ] || { cat "$Q_TMP/hang.stderr"; fail "hang: exit $Q_RC, want 1"; }
check "$Q_DIR/report.json" \
  'c["auto"]["verdict"] == "hang"' \
  'c["auto"]["crash"]["after_requests"] == 1' \
  '"no token progress" in c["auto"]["crash"]["message"]' \
  'c["auto"]["diagnosis"] is None or c["auto"]["diagnosis"].get("launch_blocking") is None' \
  'r["recommendation"] is None' \
  || fail "hang report"
assert_no_leftovers
echo ok
