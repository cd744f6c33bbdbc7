#!/bin/bash
# refengine hostile EngineCore: it ignores SIGTERM and leaves the process
# group, so killing the group leaves it alive; the marker variable finds it.
# A well-behaved child exits when its parent is gone.
. "$(dirname "$0")/re_lib.sh"

re_start hostile "$ROOT/tests/worlds/hostile.ini"
re_ready
child=$(grep -oP '^\(EngineCore pid=\K[0-9]+' "$RE_LOG" | head -n 1)
[ -n "$child" ] || fail "no EngineCore pid"
[ "$(ps -o sid= -p "$child" | tr -d ' ')" != "$RE_PID" ] || fail "child did not leave the session"
kill -KILL -- "-$RE_PID"
re_wait_exit
kill -0 "$child" 2>/dev/null || fail "hostile child should survive the group kill"
kill -TERM "$child"
kill -0 "$child" 2>/dev/null || fail "hostile child should ignore SIGTERM"
re_marked_pids | grep -qx "$child" || fail "marker does not find the child"
kill -KILL "$child"
timeout 10 tail --pid="$child" -s 0.05 -f /dev/null

# well-behaved child: SIGKILL of the API server -> the child exits by itself
re_start polite "$ROOT/tests/worlds/fast.ini"
re_ready
child=$(grep -oP '^\(EngineCore pid=\K[0-9]+' "$RE_LOG" | head -n 1)
kill -KILL "$RE_PID"
re_wait_exit
timeout 10 tail --pid="$child" -s 0.05 -f /dev/null
kill -0 "$child" 2>/dev/null && fail "orphaned child should exit"
[ -z "$(re_marked_pids)" ] || fail "processes left"
echo ok
