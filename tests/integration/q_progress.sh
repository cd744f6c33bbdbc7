#!/bin/bash
# Progress: with stderr not a terminal (a file, tee, CI) one line per state
# change and never a \r redraw; the plan and the estimate after the first
# engine start; a repeated attempt says which attempt it is. On a terminal
# the live line shows the engine's last log line during start-up and the
# run's ETA.
. "$(dirname "$0")/q_lib.sh"
cat >"$Q_TMP/w.ini" <<'INI'
[engine]
version = 0.19.0
device = sm120
model = test/progress-model
load_seconds = 1.2
select_seconds = 0.2
[backend FLASHINFER_CUTLASS]
tokens_per_second = 3000
contention = 0
failure = async-race
crash_after_requests = 3
[backend MARLIN]
tokens_per_second = 3000
contention = 0
INI
"$MOEPROBE" qualify --out "$Q_TMP/lines" --seq 3 --conc 2:4 --max-tokens 8 --grace 3 --no-quality \
    --candidate 'auto:' --candidate 'marlin: --moe-backend marlin' \
    -- "$REFENGINE" --world "$Q_TMP/w.ini" --port '{port}' >/dev/null 2>"$Q_TMP/lines.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/lines.err"; fail "exit $rc"; }
E="$Q_TMP/lines.err"
! grep -q $'\r' "$E" || fail "a \\r redraw in a non-terminal stderr"
! grep -q $'\033' "$E" || fail "an escape sequence in a non-terminal stderr"
for want in '^moeprobe: [0-9:]* \[auto 1/2\] started: pid [0-9]*, attempt 1$' \
            '^moeprobe: [0-9:]* \[auto 1/2\] resolved: MoE FLASHINFER_CUTLASS, attention FLASHINFER' \
            '^moeprobe: [0-9:]* \[auto 1/2\] ready in [0-9.]* s$' \
            '^moeprobe: [0-9:]* \[auto 1/2\] phase warmup: 1 ok, 0 failed' \
            '^moeprobe: [0-9:]* \[auto 1/2\] failed: ' \
            '^moeprobe: plan: 2 candidates, 1 configuration seen so far, about 1 more engine start' \
            '^moeprobe: [0-9:]* \[auto 1/2 [a-z ]*attempt 2\] started: ' \
            'the CUDA_LAUNCH_BLOCKING=1 run needs' \
            '^moeprobe: [0-9:]* \[auto 1/2 blocking attempt [0-9]*\] ready in' \
            '^moeprobe: [0-9:]* \[marlin 2/2\] phase sequential: 3 ok, 0 failed'; do
    grep -q "$want" "$E" || { cat "$E"; fail "no line matching: $want"; }
done
# plan ETA is measured: start-up and per-request time are numbers
grep -q "^moeprobe: plan: .*start-up [0-9.]* s, [0-9.e-]* s per request, a full attempt about [0-9]* s measured; ETA [0-9]" "$E" ||
    fail "the plan has no measured ETA"

# a terminal: the live line (script(1) gives moeprobe a pty)
if command -v script >/dev/null; then
    script -qfec "\"$MOEPROBE\" qualify --out \"$Q_TMP/tty\" --seq 3 --conc 2:4 --max-tokens 8 \
        --grace 3 --no-quality --no-diagnose --candidate 'marlin: --moe-backend marlin' \
        --candidate 'm2: --moe-backend marlin --served-model-name x' \
        -- \"$REFENGINE\" --world \"$Q_TMP/w.ini\" --port '{port}'" "$Q_TMP/tty.out" >/dev/null 2>&1
    grep -q $'\r\033\[K\[marlin 1/2\] startup' "$Q_TMP/tty.out" || fail "no live start-up line on a terminal"
    grep -aq "startup [0-9]*s.*| .*INFO" "$Q_TMP/tty.out" || fail "the live line does not show the engine's last log line"
    grep -aq "\[m2 2/2\] .*run ETA ~[0-9]" "$Q_TMP/tty.out" || fail "the live line has no ETA"
    ! grep -aq "^moeprobe: [0-9:]* \[marlin 1/2\] started" "$Q_TMP/tty.out" || fail "state lines on a terminal"
else
    echo "note: script(1) not installed; the terminal live line is not checked"
fi
assert_no_leftovers
echo "ok: progress"
