#!/bin/bash
# q_heartbeat.sh - progress off a terminal (#29 items 7 and 6): every state
# line carries the time; during a long phase a heartbeat line comes at least
# every MOEPROBE_HEARTBEAT_S (a minute by default; 1 s here) with the live
# tok/s, which counts the tokens of requests still streaming (it read 0.0
# until a phase's first request ended) and the run's ETA; a soak's ETA,
# printed by its first heartbeat in the soak phase, is within 30 % of the
# time the soak then takes (it printed "ETA 0 s").
. "$(dirname "$0")/q_lib.sh"
cat >"$Q_TMP/slow.ini" <<'EOF2'
[engine]
version = 0.19.0
device = sm120
model = test/slow-model
load_seconds = 0.2
[backend FLASHINFER_CUTLASS]
tokens_per_second = 20
contention = 0
EOF2
# a 3 s warm-up request: two heartbeats before it ends, each with tokens counted
MOEPROBE_HEARTBEAT_S=1 "$MOEPROBE" qualify --out "$Q_TMP/q" --seq 1 --conc 2:2 --max-tokens 60 \
    --no-quality --agreement 0 --accuracy 0 --candidate 'a:' -- "$REFENGINE" --world "$Q_TMP/slow.ini" --port '{port}' \
    >/dev/null 2>"$Q_TMP/q.err" || { cat "$Q_TMP/q.err"; fail "qualify: exit $?"; }
grep -Eq '^moeprobe: [0-9]{2}:[0-9]{2}:[0-9]{2} \[a 1/1\] started: pid' "$Q_TMP/q.err" || fail "no timestamp"
beat=$(grep -E '^moeprobe: [0-9:]+ \[a 1/1\] phase warmup: 0 ok, 0 failed so far, [0-9.]+ tok/s' "$Q_TMP/q.err" | head -1)
[ -n "$beat" ] || { cat "$Q_TMP/q.err"; fail "no heartbeat during the warm-up"; }
rate=$(echo "$beat" | grep -Eo '[0-9.]+ tok/s' | grep -Eo '^[0-9.]+')
python3 -c "import sys; sys.exit(not (5 <= float(sys.argv[1]) <= 40))" "$rate" ||
    fail "live tok/s before the first request ended: $rate (want ~20): $beat"

# soak: the ETA of its first heartbeat in the soak phase against the time left
MOEPROBE_HEARTBEAT_S=1 python3 "$ROOT/tests/integration/eta_lib.py" 'soak: [0-9]+ s of' 0.3 -- \
    "$MOEPROBE" soak --out "$Q_TMP/s" --duration 6 --concurrency 2 --max-tokens 8 --candidate 'a:' \
    -- "$REFENGINE" --world "$ROOT/tests/worlds/fast.ini" --port '{port}' || fail "soak ETA"
assert_no_leftovers
echo ok
