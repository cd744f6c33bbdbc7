#!/bin/bash
# gpu-correct.sh - the correctness step of `make gpu-check` (#23 on real GPU
# numerics): `moeprobe qualify` with the scoring pass on
# worlds/cuda-h200-correct.ini, where the logits every backend scores and
# generates from carry a term its own CUDA path computes (refengine/cuda_lm.h):
# EMULATION (FP32), MARLIN (FP16), FLASHINFER_CUTLASS (BF16 activations) and
# HUMMING (block scales read one block off: a wrong kernel). Asserts:
#   - the wrong-scale candidate is `wrong-output`, correctness.class
#     "divergent", agreement "divergent", and not the recommendation;
#   - the FP32, FP16 and BF16 candidates are `stable` with agreement
#     "agrees" (BF16's legitimate noise is not flagged);
#   - every candidate was compared on teacher-forced positions (at least 60
#     per passage scored; 16 passages give about 1350).
# Records per candidate positions, mean / p99 |delta logprob|, top-1
# agreement, the noise floor and the greedy check in correct.md and
# correct.json.
# Usage: scripts/gpu-correct.sh RESULTS_DIR (a folder; correct/ is its run)
# Environment: MOEPROBE (default ./moeprobe), GPU_CHECK_ENGINE (default
# build/cuda/refengine-cuda; build/cuda/refengine-fake computes the term on
# the CPU), GPU_CORRECT_WORLD (default worlds/cuda-h200-correct.ini),
# GPU_CORRECT_PASSAGES (--agreement, default 16: all passages).
# Exit 0 when every assertion holds, 1 when one fails, 2 when it cannot run.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
[ $# -eq 1 ] || { echo "usage: $0 RESULTS_DIR" >&2; exit 2; }
mkdir -p "$1" || exit 2
RES=$(cd "$1" && pwd)
MOEPROBE=${MOEPROBE:-$ROOT/moeprobe}
RE=${GPU_CHECK_ENGINE:-$ROOT/build/cuda/refengine-cuda}
WORLD=${GPU_CORRECT_WORLD:-$ROOT/worlds/cuda-h200-correct.ini}
[ -x "$RE" ] || { echo "gpu-correct: no engine $RE (make cuda)" >&2; exit 2; }
rm -rf "$RES/correct"
t0=$(date +%s)
"$MOEPROBE" qualify --out "$RES/correct" --no-diagnose --max-tokens 32 --seq 5 --conc 4:8 \
    --grace 5 --agreement "${GPU_CORRECT_PASSAGES:-16}" --accuracy 0 \
    --candidate 'two-stream: --moe-backend emulation' \
    --candidate 'marlin: --moe-backend marlin' \
    --candidate 'bf16: --moe-backend flashinfer_cutlass' \
    --candidate 'wrong-scale: --moe-backend humming' \
    -- "$RE" --world "$WORLD" --port '{port}' >"$RES/correct.stdout" 2>"$RES/correct.stderr"
qrc=$?
echo "gpu-correct: qualify exit $qrc in $(( $(date +%s) - t0 )) s"
[ -f "$RES/correct/report.json" ] || { echo "gpu-correct: FAIL: no report.json" >&2; tail -5 "$RES/correct.stderr" >&2; exit 1; }

python3 - "$RES" "${GPU_CORRECT_PASSAGES:-16}" <<'PY'
import json, os, sys
res, npass = sys.argv[1], int(sys.argv[2])
r = json.load(open(os.path.join(res, "correct", "report.json")))
c = {x["name"]: x for x in r.get("candidates", [])}
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
def g(x, *path):
    for p in path:
        x = x.get(p) if isinstance(x, dict) else None
    return x
paths = {"two-stream": "FP32 fused (two streams)", "marlin": "FP16 dequant + GEMM",
         "bf16": "BF16 activations", "wrong-scale": "block scales one block off"}
rec = g(r, "recommendation", "candidate")
for n in paths:
    want(n in c, "%s: not in the report" % n)
w = c.get("wrong-scale", {})
want(w.get("verdict") == "wrong-output", "wrong-scale: verdict %r, want wrong-output" % w.get("verdict"))
want(g(w, "correctness", "class") == "divergent",
     "wrong-scale: correctness.class %r, want divergent" % g(w, "correctness", "class"))
want(g(w, "correctness", "agreement", "result") == "divergent",
     "wrong-scale: agreement %r, want divergent" % g(w, "correctness", "agreement", "result"))
want(rec != "wrong-scale", "wrong-scale is recommended")
for n in ("two-stream", "marlin", "bf16"):
    x = c.get(n, {})
    want(x.get("verdict") == "stable", "%s: verdict %r, want stable" % (n, x.get("verdict")))
    want(g(x, "correctness", "agreement", "result") == "agrees",
         "%s: agreement %r, want agrees" % (n, g(x, "correctness", "agreement", "result")))
    want(g(x, "correctness", "class") is None, "%s: flagged %r" % (n, g(x, "correctness", "class")))
rows, out = [], ["# gpu-check: correctness on real GPU numerics (#23)", "",
                 "| candidate | MoE backend | CUDA path | verdict | class | agreement | positions | "
                 "mean abs delta | p99 abs delta | top-1 | noise floor | greedy (failed/compared) |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|"]
def num(v, f):
    return f % v if isinstance(v, (int, float)) else "-"
for n, p in paths.items():
    x = c.get(n, {})
    ag = g(x, "correctness", "agreement") or {}
    want((ag.get("positions") or 0) >= 60 * npass,
         "%s: %r positions compared, want >= %d" % (n, ag.get("positions"), 60 * npass))
    row = {"candidate": n, "moe_backend": g(x, "resolved", "moe_backend"), "path": p,
           "verdict": x.get("verdict"), "class": g(x, "correctness", "class"),
           "agreement": ag.get("result"), "positions": ag.get("positions"),
           "mean_abs_delta": ag.get("mean_abs_delta"), "p99_abs_delta": ag.get("p99_abs_delta"),
           "top1_agreement": ag.get("top1_agreement"), "noise_floor": ag.get("noise_floor"),
           "repeat_abs_delta": ag.get("repeat_abs_delta"),
           "greedy_compared": g(ag, "greedy", "compared"), "greedy_failed": g(ag, "greedy", "failed")}
    rows.append(row)
    out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s/%s |" % (
        n, row["moe_backend"], p, row["verdict"], row["class"] or "-", row["agreement"],
        row["positions"], num(row["mean_abs_delta"], "%.4f"), num(row["p99_abs_delta"], "%.4f"),
        num(row["top1_agreement"], "%.3f"), num(row["noise_floor"], "%.4f"),
        row["greedy_failed"], row["greedy_compared"]))
fd = g(w, "correctness", "agreement", "first_disagreements") or []
summ = r.get("correctness") or {}
out += ["", "noise floor: %s (run-to-run %s, spread of the agreeing configurations %s; rule: divergent "
        "when mean > %s x floor and top-1 < %s)" % (summ.get("noise_floor"), summ.get("repeat_floor"),
        summ.get("spread_floor"), g(summ, "rule", "floor_factor"), g(summ, "rule", "top1_min")),
        "recommendation: %s" % (rec or "none"),
        "wrong-scale: %s" % w.get("why"),
        "wrong-scale, first disagreements: %s" % json.dumps(fd[:3]), ""]
out += ["assertions: " + ("all hold" if not bad else "FAILED")] + ["- " + b for b in bad]
json.dump({"candidates": rows, "summary": summ, "recommendation": rec, "failures": bad},
          open(os.path.join(res, "correct.json"), "w"), indent=1)
open(os.path.join(res, "correct.md"), "w").write("\n".join(out) + "\n")
print("\n".join(out))
sys.exit(1 if bad else 0)
PY
