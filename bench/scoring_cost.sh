#!/bin/bash
# bench/scoring_cost.sh - what the correctness check costs (issue #23: target under 10 % of a
# run's wall time with the defaults): `moeprobe qualify` with the default options (preset,
# workload, 16 passages scored twice, 4 greedy continuations, 64 task problems) on WORLD, and
# the same run with --agreement 0 --accuracy 0, REPEAT times each. From report.json:
#   scoring_s  = sum over candidates of correctness.cost.scoring_seconds + task_seconds
#                (the scoring pass's own wall time: passages, greedy, task gate)
#   share      = scoring_s / wall_seconds of the run
#   wall_on / wall_off = the two runs' wall times (the difference is the scoring plus noise)
# Usage: make -j2 && bench/scoring_cost.sh
# Env: WORLD (worlds/spark-nemotron-super-upstream-scaled.ini), REPEAT (1). Exits 77 when a
# tool is missing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
MP=${MOEPROBE_BIN:-$root/moeprobe}
RE=${REFENGINE_BIN:-$root/refengine/refengine}
WORLD=${WORLD:-$root/worlds/spark-nemotron-super-upstream-scaled.ini}
REPEAT=${REPEAT:-1}
for x in "$MP" "$RE"; do [ -x "$x" ] || { echo "missing $x (run: make -j2)"; exit 77; }; done
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
tmp=$(mktemp -d /tmp/scoring-cost.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$REPEAT"); do
    "$MP" qualify --quiet --out "$tmp/on$r" -- "$RE" --world "$WORLD" --port '{port}' >/dev/null
    "$MP" qualify --quiet --out "$tmp/off$r" --agreement 0 --accuracy 0 \
        -- "$RE" --world "$WORLD" --port '{port}' >/dev/null
    python3 - "$tmp/on$r/report.json" "$tmp/off$r/report.json" <<'PY'
import json, sys
on, off = (json.load(open(p)) for p in sys.argv[1:3])
s = 0.0
for c in on["candidates"]:
    k = c.get("correctness")
    if k and k["shared_from"] is None:
        s += k["cost"]["scoring_seconds"] + k["cost"]["task_seconds"]
        print(f'  {c["name"]}: scoring {k["cost"]["scoring_seconds"]:.2f} s + task gate '
              f'{k["cost"]["task_seconds"]:.2f} s, {k["accuracy"]["right"]}/{k["accuracy"]["n"]} '
              f'right, {k["agreement"]["result"]}')
w = on["wall_seconds"]
print(f'scoring_s {s:.2f}  wall_on {w} s  share {100 * s / w:.1f} %  wall_off {off["wall_seconds"]} s')
PY
done
