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
exit 0
