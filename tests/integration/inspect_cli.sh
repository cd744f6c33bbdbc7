#!/bin/bash
# tier: quick
# inspect_cli.sh - `moeprobe inspect` on the fake checkpoints: the --json
# contract, the human summary, and input errors (malformed config.json,
# truncated / huge-length / overlapping safetensors headers) that exit 2
# naming the file.
set -u
: "${MOEPROBE:?}" "${ROOT:?}"
command -v python3 >/dev/null || { echo "python3 is needed to build the bad checkpoints"; exit 77; }
tmp=$(mktemp -d /tmp/inspect-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ck="$ROOT/tests/data/checkpoints"

"$MOEPROBE" inspect --json "$ck/nemotron-h-nvfp4" >"$tmp/n.json" || fail "inspect --json exit $?"
python3 - "$tmp/n.json" <<'PY' || fail "nemotron json"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["architecture"] == "NemotronHForCausalLM" and j["model_type"] == "nemotron_h"
assert j["hybrid"] is True
m = j["moe"]
assert (m["experts"], m["experts_per_token"], m["intermediate_size"], m["activation"]) == (512, 22, 2688, "relu2")
assert m["swiglu_limit"] is None
q = j["quantization"]
assert (q["producer"], q["algo"], q["group_size"], q["weight_only"], q["kv_cache"]) == ("modelopt", "NVFP4", 16, False, "FP8")
assert q["exclude"][0] == "lm_head"
t = j["tensors"]
assert t["count"] == 9 and t["dtypes"]["U8"] == 2 and t["dtypes"]["F8_E4M3"] == 2 and t["bytes"] > 0
assert any("not gated" in n for n in j["notes"])
PY
"$MOEPROBE" inspect --json "$ck/qwen3-moe-w4a16" | grep -q '"weight_only":[[:space:]]*true' ||
    fail "compressed-tensors W4A16 not weight-only"
"$MOEPROBE" inspect "$ck/swiglu-clamp" >"$tmp/s.txt" || fail "inspect text exit $?"
grep -q 'swiglu_limit 7' "$tmp/s.txt" && grep -q '^note: swiglu_limit=7' "$tmp/s.txt" ||
    { cat "$tmp/s.txt"; fail "swiglu note"; }

expect2() { # DIR WANT_IN_MESSAGE
    "$MOEPROBE" inspect --json "$1" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ $rc -eq 2 ] || { cat "$tmp/err"; fail "$1: exit $rc, want 2"; }
    grep -q -- "$2" "$tmp/err" || { cat "$tmp/err"; fail "$1: message lacks '$2'"; }
    [ -s "$tmp/out" ] && fail "$1: printed a result on error"
    return 0
}
mk() { mkdir -p "$tmp/$1"; cp "$ck/swiglu-clamp/config.json" "$tmp/$1/"; }

mk badjson; printf '{\n "num_experts": 8,\n "hidden_size": ,\n}\n' >"$tmp/badjson/config.json"
expect2 "$tmp/badjson" "badjson/config.json:3: malformed JSON"
mk trunc; head -c 100 "$ck/swiglu-clamp/model.safetensors" >"$tmp/trunc/model.safetensors"
expect2 "$tmp/trunc" "trunc/model.safetensors: truncated"
mk huge; python3 -c 'import struct,sys; sys.stdout.buffer.write(struct.pack("<Q", 1 << 50) + b"{}")' >"$tmp/huge/model.safetensors"
expect2 "$tmp/huge" "huge/model.safetensors: declared header length"
mk overlap; python3 - "$tmp/overlap/model.safetensors" <<'PY'
import json, struct, sys
h = json.dumps({"a": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},
                "b": {"dtype": "U8", "shape": [8], "data_offsets": [4, 12]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(12))
PY
expect2 "$tmp/overlap" "overlap/model.safetensors: tensors \"a\" and \"b\" overlap"
mkdir -p "$tmp/empty"
expect2 "$tmp/empty" "no config.json"
expect2 "$tmp/nonexistent" "not a directory"

"$MOEPROBE" inspect >/dev/null 2>&1; [ $? -eq 2 ] || fail "no MODEL_DIR: want exit 2"
"$MOEPROBE" inspect --bogus "$ck/dense" >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad option: want exit 2"
"$MOEPROBE" inspect --help | grep -q 'usage: moeprobe inspect' || fail "--help"
echo "ok: inspect json, text and input errors"
