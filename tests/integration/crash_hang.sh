#!/bin/bash
# crash_hang.sh - the wedged server (#24): a stall while /health stays 200
# is a hang with that evidence, confirmed by the engine's /metrics token
# counter; the engine moeprobe started has a core-dump pipe, which moeprobe
# triggers, and the kernels its warps were in come from cuda-gdb on the
# dump (tests/fake/cuda-gdb stands in for it); "hang, warps in `...`" next
# to the verdict. Attached (soak --base-url) the evidence is the same and
# there is no pipe to trigger, which the report says.
. "$(dirname "$0")/q_lib.sh"
WH="$W/crash-hang.ini"
export MOEPROBE_KMSG=none MOEPROBE_NVML_LIB=none
export PATH="$ROOT/tests/fake:$PATH"

qualify hang "$WH" "${Q_FAST[@]}" --no-quality --stall-timeout 2 --candidate 'hang:'
[ "$Q_RC" -eq 1 ] || { cat "$Q_TMP/hang.stderr"; fail "hang: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'c["hang"]["verdict"] == "hang"' \
    '"/health answered 200, then 200" in c["hang"]["why"] and "vllm:generation_tokens_total stayed at" in c["hang"]["why"] and "a wedged server" in c["hang"]["why"]' \
    'c["hang"]["attempts"][0]["gpu_fault"]["hang_dump"].startswith("triggered through 1 pipe(s), 1 dump(s) written; process ")' \
    '"warps were in marlin_moe_wna16::Marlin<5l, 13l" in c["hang"]["attempts"][0]["gpu_fault"]["hang_dump"]' \
    'c["hang"]["attempts"][0]["gpu_fault"]["kernels"][0]["family"] == "marlin-moe"' \
    'c["hang"]["attempts"][0]["gpu_fault"]["kernels"][0]["exception"] is None' \
    'c["hang"]["attempts"][0]["gpu_fault"]["kernels"][0]["dump"]["state"] == "deleted after parsing"' \
    || fail "hang: evidence and dump"
grep -q '| hang, warps in `marlin_moe_wna16::Marlin<…>` (Marlin MoE) |' "$Q_DIR/report.md" ||
    fail "report.md: the hang's kernel is not named next to the verdict"
ls "$Q_DIR"/attempts/*/core_* "$Q_DIR"/attempts/*/pipe_* >/dev/null 2>&1 && fail "a dump or a pipe was left"

# attached: someone else's server, no pipe of ours
ELOG="$Q_TMP/engine.log"
setsid "$REFENGINE" --world "$WH" --port 0 >"$ELOG" 2>&1 &
EPID=$!
EPORT=""
exec {lfd}< <(exec timeout 20 tail -n +1 -F "$ELOG" 2>/dev/null)
while read -r line <&"$lfd"; do
    case "$line" in
    *"on http://"*) EPORT=$(echo "$line" | sed -n 's|.*http://[0-9.]*:\([0-9]*\).*|\1|p') ;;
    *"Application startup complete"*) break ;;
    esac
done
exec {lfd}<&-
[ -n "$EPORT" ] || { cat "$ELOG"; fail "engine did not report its port"; }
"$MOEPROBE" soak --quiet --out "$Q_TMP/att" --duration 30 --concurrency 2 --max-tokens 8 \
    --stall-timeout 2 --base-url "http://127.0.0.1:$EPORT" --log "$ELOG" >/dev/null 2>"$Q_TMP/att.err"
rc=$?
kill "$EPID" 2>/dev/null
wait "$EPID" 2>/dev/null
[ $rc -eq 1 ] || { cat "$Q_TMP/att.err"; fail "attached hang: exit $rc"; }
check "$Q_TMP/att/report.json" \
    'c["soak"]["verdict"] == "hang"' \
    '"a wedged server: healthy by /health, no progress by /metrics" in c["soak"]["why"]' \
    'c["soak"]["attempts"][0]["gpu_fault"]["hang_dump"].startswith("no dump: the engine was not started with a core-dump pipe")' \
    || fail "attached hang"
assert_no_leftovers
echo ok
