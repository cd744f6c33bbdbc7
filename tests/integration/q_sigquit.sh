#!/bin/bash
# Ctrl-\ (SIGQUIT) is an interruption like Ctrl-C and SIGTERM: moeprobe tears
# the engine down, records the interruption (no attempt left 'running' in
# the store, run.interrupted set), writes the reports marked interrupted and
# exits 128+3; nothing is left behind.
. "$(dirname "$0")/q_lib.sh"
out="$Q_TMP/quit"
# a background job of a script starts with SIGQUIT ignored; a terminal's
# Ctrl-\ meets the default action (core dump): restore it, as a shell would
python3 -c 'import os, signal, sys; signal.signal(signal.SIGQUIT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
"$MOEPROBE" qualify --quiet --out "$out" --seq 100000 --max-tokens 64 --candidate 'slow:' \
    -- "$REFENGINE" --world "$ROOT/tests/worlds/fast.ini" --port '{port}' \
    >/dev/null 2>"$Q_TMP/quit.err" &
mp=$!
# wait (bounded) until the first sequential request has been recorded
ok=0
for _ in $(seq 600); do
    n=$(grep -c '"phase":"sequential"' "$out/attempts/slow-1/requests.jsonl" 2>/dev/null)
    if [ "${n:-0}" -ge 1 ]; then ok=1; break; fi
    timeout 0.2 tail -n0 -F "$out/attempts/slow-1/requests.jsonl" 2>/dev/null | head -n1 >/dev/null
done
[ $ok -eq 1 ] || fail "no request recorded"
kill -QUIT "$mp"
# bounded: a moeprobe that ignored the signal would run 100000 requests
timeout 60 tail --pid="$mp" -f /dev/null || { kill -9 "$mp"; fail "moeprobe did not end after SIGQUIT"; }
wait "$mp"
rc=$?
[ $rc -eq 131 ] || { cat "$Q_TMP/quit.err"; fail "exit $rc after SIGQUIT, want 131"; }
[ -s "$out/report.json" ] || fail "no report after SIGQUIT"
check "$out/report.json" 'r.get("interrupted") is True' 'c["slow"]["verdict"] is None' \
  'all(a["outcome"] == "interrupted" for a in c["slow"]["attempts"])' || fail "interrupted report"
python3 - "$out/moeprobe.db" <<'PY' || fail "store after SIGQUIT"
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
running = db.execute("SELECT count(*) FROM attempts WHERE status = 'running'").fetchone()[0]
interrupted, finished = db.execute("SELECT interrupted, finished FROM run").fetchone()
print("running attempts:", running, "interrupted:", interrupted, "finished:", finished)
sys.exit(0 if running == 0 and interrupted else 1)
PY
assert_no_leftovers
echo ok
