#!/bin/bash
# gpu-check.sh - on a machine with an NVIDIA GPU (sm_90 H200 expected):
#   1. builds refengine's CUDA backends (make cuda),
#   2. runs the numerics test (GPU vs CPU double precision),
#   3. runs `moeprobe qualify` against worlds/cuda-h200.ini with a racy, a
#      faulty and two healthy backends and asserts the verdicts, the error
#      sites, the teardown and that the GPU memory is released;
#   4. GPU faults beyond the traceback (#24), with moeprobe's core-dump
#      settings in every run (the dump on exception with skip_abort, and the
#      hang's pipe: docs/verdicts.md "GPU core dumps"): every crashed run
#      has both its Python traceback (an error site) and the kernel the
#      driver's dump names; the faulty backend's kernel is named in
#      crash.kernel of its CUDA_LAUNCH_BLOCKING=1 run and its pinned site is
#      the traceback's launch frame; the racy backend's surfacing kernel is
#      reported as such; Xid events are recorded for crashing attempts and
#      none for clean ones; a dump to /dev/null still names the kernel (the
#      container fallback); a wedged backend (worlds/cuda-h200-hang.ini: a
#      kernel that spins) is dumped through CUDA_COREDUMP_PIPE and cuda-gdb
#      names the kernel;
#   5. measures what the core-dump variables cost when nothing faults
#      (--no-coredump against moeprobe's settings, alternating, twice each);
#   6. re-measures the table of what each setting of the core-dump variables
#      does (scripts/gpu-dumpvars.sh into dumpvars/) and asserts that
#      moeprobe's own settings keep the traceback beside the dump's lines;
#   7. (run right after the numerics) correctness on real GPU numerics (#23,
#      scripts/gpu-correct.sh into correct/, correct.md, correct.json): the
#      logits carry a term each backend's CUDA path computes; the FP32, FP16
#      and BF16 paths must agree, the wrong-scale kernel must be
#      `wrong-output` (divergent) and never recommended.
#      GPU_CHECK_ONLY=correct runs the build, the numerics and this step only.
# Writes into ${GPU_RESULTS:-gpu-results}/: env.txt, build.log, numerics.txt,
# qualify.stderr, run/ (report.json, report.md, attempts/), census-*/,
# devnull/, hang/, cost-*/, cost.json, dumpvars/ (dumpvars.md,
# settings.txt), issue.md (report --format issue of the faulty candidate),
# results.md, and prints results.md. Exit 0 when every assertion holds.
#
# Environment: MOEPROBE (default ./moeprobe; built with `make` when missing),
# GPU_RESULTS, CJSON_CFLAGS / CJSON_LIBS (when libcjson-dev is not installed),
# GPU_CHECK_ONLY (correct: only the build, the numerics and the correctness
# step), GPU_CORRECT_PASSAGES (scripts/gpu-correct.sh),
# GPU_CHECK_WORLD (default worlds/cuda-h200.ini), GPU_CHECK_ENGINE (default
# build/cuda/refengine-cuda; build/cuda/refengine-fake from `make -C refengine/cuda
# fake` dry-runs the plumbing without a GPU, with a stub nvidia-smi on PATH;
# it reads the tests' fake NVML, build/rel/tests/libfake_nvml.so, when
# `make unit-bins` built it and MOEPROBE_NVML_LIB does not say otherwise).
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
    echo "cuda-gdb: $(command -v cuda-gdb || echo 'not found (the hang dump is then not read)')"
    echo "kernel log: $( (head -c 1 /dev/kmsg >/dev/null 2>&1 && echo readable) || echo 'not readable (no CAP_SYSLOG)')"
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

DRY=0
case "$RE" in *refengine-fake) DRY=1 ;; esac # the fake has no driver: no dump, no Xid
if [ $DRY -eq 1 ] && [ -z "${MOEPROBE_NVML_LIB:-}" ] && [ -f "$ROOT/build/rel/tests/libfake_nvml.so" ]; then
    # the dry run's telemetry plumbing through the fake NVML of the tests (make unit-bins)
    export MOEPROBE_NVML_LIB=$ROOT/build/rel/tests/libfake_nvml.so
fi

# 2. numerics (exit 77: no usable GPU, which only the dry run may have)
"$ROOT/build/cuda/test_moe_numerics" >"$RES/numerics.txt" 2>&1
nrc=$?
cat "$RES/numerics.txt"
[ $nrc -eq 0 ] || { [ $DRY -eq 1 ] && [ $nrc -eq 77 ]; } || fail "numerics test exited $nrc"

# 7. correctness on real GPU numerics (#23): the scoring pass of qualify on
# worlds/cuda-h200-correct.ini (scripts/gpu-correct.sh states what it asserts)
MOEPROBE="$MOEPROBE" GPU_CHECK_ENGINE="$RE" scripts/gpu-correct.sh "$RES" >"$RES/correct.log" 2>&1
crc=$?
cat "$RES/correct.log"
[ $crc -eq 0 ] || fail "gpu-correct.sh exited $crc (see $RES/correct.md, $RES/correct.stderr)"
if [ "${GPU_CHECK_ONLY:-}" = correct ]; then
    cp "$RES/correct.md" "$RES/results.md" 2>/dev/null
    left=$(pgrep -f "build/cuda/refengine-(cuda|fake)" || true)
    [ -z "$left" ] || fail "refengine processes left after the correctness step: $left"
    [ $FAILED -eq 0 ] && { echo "gpu-check (correct only): PASS (results in $RES)"; exit 0; }
    echo "gpu-check (correct only): FAILED (results in $RES)"
    exit 1
fi

# 3. qualify
mem_before=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
rm -rf "$RES/run" "$RES"/census-* "$RES/devnull" "$RES/hang" "$RES"/cost-* "$RES/dumpvars"
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
# the distribution of requests served before the race hits, of error sites
# and of the kernels where the race surfaced (every run has the dump)
for i in 1 2 3 4; do
    "$MOEPROBE" qualify --quiet --out "$RES/census-$i" --no-diagnose "${WL[@]}" \
        --candidate 'racy: --moe-backend flashinfer_cutlass' \
        -- "$RE" --world "$ROOT/$WORLD" --port '{port}' >/dev/null 2>>"$RES/qualify.stderr"
done
# the container fallback: the dump file is /dev/null (the candidate's own
# setting wins), the driver's lines name the kernel
"$MOEPROBE" qualify --quiet --out "$RES/devnull" --no-diagnose "${WL[@]}" \
    --candidate "faulty: --moe-backend humming CUDA_COREDUMP_FILE=/dev/null" \
    -- "$RE" --world "$ROOT/$WORLD" --port '{port}' >/dev/null 2>>"$RES/qualify.stderr"
# a wedged backend: its kernel spins; moeprobe dumps it through the pipe
"$MOEPROBE" qualify --quiet --out "$RES/hang" --stall-timeout 5 "${WL[@]}" \
    --candidate 'spin: --moe-backend marlin' \
    -- "$RE" --world "$ROOT/worlds/cuda-h200-hang.ini" --port '{port}' >/dev/null 2>>"$RES/qualify.stderr"
# what the variables cost when nothing faults: without any (--no-coredump)
# and with moeprobe's, alternating, twice each, on the healthy two-stream path
CW=(--no-quality --max-tokens 64 --seq 20 --conc 4:32 --conc 8:64 --grace 5)
for i in 1 2; do
    "$MOEPROBE" qualify --quiet --out "$RES/cost-off-$i" --no-coredump "${CW[@]}" \
        --candidate 'clean: --moe-backend emulation' \
        -- "$RE" --world "$ROOT/$WORLD" --port '{port}' >/dev/null 2>>"$RES/qualify.stderr"
    "$MOEPROBE" qualify --quiet --out "$RES/cost-on-$i" "${CW[@]}" \
        --candidate 'clean: --moe-backend emulation' \
        -- "$RE" --world "$ROOT/$WORLD" --port '{port}' >/dev/null 2>>"$RES/qualify.stderr"
done
# what each setting of the core-dump variables does on this driver (one
# qualify attempt each on the faulty backend): the table of docs/verdicts.md
MOEPROBE="$MOEPROBE" GPU_CHECK_ENGINE="$RE" DUMPVARS_WORLD="$ROOT/$WORLD" \
    scripts/gpu-dumpvars.sh "$RES/dumpvars" >"$RES/dumpvars.log" 2>&1 ||
    fail "gpu-dumpvars.sh exited $? (see $RES/dumpvars.log)"
"$MOEPROBE" report --format issue --candidate faulty "$RES/run" >"$RES/issue.md" 2>>"$RES/qualify.stderr"
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

python3 - "$RES" "$mem_before" "$mem_after" "${apps:-none}" "${mem_peak:-?}" "$apps_seen" "$DRY" \
    "$(command -v cuda-gdb || true)" <<'PY' || FAILED=1
import glob, json, os, re, statistics, sys
res, mb, ma, apps, mpeak, aseen, dry, cudagdb = sys.argv[1:9]
dry = dry == "1"
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
# every run has the dump with skip_abort, which keeps the traceback: the
# sites and the CUDA error of the normal runs, the launch frame of the
# blocked one (docs/verdicts.md "GPU core dumps")
want((g(racy, "crash", "distinct_sites") or 0) >= 1, "racy: no error site recorded")
want("illegal memory access" in (g(racy, "crash", "message") or ""),
     "racy: not an illegal memory access: %r" % g(racy, "crash", "message"))
want(faulty.get("verdict") == "kernel-fault", "faulty verdict is %r, want kernel-fault" % faulty.get("verdict"))
want(g(faulty, "diagnosis", "launch_blocking") == "crashed", "faulty: blocked run did not crash")
want("illegal memory access" in (g(faulty, "crash", "message") or ""),
     "faulty: not an illegal memory access: %r" % g(faulty, "crash", "message"))
want("experts/nvfp4_moe.py" in (g(faulty, "diagnosis", "pinned_site") or ""),
     "faulty: pinned site %r is not the faulting kernel's launch frame" % g(faulty, "diagnosis", "pinned_site"))
for n in ("marlin", "two-stream"):
    want(c.get(n, {}).get("verdict") == "stable", "%s verdict is %r, want stable" % (n, c.get(n, {}).get("verdict")))
for x in r["candidates"]:
    for a in x.get("attempts", []):
        want(g(a, "teardown", "leftovers") in (0, None), "%s: teardown leftovers" % x["name"])
        cmd = a.get("command") or ""
        want("CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1" in cmd and ",skip_abort" in cmd and "CUDA_COREDUMP_PIPE=" in cmd,
             "%s: not moeprobe's core-dump settings: %s" % (a.get("dir"), cmd))

# GPU telemetry through the real libnvidia-ml (docs/metrics.md): every
# attempt that served requests sampled the GPU, with plausible values; the
# engine's /metrics was read at the end of every load phase of each primary
# attempt without a failed request (a phase in which the engine died cannot
# have its end-of-phase scrape: its reason is recorded instead)
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
        if not (name == "sequential" or name.startswith("concurrency-")):
            continue
        if p.get("failed"):
            want(isinstance(p.get("server_metrics"), dict) or p.get("server_metrics_reason"),
                 "%s %s: neither server_metrics nor the reason" % (x["name"], name))
        elif p.get("ok"):
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

def load(d):
    try:
        return json.load(open(os.path.join(res, d, "report.json")))
    except (OSError, ValueError):
        return None

def cands(rep):
    return {x["name"]: x for x in (rep or {}).get("candidates", [])}

def kernel_line(tag, k):
    return "%s: %s `%s` (%s), %s, %s%s" % (
        tag, "surfaced in" if k.get("surfaced_only") else "faulted in", k.get("name"),
        k.get("family_label") or "family not in the catalog", k.get("exception"), k.get("evidence"),
        ", dump " + str(g(k, "dump", "state")) if g(k, "dump", "state") else "")

def gpu_faults(res, r, c, want, dry, cudagdb):
    out = ["", "GPU faults beyond the traceback (#24):"]
    if dry:
        return out + ["- skipped: the fake engine has no CUDA driver (dump, Xid)"] + dumpvars(res, want, dry)
    fk = g(c.get("faulty", {}), "crash", "kernel")
    want(fk and not fk.get("surfaced_only") and str(fk.get("attempt", "")).endswith("-blocking"),
         "faulty: crash.kernel is not from its CUDA_LAUNCH_BLOCKING=1 run: %r" % fk)
    want(fk and "up_kernel" in str(fk.get("name")), "faulty: the kernel named is not up_kernel: %r"
         % (fk or {}).get("name"))
    want(fk and str(fk.get("exception", "")).startswith("CUDBG_EXCEPTION_"), "faulty: no exception type")
    if fk:
        out.append("- " + kernel_line("faulty", fk))
    rk = g(c.get("racy", {}), "crash", "kernel")
    want(rk and rk.get("surfaced_only"), "racy: its kernel is not reported as where the race surfaced: %r" % rk)
    if rk:
        out.append("- " + kernel_line("racy (qualify)", rk))
    # every crashed run, normal or blocked: the dump's kernel and the traceback
    census = ("census-1", "census-2", "census-3", "census-4")
    for rep, tag in [(r, "run")] + [(load(d), d) for d in census]:
        for x in (rep or {}).get("candidates", []):
            for a in x.get("attempts", []):
                if a.get("outcome") != "crashed":
                    continue
                ks = [k for k in (g(a, "gpu_fault", "kernels") or []) if k.get("exception")]
                want(ks, "%s %s: crashed and no kernel named" % (tag, a.get("dir")))
                want(site_of(a, tag), "%s %s: crashed and no traceback (skip_abort did not keep it)" % (tag, a.get("dir")))
    for d in census:
        k = g(cands(load(d)).get("racy", {}), "crash", "kernel")
        if k:
            want(k.get("surfaced_only"), "%s: the racy kernel is not reported as surfaced only" % d)
            out.append("- " + kernel_line("racy (%s)" % d, k))
    # Xids: every crashing attempt has some, no clean one has any
    for rep, tag in [(r, "run")] + [(load(d), d) for d in census]:
        for x in (rep or {}).get("candidates", []):
            for a in x.get("attempts", []):
                xs = g(a, "gpu_fault", "xid") or []
                if a.get("outcome") == "crashed":
                    want(xs, "%s %s: crashed and no Xid recorded (NVML: %s; kernel log: %s)" % (
                        tag, a.get("dir"), g(a, "gpu_fault", "nvml_xid") or "subscribed",
                        g(a, "gpu_fault", "kernel_log") or "read"))
                    out.append("- %s %s: Xids %s" % (tag, a.get("dir"), sorted(set(
                        "%s/%s" % (e["xid"], e["source"]) for e in xs))))
                elif a.get("outcome") == "clean":
                    want(not xs, "%s %s: clean, yet Xids %r" % (tag, a.get("dir"), xs))
    dk = g(cands(load("devnull")).get("faulty", {}), "crash", "kernel")
    want(dk and "up_kernel" in str(dk.get("name")) and str(g(dk, "dump", "state")).startswith("not written"),
         "devnull: the kernel is not named with CUDA_COREDUMP_FILE=/dev/null: %r" % dk)
    if dk:
        out.append("- " + kernel_line("faulty, dump file /dev/null", dk))
    h = cands(load("hang")).get("spin", {})
    hd = g((h.get("attempts") or [{}])[0], "gpu_fault", "hang_dump") or ""
    want(h.get("verdict") == "hang", "spin: verdict %r, want hang" % h.get("verdict"))
    want(hd.startswith("triggered through") and "dump(s) written" in hd and "0 dump(s)" not in hd,
         "spin: the dump through the pipe: %r" % hd)
    if cudagdb:
        want("moe_spin_kernel" in hd, "spin: cuda-gdb did not name moe_spin_kernel: %r" % hd)
    out += ["- spin (hang): %s" % h.get("why"), "- spin: GPU core dump on the hang: %s" % hd]
    out += cost(res)
    return out + dumpvars(res, want, dry)

def md_table(path):
    rows, head = {}, None
    try:
        text = open(path).read().split("\n")
    except OSError:
        return rows
    for ln in text:
        if not ln.startswith("| ") or ln.startswith("|---"):
            continue
        cells = [x.strip() for x in ln.strip().strip("|").split("|")]
        if head is None:
            head = cells
        else:
            rows[cells[0]] = dict(zip(head, cells))
    return rows

def dumpvars(res, want, dry):
    """the re-measured table of the core-dump variables (scripts/gpu-dumpvars.sh):
    moeprobe's own settings keep the traceback beside the dump's lines, and
    a dump without skip_abort is read in its place; differences from the
    table measured before (tests/gpu/dumpvars-h200.md) are listed"""
    out = ["", "core-dump variables, one qualify attempt per setting on the faulty backend "
           "(dumpvars/dumpvars.md; the variables: dumpvars/settings.txt):", ""]
    try:
        out += open(os.path.join(res, "dumpvars", "dumpvars.md")).read().rstrip("\n").split("\n")
    except OSError:
        want(False, "dumpvars: no dumpvars/dumpvars.md")
        return out
    if dry:
        return out
    t = md_table(os.path.join(res, "dumpvars", "dumpvars.md"))
    m = t.get("moeprobe", {})
    want(int(m.get("coredump: lines", "0")) > 0 and int(m.get("traceback", "0")) > 0 and m.get("aborted") == "no",
         "dumpvars: moeprobe's settings do not keep both the dump's lines and the traceback: %r" % m)
    k = g(cands(load("dumpvars/exception")).get("faulty", {}), "crash")
    want(k and "it replaces the Python traceback" in str(k.get("message")) and "up_kernel" in str(g(k, "kernel", "name")),
         "dumpvars: a dump without skip_abort is not read in the traceback's place: %r" % (k or {}).get("message"))
    before = md_table("tests/gpu/dumpvars-h200.md") # the script runs in the repository root
    def facts(row):
        return tuple(int(row.get(col, "0")) > 0 for col in ("coredump: lines", "traceback", "CUDA error line")) + (
            "signal 6" in row.get("engine ended", ""),)
    diff = ["%s: now %s, before %s" % (n, facts(t[n]), facts(b)) for n, b in before.items()
            if n in t and facts(t[n]) != facts(b)]
    out += ["", "against tests/gpu/dumpvars-h200.md (lines, traceback, CUDA error, SIGABRT): " +
            ("; ".join(diff) if diff else "the same")]
    return out

def cost(res):
    rows = {}
    for mode in ("off", "on"):
        for i in (1, 2):
            x = cands(load("cost-%s-%d" % (mode, i))).get("clean", {})
            a = (x.get("attempts") or [{}])[0]
            tp = g(x, "throughput") or {}
            rows.setdefault(mode, []).append({
                "ready_s": a.get("ready_s"), "request_tok_s_p50": a.get("request_tok_s_p50"),
                "sequential_tok_s": tp.get("sequential_tok_s"),
                "concurrency": [c_.get("tok_s") for c_ in tp.get("concurrency", [])],
                "verdict": x.get("verdict")})
    def med(mode, k):
        v = [r_[k] for r_ in rows.get(mode, []) if isinstance(r_.get(k), (int, float))]
        return statistics.median(v) if v else None
    summ = {k: {"off": med("off", k), "on": med("on", k)} for k in ("ready_s", "request_tok_s_p50", "sequential_tok_s")}
    json.dump({"runs": rows, "median": summ}, open(os.path.join(res, "cost.json"), "w"), indent=1)
    out = ["", "cost of the core-dump variables when nothing faults (medians of 2 runs each; "
           "off = --no-coredump, on = moeprobe's settings: the dump on exception with skip_abort and the pipe):"]
    for k, v in summ.items():
        ratio = v["on"] / v["off"] if v["on"] and v["off"] else None
        out.append("- %s: off %s, on %s%s" % (k, v["off"], v["on"],
                                              ", on/off %.3f" % ratio if ratio else ""))
    return out

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
# several innermost sites are typical of a race, not a property of it: the
# census records them and requires none (a run on an H200 saw get_output in
# all of 5 crashes)
lines += ["", "race census (normal-mode starts of the racy backend, %d): %d crashed; requests served "
          "before the crash: %s; innermost error sites: %s" % (
              len(census), len(crashes), [t[0] for t in crashes],
              ", ".join("%s x%d" % (s_, sum(1 for t in crashes if t[2] == s_)) for s_ in inner))]
lines += ["", "GPU telemetry (real NVML, load phases):"] + ["- " + t for t in tele]
lines += gpu_faults(res, r, c, want, dry, cudagdb)
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
{ echo; cat "$RES/correct.md"; } >>"$RES/results.md" 2>/dev/null
if [ $FAILED -ne 0 ]; then
    echo "gpu-check: FAILED (results in $RES)"
    exit 1
fi
echo "gpu-check: PASS (results in $RES)"
