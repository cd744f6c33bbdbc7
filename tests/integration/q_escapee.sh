#!/bin/bash
# An engine that daemonises a child (double fork, setsid, an empty
# environment: no MOEPROBE_RUN_MARKER, no test marker) is still the run's:
# the daemon is reparented to moeprobe (a child subreaper), ended at teardown
# and counted as an escapee. The daemon carries no marker, so tests/run.sh's
# leftover check cannot see it: this test checks its pid itself.
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }
H="$ROOT/tests/integration/hostile_engine.py"
PIDFILE="$Q_TMP/daemon.pid"

# the daemon's pid, if that process is still the daemon (not a reused pid)
daemon_alive() {
    local pid
    pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
    [ -n "$pid" ] && { tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qF "$PIDFILE" && echo "$pid"
}
esc_cleanup() {
    local pid
    pid=$(daemon_alive) && { echo "cleanup: killing the daemon $pid"; kill -9 "$pid"; }
    q_cleanup
}
trap esc_cleanup EXIT

Q_DIR="$Q_TMP/daemon"
"$MOEPROBE" qualify --out "$Q_DIR" "${Q_FAST[@]}" --grace 1 --candidate 'auto:' -- \
    python3 "$H" --mode daemon --pidfile "$PIDFILE" --port '{port}' \
    >"$Q_TMP/daemon.stdout" 2>"$Q_TMP/daemon.stderr"
rc=$?
[ -s "$PIDFILE" ] || { cat "$Q_TMP/daemon.stderr"; fail "the hostile engine wrote no pid file"; }
pid=$(daemon_alive) && fail "the daemonised escapee $pid survived the run"
[ "$rc" -eq 0 ] || { cat "$Q_TMP/daemon.stderr"; fail "exit $rc, want 0"; }
check "$Q_DIR/report.json" \
  'c["auto"]["verdict"] == "stable"' \
  'all(a["teardown"]["leftovers"] == 0 for a in c["auto"]["attempts"])' \
  'c["auto"]["attempts"][0]["teardown"]["escapees_killed"] == 1' \
  || fail "report: the escapee is not counted"
grep -q "survived teardown" "$Q_TMP/daemon.stderr" && fail "moeprobe warned of survivors"
assert_no_leftovers
echo ok
