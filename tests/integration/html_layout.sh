#!/bin/bash
# html_layout.sh - report.html laid out by a real browser: a qualify run
# with several candidates (an async race with a diagnosis whose crash line
# is one 280-byte word, a hang, a healthy one), then headless Chromium,
# driven over its DevTools pipe (--remote-debugging-pipe; Python's standard
# library only), lays the page out at 1280 px and at 390 px and JavaScript
# in the page asserts:
#   - nothing is clipped or spills out: no element (outside SVG) whose
#     content is wider than its box unless the box scrolls, nothing hidden
#     by overflow:hidden, no SVG text outside its viewBox, the page no wider
#     than the window; at 1280 px not even a table needs to scroll;
#   - the normal-vs-blocking chart draws the two rates the diagnosis divides
#     (the sequential-phase medians in the store; their ratio is
#     report.json's throughput_ratio, and the title says it);
#   - the throughput-vs-concurrency chart has report.json's numbers;
#   - the hang's timeline marks its last token and the stall, and the
#     silence it shows is at least the stall timeout;
#   - the candidates table (the first screen: verdict, backend, why) needs
#     no sideways scrolling at either width: on a phone it is a card per
#     candidate.
# Every Chromium process is gone at the end. Skips (77) without chromium.
# HTML_SHOTS=DIR keeps screenshots there (docs/report-desktop.png,
# report-candidate.png, report-phone.png).
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
skip() { echo "$*"; exit 77; }
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chrome" ] || skip "skip: chromium is not installed (CI installs it)"
command -v python3 >/dev/null || skip "skip: python3 is needed to drive chromium"
tmp=$(mktemp -d /tmp/html-layout.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

. "$ROOT/tests/integration/timeout_lib.sh"
STALL=$(tmul 2)
"$MOEPROBE" qualify --out "$tmp/run" --quiet --seq 3 --conc 4:8 --max-tokens 8 --grace 3 \
    --stall-timeout "$STALL" --candidate 'auto:' --candidate 'cutlass: --moe-backend cutlass' \
    --candidate 'marlin: --moe-backend marlin' \
    -- "$REFENGINE" --world "$ROOT/tests/integration/worlds/html-layout.ini" --port '{port}' \
    >"$tmp/q.out" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -20 "$tmp/q.out"; fail "qualify exit $rc"; }
[ -s "$tmp/run/report.html" ] || fail "no report.html"
grep -q '"verdict":	"hang"' "$tmp/run/report.json" || fail "the world gave no hang"
grep -q '"throughput_ratio":	0\.' "$tmp/run/report.json" || fail "the world gave no diagnosis"
# rendered from the store: the same page without the attempt files
for f in "$tmp"/run/attempts/*/{server.log,server.times,requests.jsonl}; do rm -f "$f"; done
"$MOEPROBE" report "$tmp/run" >/dev/null 2>"$tmp/report.err" || fail "report: $(cat "$tmp/report.err")"
grep -q 'the store holds no server.log lines' "$tmp/run/report.html" && fail "excerpts read from files"
grep -q 'Requests over time' "$tmp/run/report.html" || fail "timeline read from files"

python3 - "$chrome" "$tmp" "$STALL" <<'PY'
import fcntl, json, os, signal, sqlite3, subprocess, sys, time

chrome, tmp, stall = sys.argv[1], sys.argv[2], float(sys.argv[3])
run = os.path.join(tmp, "run")
html = "file://" + os.path.join(run, "report.html")
rep = json.load(open(os.path.join(run, "report.json")))
cands = {c["name"]: c for c in rep["candidates"]}
errors = []

def check(ok, what):
    if not ok:
        errors.append(what)

# --- a DevTools client over the pipe: fd 3 to chromium, fd 4 from it ---
def high(fd):  # far from 3 and 4, close-on-exec
    h = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return h
to_r, to_w = map(high, os.pipe())
from_r, from_w = map(high, os.pipe())
def child_fds():  # dup2 leaves 3 and 4 open across exec; every other fd is close-on-exec
    os.dup2(to_r, 3)
    os.dup2(from_w, 4)
proc = subprocess.Popen(
    [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
     "--disable-extensions", "--hide-scrollbars", "--remote-debugging-pipe",
     "--user-data-dir=" + os.path.join(tmp, "profile"), "about:blank"],
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "chrome.log"), "w"),
    close_fds=False, preexec_fn=child_fds, start_new_session=True)
os.close(to_r)
os.close(from_w)
pgid = proc.pid
buf = b""
msg_id = 0
events = []

def send(method, params=None, session=None):
    global msg_id, buf
    msg_id += 1
    m = {"id": msg_id, "method": method, "params": params or {}}
    if session:
        m["sessionId"] = session
    os.write(to_w, json.dumps(m).encode() + b"\0")
    deadline = time.time() + 60
    while True:
        while b"\0" in buf:
            raw, buf = buf.split(b"\0", 1)
            r = json.loads(raw)
            if r.get("id") == msg_id:
                if "error" in r:
                    raise RuntimeError(method + ": " + json.dumps(r["error"]))
                return r.get("result", {})
            events.append(r)
        if time.time() > deadline:
            raise RuntimeError(method + ": no answer")
        chunk = os.read(from_r, 1 << 20)
        if not chunk:
            raise RuntimeError("chromium closed the pipe")
        buf += chunk

def wait_event(name, session):
    deadline = time.time() + 60
    while time.time() < deadline:
        for i, e in enumerate(events):
            if e.get("method") == name and e.get("sessionId") == session:
                del events[i]
                return e
        send("Runtime.evaluate", {"expression": "1"}, session)  # pumps the pipe
        time.sleep(0.05)
    raise RuntimeError("no " + name)

PROBE = r"""
(() => {
  const desc = e => e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.replace(/ /g, '.') : '') +
      ' "' + (e.textContent || '').trim().slice(0, 50) + '"';
  const scroller = e => { for (let p = e.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll') return p; } return null; };
  const vw = document.documentElement.clientWidth;
  const r = {vw, page: document.documentElement.scrollWidth, spill: [], hidden: [], offscreen: [],
             scrolling: [], scrollother: [], svgtext: [], bars: [], points: [], hang: null, longest_pre_line: 0};
  for (const e of document.querySelectorAll('body *')) {
    if (e.closest('svg')) continue;
    const cs = getComputedStyle(e);
    if (cs.overflowX === 'hidden' || cs.overflowY === 'hidden' || cs.textOverflow === 'ellipsis' ||
        cs.overflowX === 'clip')
      r.hidden.push(desc(e));
    const scrolls = cs.overflowX === 'auto' || cs.overflowX === 'scroll';
    if (cs.display !== 'inline' && e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1 && !scrolls)
      r.spill.push(desc(e) + ' ' + e.scrollWidth + '>' + e.clientWidth);
    const b = e.getBoundingClientRect();
    if (b.width > 0 && b.right > vw + 1 && !scroller(e))
      r.offscreen.push(desc(e) + ' right=' + Math.round(b.right));
  }
  /* boxes that scroll sideways: only a table's .scroll wrapper may (on a phone) */
  for (const e of document.querySelectorAll('body *')) {
    if (e.closest('svg') || !(e.scrollWidth > e.clientWidth + 1)) continue;
    const o = getComputedStyle(e).overflowX;
    if (o === 'auto' || o === 'scroll')
      (e.classList.contains('scroll') ? r.scrolling : r.scrollother).push(desc(e) + ' ' + e.scrollWidth + '>' + e.clientWidth);
  }
  for (const svg of document.querySelectorAll('svg')) {
    const v = svg.viewBox.baseVal;
    for (const t of svg.querySelectorAll('text')) {
      const bb = t.getBBox();
      if (bb.x < v.x - 0.5 || bb.y < v.y - 0.5 || bb.x + bb.width > v.x + v.width + 0.5 ||
          bb.y + bb.height > v.y + v.height + 0.5)
        r.svgtext.push('"' + t.textContent + '" in "' + svg.getAttribute('aria-label') + '" ' +
                       [bb.x, bb.y, bb.width, bb.height].map(Math.round).join(','));
    }
  }
  for (const fig of document.querySelectorAll('.blocking figure')) {
    const sec = fig.closest('section');
    const bars = [...fig.querySelectorAll('rect[data-v]')].map(x => +x.getAttribute('data-v'));
    const labels = [...fig.querySelectorAll('text.lab')].map(x => x.textContent);
    const vals = [...fig.querySelectorAll('text.val')].map(x => x.textContent);
    r.bars.push({cand: sec.id, bars, labels, vals, title: fig.querySelector('figcaption').textContent});
  }
  for (const c of document.querySelectorAll('circle.pt'))
    r.points.push({name: c.querySelector('title').textContent.split(':')[0], x: +c.getAttribute('data-x'),
                   y: +c.getAttribute('data-y')});
  const hs = document.getElementById('c-cutlass');
  if (hs) {
    const stop = hs.querySelector('svg line.stop'), fail = hs.querySelector('svg line.fail'),
          band = hs.querySelector('svg rect.stall'), lab = hs.querySelector('svg text.failt');
    r.hang = {stop: !!stop, fail: !!fail, band: !!band, label: lab ? lab.textContent : null,
              order: stop && fail ? +fail.getAttribute('x1') - +stop.getAttribute('x1') : null};
  }
  /* the candidates table: read without scrolling sideways, even on a phone */
  const ct = document.querySelector('table.cands');
  if (ct)
    r.cands = {scroll: ct.parentElement.scrollWidth > ct.parentElement.clientWidth + 1,
               rows: ct.querySelectorAll('tbody tr').length,
               why: [...ct.querySelectorAll('td[data-l=why]')].map(td => {
                 const b = td.getBoundingClientRect(); return [Math.round(b.left), Math.round(b.right)]; })};
  for (const p of document.querySelectorAll('pre.log'))
    for (const l of p.textContent.split('\n')) r.longest_pre_line = Math.max(r.longest_pre_line, l.length);
  return JSON.stringify(r);
})()
"""

try:
    tgt = send("Target.createTarget", {"url": "about:blank"})["targetId"]
    sess = send("Target.attachToTarget", {"targetId": tgt, "flatten": True})["sessionId"]
    send("Page.enable", {}, sess)
    send("Runtime.enable", {}, sess)
    send("Log.enable", {}, sess)
    results = {}
    for width, mobile in ((1280, False), (390, True)):
        send("Emulation.setDeviceMetricsOverride",
             {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": mobile}, sess)
        send("Page.navigate", {"url": html}, sess)
        wait_event("Page.loadEventFired", sess)
        res = send("Runtime.evaluate", {"expression": PROBE, "returnByValue": True}, sess)
        results[width] = json.loads(res["result"]["value"])
        if os.environ.get("HTML_SHOTS"):  # docs/report-*.png
            import base64
            def shoot(name, clip):
                clip = dict(clip, scale=1)
                shot = send("Page.captureScreenshot", {"format": "png", "clip": clip,
                                                       "captureBeyondViewport": True}, sess)
                open(os.path.join(os.environ["HTML_SHOTS"], name), "wb").write(base64.b64decode(shot["data"]))
            if width == 1280:
                shoot("report-desktop.png", {"x": 0, "y": 0, "width": 1280, "height": 1500})
                box = send("Runtime.evaluate", {"expression": "JSON.stringify(document.getElementById("
                           "'c-auto').getBoundingClientRect())", "returnByValue": True}, sess)
                b = json.loads(box["result"]["value"])
                shoot("report-candidate.png", {"x": 0, "y": b["y"] + 0, "width": 1280, "height": b["height"]})
            else:
                shoot("report-phone.png", {"x": 0, "y": 0, "width": 390, "height": 2400})
    for e in events:
        if e.get("method") in ("Log.entryAdded", "Runtime.consoleAPICalled", "Runtime.exceptionThrown"):
            errors.append("browser said: " + json.dumps(e.get("params"))[:300])
    try:
        send("Browser.close")
    except RuntimeError:
        pass
finally:
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(pgid, signal.SIGKILL)  # what is left of the browser we started
    except ProcessLookupError:
        pass
    proc.wait()
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        errors.append("chromium processes of group %d still alive" % pgid)
    # and none that left the group (a helper that made its own session)
    profile = os.path.join(tmp, "profile").encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if profile in open("/proc/%s/cmdline" % pid, "rb").read():
                errors.append("chromium process %s outlived the test" % pid)
        except OSError:
            pass

for width, r in results.items():
    tag = "%d px: " % width
    check(r["vw"] == width, tag + "viewport is %d" % r["vw"])
    check(r["page"] <= r["vw"], tag + "page is %d px wide" % r["page"])
    check(not r["spill"], tag + "content wider than its box: %s" % r["spill"][:5])
    check(not r["hidden"], tag + "overflow hidden: %s" % r["hidden"][:5])
    check(not r["offscreen"], tag + "beyond the right edge: %s" % r["offscreen"][:5])
    check(not r["scrollother"], tag + "scrolls sideways: %s" % r["scrollother"][:5])
    check(not r["svgtext"], tag + "chart text outside its chart: %s" % r["svgtext"][:5])
    check(r["longest_pre_line"] >= 250, tag + "the long log line is not in the excerpt (%d)" % r["longest_pre_line"])
    if width == 1280:
        check(not r["scrolling"], tag + "a table needs scrolling: %s" % r["scrolling"][:5])
    ct = r.get("cands")
    check(ct and ct["rows"] == 3 and not ct["scroll"] and len(ct["why"]) == 3 and
          all(0 <= x[0] and x[1] <= width for x in ct["why"]),
          tag + "the candidates table's reasons are not in view without scrolling sideways: %s" % ct)

r = results[1280]
# normal vs blocking: the two rates of the ratio, from the store
db = sqlite3.connect("file:%s?mode=ro" % os.path.join(run, "moeprobe.db"), uri=True)
def rate(blocking):
    return db.execute("SELECT max(p.req_tok_s_p50) FROM phases p JOIN attempts a ON a.id = p.attempt_id"
                      " JOIN candidates c ON c.id = a.candidate_id WHERE c.name = 'auto' AND"
                      " a.launch_blocking = ? AND p.name = 'sequential' AND a.status = 'done'",
                      (blocking,)).fetchone()[0]
rn, rb = rate(0), rate(1)
ratio = cands["auto"]["diagnosis"]["throughput_ratio"]
bl = [b for b in r["bars"] if b["cand"] == "c-auto"]
check(len(bl) == 1 and len(bl[0]["bars"]) == 2, "normal-vs-blocking chart of auto: %s" % bl)
if bl and len(bl[0]["bars"]) == 2:
    n, b = bl[0]["bars"]
    check(abs(n - rn) <= 1e-4 * rn and abs(b - rb) <= 1e-4 * rb,
          "bars %s are not the sequential medians %s / %s" % (bl[0]["bars"], rn, rb))
    check(abs(b / n - ratio) < 0.006, "bars' ratio %.3f is not report.json's %.3f" % (b / n, ratio))
    import re
    tr = re.search(r"ratio ([0-9.]+)x", bl[0]["title"])
    check(tr and abs(float(tr.group(1)) - ratio) <= 0.0051, "title %r lacks the ratio" % bl[0]["title"])
    # svg.c's number format: whole above 100, one decimal above 10, else two
    fig = lambda v: ("%.0f" if v >= 100 else "%.1f" if v >= 10 else "%.2f") % v
    check(bl[0]["vals"] == [fig(n) + " tok/s", fig(b) + " tok/s"], "bar labels %s" % bl[0]["vals"])
    check(bl[0]["labels"][0].startswith("normal") and bl[0]["labels"][1].startswith("blocking"),
          "bar names %s" % bl[0]["labels"])
# throughput against concurrency: report.json's numbers
m = cands["marlin"]["throughput"]
# data-y carries 6 significant digits: compare with that precision, not by
# rounding both sides (1224.55 printed and 1224.5500001 rounded differ)
want = {1.0: m["sequential_tok_s"]}
want.update({float(c["level"]): c["tok_s"] for c in m["concurrency"]})
got = {p["x"]: p["y"] for p in r["points"] if p["name"] == "marlin"}
check(set(want) == set(got) and all(abs(got[x] - want[x]) <= 1e-5 * max(1.0, abs(want[x])) for x in want),
      "marlin's throughput points %s, report.json %s" % (sorted(got.items()), sorted(want.items())))
check({p["name"] for p in r["points"]} >= {"auto", "cutlass", "marlin"}, "a candidate has no line")
# the hang
h = r["hang"]
check(h and h["stop"] and h["fail"] and h["band"], "hang markers: %s" % h)
if h and h["label"]:
    import re
    mm = re.match(r"hang: ([0-9.]+) s without a token", h["label"])
    check(mm and stall <= float(mm.group(1)) < 4 * stall, "hang label %r (stall %g s)" % (h["label"], stall))
    check(h["order"] and h["order"] > 0, "the stall ends before the last token")
if errors:
    print("FAIL:\n  " + "\n  ".join(errors))
    sys.exit(1)
print("ok: 1280 and 390 px: nothing clipped; blocking bars %.1f/%.1f = %.3f; hang %s" %
      (rn, rb, ratio, h["label"]))
PY
rc=$?
[ $rc -eq 0 ] || fail "layout checks"
echo "ok: report.html laid out by $("$chrome" --version 2>/dev/null | head -1)"
