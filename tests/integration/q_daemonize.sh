#!/bin/bash
# An engine that daemonizes (#30 item 10): the spawned process starts the
# real server in a new session and exits 0 at once; the server prints the
# banner into moeprobe's pipe and serves the port. moeprobe supervises the
# process it starts, so the candidate is a startup-failure, but the report
# says what happened (not "the engine exited with status 0"), the daemon is
# killed at teardown as an escapee, and nothing is left behind.
. "$(dirname "$0")/q_lib.sh"
cat >"$Q_TMP/daemonize.sh" <<'SH'
#!/bin/sh
setsid "$REFENGINE" "$@" </dev/null &
exit 0
SH
chmod +x "$Q_TMP/daemonize.sh"
export REFENGINE
Q_DIR="$Q_TMP/d"
"$MOEPROBE" qualify --out "$Q_DIR" "${Q_FAST[@]}" --candidate 'a:' -- \
    "$Q_TMP/daemonize.sh" --world "$ROOT/tests/worlds/fast.ini" --port '{port}' \
    >"$Q_TMP/d.stdout" 2>"$Q_TMP/d.stderr"
rc=$?
[ $rc -eq 1 ] || { cat "$Q_TMP/d.stderr"; fail "exit $rc, want 1"; }
check "$Q_DIR/report.json" \
    'c["a"]["verdict"] == "startup-failure"' \
    '"main process exited with status 0" in c["a"]["why"]' \
    '"kept running outside its process group" in c["a"]["why"]' \
    '"it daemonized" in c["a"]["why"]' \
    'c["a"]["attempts"][0]["teardown"]["escapees_killed"] >= 1' \
    'c["a"]["attempts"][0]["teardown"]["leftovers"] == 0' || fail "report"
assert_no_leftovers
echo ok
