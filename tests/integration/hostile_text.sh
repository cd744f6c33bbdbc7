#!/bin/bash
# hostile_text.sh - an engine whose model name, backend list and crash
# message carry Markdown links and images, raw HTML, pipes, backticks and
# terminal control sequences (tests/integration/hostile_text_engine.py):
# report.md, report.html, report --compare, the stderr summary and
# `moeprobe scan` show that text escaped - none of it raw - while the text
# itself is still there to read.
set -u
: "${MOEPROBE:?}" "${ROOT:?}"
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
T=$(mktemp -d /tmp/hostile-text.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
E="$ROOT/tests/integration/hostile_text_engine.py"

"$MOEPROBE" qualify --no-quality --no-diagnose --out "$T/run" --seq 3 --conc 2:4 --max-tokens 8 \
    --candidate 'a: ' -- python3 "$E" --port '{port}' >"$T/run.out" 2>"$T/run.err"
rc=$?
[ $rc -eq 1 ] || fail "qualify exit $rc, want 1 (the engine crashes)"
MD="$T/run/report.md"

# raw FILE WHAT...: fail when FILE holds any of the raw strings
raw() {
    local f=$1; shift
    local s
    for s in "$@"; do
        ! grep -qF -- "$s" "$f" || fail "$(basename "$f"): raw '$s'"
    done
}
# raw bytes: ESC, BEL, DEL, C1 CSI (U+009B), right-to-left override (U+202E)
rawbytes() {
    ! LC_ALL=C grep -q $'\x1b\|\x07\|\x7f\|\xc2\x9b\|\xe2\x80\xae' "$1" ||
        fail "$(basename "$1"): raw control bytes: $(LC_ALL=C grep -o $'\x1b.\|\x07\|\x7f\|\xc2\x9b\|\xe2\x80\xae' "$1" | od -c | head -3)"
}

# none of the hostile text raw ...
raw "$MD" '[x](javascript' '![img](' '<script' '<img' '|cell|' '|a|b|' '`tick`'
rawbytes "$MD"
# ... but it did arrive (else this test could not fail)
grep -qF 'javascript:alert(1)' "$MD" || fail "report.md: the crash message is missing"
grep -qF 'onerror=alert(1)' "$MD" || fail "report.md: the HTML is missing"
grep -qF '\u202e' "$MD" || fail "report.md: the bidi override is not shown"
# every row of a table keyed by candidate (the candidates table, the latency
# table) has as many cells as its header (unescaped pipes)
awk '/^\| candidate \|/ { t = 1; h = $0; n = gsub(/\|/, "|", h); next } t && /^\|---/ { next } t && /^\|/ {
        line = $0; gsub(/\\\\/, "", line); gsub(/\\\|/, "", line)
        if (gsub(/\|/, "|", line) != n) { print "bad row: " $0; bad = 1 } }
     t && !/^\|/ { t = 0 } END { exit bad }' "$MD" || fail "report.md: a table row was broken"

# report.html and the report again from the store
raw "$T/run/report.html" '<script>alert' '<img src=x'
rawbytes "$T/run/report.html"
"$MOEPROBE" report --no-write "$T/run" >"$T/again.md" 2>"$T/again.err" || fail "report failed"
raw "$T/again.md" '[x](javascript' '![img](' '<script' '<img'
rawbytes "$T/again.md"
"$MOEPROBE" report --compare "$T/run" "$T/run" >"$T/cmp.md" 2>"$T/cmp.err" || fail "report --compare failed"
raw "$T/cmp.md" '[x](javascript' '![img](' '<script' '<img'
rawbytes "$T/cmp.md"

# the terminal: the run's stderr, scan's text output
rawbytes "$T/run.err"
rawbytes "$T/again.err"
"$MOEPROBE" scan "$T/run/attempts/a-1/server.log" >"$T/scan.out" 2>"$T/scan.err"
grep -qF 'javascript:alert(1)' "$T/scan.out" || fail "scan: the crash message is missing"
grep -qF '\u202e' "$T/scan.out" || fail "scan: the bidi override is not shown escaped"
rawbytes "$T/scan.out"
rawbytes "$T/scan.err"
# an error message from the engine's HTTP answers reaches the progress lines
"$MOEPROBE" qualify --no-quality --no-diagnose --out "$T/h500" --seq 3 --conc 2:4 --max-tokens 8 \
    --candidate 'a: ' -- python3 "$E" --http500 --port '{port}' >"$T/h500.out" 2>"$T/h500.err"
grep -qF 'javascript:alert(1)' "$T/h500.err" || fail "stderr: the engine's error message is missing"
grep -qF '\u202e' "$T/h500.err" || fail "stderr: the bidi override is not shown escaped"
rawbytes "$T/h500.err"
raw "$T/h500/report.md" '[x](javascript' '<script' '<img'
rawbytes "$T/h500/report.md"

# a checkpoint's words (inspect) and a command's (explain)
mkdir "$T/model"
printf '{"architectures": ["Evil\\u001b]0;pwned\\u0007Model"], "model_type": "x\\u202ey",
  "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}}' >"$T/model/config.json"
"$MOEPROBE" inspect "$T/model" >"$T/inspect.out" 2>"$T/inspect.err" || fail "inspect failed"
grep -qF 'Evil\x1b]0;pwned\x07Model' "$T/inspect.out" || fail "inspect: the architecture is not shown escaped"
rawbytes "$T/inspect.out"
"$MOEPROBE" explain -- vllm serve m --moe-backend $'cutlass\x1b[2J\xe2\x80\xae' >"$T/explain.out" 2>"$T/explain.err"
grep -qF 'cutlass\x1b[2J' "$T/explain.out" "$T/explain.err" || fail "explain: the knob is not shown escaped"
rawbytes "$T/explain.out"
rawbytes "$T/explain.err"
echo "ok: hostile engine and checkpoint text escaped in report.md/html, --compare, stderr, scan, inspect, explain"
