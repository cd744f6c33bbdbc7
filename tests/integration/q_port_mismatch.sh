#!/bin/bash
# An engine that announces a port moeprobe does not probe ends its attempt
# within seconds as startup-failure naming both ports and the `-p` hint,
# instead of waiting out --ready-timeout; an engine listening where it is
# probed is untouched, and its announced port is recorded.
. "$(dirname "$0")/q_lib.sh"

# the wrapper drops moeprobe's appended "--port N" and lets the engine pick a
# free port of its own, as a container without -p publishing does in effect
name=elsewhere
Q_DIR="$Q_TMP/$name"
t0=$(date +%s)
"$MOEPROBE" qualify --out "$Q_DIR" "${Q_FAST[@]}" --candidate 'auto:' --ready-timeout "$(tmul 120)" -- \
    sh -c 'exec "$0" --world "$1" --port 0' "$REFENGINE" "$ROOT/tests/worlds/fast.ini" \
    >"$Q_TMP/$name.stdout" 2>"$Q_TMP/$name.stderr"
Q_RC=$?
dt=$(($(date +%s) - t0))
[ "$Q_RC" -eq 1 ] || { cat "$Q_TMP/$name.stderr"; fail "exit $Q_RC, want 1"; }
[ "$dt" -lt "$(tmul 60)" ] || fail "took ${dt}s: the port mismatch waited for the ready timeout"
check "$Q_DIR/report.json" \
    'c["auto"]["verdict"] == "startup-failure"' \
    '"moeprobe probes port" in c["auto"]["why"]' \
    'isinstance(c["auto"]["attempts"][0]["announced_port"], int)' \
    || fail "report fields"
python3 - "$Q_DIR/report.json" <<'PY' || fail "the message does not name both ports and the hint"
import json, re, sys
c = json.load(open(sys.argv[1]))["candidates"][0]
a = c["attempts"][0]
ann = a["announced_port"]
probe = int(re.findall(r"--port (\d+)", a["command"])[-1])
assert ann != probe, (ann, probe)
why = c["why"]
assert "port %d" % ann in why and "port %d" % probe in why, why
assert "-p %d:%d" % (probe, ann) in why, why
assert any(e.startswith("attempts/auto-1/server.log:") for e in c["evidence"]), c["evidence"]
PY
grep -q "moeprobe probes port" "$Q_DIR/report.md" || fail "report.md does not say it"
# rendered again from the store alone: the same port and reason
cp "$Q_DIR/report.json" "$Q_TMP/first.json"
"$MOEPROBE" report "$Q_DIR" >/dev/null 2>&1 || fail "report: exit $?"
python3 - "$Q_TMP/first.json" "$Q_DIR/report.json" <<'PY' || fail "report from the store differs"
import json, sys
a, b = (json.load(open(p))["candidates"][0] for p in sys.argv[1:3])
assert a["why"] == b["why"], (a["why"], b["why"])
assert a["attempts"][0]["announced_port"] == b["attempts"][0]["announced_port"]
PY

# a well-behaved engine: its announced port is the probed one, and stable
qualify ok "$ROOT/tests/worlds/fast.ini" "${Q_FAST[@]}" --candidate 'auto:'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/ok.stderr"; fail "ok: exit $Q_RC"; }
python3 - "$Q_DIR/report.json" <<'PY' || fail "ok: announced port not recorded"
import json, re, sys
a = json.load(open(sys.argv[1]))["candidates"][0]["attempts"][0]
assert a["announced_port"] == int(re.search(r"--port (\d+)", a["command"]).group(1)), a
PY
assert_no_leftovers
echo "ok: port mismatch in ${dt}s"
