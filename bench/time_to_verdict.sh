#!/bin/bash
# bench/time_to_verdict.sh - what a qualify run costs, counted honestly (issues #14, #27).
#
# Runs `moeprobe qualify` with the default preset (sm12x-nvfp4: auto, cutlass, marlin,
# flashinfer_cutlass, marlin-env) on seed-like worlds whose DGX Spark start-up is scaled down
# SCALE times (the real machine: kernel selection ~40 s after `vllm serve`, ready at ~600 s,
# ~14 tok/s; at SCALE=100: 0.4 s, 6 s, ~1400 tok/s), once as it is (dedupe) and once with
# --no-dedupe. Reports per world and mode:
#   - the scaled wall time, measured;
#   - where it went (report.json cost, summed over the attempts): engine start-up, requests, and
#     moeprobe's own time inside the attempts (probing, settling, scrapes, teardown) and outside
#     them (its start-up, the reports);
#   - the real-equivalent time: engine start-up and request time multiplied by SCALE (x_scale_min:
#     start-up + requests, in minutes), plus moeprobe's own time as measured (it does not shrink
#     with the world);
#   - engine starts, of them stopped at their selection lines, and whether every verdict is the
#     same both ways;
#   - the plan's ETA (printed after the first attempt) against the time the rest actually took.
# Then one world again at CHECK_SCALE (10: selection 4 s, ready 60 s, ~140 tok/s), dedupe only:
# its real-equivalent time checks the extrapolation of the SCALE run.
#
# Usage: make -j2 && bench/time_to_verdict.sh
# Env: SCALE (100), CHECK_SCALE (10; 0 = skip), CHECK_WORLD (spark-nemotron-super-upstream-scaled),
#      MODES ("dedupe no-dedupe"), MAX_TOKENS (64), SEQ (10), CONC ("4:16 8:32"),
#      WORLDS ("NAME:OWN_SCALE ..."; OWN_SCALE is the scale the world file's tokens_per_second
#      already has: 100 for the *-scaled worlds, 1 for worlds written at real speed),
#      EXTRA_ARGS (more qualify options; the correctness checks are on by default, --agreement 0
#      --accuracy 0 leaves them out), KEEP=DIR (keep the runs). MAX_TOKENS=256 is qualify's own
#      default request length: a dearer request (docs/performance.md section 6).
# Exits 77 when a tool is missing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
MP=${MOEPROBE_BIN:-$root/moeprobe}
RE=${REFENGINE_BIN:-$root/refengine/refengine}
SCALE=${SCALE:-100}
CHECK_SCALE=${CHECK_SCALE:-10}
CHECK_WORLD=${CHECK_WORLD:-spark-nemotron-super-upstream-scaled}
MODES=${MODES:-dedupe no-dedupe}
MAX_TOKENS=${MAX_TOKENS:-64}
SEQ=${SEQ:-10}
CONC=${CONC:-4:16 8:32}
WORLDS=${WORLDS:-spark-nemotron-super-upstream-scaled:100 spark-nemotron-super-scaled:100 mistral-small-4:1 era-0.19-unknown-env:1}
EXTRA_ARGS=${EXTRA_ARGS:-}
REAL_SELECT_S=40
REAL_LOAD_S=600
for x in "$MP" "$RE"; do [ -x "$x" ] || { echo "missing $x (run: make -j2)"; exit 77; }; done
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
tmp=${KEEP:-$(mktemp -d /tmp/ttv.XXXXXX)}
mkdir -p "$tmp"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
conc=()
for c in $CONC; do conc+=(--conc "$c"); done
# shellcheck disable=SC2206
extra=($EXTRA_ARGS)

# world copy: scaled WORLD OWN_SCALE SCALE -> path. Start-up at the real Spark's /SCALE, every
# backend's tokens_per_second at its real rate x SCALE (the file's rate, or refengine's default
# of 50 tok/s where it gives none, / OWN_SCALE x SCALE; a backend without a section gets one).
scaled() {
    local w=$1 own=$2 scale=$3 out=$tmp/$1-x$3.ini
    python3 - "$root/worlds/$w.ini" "$out" "$own" "$scale" "$REAL_SELECT_S" "$REAL_LOAD_S" <<'PY'
import re, sys
src, dst, own, scale, rsel, rload = sys.argv[1:7]
own, scale = float(own), float(scale)
DEFAULT_TPS = 50.0  # refengine/world.c world_backend_defaults
BACKENDS = ["FLASHINFER_TRTLLM", "FLASHINFER_CUTEDSL", "FLASHINFER_CUTEDSL_BATCHED",
            "FLASHINFER_CUTLASS", "VLLM_CUTLASS", "MARLIN", "HUMMING", "EMULATION",
            "FLASHINFER_B12X", "B12X"]
out, section, has_rate, seen = [], None, False, set()
def rate(tps):
    return "tokens_per_second = %g" % (tps / own * scale)
def close():
    if section == "[engine]":
        out.extend(["select_seconds = %g" % (float(rsel) / scale),
                    "load_seconds = %g" % (float(rload) / scale)])
    elif section and section.startswith("[backend") and not has_rate:
        out.append(rate(DEFAULT_TPS))
for line in open(src).read().splitlines():
    if re.match(r"\s*\[", line):
        close()
        section, has_rate = line.strip(), False
        m = re.match(r"\[backend\s+(\w+)\]", section)
        if m:
            seen.add(m.group(1))
    elif section == "[engine]" and re.match(r"\s*(select_seconds|load_seconds)\s*=", line):
        continue
    else:
        m = re.match(r"\s*tokens_per_second\s*=\s*([0-9.]+)(.*)", line)
        if m and section and section.startswith("[backend"):
            line, has_rate = rate(float(m.group(1))) + m.group(2), True
    out.append(line)
close()
for b in BACKENDS:
    if b not in seen:
        out += ["", "[backend %s]" % b, rate(DEFAULT_TPS)]
open(dst, "w").write("\n".join(out) + "\n")
PY
    echo "$out"
}

# run NAME WORLDFILE SCALE [qualify options...]: one qualify, its stderr stamped with the
# seconds since start; prints one table row and writes NAME.verdicts
run() {
    local name=$1 wf=$2 scale=$3; shift 3
    local d="$tmp/$name" t0 t1 rc
    rm -rf "$d"
    t0=$(date +%s.%N)
    "$MP" qualify --out "$d" --seq "$SEQ" "${conc[@]}" --max-tokens "$MAX_TOKENS" "${extra[@]}" "$@" \
        -- "$RE" --world "$wf" --port '{port}' 2> >(python3 -u -c '
import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    sys.stdout.write("%.3f %s" % (time.time() - t0, line))' "$t0" >"$d.stderr") >/dev/null
    rc=$?
    t1=$(date +%s.%N)
    sleep 0.2 # the stamping filter flushes its last lines
    [ "$rc" -le 1 ] || { echo "qualify failed (exit $rc) on $name:"; cat "$d.stderr"; exit 1; }
    python3 - "$d/report.json" "$d.stderr" "$name" "$scale" "$(python3 -c "print($t1 - $t0)")" "$tmp/$name.verdicts" <<'PY'
import json, re, sys
rep, err, name, scale, wall, vout = sys.argv[1:7]
scale, wall = float(scale), float(wall)
r = json.load(open(rep))
k = r["cost"]
atts = [a for c in r["candidates"] for a in c["attempts"]]
in_att = sum(a.get("wall_s") or 0 for a in atts)
outside = max(0.0, wall - in_att)
own = k["overhead_seconds"] + outside
real = (k["startup_seconds"] + k["request_seconds"]) * scale + own
eta, at = None, None
for line in open(err):
    m = re.match(r"([0-9.]+) moeprobe: (?:[0-9:]+ )?plan: .*?ETA ~?([0-9.]+) ?(s|min|h)\b", line)
    if m:
        at = float(m.group(1))
        eta = float(m.group(2)) * {"s": 1, "min": 60, "h": 3600}[m.group(3)]
        break
rest = wall - at if at is not None else None
print("%-42s %5d %5d %9.1f %9.1f %8.2f %8.2f %8.1f %11s %9.1f %8s %8s" % (
    name, k["engine_starts"], k["selection_stops"], k["startup_seconds"], k["request_seconds"],
    k["overhead_seconds"], outside, wall,
    "%.1f+%.1f" % (k["startup_seconds"] * scale / 60, k["request_seconds"] * scale / 60), real / 60,
    "-" if eta is None else "%.0f" % eta, "-" if rest is None else "%.0f" % rest))
json.dump({"verdicts": {c["name"]: c["verdict"] for c in r["candidates"]}, "wall": wall,
           "real": real}, open(vout, "w"), sort_keys=True)
PY
}

printf '%-42s %5s %5s %9s %9s %8s %8s %8s %11s %9s %8s %8s\n' world/mode starts stops startup_s \
    request_s own_in_s own_out_s wall_s x_scale_min real_min plan_eta rest_s
summary=()
for ws in $WORLDS; do
    w=${ws%%:*} own=${ws#*:}
    wf=$(scaled "$w" "$own" "$SCALE")
    for mode in $MODES; do
        m=()
        [ "$mode" = no-dedupe ] && m=(--no-dedupe)
        run "$w-x$SCALE-$mode" "$wf" "$SCALE" "${m[@]}"
    done
    a="$tmp/$w-x$SCALE-dedupe.verdicts" b="$tmp/$w-x$SCALE-no-dedupe.verdicts"
    [ -f "$a" ] && [ -f "$b" ] && summary+=("$(python3 - "$a" "$b" "$w" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
same = "yes" if a["verdicts"] == b["verdicts"] else "NO"
print("%-36s same verdicts: %-3s  scaled wall %.2fx of --no-dedupe  real-equivalent %.0f vs %.0f min  verdicts: %s"
      % (sys.argv[3], same, a["wall"] / b["wall"], a["real"] / 60, b["real"] / 60,
         json.dumps(a["verdicts"], sort_keys=True)))
PY
)")
done
if [ "$CHECK_SCALE" != 0 ]; then
    own=$(for ws in $WORLDS; do [ "${ws%%:*}" = "$CHECK_WORLD" ] && echo "${ws#*:}"; done)
    wf=$(scaled "$CHECK_WORLD" "${own:-1}" "$CHECK_SCALE")
    run "$CHECK_WORLD-x$CHECK_SCALE-dedupe" "$wf" "$CHECK_SCALE"
    a="$tmp/$CHECK_WORLD-x$SCALE-dedupe.verdicts" b="$tmp/$CHECK_WORLD-x$CHECK_SCALE-dedupe.verdicts"
    [ -f "$a" ] && summary+=("$(python3 - "$a" "$b" "$SCALE" "$CHECK_SCALE" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print("extrapolation check: real-equivalent %.1f min from the x%s run, %.1f min from the x%s run (%+.0f %%); same verdicts: %s"
      % (a["real"] / 60, sys.argv[3], b["real"] / 60, sys.argv[4], 100 * (a["real"] / b["real"] - 1),
         "yes" if a["verdicts"] == b["verdicts"] else "NO"))
PY
)")
fi
echo
printf '%s\n' "${summary[@]}"
echo "workload: --seq $SEQ ${conc[*]} --max-tokens $MAX_TOKENS${EXTRA_ARGS:+ $EXTRA_ARGS} (qualify's default: 256 tokens)"
