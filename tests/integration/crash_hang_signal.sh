#!/bin/bash
# crash_hang_signal.sh - Ctrl-C while a hang's evidence is gathered (#28: the
# HANGING state is steps on the attempt's one loop, run/crashhang.h). The
# wedged world of crash_hang.sh hangs; moeprobe looks at /health and
# /metrics, triggers a GPU core dump and runs cuda-gdb on it - here a
# cuda-gdb that never finishes (moeprobe would wait 60 s for it). A SIGINT
# once it runs ends the run at once: exit 130, the report says interrupted,
# the attempt is a hang with the evidence found so far and says where it
# stopped, and cuda-gdb and the engine are gone.
. "$(dirname "$0")/q_lib.sh"
export MOEPROBE_KMSG=none MOEPROBE_NVML_LIB=none
mkdir -p "$Q_TMP/bin"
cat >"$Q_TMP/bin/cuda-gdb" <<GDB
#!/bin/sh
# a cuda-gdb that never finishes: says it runs (its pid), then waits
echo \$\$ >"$Q_TMP/gdb.pid.tmp" && mv "$Q_TMP/gdb.pid.tmp" "$Q_TMP/gdb.pid"
exec sleep 600
GDB
chmod +x "$Q_TMP/bin/cuda-gdb"
out="$Q_TMP/hang"
PATH="$Q_TMP/bin:$PATH" "$MOEPROBE" qualify --out "$out" "${Q_FAST[@]}" --no-quality \
    --stall-timeout 2 --candidate 'hang:' -- "$REFENGINE" --world "$W/crash-hang.ini" \
    --port '{port}' >/dev/null 2>"$Q_TMP/hang.err" &
mp=$!
# wait (bounded) for cuda-gdb to run: the hang's evidence is being gathered
for _ in $(seq "$(tmul 300)"); do
    [ -s "$Q_TMP/gdb.pid" ] && break
    kill -0 "$mp" 2>/dev/null || break
    timeout 0.1 tail -n0 -F "$Q_TMP/gdb.pid" 2>/dev/null | head -n1 >/dev/null
done
[ -s "$Q_TMP/gdb.pid" ] || { kill -9 "$mp" 2>/dev/null; cat "$Q_TMP/hang.err"; fail "cuda-gdb never ran"; }
gdb=$(cat "$Q_TMP/gdb.pid")
kill -INT "$mp"
# promptly: far less than cuda-gdb's 60 s, which a signal used to wait out
if ! timeout "$(tmul 20)" tail --pid="$mp" -f /dev/null; then
    kill -9 "$mp" 2>/dev/null
    fail "moeprobe was still running $(tmul 20) s after SIGINT during the hang's evidence"
fi
wait "$mp"
rc=$?
[ $rc -eq 130 ] || { cat "$Q_TMP/hang.err"; fail "exit $rc after SIGINT, want 130"; }
kill -0 "$gdb" 2>/dev/null && fail "cuda-gdb (pid $gdb) was left running"
check "$out/report.json" 'r.get("interrupted") is True' \
    'c["hang"]["attempts"][0]["outcome"] == "hang"' \
    '"a wedged server" in c["hang"]["attempts"][0]["gpu_fault"]["hang"]' \
    'c["hang"]["attempts"][0]["gpu_fault"]["hang_dump"].startswith("triggered through 1 pipe(s), 1 dump(s) written")' \
    'c["hang"]["attempts"][0]["gpu_fault"]["hang_dump"].endswith("moeprobe stopped before the dumps were read")' \
    || fail "interrupted hang: report"
assert_no_leftovers
echo ok
