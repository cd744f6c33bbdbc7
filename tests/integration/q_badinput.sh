#!/bin/bash
# bad input gets a clear message and the right exit code, never a hang past
# the timeouts, never a leftover process. A usage error leaves no evidence
# store behind (qualify, soak, minimize): the next run on the same --out
# with a good command is not refused as holding a run.
. "$(dirname "$0")/q_lib.sh"
expect() { # expect RC PATTERN CMD...
    local want=$1 pat=$2; shift 2
    "$@" >"$Q_TMP/out" 2>"$Q_TMP/err"
    local rc=$?
    [ "$rc" -eq "$want" ] || { cat "$Q_TMP/err"; fail "'$*': exit $rc, want $want"; }
    [ -z "$pat" ] || grep -q -- "$pat" "$Q_TMP/err" || { cat "$Q_TMP/err"; fail "'$*': no message matching '$pat'"; }
}
M=$MOEPROBE
GOOD=(-- "$REFENGINE" --world "$ROOT/tests/worlds/fast.ini" --port '{port}')
nostore() { # nostore DIR: a usage error in DIR left no store; a good qualify there then runs
    [ ! -e "$1/moeprobe.db" ] || fail "a usage error left $1/moeprobe.db"
    "$M" qualify "${Q_FAST[@]}" --out "$1" --candidate 'x:' "${GOOD[@]}" >/dev/null 2>"$Q_TMP/rerun.err" ||
        { cat "$Q_TMP/rerun.err"; fail "the good rerun on $1: exit $?"; }
    check "$1/report.json" 'c["x"]["verdict"] == "stable"' || fail "the good rerun on $1 did not qualify x"
}
expect 2 "cannot run '/nonexistent/vllm': No such file" "$M" qualify --quiet --out "$Q_TMP/a" -- /nonexistent/vllm serve
nostore "$Q_TMP/a"
expect 2 "cannot run 'no-such-engine-on-path': No such file" "$M" qualify --quiet --out "$Q_TMP/a2" -- no-such-engine-on-path serve
[ ! -e "$Q_TMP/a2/moeprobe.db" ] || fail "a command not in PATH left a store"
printf '#!/bin/sh\n' >"$Q_TMP/noexec"; chmod 644 "$Q_TMP/noexec"
expect 2 "cannot run '$Q_TMP/noexec': Permission denied" "$M" qualify --quiet --out "$Q_TMP/a3" -- "$Q_TMP/noexec"
[ ! -e "$Q_TMP/a3/moeprobe.db" ] || fail "a command that is no program left a store"
expect 2 "cannot run '/nonexistent/vllm'" "$M" soak --duration 1s --quiet --out "$Q_TMP/s" -- /nonexistent/vllm serve
[ ! -e "$Q_TMP/s/moeprobe.db" ] || fail "soak: a usage error left a store"
expect 2 "cannot run '/nonexistent/vllm'" "$M" minimize --quiet --out "$Q_TMP/m" --from 'A=1' --to 'A=1 B=2' -- /nonexistent/vllm serve
[ ! -e "$Q_TMP/m/moeprobe.db" ] || fail "minimize: a usage error left a store"
# found only after the store was created (a link planted where the first
# attempt's directory goes): the session removes the store it created
mkdir -p "$Q_TMP/l/attempts" && ln -s "$Q_TMP" "$Q_TMP/l/attempts/x-1"
expect 2 "attempts/x-1' is a symbolic link" "$M" qualify "${Q_FAST[@]}" --out "$Q_TMP/l" --candidate 'x:' "${GOOD[@]}"
[ -L "$Q_TMP/l/attempts/x-1" ] || fail "the planted link was removed"
rm "$Q_TMP/l/attempts/x-1"
nostore "$Q_TMP/l"
expect 2 "has no name" "$M" qualify --candidate '--moe-backend cutlass' -- true
expect 2 "unterminated" "$M" qualify --candidate "x: A='b" -- true
expect 2 "LEVEL:REQUESTS" "$M" qualify --conc 8 -- true
expect 2 "no server command" "$M" qualify --out "$Q_TMP/b"
expect 2 "unknown option" "$M" qualify --bogus -- true
expect 2 "unknown preset" "$M" qualify --preset nope -- true
expect 2 "matches no candidate" "$M" qualify --only zzz -- true
expect 2 "unknown command" "$M" frobnicate
# an engine that never answers: startup-failure after --ready-timeout
expect 1 "" "$M" qualify --quiet --out "$Q_TMP/c" --ready-timeout 1 --candidate 'x:' -- sh -c 'exec sleep 30'
check "$Q_TMP/c/report.json" 'c["x"]["verdict"] == "startup-failure"' \
  '"did not become ready within 1 s" in c["x"]["why"]' || fail "never ready"
# an engine that floods its output and never answers: bounded, same verdict
expect 1 "" "$M" qualify --quiet --out "$Q_TMP/d" --ready-timeout 1 --candidate 'x:' -- sh -c 'exec yes flooding-the-log'
check "$Q_TMP/d/report.json" 'c["x"]["verdict"] == "startup-failure"' || fail "flood"
[ "$(stat -c %s "$Q_TMP/d/attempts/x-1/server.log")" -le $((600 * 1024 * 1024)) ] || fail "flood log unbounded"
# an engine that exits at once: its reason is quoted
expect 1 "" "$M" qualify --quiet --out "$Q_TMP/e" --candidate 'x:' -- sh -c 'echo "ValueError: boom at startup" >&2; exit 3'
check "$Q_TMP/e/report.json" 'c["x"]["verdict"] == "startup-failure"' \
  '"exited with status 3" in c["x"]["why"] or "boom" in c["x"]["why"]' || fail "exit at once"
# a port that is already in use: clear message, usage exit code
exec {pfd}< <(exec python3 -c 'import socket, signal
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); signal.pause()')
PYPID=$!
read -r PORT <&"$pfd" || fail "no port from the listener"
expect 2 "port $PORT is already in use" "$M" qualify --quiet --out "$Q_TMP/f" --port "$PORT" --candidate 'x:' -- "$REFENGINE" --world "$ROOT/tests/worlds/fast.ini"
expect 2 "port $PORT is already in use" "$M" soak --duration 1s --quiet --out "$Q_TMP/fs" --port "$PORT" "${GOOD[@]}"
[ ! -e "$Q_TMP/fs/moeprobe.db" ] || fail "soak --port in use left a store"
kill "$PYPID" 2>/dev/null; exec {pfd}<&-
nostore "$Q_TMP/f"
assert_no_leftovers
echo ok
