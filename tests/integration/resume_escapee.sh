#!/bin/bash
# resume_escapee.sh - an engine process that escaped everything moeprobe can
# find after the fact (a daemon: double fork, setsid, an EMPTY environment -
# no run marker -, outside the engine's group, SIGTERM ignored) survives a
# kill -9 of moeprobe; moeprobe recorded it in the store when it saw it
# (pid + start time), so --resume ends it. A recorded pid whose start time
# does not match (a recycled pid) is never touched. `moeprobe report` of the
# dead run ends such a daemon too.
. "$(dirname "$0")/q_lib.sh"
H="$ROOT/tests/integration/hostile_engine.py"
PIDFILE="$Q_TMP/daemon.pid"
D="$Q_TMP/run"
daemon_alive() { # PID: that process is still a daemon of this test
    { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -qF "$PIDFILE"
}
D1=
esc_cleanup() {
    local p
    for p in $D1 $(cat "$PIDFILE" 2>/dev/null); do
        daemon_alive "$p" && { echo "cleanup: killing the daemon $p"; kill -9 "$p"; }
    done
    [ -n "${SLEEPER:-}" ] && kill -9 "$SLEEPER" 2>/dev/null
    q_cleanup
}
trap esc_cleanup EXIT
wait_grep() { # FILE TEXT, bounded
    local _
    for _ in $(seq 600); do
        grep -qF -- "$2" "$1" 2>/dev/null && return 0
        timeout 0.1 tail -n0 -F "$1" 2>/dev/null | head -n1 >/dev/null
    done
    return 1
}
(exec "$MOEPROBE" qualify --out "$D" --seq 8 --conc 2:2 --max-tokens 8 --no-quality --grace 1 \
    --candidate 'auto:' -- python3 "$H" --mode daemon --pidfile "$PIDFILE" --token-delay 0.05 \
    --port '{port}' >/dev/null 2>"$Q_TMP/first.err") &
mp=$!
wait_grep "$D/attempts/auto-1/requests.jsonl" '"phase":"sequential"' || { kill -9 $mp; fail "no sequential request"; }
kill -9 $mp
wait $mp 2>/dev/null
D1=$(cat "$PIDFILE")
daemon_alive "$D1" || fail "the daemon $D1 did not outlive the kill -9 (the test proves nothing)"
grep -qx "MOEPROBE_RUN_MARKER=.*" "/proc/$D1/environ" 2>/dev/null && fail "the daemon carries the marker"

# a process the store names with another start time (a recycled pid): never hit
sleep 600 &
SLEEPER=$!
python3 - "$D/moeprobe.db" "$SLEEPER" <<'PY' || fail "cannot plant a recycled pid"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
pid = int(sys.argv[2])
start = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[19])
att, boot = db.execute("SELECT attempt_id, boot_id FROM engine_procs LIMIT 1").fetchone()
db.execute("INSERT INTO engine_procs(attempt_id, pid, start, boot_id) VALUES (?,?,?,?)",
           (att, pid, start - 1, boot))
db.commit()
PY

"$MOEPROBE" qualify --resume "$D" >/dev/null 2>"$Q_TMP/resume.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/resume.err"; fail "resume: exit $rc, want 0"; }
daemon_alive "$D1" && { cat "$Q_TMP/resume.err"; fail "the first run's daemon $D1 survived the resume"; }
grep -q "killed [1-9][0-9]* engine process(es) left by the interrupted run" "$Q_TMP/resume.err" ||
    { cat "$Q_TMP/resume.err"; fail "the resume did not say it ended the dead run's processes"; }
kill -0 "$SLEEPER" 2>/dev/null || fail "a recorded pid with another start time was killed"
D2=$(cat "$PIDFILE")
daemon_alive "$D2" && fail "the resumed run's own daemon $D2 survived its teardown"
check "$D/report.json" 'c["auto"]["verdict"] == "stable"' || fail "resumed report"
kill -9 "$SLEEPER"
wait "$SLEEPER" 2>/dev/null
SLEEPER=
assert_no_leftovers

# the same with --gpus: the task's store recorded the daemon; the scheduler's
# --resume ends it before the task runs again
G="$Q_TMP/gpus"
GARGS=(qualify --gpus 0 --seq 8 --conc 2:2 --max-tokens 8 --no-quality --grace 1 --candidate 'auto:'
    -- python3 "$H" --mode daemon --pidfile "$PIDFILE" --token-delay 0.05 --port '{port}')
rm -f "$PIDFILE"
(exec "$MOEPROBE" "${GARGS[@]:0:1}" --out "$G" "${GARGS[@]:1}" >/dev/null 2>"$Q_TMP/g1.err") &
mp=$!
wait_grep "$G/tasks/auto/attempts/auto-1/requests.jsonl" '"phase":"sequential"' ||
    { kill -9 $mp; cat "$Q_TMP/g1.err"; fail "--gpus: no sequential request"; }
kill -9 $mp
wait $mp 2>/dev/null
D1=$(cat "$PIDFILE")
daemon_alive "$D1" || fail "--gpus: the daemon $D1 did not outlive the kill -9 (the test proves nothing)"
"$MOEPROBE" "${GARGS[@]:0:1}" --resume "$G" "${GARGS[@]:1}" >/dev/null 2>"$Q_TMP/g2.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/g2.err"; fail "--gpus resume: exit $rc, want 0"; }
daemon_alive "$D1" && { cat "$Q_TMP/g2.err"; fail "--gpus: the first run's daemon $D1 survived the resume"; }
D2=$(cat "$PIDFILE")
daemon_alive "$D2" && fail "--gpus: the resumed task's own daemon $D2 survived its teardown"
assert_no_leftovers

# any later moeprobe on the run directory ends them too: `report` of a dead
# run (its lock is free) ends the recorded daemon, and says so
R="$Q_TMP/rep"
rm -f "$PIDFILE"
(exec "$MOEPROBE" qualify --out "$R" --seq 8 --conc 2:2 --max-tokens 8 --no-quality --grace 1 \
    --candidate 'auto:' -- python3 "$H" --mode daemon --pidfile "$PIDFILE" --token-delay 0.05 \
    --port '{port}' >/dev/null 2>"$Q_TMP/r1.err") &
mp=$!
wait_grep "$R/attempts/auto-1/requests.jsonl" '"phase":"sequential"' || { kill -9 $mp; fail "report: no sequential request"; }
kill -9 $mp
wait $mp 2>/dev/null
D1=$(cat "$PIDFILE")
daemon_alive "$D1" || fail "report: the daemon $D1 did not outlive the kill -9 (the test proves nothing)"
"$MOEPROBE" report "$R" >/dev/null 2>"$Q_TMP/rep.err"
daemon_alive "$D1" && { cat "$Q_TMP/rep.err"; fail "report: the dead run's daemon $D1 survived moeprobe report"; }
grep -q "ended [1-9][0-9]* engine process.* that a dead run left running" "$Q_TMP/rep.err" ||
    { cat "$Q_TMP/rep.err"; fail "report did not say it ended the dead run's processes"; }
assert_no_leftovers
echo ok
