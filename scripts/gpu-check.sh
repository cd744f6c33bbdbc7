#!/bin/bash
# gpu-check.sh - on a machine with an NVIDIA GPU (sm_90 H200 expected):
#   1. builds refengine's CUDA backends (make cuda),
#   2. runs the numerics test (GPU vs CPU double precision),
#   3. runs `moeprobe qualify` against worlds/cuda-h200.ini with a racy, a
#      faulty and two healthy backends and asserts the verdicts, the error
#      sites, the teardown and that the GPU memory is released.
# Writes into ${GPU_RESULTS:-gpu-results}/: env.txt, build.log, numerics.txt,
# qualify.stderr, run/ (report.json, report.md, attempts/), results.md, and
# prints results.md. Exit 0 when every assertion holds.
#
# Environment: MOEPROBE (default ./moeprobe; built with `make` when missing),
# GPU_RESULTS, CJSON_CFLAGS / CJSON_LIBS (when libcjson-dev is not installed),
# GPU_CHECK_WORLD (default worlds/cuda-h200.ini), GPU_CHECK_ENGINE (default
# build/cuda/refengine-cuda; build/cuda/refengine-fake from `make -C refengine/cuda
# fake` dry-runs the plumbing without a GPU, with a stub nvidia-smi on PATH).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
RES=${GPU_RESULTS:-gpu-results}
mkdir -p "$RES" || exit 2
RES=$(cd "$RES" && pwd)
WORLD=${GPU_CHECK_WORLD:-worlds/cuda-h200.ini}
FAILED=0
fail() { echo "gpu-check: FAIL: $*" | tee -a "$RES/failures.txt"; FAILED=1; }
die() { echo "gpu-check: $*" >&2; exit 2; }

command -v nvidia-smi >/dev/null || die "no nvidia-smi: run this on the GPU machine"
command -v nvcc >/dev/null || die "no nvcc: the CUDA toolkit is needed to build refengine-cuda"
rm -f "$RES/failures.txt"

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
    nvcc --version | tail -2
} >"$RES/env.txt" 2>&1
cat "$RES/env.txt"

# 1. build
t0=$(date +%s.%N)
if ! make --no-print-directory cuda >"$RES/build.log" 2>&1; then
    tail -20 "$RES/build.log"
    die "make cuda failed (see $RES/build.log)"
fi
echo "build: $(tail -1 "$RES/build.log") in $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo '?') s"
RE=${GPU_CHECK_ENGINE:-$ROOT/build/cuda/refengine-cuda}
MOEPROBE=${MOEPROBE:-$ROOT/moeprobe}
if [ ! -x "$MOEPROBE" ]; then
    make --no-print-directory all >>"$RES/build.log" 2>&1 || die "no moeprobe binary and \`make\` failed; set MOEPROBE"
fi

# 2. numerics
"$ROOT/build/cuda/test_moe_numerics" >"$RES/numerics.txt" 2>&1
nrc=$?
cat "$RES/numerics.txt"
[ $nrc -eq 0 ] || fail "numerics test exited $nrc"

# 3. qualify
mem_before=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
rm -rf "$RES/run" "$RES"/census-*
# GPU memory and compute processes, sampled by nvidia-smi itself during qualify
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 >"$RES/gpu-mem.csv" 2>&1 &
mem_pid=$!
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader -lms 500 \
    >"$RES/gpu-apps.csv" 2>&1 &
apps_pid=$!
CANDS=(--candidate 'racy: --moe-backend flashinfer_cutlass'
       --candidate 'faulty: --moe-backend humming'
       --candidate 'marlin: --moe-backend marlin'
       --candidate 'two-stream: --moe-backend emulation')
WL=(--no-quality --max-tokens 32 --seq 5 --conc 4:8 --conc 8:16 --grace 5)
t0=$(date +%s)
"$MOEPROBE" qualify --out "$RES/run" "${WL[@]}" "${CANDS[@]}" \
    -- "$RE" --world "$ROOT/$WORLD" --port '{port}' \
    >"$RES/qualify.stdout" 2>"$RES/qualify.stderr"
qrc=$?
echo "qualify: exit $qrc in $(( $(date +%s) - t0 )) s"
cat "$RES/qualify.stderr"
# race census: more normal-mode starts of the racy backend (no diagnosis), for
# the distribution of requests served before the race hits and of error sites
for i in 1 2 3 4; do
    "$MOEPROBE" qualify --quiet --out "$RES/census-$i" --no-diagnose --only racy "${WL[@]}" "${CANDS[@]}" \
        -- "$RE" --world "$ROOT/$WORLD" --port '{port}' >/dev/null 2>>"$RES/qualify.stderr"
done
kill "$mem_pid" "$apps_pid" 2>/dev/null
wait "$mem_pid" "$apps_pid" 2>/dev/null
mem_peak=$(grep -E '^[0-9]+$' "$RES/gpu-mem.csv" | sort -n | tail -1)
apps_seen=$(grep -c refengine "$RES/gpu-apps.csv")
echo "during qualify: peak GPU memory used ${mem_peak:-?} MiB; refengine seen in $apps_seen compute-app samples"
left=$(pgrep -f "build/cuda/refengine-cuda" || true)
[ -z "$left" ] || fail "refengine-cuda processes left after qualify: $left"
apps=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader 2>&1)
echo "$apps" | grep -q refengine && fail "nvidia-smi still lists refengine: $apps"
mem_after=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
echo "gpu memory used: ${mem_before} MiB before, ${mem_after} MiB after; compute apps: ${apps:-none}"
[ -n "$mem_before" ] && [ -n "$mem_after" ] && [ "$mem_after" -le $((mem_before + 64)) ] \
    || fail "GPU memory not released: ${mem_before} -> ${mem_after} MiB"
[ -f "$RES/run/report.json" ] || { fail "no report.json (qualify exit $qrc)"; exit 1; }

python3 - "$RES" "$mem_before" "$mem_after" "${apps:-none}" "${mem_peak:-?}" "$apps_seen" <<'PY' || FAILED=1
import glob, json, os, re, sys
res, mb, ma, apps, mpeak, aseen = sys.argv[1:7]
r = json.load(open(os.path.join(res, "run", "report.json")))
c = {x["name"]: x for x in r["candidates"]}
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
def g(x, *path):
    for p in path:
        if x is None:
            return None
        x = x.get(p) if isinstance(x, dict) else None
    return x

racy, faulty = c.get("racy", {}), c.get("faulty", {})
want(racy.get("verdict") == "async-race", "racy verdict is %r, want async-race" % racy.get("verdict"))
want(g(racy, "diagnosis", "launch_blocking") == "clean", "racy: CUDA_LAUNCH_BLOCKING=1 run not clean")
want((g(racy, "crash", "distinct_sites") or 0) >= 2, "racy: fewer than 2 distinct error sites")
want("illegal memory access" in (g(racy, "crash", "message") or ""), "racy: not an illegal memory access")
want(faulty.get("verdict") == "kernel-fault", "faulty verdict is %r, want kernel-fault" % faulty.get("verdict"))
want(g(faulty, "diagnosis", "launch_blocking") == "crashed", "faulty: blocked run did not crash")
want("experts/nvfp4_moe.py" in (g(faulty, "diagnosis", "pinned_site") or ""),
     "faulty: pinned site %r is not the faulting kernel's launch" % g(faulty, "diagnosis", "pinned_site"))
for n in ("marlin", "two-stream"):
    want(c.get(n, {}).get("verdict") == "stable", "%s verdict is %r, want stable" % (n, c.get(n, {}).get("verdict")))
for x in r["candidates"]:
    for a in x.get("attempts", []):
        want(g(a, "teardown", "leftovers") in (0, None), "%s: teardown leftovers" % x["name"])

# GPU telemetry through the real libnvidia-ml (docs/metrics.md): every
# attempt that served requests sampled the GPU, with plausible values; the
# engine's /metrics was read for every load phase of each primary attempt
tele = []
for x in r["candidates"]:
    for a in x.get("attempts", []):
        if not a.get("requests_ok"):
            continue
        t = a.get("gpu_telemetry")
        want(isinstance(t, dict), "%s: gpu_telemetry is %r with a real NVML" % (a.get("dir"), t))
        if not isinstance(t, dict):
            continue
        clk, mem, pw = g(t, "sm_clock_mhz", "median"), g(t, "memory_used_mib", "max"), g(t, "power_w", "median")
        want(t.get("samples", 0) >= 1, "%s: no GPU sample" % a.get("dir"))
        want(isinstance(clk, (int, float)) and 100 <= clk <= 4000, "%s: SM clock median %r MHz" % (a.get("dir"), clk))
        want(isinstance(mem, (int, float)) and mem > 0, "%s: memory used max %r MiB" % (a.get("dir"), mem))
        tele.append("%s: %d samples, SM clock median %s MHz (min %s, max %s), %s W, %s C, memory max %s MiB, "
                    "throttle reasons: %s" % (
            a.get("dir"), t.get("samples", 0), clk, g(t, "sm_clock_mhz", "min"), g(t, "sm_clock_mhz", "max"),
            pw, g(t, "temperature_c", "median"), mem, ", ".join(t.get("throttle_reasons") or []) or "none"))
    for p in g(x, "throughput", "phases") or []:
        name = str(p.get("phase", ""))
        if p.get("ok") and (name == "sequential" or name.startswith("concurrency-")):
            want(isinstance(p.get("server_metrics"), dict),
                 "%s %s: no server_metrics (%r)" % (x["name"], name, p.get("server_metrics_reason")))
want(len(tele) >= 4, "GPU telemetry on %d attempts, want at least one per candidate" % len(tele))
comp = r.get("comparability")

# the innermost frame of each crash = where the host noticed the error
def site_of(a, run="run"):
    try:
        log = open(os.path.join(res, run, a["dir"], "server.log"), errors="replace").read().split("\n")
    except OSError:
        return None
    fn = None
    for ln in log:
        m = re.search(r'File "[^"]*/([^/"]+)", line \d+, in (\w+)', ln)
        if m:
            fn = m.group(1) + ":" + m.group(2)
        if "torch.AcceleratorError" in ln:
            return fn
    return None

def first_sites(x, blocking):
    return [s for s in (site_of(a) for a in x.get("attempts", [])
                        if bool(a.get("launch_blocking")) == blocking and a.get("outcome") == "crashed") if s]

lines = ["# gpu-check results", "",
         "| candidate | MoE backend | CUDA path | verdict | normal attempts (ok before crash) | "
         "error sites (innermost frame per crash) | blocked run | blocked/normal rate | seq tok/s |",
         "|---|---|---|---|---|---|---|---|---|"]
paths = {"racy": "racy two-stream", "faulty": "faulty kernel", "marlin": "marlin (1 stream)",
         "two-stream": "two-stream + event"}
for x in r["candidates"]:
    atts = [a for a in x.get("attempts", []) if not a.get("launch_blocking")]
    batt = [a for a in x.get("attempts", []) if a.get("launch_blocking")]
    na = ", ".join("%s (%s ok)" % (a.get("outcome"), a.get("requests_ok")) for a in atts)
    bl = "; ".join("%s, %s ok%s" % (a.get("outcome"), a.get("requests_ok"),
                                     (" at " + str(site_of(a))) if a.get("outcome") == "crashed" else "")
                   for a in batt) or "-"
    tr = g(x, "diagnosis", "throughput_ratio")
    seq = g(x, "throughput", "sequential_tok_s")
    lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        x["name"], g(x, "resolved", "moe_backend"), paths.get(x["name"], "?"), x.get("verdict"), na,
        ", ".join(first_sites(x, False)) or "-", bl, "%.2f" % tr if isinstance(tr, (int, float)) and tr > 0 else "-",
        "%.0f" % seq if isinstance(seq, (int, float)) else "-"))
# the census: every normal racy attempt of the main run and the extra starts
census = [(a.get("requests_ok"), a.get("outcome"), site_of(a)) for a in racy.get("attempts", [])
          if not a.get("launch_blocking")]
for d in sorted(glob.glob(os.path.join(res, "census-*"))):
    try:
        rc_ = json.load(open(os.path.join(d, "report.json")))
    except (OSError, ValueError):
        continue
    for x in rc_.get("candidates", []):
        for a in x.get("attempts", []):
            census.append((a.get("requests_ok"), a.get("outcome"), site_of(a, os.path.basename(d))))
crashes = [t for t in census if t[1] == "crashed"]
inner = sorted(set(t[2] for t in crashes if t[2]))
want(len(inner) >= 2, "racy: one innermost error site across %d crashes: %s" % (len(crashes), inner))
lines += ["", "race census (normal-mode starts of the racy backend, %d): %d crashed; requests served "
          "before the crash: %s; innermost error sites: %s" % (
              len(census), len(crashes), [t[0] for t in crashes],
              ", ".join("%s x%d" % (s_, sum(1 for t in crashes if t[2] == s_)) for s_ in inner))]
lines += ["", "GPU telemetry (real NVML, load phases):"] + ["- " + t for t in tele]
lines += ["", "comparability: %s" % json.dumps(comp)]
lines += ["", "racy: %s" % racy.get("why"), "faulty: %s" % faulty.get("why"),
          "racy: distinct sites across normal attempts: %s" % g(racy, "crash", "distinct_sites"),
          "faulty: pinned site under CUDA_LAUNCH_BLOCKING=1: %s" % g(faulty, "diagnosis", "pinned_site"),
          "GPU memory used: %s MiB before, peak %s MiB during, %s MiB after; refengine in %s "
          "compute-app samples during, compute apps after: %s" % (mb, mpeak, ma, aseen, apps), ""]
lines += ["assertions: " + ("all hold" if not bad else "FAILED")] + ["- " + b for b in bad]
open(os.path.join(res, "results.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
sys.exit(1 if bad else 0)
PY
if [ $FAILED -ne 0 ]; then
    echo "gpu-check: FAILED (results in $RES)"
    exit 1
fi
echo "gpu-check: PASS (results in $RES)"
