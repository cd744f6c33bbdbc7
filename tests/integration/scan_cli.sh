#!/bin/bash
# tier: quick
# scan_cli: `moeprobe scan` on good and bad inputs: text and JSON output,
# per-file errors (missing, directory, binary, empty) with exit 2 while the
# other files are still scanned, --knowledge errors, --help. NUL bytes (in a
# line, a zero-filled tail) are skipped, never a reason to refuse a file.
set -u
: "${MOEPROBE:?}"
t=$(mktemp -d /tmp/mp-scan.XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat > "$t/a.log" <<'LOG'
(APIServer pid=1) INFO 04-17 18:06:17 [api_server.py:1] vLLM API server version 0.17.0
(APIServer pid=1) WARNING 04-17 18:06:17 [envs.py:1744] Unknown vLLM environment variable detected: VLLM_SCALED_MM_BACKEND
(EngineCore pid=184) INFO 04-17 18:06:36 [nvfp4.py:256] Using 'MARLIN' NvFp4 MoE backend out of potential backends: ['VLLM_CUTLASS', 'MARLIN'].
(APIServer pid=1) INFO:     Application startup complete.
LOG
# binary bytes, not a log (every byte value in turn: the first 64 KiB of an
# executable is not reliably "binary" - its symbol names are text, and how
# much depends on the build)
python3 -c 'import sys; sys.stdout.buffer.write(b"\x7fELF" + bytes(range(256)) * 274)' > "$t/bin.log"
: > "$t/empty.log"
mkdir "$t/dir"

out=$("$MOEPROBE" scan --json "$t/a.log") || fail "scan of a good file exited $?"
python3 - "$out" <<'PY' || fail "JSON fields"
import json, sys
d = json.loads(sys.argv[1])
assert isinstance(d, list) and len(d) == 1, d
o = d[0]
assert o["engine_version"] == "0.17.0", o
assert o["resolved"]["moe_backend"] == "MARLIN", o
assert o["resolved"]["moe_candidates"] == ["VLLM_CUTLASS", "MARLIN"], o
assert o["unknown_env"] == ["VLLM_SCALED_MM_BACKEND"], o
assert o["crash"] is None and o["ready"] is True, o
codes = {f["code"] for f in o["findings"]}
assert {"unknown-env", "flashinfer-moe-filtered", "moe-backend"} <= codes, codes
PY

out=$("$MOEPROBE" scan --json "$t/missing.log" "$t/dir" "$t/bin.log" "$t/empty.log" "$t/a.log" 2>"$t/err")
rc=$?
[ $rc -eq 2 ] || fail "bad inputs: exit $rc, want 2"
for w in "missing.log: No such file" "dir: is a directory" "bin.log: binary file" "empty.log: empty file"; do
    grep -q "$w" "$t/err" || fail "no message '$w' in: $(cat "$t/err")"
done
python3 - "$out" <<'PY' || fail "JSON with errors"
import json, sys
d = json.loads(sys.argv[1])
assert len(d) == 5, d
assert all("error" in o for o in d[:4]), d
assert d[4]["resolved"]["moe_backend"] == "MARLIN"
PY

# NUL bytes: one printed inside a line, a run between lines, and a crash
# log whose tail is a zero-filled block (1 MiB, no newline)
{ printf 'abc\0def\n\0\0\0'; cat "$t/a.log"; } > "$t/nul.log"
{ cat "$t/a.log"; echo "(EngineCore pid=184) INFO 04-17 18:07:00 [core.py:1] last words"; head -c 1048576 /dev/zero; } > "$t/tail.log"
head -c 200000 /dev/zero > "$t/zeros.log"
out=$("$MOEPROBE" scan --json "$t/nul.log" "$t/tail.log" "$t/zeros.log" 2>"$t/err") ||
    fail "NUL bytes: exit $?: $(cat "$t/err")"
python3 - "$out" <<'PY' || fail "JSON of logs with NUL bytes"
import json, sys
d = json.loads(sys.argv[1])
nul, tail, zeros = d
assert nul["resolved"]["moe_backend"] == "MARLIN" and nul["ready"], nul
assert nul["nul_bytes"] == 4 and nul["lines"] == 5, nul
f = [x for x in nul["findings"] if x["code"] == "nul-bytes"]
assert f and f[0]["line"] == 1, nul["findings"]
assert tail["resolved"]["moe_backend"] == "MARLIN" and tail["lines"] == 5, tail
assert tail["nul_bytes"] == 1048576 and tail["truncated_lines"] == 0, tail
assert any(x["code"] == "nul-tail" and x["line"] == 5 for x in tail["findings"]), tail["findings"]
assert zeros["lines"] == 0 and zeros["nul_bytes"] == 200000, zeros
PY
"$MOEPROBE" scan "$t/tail.log" | grep -q "nul-tail (line 5): the log ends in 1048576 NUL bytes" ||
    fail "text output of a zero-filled tail"

"$MOEPROBE" scan "$t/a.log" > "$t/text" || fail "text scan"
grep -q "MoE backend *MARLIN  (line 3)" "$t/text" || fail "text output: $(cat "$t/text")"
cat "$t/a.log" | "$MOEPROBE" scan --json - | grep -q '"moe_backend": "MARLIN"' || fail "stdin"

echo '{"format": 1, "knobs": [' > "$t/k.json"
"$MOEPROBE" scan --knowledge "$t/k.json" "$t/a.log" 2>"$t/err"; rc=$?
[ $rc -eq 2 ] && grep -q "k.json" "$t/err" || fail "bad knowledge: exit $rc: $(cat "$t/err")"
"$MOEPROBE" scan 2>/dev/null; [ $? -eq 2 ] || fail "no file: want exit 2"
"$MOEPROBE" scan --bogus x 2>/dev/null; [ $? -eq 2 ] || fail "bad option: want exit 2"
"$MOEPROBE" scan --help | grep -q "usage: moeprobe scan" || fail "--help"

# secrets the log quotes are masked on stdout in both renderings (#30 item 1:
# every channel through the one mask): a secret-named assignment, a Bearer
# credential, a URL password, a quoted secret pair
cat >"$t/sec.log" <<'LOG'
INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.17.1
INFO 05-01 10:00:00 [utils.py:1] non-default args: {'model': 'm', 'hf_token': 'pL4ntK-hf-arg-0011'}
ERROR 05-01 10:00:01 [core.py:1] RuntimeError: CUDA error: an illegal memory access was encountered HF_TOKEN=pL4ntL-hf-env-0012 https://u:pL4ntM-url-0013@host/x
ERROR 05-01 10:00:01 [core.py:1] Authorization: Bearer pL4ntN-bearer-0014
LOG
"$MOEPROBE" scan --json "$t/sec.log" >"$t/sec.json" || fail "scan --json of the secrets log"
"$MOEPROBE" scan "$t/sec.log" >"$t/sec.txt" || fail "scan of the secrets log"
grep -q 'HF_TOKEN=\*\*\*' "$t/sec.json" || fail "the secrets log's crash is not in the JSON: $(cat "$t/sec.json")"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$t/sec.json" 2>/dev/null ||
    ! command -v python3 >/dev/null || fail "masked scan --json is not JSON"
if grep -aoE '.{0,30}pL4nt[K-N].{0,10}' "$t/sec.json" "$t/sec.txt"; then fail "scan printed a secret"; fi
exit 0
