#!/bin/bash
# refengine start-up failures: world errors (file:line, exit 2), argparse
# error for --moe-backend before 0.17 (exit 2), explicit unsupported backend
# and startup-crash (traceback, non-zero exit), port in use (OSError).
. "$(dirname "$0")/re_lib.sh"

printf '[engine]\nversion = 0.17.0\ndevice = sm121\nmodel = m\nspeed = 3\n' >"$RE_TMP/bad.ini"
out=$("$REFENGINE" --world "$RE_TMP/bad.ini" --port 0 2>&1); rc=$?
[ $rc = 2 ] || fail "bad world exit $rc"
grep -q "bad.ini:5: unknown key 'speed' in \[engine\]" <<<"$out" || fail "bad world message: $out"
out=$("$REFENGINE" --world "$RE_TMP/missing.ini" 2>&1); rc=$?
[ $rc = 2 ] && grep -q 'missing.ini' <<<"$out" || fail "missing world: $rc $out"

out=$("$REFENGINE" serve m --world "$ROOT/worlds/era-0.15-oracle.ini" --port 0 --moe-backend cutlass 2>&1); rc=$?
[ $rc = 2 ] || fail "argparse exit $rc"
grep -qx 'vllm serve: error: unrecognized arguments: --moe-backend cutlass' <<<"$out" || fail "argparse text: $out"

re_start unsupported "$ROOT/worlds/era-0.17-flag.ini" --moe-backend flashinfer_trtllm
re_wait_exit
[ "$RE_RC" != 0 ] || fail "unsupported backend must fail"
grep -q "ValueError: NvFp4 MoE backend 'FLASHINFER_TRTLLM' does not support the deployment configuration since kernel does not support current device." "$RE_LOG" ||
    fail "no ValueError"
grep -q 'RuntimeError: Engine core initialization failed. See root cause above.' "$RE_LOG" || fail "no RuntimeError"

re_start tma "$ROOT/worlds/mistral-small-4.ini"
re_wait_exit
[ "$RE_RC" != 0 ] || fail "startup-crash must fail"
grep -q "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend" "$RE_LOG" || fail "selection line must come first"
grep -qP 'Error: Failed to initialize the TMA descriptor \d+' "$RE_LOG" || fail "no TMA error"
grep -q 'Application startup complete' "$RE_LOG" && fail "must not become ready"

re_start cutlass "$ROOT/worlds/mistral-small-4.ini" --moe-backend cutlass
re_ready
first=$RE_PID; port=$RE_PORT; log=$RE_LOG
re_start inuse "$ROOT/worlds/mistral-small-4.ini" --port "$port"
# re_start appended --port 0 first; the later --port wins
re_wait_exit
[ "$RE_RC" != 0 ] || fail "port in use must fail"
grep -q 'OSError: \[Errno 98\] Address already in use' "$RE_LOG" || fail "no EADDRINUSE traceback"
RE_PID=$first; RE_LOG=$log
kill -TERM "$RE_PID"; re_wait_exit
[ -z "$(re_marked_pids)" ] || fail "processes left"
echo ok
