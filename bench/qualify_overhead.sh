#!/bin/bash
# bench/qualify_overhead.sh - moeprobe's own overhead in a qualify run (DESIGN.md "Performance
# targets": < 2 % of wall time beyond engine start-up and workload; < 50 MB RSS).
#
# Runs `moeprobe qualify` REPEAT times against a fast refengine world (CANDIDATES clean
# candidates, LOAD_S start-up, a short workload: most of the wall time is moeprobe's own if
# anything is) and computes from report.json and the attempt directories:
#   overhead      = wall - sum(attempts[].ready_s + attempts[].workload_s)     (the target)
#     teardown    = sum(teardown_s)                           (engine shutdown after SIGTERM)
#     in_attempt  = sum(wall_s - ready_s - workload_s - teardown_s) (spawn, files, settle)
#     outside     = wall - sum(attempts[].wall_s)             (start-up, report writing, exit)
#   hidden costs inside ready_s/workload_s that are moeprobe's, not the engine's:
#     ready_lag   = sum(ready_s - arrival of "Application startup complete." in server.times)
#                   (how late the /health probe noticed readiness)
#     idle        = sum(workload_s - union of the request intervals in requests.jsonl)
#                   (gaps between requests and phases)
#   strict        = overhead + ready_lag + idle, the share of wall time moeprobe could remove
#   cpu_ms        = moeprobe's own CPU time (perf stat --no-inherit; children excluded), else
#                   user+sys including children from /usr/bin/time
#   maxrss_kb     = /usr/bin/time's maximum RSS, an upper bound: wait4 reports the largest of
#                   moeprobe and the engine processes it reaped
# Usage: make -j2 && bench/qualify_overhead.sh
# Env: REPEAT (3), CANDIDATES (2), LOAD_S (0.5), SEQ (5), CONC ("4:8 8:16"), MAX_TOKENS (32),
#      TPS (200), QUALITY (1; 0 adds --no-quality). Exits 77 when a tool is missing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
MP=${MOEPROBE_BIN:-$root/moeprobe}
RE=${REFENGINE_BIN:-$root/refengine/refengine}
REPEAT=${REPEAT:-3}
CANDIDATES=${CANDIDATES:-2}
LOAD_S=${LOAD_S:-0.5}
SEQ=${SEQ:-5}
CONC=${CONC:-4:8 8:16}
MAX_TOKENS=${MAX_TOKENS:-32}
TPS=${TPS:-200}
QUALITY=${QUALITY:-1}
for x in "$MP" "$RE"; do [ -x "$x" ] || { echo "missing $x (run: make -j2)"; exit 77; }; done
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not installed (apt-get install time)"; exit 77; }
have_perf=0
perf stat --no-inherit -e task-clock -x, -o /dev/null true 2>/dev/null && have_perf=1

tmp=$(mktemp -d /tmp/qualify-overhead.XXXXXX)
mp_pid=
cleanup() {
    # moeprobe tears its engines down itself (and is their subreaper); if it is still running
    # (the script was interrupted), TERM lets it do that, KILL after 30 s.
    if [ -n "$mp_pid" ] && kill -0 "$mp_pid" 2>/dev/null; then
        kill -TERM "$mp_pid" 2>/dev/null
        timeout 30 tail --pid="$mp_pid" -f /dev/null 2>/dev/null
        kill -KILL "$mp_pid" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

names=(cutlass marlin cutlass2 marlin2 cutlass3 marlin3)
backends=(cutlass marlin cutlass marlin cutlass marlin)
cat >"$tmp/world.ini" <<INI
# qualify overhead world: clean backends, quick start-up, fast decode
[engine]
version = 0.17.0
device = sm121
model = bench/qualify-overhead
quantization = modelopt_fp4
load_seconds = $LOAD_S
seed = 1

[backend VLLM_CUTLASS]
tokens_per_second = $TPS
contention = 0.1

[backend MARLIN]
tokens_per_second = $TPS
contention = 0.1
INI
args=(qualify --quiet --max-tokens "$MAX_TOKENS" --seq "$SEQ")
for c in $CONC; do args+=(--conc "$c"); done
[ "$QUALITY" = 1 ] || args+=(--no-quality)
for ((i = 0; i < CANDIDATES && i < ${#names[@]}; i++)); do
    args+=(--candidate "${names[$i]}: --moe-backend ${backends[$i]}")
done

echo "world: load_seconds=$LOAD_S tokens_per_second=$TPS; $CANDIDATES candidates; --seq $SEQ --conc ${CONC// / --conc } --max-tokens $MAX_TOKENS quality=$QUALITY"
for ((run = 1; run <= REPEAT; run++)); do
    out="$tmp/run$run"
    wrap=()
    [ $have_perf = 1 ] && wrap=(perf stat --no-inherit -e task-clock -x, -o "$tmp/perf$run")
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$tmp/time$run" "${wrap[@]}" "$MP" "${args[@]}" --out "$out" \
        -- "$RE" --world "$tmp/world.ini" --port '{port}' >"$tmp/md$run" 2>"$tmp/err$run" &
    mp_pid=$!
    wait "$mp_pid"
    rc=$?
    mp_pid=
    t1=$(date +%s%N)
    if [ $rc -ne 0 ] || [ ! -f "$out/report.json" ]; then
        echo "qualify failed (exit $rc):"
        cat "$tmp/err$run"
        exit 1
    fi
    python3 - "$out" "$(( (t1 - t0) / 1000 ))" "$tmp/time$run" "$tmp/perf$run" <<'PY'
import json, os, re, sys
out, wall_us, timef, perff = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
wall = wall_us / 1e6
rep = json.load(open(os.path.join(out, "report.json")))
ready = work = td = att = lag = idle = 0.0
n = 0
for c in rep["candidates"]:
    for a in c["attempts"]:
        n += 1
        r, w, t, aw = (a.get(k) or 0.0 for k in ("ready_s", "workload_s", "teardown_s", "wall_s"))
        ready += r; work += w; td += t; att += aw
        d = os.path.join(out, a["dir"])
        try:  # when did the engine say it was ready (seconds since spawn, line-aligned files)?
            lines = open(os.path.join(d, "server.log"), errors="replace").read().splitlines()
            times = open(os.path.join(d, "server.times")).read().split()
            for ln, ts in zip(lines, times):
                if "Application startup complete." in ln:
                    lag += max(0.0, r - float(ts))
                    break
        except OSError:
            pass
        iv = []
        try:
            for ln in open(os.path.join(d, "requests.jsonl")):
                q = json.loads(ln)
                if q.get("start_s") is not None and q.get("e2e_ms") is not None:
                    iv.append((q["start_s"], q["start_s"] + q["e2e_ms"] / 1e3))
        except OSError:
            pass
        iv.sort()
        busy, cur = 0.0, None
        for s, e in iv:
            if cur is None or s > cur[1]:
                if cur: busy += cur[1] - cur[0]
                cur = [s, e]
            else:
                cur[1] = max(cur[1], e)
        if cur: busy += cur[1] - cur[0]
        if iv: idle += max(0.0, w - busy)
over = wall - ready - work
tv = open(timef).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", tv).group(1))
cpu = (float(re.search(r"User time \(seconds\): ([\d.]+)", tv).group(1)) +
       float(re.search(r"System time \(seconds\): ([\d.]+)", tv).group(1))) * 1e3
cpu_src = "time-incl-children"
try:
    for ln in open(perff):
        if ",task-clock," in ln:
            cpu, cpu_src = float(ln.split(",")[0]), "perf-self"
except OSError:
    pass
pct = lambda x: 100.0 * x / wall
print(f"wall_s={wall:.3f} attempts={n} ready_s={ready:.3f} workload_s={work:.3f} "
      f"overhead_s={over:.3f} overhead_pct={pct(over):.2f} teardown_s={td:.3f} "
      f"in_attempt_s={att - ready - work - td:.3f} outside_s={wall - att:.3f} "
      f"ready_lag_s={lag:.3f} idle_s={idle:.3f} strict_pct={pct(over + lag + idle):.2f} "
      f"cpu_ms={cpu:.1f} cpu_src={cpu_src} cpu_pct={pct(cpu / 1e3):.2f} maxrss_kb={rss}")
PY
done
