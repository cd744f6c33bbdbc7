#!/bin/bash
# server.log is the evidence while the attempt runs, not only after it: what
# the engine printed is on disk within a turn of the event loop, so a user
# tailing it sees it and a kill -9 of moeprobe loses none of it.
. "$(dirname "$0")/q_lib.sh"
D="$Q_TMP/cur"
"$MOEPROBE" qualify --out "$D" --quiet --ready-timeout 60 --candidate 'auto:' -- \
    sh -c 'echo "INFO first line from the engine"; echo "INFO second line"; exec sleep 60' \
    >/dev/null 2>"$Q_TMP/cur.err" &
mp=$!
found=
for _ in $(seq 100); do # bounded: 100 rounds of at most 0.1 s each
    if grep -q "second line" "$D/attempts/auto-1/server.log" 2>/dev/null; then found=1; break; fi
    timeout 0.1 tail -n0 -F "$D/attempts/auto-1/server.log" 2>/dev/null | head -n1 >/dev/null
done
kill -9 $mp
{ wait $mp; } 2>/dev/null
[ -n "$found" ] || { cat "$Q_TMP/cur.err"; fail "server.log did not show the engine's lines while it ran"; }
grep -q "first line from the engine" "$D/attempts/auto-1/server.log" || fail "first line lost"
[ "$(wc -l <"$D/attempts/auto-1/server.times")" -ge 2 ] || fail "server.times is behind server.log"
# what kill -9 left: the engine, ended by the leftover check below
for p in $(q_marked | grep -vx "$BASHPID"); do kill -9 "$p" 2>/dev/null; done
echo "ok: server.log is current"
