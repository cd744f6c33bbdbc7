#!/bin/bash
# bench/time_to_verdict.sh - what testing each configuration once saves (issue #14 part 5).
#
# For each seed-like world, with a realistic start-up scaled down 100x (a DGX Spark:
# kernel selection ~40 s after `vllm serve`, ready at ~600 s -> select 0.4 s, ready 6 s),
# runs `moeprobe qualify` with the default preset (sm12x-nvfp4: auto, cutlass, marlin,
# flashinfer_cutlass, marlin-env) twice: as it is (dedupe) and with --no-dedupe. Reports per
# world and mode: engine starts (attempts), engine-seconds to ready (sum of attempts'
# ready_s), wall time, and whether every candidate's verdict is the same both ways.
#   worlds: spark-nemotron-super-upstream-scaled (upstream 0.19: auto, flashinfer_cutlass and
#   marlin-env all resolve to the racing FLASHINFER_CUTLASS), spark-nemotron-super-scaled (0.17
#   with the fork knob that really selects Marlin), mistral-small-4
#   (a start-up crash under auto), era-0.19-unknown-env (knobs the engine calls unknown)
# Usage: make -j2 && bench/time_to_verdict.sh
# Env: SELECT_S (0.4), LOAD_S (6), MAX_TOKENS (64), SEQ (10), CONC ("4:16 8:32"),
#      WORLDS (the three above). Exits 77 when a tool is missing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
MP=${MOEPROBE_BIN:-$root/moeprobe}
RE=${REFENGINE_BIN:-$root/refengine/refengine}
SELECT_S=${SELECT_S:-0.4}
LOAD_S=${LOAD_S:-6}
MAX_TOKENS=${MAX_TOKENS:-64}
SEQ=${SEQ:-10}
CONC=${CONC:-4:16 8:32}
WORLDS=${WORLDS:-spark-nemotron-super-upstream-scaled spark-nemotron-super-scaled mistral-small-4 era-0.19-unknown-env}
for x in "$MP" "$RE"; do [ -x "$x" ] || { echo "missing $x (run: make -j2)"; exit 77; }; done
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
tmp=$(mktemp -d /tmp/ttv.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
conc=()
for c in $CONC; do conc+=(--conc "$c"); done

# a copy of world $1 with the scaled start-up
scaled() {
    local w=$1 out=$tmp/$1.ini
    python3 - "$root/worlds/$w.ini" "$out" "$SELECT_S" "$LOAD_S" <<'PY'
import re, sys
src, dst, sel, load = sys.argv[1:5]
out, in_engine = [], False
for line in open(src).read().splitlines():
    if re.match(r"\s*\[", line):
        if in_engine:
            out += ["select_seconds = " + sel, "load_seconds = " + load]
        in_engine = line.strip() == "[engine]"
    elif in_engine and re.match(r"\s*(select_seconds|load_seconds)\s*=", line):
        continue
    out.append(line)
if in_engine:
    out += ["select_seconds = " + sel, "load_seconds = " + load]
open(dst, "w").write("\n".join(out) + "\n")
PY
    echo "$out"
}

printf '%-28s %-10s %7s %14s %9s\n' world mode starts engine_s_ready wall_s
summary=()
for w in $WORLDS; do
    wf=$(scaled "$w")
    for mode in dedupe no-dedupe; do
        extra=()
        [ "$mode" = no-dedupe ] && extra=(--no-dedupe)
        d="$tmp/$w-$mode"
        t0=$(date +%s.%N)
        "$MP" qualify --out "$d" --quiet --seq "$SEQ" "${conc[@]}" --max-tokens "$MAX_TOKENS" \
            "${extra[@]}" -- "$RE" --world "$wf" --port '{port}' >/dev/null 2>"$d.stderr"
        rc=$?
        t1=$(date +%s.%N)
        [ "$rc" -le 1 ] || { echo "qualify failed (exit $rc) on $w $mode:"; cat "$d.stderr"; exit 1; }
        python3 - "$d/report.json" "$w" "$mode" "$(echo "$t1 - $t0" | bc)" "$tmp/$w-$mode.verdicts" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
atts = [a for c in r["candidates"] for a in c["attempts"]]
starts = len(atts)
ready = sum(a["ready_s"] or 0 for a in atts)
print("%-28s %-10s %7d %14.1f %9.1f" % (sys.argv[2], sys.argv[3], starts, ready, float(sys.argv[4])))
open(sys.argv[5], "w").write(json.dumps({c["name"]: c["verdict"] for c in r["candidates"]}, sort_keys=True))
open(sys.argv[5] + ".wall", "w").write(sys.argv[4])
PY
    done
    same=$(cmp -s "$tmp/$w-dedupe.verdicts" "$tmp/$w-no-dedupe.verdicts" && echo yes || echo NO)
    saved=$(python3 -c "a=float(open('$tmp/$w-dedupe.verdicts.wall').read()); b=float(open('$tmp/$w-no-dedupe.verdicts.wall').read()); print('%.0f' % (100*(1-a/b)))")
    summary+=("$(printf '%-28s same verdicts: %-3s  wall time saved: %s %%  verdicts: %s' "$w" "$same" "$saved" "$(cat "$tmp/$w-dedupe.verdicts")")")
done
echo
printf '%s\n' "${summary[@]}"
