#!/bin/bash
# refengine failure modes: async race (error event, 500, 503, exit 0; never
# under CUDA_LAUNCH_BLOCKING=1), kernel fault (also under blocking, at the
# first site), hang (no tokens, /health 200), garbage output.
. "$(dirname "$0")/re_lib.sh"

sse() { # PROMPT -> raw SSE body
    curl -sS --max-time 20 -N -H 'Content-Type: application/json' \
        -d "{\"prompt\":\"$1\",\"max_tokens\":8,\"ignore_eos\":true,\"stream\":true}" "$(re_url /v1/completions)"
}

# --- async race: request 2 crashes mid-stream
re_start race "$ROOT/tests/worlds/race.ini"
re_ready
sse one | grep -q '"finish_reason":"length"' || fail "request 1 should complete"
out=$(sse two)
grep -q '^data: {"error": {"message": "EngineCore encountered an issue' <<<"$out" || fail "no in-band error: $out"
tail -n 3 <<<"$out" | grep -q '^data: \[DONE\]' || fail "no [DONE] after the error"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$(re_url /health)")" = 503 ] || fail "health not 503"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d '{"prompt":"x"}' "$(re_url /v1/completions)")" = 500 ] ||
    fail "new request not 500"
re_wait_exit
[ "$RE_RC" = 0 ] || fail "vLLM exits 0 after engine death, got $RE_RC"
grep -q 'torch.AcceleratorError: CUDA error: an illegal memory access was encountered' "$RE_LOG" || fail "no CUDA error"
grep -q 'EngineCore encountered a fatal error.' "$RE_LOG" || fail "no fatal error line"
grep -q 'vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.' "$RE_LOG" ||
    fail "no EngineDeadError"
grep -qE 'in (forward|scaled_fp8_quant|get_output)$' "$RE_LOG" || fail "no crash site frame"

# --- the same world under CUDA_LAUNCH_BLOCKING=1: no crash
CUDA_LAUNCH_BLOCKING=1 re_start race-blocking "$ROOT/tests/worlds/race.ini"
re_ready
for i in 1 2 3 4 5 6; do sse "p$i" | grep -q '"finish_reason":"length"' || fail "blocking request $i failed"; done
kill -TERM "$RE_PID"; re_wait_exit

# --- kernel fault: crashes under blocking too, at the first site
CUDA_LAUNCH_BLOCKING=1 re_start fault "$ROOT/tests/worlds/fault.ini"
re_ready
out=$(sse one)
grep -q '"type": "InternalServerError", "param": null, "code": 500' <<<"$out" || fail "v0.20 error event: $out"
re_wait_exit
grep -q 'in apply$' "$RE_LOG" && grep -q 'flashinfer_cutlass_fused_moe(' "$RE_LOG" || fail "fault not at the first site"
grep -q 'CUDA error: misaligned address' "$RE_LOG" || fail "no misaligned address"

# --- hang: request 2 gets headers but no tokens; health stays 200
re_start hang "$ROOT/tests/worlds/hang.ini"
re_ready
sse one | grep -q '"finish_reason":"length"' || fail "request 1 should complete"
out=$(curl -sS -N --max-time 2 -H 'Content-Type: application/json' \
    -d '{"prompt":"two","max_tokens":8,"stream":true}' "$(re_url /v1/completions)" 2>/dev/null)
n=$(grep -c '"text_completion"' <<<"$out")
[ "$n" -le 2 ] || fail "hung request produced $n chunks"
grep -q 'DONE' <<<"$out" && fail "hung request finished"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$(re_url /health)")" = 200 ] || fail "health should stay 200"
kill -TERM "$RE_PID"; re_wait_exit

# --- garbage: one token repeated, never the sanity answer
re_start garbage "$ROOT/tests/worlds/garbage.ini"
re_ready
txt=$(re_post /v1/completions '{"prompt":"The capital of France is","max_tokens":5}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])')
[ "$txt" = "locklocklocklocklock" ] || fail "garbage text: $txt"
kill -TERM "$RE_PID"; re_wait_exit
[ -z "$(re_marked_pids)" ] || fail "processes left"
echo ok
