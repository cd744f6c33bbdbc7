#!/bin/bash
# Server metrics (issue #16 §3): moeprobe reads the engine's /metrics at each
# load phase's start, during it and at its end, and reports the server's
# view next to the client's (report.json phases[].server_metrics).
#  - a healthy paced world: the server's TTFT and ITL means agree with the
#    client's (within max(10 ms, 30 %) for TTFT, max(5 ms, 20 %) for ITL -
#    the server's interval lies inside the client's), the token counts are
#    exact, nothing is flagged;
#    report.md's "Server's view" table shows it beside the client's TTFT;
#  - a world whose KV cache is too small for concurrency 8: the phase is
#    flagged preempted and queued, report.md says it measured the KV cache
#    and flags its row of the "Server's view" table;
#  - a world with max_num_seqs 2: queued, not preempted;
#  - a vLLM 0.10 era engine: the time-per-output-token name is used, and
#    of the KV-cache gauge's two names the new one; a 0.9 era engine: the
#    gauge's old name, vllm:gpu_cache_usage_perc (the fallback); refengine's
#    /metrics names per era;
#  - an engine without vllm:* series (--disable-log-stats) and one whose
#    /metrics is a 404: server_metrics is null with the reason, the run goes
#    on as before, and report.md has no "Server's view" table.
. "$(dirname "$0")/q_lib.sh"

# md_rows REPORT.md PHASE=FLAG...: report.md's "Server's view" has a row of
# candidate auto for each PHASE, whose flag cell is FLAG ("-" for none);
# every row's engine TTFT mean is within max(10 ms, 30 %) of the client's
# TTFT p50 unless the phase queued or preempted requests, and its engine
# output tokens are the client's (every request ran to its max_tokens).
md_rows() {
    python3 - "$@" <<'PY'
import re, sys
md = open(sys.argv[1]).read()
want = dict(a.split("=", 1) for a in sys.argv[2:])
sec = md.split("## Server's view\n", 1)
assert len(sec) == 2, "no Server's view section"
sec = sec[1].split("\n## ", 1)[0]
assert md.index("## Latency and throughput") < md.index("## Server's view"), "order"
rows = {}
for line in sec.splitlines():
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 12 and cells[0] == "auto":
        rows[cells[1]] = cells
for phase, flag in want.items():
    assert phase in rows, (phase, sorted(rows))
    c = rows[phase]
    got = c[11].strip("*")
    assert got == ("—" if flag == "-" else flag), (phase, c[11], flag)
    mean, p50, p99 = (float(x) for x in c[2].split(" / "))
    client = float(c[3])
    assert mean <= p99 and p50 <= p99, c
    if flag == "-":
        assert abs(client - mean) <= max(10, 0.3 * client), (phase, "engine TTFT", mean, "client", client)
    assert c[6] == c[7], (phase, "tokens", c[6], c[7])
    print(f"md {phase}: engine TTFT mean {mean} ms, client p50 {client} ms, flag {c[11]}")
PY
}

# srvm NAME WORLD [moeprobe options...] [-- refengine options]
srvm() {
    local name=$1 world=$2; shift 2
    local mp=() re=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do mp+=("$1"); shift; done
    [ $# -gt 0 ] && { shift; re=("$@"); }
    Q_DIR="$Q_TMP/$name"
    "$MOEPROBE" qualify --out "$Q_DIR" --quiet --no-quality --agreement 0 --accuracy 0 --grace 3 \
        --candidate 'auto:' "${mp[@]}" \
        -- "$REFENGINE" --world "$world" --port '{port}' "${re[@]}" \
        >"$Q_TMP/$name.stdout" 2>"$Q_TMP/$name.stderr"
    Q_RC=$?
    [ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/$name.stderr"; fail "$name: exit $Q_RC"; }
}

# 1. healthy, paced: 50 tok/s, 20 ms between tokens
srvm normal "$W/srvm-normal.ini" --seq 3 --conc 4:8 --max-tokens 16
python3 - "$Q_DIR" <<'PY' || fail "normal: server metrics"
import json, os, sys
d = sys.argv[1]
c = json.load(open(os.path.join(d, "report.json")))["candidates"][0]
rows = [json.loads(l) for l in open(os.path.join(d, "attempts/auto-1/requests.jsonl"))]
phases = {p["phase"]: p for p in c["throughput"]["phases"]}
for name in ("sequential", "concurrency-4"):
    p = phases[name]
    s = p["server_metrics"]
    assert s is not None, (name, p.get("server_metrics_reason"))
    mine = [r for r in rows if r["phase"] == name and r["outcome"] == "ok"]
    assert len(mine) == p["ok"] > 0, (name, len(mine), p["ok"])
    assert s["scrapes"] >= 2, s
    assert s["ttft_ms"]["n"] == len(mine), (name, s["ttft_ms"], len(mine))
    assert s["generation_tokens"] == sum(r["output_tokens"] for r in mine) == 16 * len(mine), s
    assert s["prompt_tokens"] == sum(r["prompt_tokens"] for r in mine), (s, [r["prompt_tokens"] for r in mine])
    assert s["itl_ms"]["n"] == 15 * len(mine), s["itl_ms"]
    assert s["preemptions"] == 0 and s["requests_waiting_max"] == 0, s
    assert s["preempted"] is False and s["queued"] is False, s
    names = s["metric_names"]
    assert names == {"itl": "vllm:inter_token_latency_seconds",
                     "kv_cache_usage": "vllm:kv_cache_usage_perc",
                     "preemptions": "vllm:num_preemptions_total"}, names
    ct = sum(r["ttft_ms"] for r in mine) / len(mine)
    st = s["ttft_ms"]["mean"]
    assert st <= ct + 1 and ct - st <= max(10, 0.3 * ct), (name, "ttft", st, ct)
    ci = sum(r["e2e_ms"] - r["ttft_ms"] for r in mine) / sum(r["output_tokens"] - 1 for r in mine)
    si = s["itl_ms"]["mean"]
    assert abs(ci - si) <= max(5, 0.2 * ci), (name, "itl", si, ci)
    assert 15 <= si <= 40, si  # the world's 20 ms, on a loaded machine
    # the estimated median lies in the bucket of the true one (vLLM's bounds)
    assert 10 < s["itl_ms"]["p50"] <= 50 and s["ttft_ms"]["p50"] <= 80, s
    print(f"{name}: TTFT server {st:.1f} ms client {ct:.1f} ms; ITL server {si:.2f} ms client {ci:.2f} ms")
# no phase of a healthy world is flagged
assert all(p["server_metrics"] is None or not p["server_metrics"]["preempted"] for p in c["throughput"]["phases"])
PY
grep -q 'it measured the' "$Q_DIR/report.md" && fail "normal: a healthy phase is flagged"
md_rows "$Q_DIR/report.md" sequential=- concurrency-4=- || fail "normal: report.md server's view"

# 2. the KV cache runs out: preempted and queued
srvm preempt "$W/srvm-preempt.ini" --seq 1 --conc 8:16 --max-tokens 32
check "$Q_DIR/report.json" \
    'c["auto"]["verdict"] == "stable"' \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "concurrency-8"][0]["server_metrics"]["preempted"]' \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "concurrency-8"][0]["server_metrics"]["queued"]' \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "concurrency-8"][0]["server_metrics"]["preemptions"] > 0' \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "concurrency-8"][0]["server_metrics"]["kv_cache_usage_max"] > 0.5' \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "concurrency-8"][0]["server_metrics"]["generation_tokens"] == 16 * 32' \
    'not [p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "sequential"][0]["server_metrics"]["preempted"]' \
    'any("it measured the KV cache and the scheduler" in s for s in r["comparability"])' \
    || fail "preempt: flags"
# a preempted request recomputes: its stream pauses, nothing is sent twice
python3 - "$Q_DIR/attempts/auto-1/requests.jsonl" <<'PY' || fail "preempt: requests"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert all(r["outcome"] == "ok" and r["output_tokens"] == 32 for r in rows), rows
PY
grep -q 'phase concurrency-8 of auto: the engine preempted [0-9]* requests and kept up to [0-9]* requests\? waiting: it measured the KV cache and the scheduler, not the kernel' \
    "$Q_DIR/report.md" || { grep -n 'measured' "$Q_DIR/report.md"; fail "preempt: report.md sentence"; }
# the engine says how big its KV cache is, as vLLM does
grep -q 'GPU KV cache size: 128 tokens$' "$Q_DIR/attempts/auto-1/server.log" || fail "preempt: KV cache size line"
grep -q 'Available KV cache memory: 0.01 GiB$' "$Q_DIR/attempts/auto-1/server.log" || fail "preempt: KV memory line"
# the flag survives the store: report re-renders from the database
"$MOEPROBE" report "$Q_DIR" >/dev/null 2>&1 || fail "preempt: moeprobe report"
grep -q 'the engine preempted' "$Q_DIR/report.md" || fail "preempt: flag lost in the store"
md_rows "$Q_DIR/report.md" sequential=- 'concurrency-8=preempted, queued' || fail "preempt: report.md server's view"
grep -q '<tr class=bad><td>concurrency-8</td>' "$Q_DIR/report.html" || fail "preempt: report.html row not flagged"

# 3. the scheduler's limit: queued, not preempted
srvm queue "$W/srvm-queue.ini" --seq 1 --conc 8:16 --max-tokens 32
check "$Q_DIR/report.json" \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "concurrency-8"][0]["server_metrics"]["queued"]' \
    'not [p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "concurrency-8"][0]["server_metrics"]["preempted"]' \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "concurrency-8"][0]["server_metrics"]["requests_waiting_max"] >= 1' \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "concurrency-8"][0]["server_metrics"]["requests_running_max"] <= 2' \
    || fail "queue: flags"
grep -q 'phase concurrency-8 of auto: the engine kept up to [0-9]* requests waiting: it measured the scheduler, not the kernel' \
    "$Q_DIR/report.md" || fail "queue: report.md sentence"
md_rows "$Q_DIR/report.md" sequential=- concurrency-8=queued || fail "queue: report.md server's view"

# 4. an older era names the inter-token histogram time per output token
srvm old "$W/srvm-old.ini" --seq 2 --conc 2:2 --max-tokens 8
check "$Q_DIR/report.json" \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "sequential"][0]["server_metrics"]["metric_names"]["itl"] == "vllm:time_per_output_token_seconds"' \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "sequential"][0]["server_metrics"]["itl_ms"]["n"] == 14' \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "sequential"][0]["server_metrics"]["metric_names"]["kv_cache_usage"] == "vllm:kv_cache_usage_perc"' \
    || fail "old era: names"

# 4b. before 0.10 the KV-cache gauge has only its old name: moeprobe falls
# back to vllm:gpu_cache_usage_perc (and to time per output token)
srvm v09 "$W/srvm-v09.ini" --seq 1 --conc 2:4 --max-tokens 16
check "$Q_DIR/report.json" \
    'all(p["server_metrics"]["metric_names"]["kv_cache_usage"] == "vllm:gpu_cache_usage_perc" for p in c["auto"]["throughput"]["phases"] if p["phase"] != "warmup")' \
    'all(p["server_metrics"]["metric_names"]["itl"] == "vllm:time_per_output_token_seconds" for p in c["auto"]["throughput"]["phases"] if p["phase"] != "warmup")' \
    '0 < [p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "concurrency-2"][0]["server_metrics"]["kv_cache_usage_max"] <= 1' \
    || fail "0.9 era: the fallback to vllm:gpu_cache_usage_perc"

# 4c. refengine's /metrics names per era (reference/vllm-api.md 5.4): the
# KV-cache gauge's old name alone before 0.10, beside the new one in 0.10.x,
# gone from 0.11; time per output token before 0.12, inter-token latency
# from 0.11
python3 - "$REFENGINE" "$W/srvm-old.ini" "$Q_TMP" <<'PY' || fail "refengine /metrics eras"
import os, re, subprocess, sys, time, urllib.request
refengine, base, tmp = sys.argv[1:4]
text = open(base).read()
eras = {  # version: (gpu_cache, kv_cache, time_per_output_token, inter_token_latency)
    "0.9.2": (True, False, True, False),
    "0.10.1": (True, True, True, False),
    "0.11.0": (False, True, True, True),
    "0.12.0": (False, True, False, True),
    "0.19.0": (False, True, False, True),
}
names = ("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc",
         "vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds")
for ver, want in eras.items():
    world = os.path.join(tmp, f"era-{ver}.ini")
    open(world, "w").write(re.sub(r"(?m)^version = .*$", f"version = {ver}", text))
    log = open(os.path.join(tmp, f"era-{ver}.log"), "w+")
    p = subprocess.Popen([refengine, "--world", world, "--port", "0"], stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        port, deadline = None, time.monotonic() + 20
        while port is None and time.monotonic() < deadline and p.poll() is None:
            log.seek(0)
            m = re.findall(r"Starting vLLM (?:API )?server(?: \d+)? on http://[^ ]+:([0-9]+)", log.read())
            if m and "Application startup complete." in open(log.name).read():
                port = int(m[-1])
            else:
                time.sleep(0.05)
        assert port, (ver, "not ready", open(log.name).read()[-2000:])
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        got = tuple(bool(re.search("^" + re.escape(n) + r"(_bucket|_count|_sum)?\{", body, re.M))
                    for n in names)
        assert got == want, (ver, dict(zip(names, got)))
        print(f"era {ver}: " + ", ".join(n for n, g in zip(names, got) if g))
    finally:
        p.terminate()
        p.wait(timeout=20)
PY

# 5. no vllm:* series (vLLM with --disable-log-stats): null with the reason
srvm nostats "$W/srvm-normal.ini" --seq 2 --conc 2:2 --max-tokens 4 -- --disable-log-stats
check "$Q_DIR/report.json" \
    'c["auto"]["verdict"] == "stable"' \
    'all(p["server_metrics"] is None for p in c["auto"]["throughput"]["phases"])' \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "sequential"][0]["server_metrics_reason"].startswith("no vllm:* series")' \
    || fail "nostats: null with the reason"
grep -qF "auto: the engine's /metrics could not be read (no vllm:\\* series" "$Q_DIR/report.md" ||
    fail "nostats: report.md says nothing"
grep -q "^## Server's view" "$Q_DIR/report.md" && fail "nostats: a server's view table without numbers"

# 6. an engine whose /metrics is a 404: null with the reason, no crash
H="$ROOT/tests/integration/hostile_engine.py"
Q_DIR="$Q_TMP/h404"
"$MOEPROBE" qualify --out "$Q_DIR" --quiet --no-quality --seq 2 --conc 2:2 --max-tokens 4 --grace 3 \
    --candidate 'auto:' -- python3 "$H" --mode http500 --good 1000 --port '{port}' \
    >"$Q_TMP/h404.stdout" 2>"$Q_TMP/h404.stderr"
Q_RC=$?
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/h404.stderr"; fail "h404: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'all(p["server_metrics"] is None for p in c["auto"]["throughput"]["phases"])' \
    '[p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "sequential"][0]["server_metrics_reason"] == "/metrics answered HTTP 404"' \
    || fail "h404: null with the reason"

# 7. an API key that is also a word of the stored numbers ("tokens"): the
# numbers survive the store's secret mask (only text from the engine is masked)
Q_KEY=tokens srvm keyword "$W/srvm-normal.ini" --seq 2 --conc 2:2 --max-tokens 4 --api-key-env Q_KEY
check "$Q_DIR/report.json" \
    'all(p["server_metrics"]["generation_tokens"] > 0 and p["server_metrics"]["prompt_tokens"] > 0 for p in c["auto"]["throughput"]["phases"] if p["phase"] != "warmup")' \
    || fail "keyword: an API key word masked the stored server metrics"

# the world keys are checked (file:line, exit 2)
printf '[engine]\nversion = 0.19.0\ndevice = sm120\nmodel = m\nkv_cache_tokens = 8\n' >"$Q_TMP/bad1.ini"
printf '[engine]\nversion = 0.19.0\ndevice = sm120\nmodel = m\nmax_num_seqs = 0\n' >"$Q_TMP/bad2.ini"
for b in bad1 bad2; do
    "$REFENGINE" --world "$Q_TMP/$b.ini" --port 0 >/dev/null 2>"$Q_TMP/$b.err"
    rc=$?
    [ "$rc" -eq 2 ] && grep -q "$b.ini:5: " "$Q_TMP/$b.err" || { cat "$Q_TMP/$b.err"; fail "$b: exit $rc"; }
done

assert_no_leftovers
echo "ok: server metrics"
