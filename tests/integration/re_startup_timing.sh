#!/bin/bash
# refengine start-up timeline ([engine] select_seconds, load_seconds): the
# kernel selection lines come select_seconds after start, then the weight and
# init-engine lines with the durations the world implies, in vLLM's order;
# SIGTERM after the selection lines stops the engine before ready.
. "$(dirname "$0")/re_lib.sh"

w="$RE_TMP/timing.ini"
printf '[engine]\nversion = 0.17.0\ndevice = sm121\nmodel = m\nselect_seconds = 1\nload_seconds = 3\n' >"$w"

now() { date +%s.%N; }
t0=$(now)
re_start timeline "$w"
re_wait_line "NvFp4 MoE backend out of potential backends" 10 || fail "no selection line"
t_sel=$(now)
grep -q 'Application startup complete' "$RE_LOG" && fail "ready together with the selection lines"
re_ready 10
t_ready=$(now)
awk -v a="$t0" -v b="$t_sel" 'BEGIN { exit !(b - a >= 0.9) }' || fail "selection line before select_seconds ($t0 -> $t_sel)"
awk -v a="$t_sel" -v b="$t_ready" 'BEGIN { exit !(b - a >= 1.5) }' || fail "ready too soon after selection ($t_sel -> $t_ready)"
# the durations: weights loaded at 1 + 0.45 * (3 - 1) = 1.9 s
grep -q 'Loading weights took 0.90 seconds' "$RE_LOG" || fail "Loading weights duration"
grep -q 'Model loading took 61.3264 GiB memory and 1.900000 seconds' "$RE_LOG" || fail "Model loading duration"
grep -q 'init engine (profile, create kv cache, warmup model) took 1.10 seconds' "$RE_LOG" || fail "init engine duration"
# vLLM's order
order=$(grep -noE "Starting to load model|NvFp4 MoE backend out of|Loading weights took|Model loading took|Available KV cache|init engine \(|Starting vLLM API server|Application startup complete" "$RE_LOG" | cut -d: -f2 | tr '\n' '|')
[ "$order" = "Starting to load model|NvFp4 MoE backend out of|Loading weights took|Model loading took|Available KV cache|init engine (|Starting vLLM API server|Application startup complete|" ] ||
    fail "order: $order"
kill -TERM "$RE_PID"
re_wait_exit

# stopped right after the selection lines: exits long before ready
printf '[engine]\nversion = 0.17.0\ndevice = sm121\nmodel = m\nselect_seconds = 0.2\nload_seconds = 30\n' >"$w"
re_start stopped "$w"
re_wait_line "NvFp4 MoE backend out of potential backends" 10 || fail "no selection line"
kill -TERM "$RE_PID"
re_wait_exit 5
grep -q 'Application startup complete' "$RE_LOG" && fail "became ready after SIGTERM"

# select_seconds above load_seconds is a world error
printf '[engine]\nversion = 0.17.0\ndevice = sm121\nmodel = m\nselect_seconds = 2\nload_seconds = 1\n' >"$w"
out=$("$REFENGINE" --world "$w" --port 0 2>&1); rc=$?
[ $rc = 2 ] && grep -q 'select_seconds (2) exceeds load_seconds (1)' <<<"$out" || fail "select > load: $rc $out"
[ -z "$(re_marked_pids)" ] || fail "processes left"
echo ok
