#!/bin/bash
# q_broken_command.sh - a broken server command is not blamed on the
# backends (#29 item 3): a wrong world path makes every engine die before
# any kernel selection line; after the first two attempts died the same way
# the run stops with exit 2 and "your server command fails before any
# backend is chosen", quoting the engine's reason, without starting the
# other candidates. Engines that die of their own knobs ('unrecognized
# arguments: --moe-backend ...') are the backends' failures: the run goes on.
. "$(dirname "$0")/q_lib.sh"
qualify broken "$ROOT/worlds/no-such-world.ini" "${Q_FAST[@]}" --no-quality
[ "$Q_RC" = 2 ] || { cat "$Q_TMP/broken.stderr"; fail "a broken command: exit $Q_RC, want 2"; }
grep -q "your server command fails before any backend is chosen" "$Q_TMP/broken.stderr" ||
    fail "no early-stop message"
grep "fails before any backend" "$Q_TMP/broken.stderr" | grep -q "no-such-world.ini: cannot open" ||
    fail "the engine's reason is not quoted"
[ "$(ls "$Q_DIR/attempts" | tr '\n' ' ')" = "auto-1 cutlass-1 " ] ||
    fail "started: $(ls "$Q_DIR/attempts" | tr '\n' ' ')"
check "$Q_DIR/report.json" \
    'r["stop_reason"].startswith("your server command fails before any backend is chosen")' \
    'c["marlin"]["finished"] is False and c["marlin"]["attempts"] == []' \
    || fail "report.json"
grep -q "The run stopped early" "$Q_DIR/report.html" || fail "report.html has no stop banner"

# two candidates that share a knob (both set --moe-backend) failing alike
# prove nothing about the command: one bad --moe-backend would break both.
# The run stops only once a candidate with other knobs (auto: none) failed
# the same way.
qualify shared "$ROOT/worlds/no-such-world.ini" "${Q_FAST[@]}" --no-quality \
    --candidate 'a: --moe-backend cutlass' --candidate 'b: --moe-backend marlin' \
    --candidate 'auto:' --candidate 'c: VLLM_TEST_FORCE_FP8_MARLIN=1'
[ "$Q_RC" = 2 ] || { cat "$Q_TMP/shared.stderr"; fail "shared knob: exit $Q_RC, want 2"; }
[ "$(ls "$Q_DIR/attempts" | tr '\n' ' ')" = "a-1 auto-1 b-1 " ] ||
    fail "shared knob: started $(ls "$Q_DIR/attempts" | tr '\n' ' '), want a, b and auto"

# knob failures are the backends': both candidates are tried and reported
qualify knobs "$ROOT/worlds/era-0.15-oracle.ini" "${Q_FAST[@]}" --no-quality \
    --candidate 'a: --moe-backend cutlass' --candidate 'b: --moe-backend marlin' \
    --candidate 'c: VLLM_TEST_FORCE_FP8_MARLIN=1'
[ "$Q_RC" = 0 ] || { cat "$Q_TMP/knobs.stderr"; fail "knob failures: exit $Q_RC, want 0"; }
check "$Q_DIR/report.json" 'r["stop_reason"] is None' \
    'c["a"]["verdict"] == c["b"]["verdict"] == "startup-failure"' 'c["c"]["verdict"] == "stable"' \
    || fail "knob failures stopped the run"
assert_no_leftovers
echo ok
