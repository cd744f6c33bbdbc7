#!/bin/bash
# html_report.sh - report.html checked in a real browser: a qualify run
# against a world with an async race, a garbage backend and a healthy one
# (and a hostile model name), then headless Chromium renders the page; the
# page must load with no console errors, no network requests and no
# unescaped input, and the screenshot must be a real PNG (the layout itself
# is checked by html_layout.sh).
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
skip() { echo "$*"; exit 77; }
chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; }
    chrome=$(command -v chromium || true)
fi
[ -n "$chrome" ] || skip "skip: chromium is not installed and cannot be installed here"
command -v python3 >/dev/null || skip "skip: python3 is needed to check the screenshot"
tmp=$(mktemp -d /tmp/html-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$tmp/world.ini" <<'W'
[engine]
version = 0.17.0
device = sm121
model = evil/<script>alert(1)</script>&x
load_seconds = 0
[backend FLASHINFER_CUTLASS]
tokens_per_second = 2000
failure = async-race
crash_after_requests = 3
sites = flashinfer_prefill, scaled_fp8_quant
error = an illegal memory access was encountered
blocking_slowdown = 0.5
[backend VLLM_CUTLASS]
tokens_per_second = 3000
failure = garbage
[backend MARLIN]
tokens_per_second = 1500
W
"$MOEPROBE" qualify --out "$tmp/run" --max-tokens 8 --seq 3 --conc 4:8 --ready-timeout 30 \
    --candidate 'auto:' --candidate 'cutlass: --moe-backend cutlass' \
    --candidate 'marlin: --moe-backend marlin' \
    -- "$REFENGINE" --world "$tmp/world.ini" --port '{port}' >"$tmp/q.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -20 "$tmp/q.out"; fail "qualify exit $rc"; }
html="$tmp/run/report.html"
[ -s "$html" ] || fail "no report.html"

# self-contained and escaped
grep -Eiq '<script|<link|<iframe|<img|src=|url\(|@import' "$html" && fail "external or active content"
# links only within the page (URLs quoted from engine logs are text, not links)
grep -Eio '(href|src|action|xlink:href)=[^ >]*' "$html" | grep -v '^href="#' && fail "link out of the page"
grep -q 'alert(1)</script>' "$html" && fail "model name not escaped"
grep -q 'evil/&lt;script&gt;alert(1)&lt;/script&gt;&amp;x' "$html" ||
    fail "escaped model name missing"
for want in '<h2>Recommendation</h2>' 'v-async-race' 'v-garbage-output' 'v-stable' \
    'Requests over time' 'Time to first token' 'Inter-token latency' 'normal vs launch-blocking' \
    'against concurrency, per candidate' 'Latency per phase' \
    'class="fail"' '<h2>Output check</h2>' 'server.log</code>, lines' 'class=hl' \
    'answers identical to marlin; first difference in <code>capital</code> at token 0'; do
    grep -qF -- "$want" "$html" || fail "report.html lacks $want"
done
# throughput per phase and against concurrency, a timeline per candidate,
# normal vs blocking (the distributions are charts once the store holds
# phase histograms, notes before)
n_svg=$(grep -o '<svg ' "$html" | wc -l)
[ "$n_svg" -ge 6 ] || fail "only $n_svg charts"

# the browser: load, console, network, screenshot
shoot() { # WIDTH HEIGHT OUT
    timeout -k 5 90 "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --no-first-run --disable-extensions --user-data-dir="$tmp/profile" \
        --enable-logging=stderr --v=0 --window-size="$1,$2" --screenshot="$3" \
        "file://$html" >"$tmp/chrome.log" 2>&1
}
shoot 1280 2600 "$tmp/desktop.png" || { tail -20 "$tmp/chrome.log"; skip "skip: chromium cannot run here"; }
shoot 390 2400 "$tmp/phone.png" || fail "phone screenshot failed"
if grep -E 'CONSOLE|Uncaught|Refused to|net::ERR|Failed to load' "$tmp/chrome.log"; then
    fail "browser reported errors"
fi
timeout -k 5 90 "$chrome" --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" \
    --dump-dom "file://$html" 2>/dev/null >"$tmp/dom.html" || fail "dump-dom failed"
grep -q 'moeprobe qualify report' "$tmp/dom.html" || fail "page did not load"
python3 - "$tmp/desktop.png" "$tmp/phone.png" <<'PY' || fail "screenshot is not a rendered page"
import struct, sys, zlib
for path in sys.argv[1:]:
    d = open(path, "rb").read()
    assert d[:8] == b"\x89PNG\r\n\x1a\n", path
    w, h = struct.unpack(">II", d[16:24])
    assert w >= 390 and h >= 2000, (path, w, h)
    assert len(d) > 20000, (path, len(d))  # a blank page compresses to a few KB
PY
echo "ok: report.html renders in $("$chrome" --version 2>/dev/null | head -1) without errors; $n_svg charts"
