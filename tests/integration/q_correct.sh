#!/bin/bash
# q_correct.sh - correctness end to end (issue #23, docs/verdicts.md
# "wrong-output"): on a world with one fluent-but-wrong backend it is
# wrong-output with its evidence (divergent logprobs, the first disagreement
# with both tokens, low accuracy), never recommended, and a candidate that
# shares its configuration shares the verdict; with only legitimate noise no
# candidate is flagged; two candidates that disagree are a pair that the task
# gate decides; --reference names the one to trust.
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "python3 is needed to read report.json"; exit 77; }
F=(--quiet --seq 2 --conc 2:2 --max-tokens 8 --no-diagnose --agreement 6 --accuracy 16)
WRONG="$ROOT/worlds/fluent-wrong-trtllm.ini"

# 1. four configurations, one of them wrong (auto picks it), one candidate shares it
qualify wrong "$WRONG" "${F[@]}" --candidate 'auto:' --candidate 'cutlass: --moe-backend cutlass' \
    --candidate 'marlin: --moe-backend marlin' --candidate 'fi: --moe-backend flashinfer_cutlass' \
    --candidate 'env: VLLM_SCALED_MM_BACKEND=marlin'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/wrong.stderr"; fail "wrong world: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'c["auto"]["verdict"] == "wrong-output"' \
    'c["auto"]["correctness"]["class"] == "divergent+low-accuracy"' \
    'c["auto"]["correctness"]["agreement"]["result"] == "divergent"' \
    'c["auto"]["correctness"]["agreement"]["mean_abs_delta"] > 1' \
    'c["auto"]["correctness"]["agreement"]["top1_agreement"] < 0.8' \
    'len(c["auto"]["correctness"]["agreement"]["first_disagreements"]) == 3' \
    'c["auto"]["correctness"]["accuracy"]["result"] == "low-accuracy"' \
    'c["auto"]["correctness"]["accuracy"]["high"] < 1' \
    '"top-1 agreement" in c["auto"]["why"]' \
    'c["env"]["same_as"] == "auto" and c["env"]["verdict"] == "wrong-output"' \
    'c["env"]["correctness"]["shared_from"] == "auto"' \
    'all(c[n]["verdict"] == "stable" for n in ("cutlass", "marlin", "fi"))' \
    'all(c[n]["correctness"]["agreement"]["result"] == "agrees" for n in ("cutlass", "marlin", "fi"))' \
    '"agrees with 3 others" in c["cutlass"]["why"] and "16/16 task answers right" in c["cutlass"]["why"]' \
    'r["recommendation"]["candidate"] not in ("auto", "env")' \
    'r["correctness"]["configurations"] == 4 and r["correctness"]["noise_floor"] >= 0' ||
    fail "wrong world report"
grep -q '^## Correctness' "$Q_DIR/report.md" || fail "no Correctness section in report.md"
grep -q '^- \*\*auto\*\*, passage 1 token' "$Q_DIR/report.md" || fail "no first disagreement in report.md"
grep -q '<h2>Correctness</h2>' "$Q_DIR/report.html" || fail "no Correctness section in report.html"
grep -q 'class=v-wrong-output\|v v-wrong-output' "$Q_DIR/report.html" || fail "no wrong-output badge"
# the report is rendered again from the store alone, identically
"$MOEPROBE" report --format json "$Q_DIR" >"$Q_TMP/again.json" || fail "moeprobe report"
cmp -s "$Q_TMP/again.json" "$Q_DIR/report.json" || fail "report.json differs when rendered again"

# 2. only legitimate noise: nothing flagged
qualify noise "$ROOT/worlds/legit-noise-spark.ini" "${F[@]}" --no-dedupe \
    --candidate 'fi: --moe-backend flashinfer_cutlass' --candidate 'cutlass: --moe-backend cutlass' \
    --candidate 'marlin: --moe-backend marlin'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/noise.stderr"; fail "noise world: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'all(x["verdict"] == "stable" for x in r["candidates"])' \
    'all(x["correctness"]["agreement"]["result"] == "agrees" for x in r["candidates"])' \
    'all(x["correctness"]["class"] is None for x in r["candidates"])' \
    'any(x["correctness"]["agreement"]["mean_abs_delta"] > 0.005 for x in r["candidates"])' ||
    fail "noise world report"

# 3. two configurations: a pair, the task gate decides
qualify pair "$WRONG" "${F[@]}" --candidate 'auto:' --candidate 'cutlass: --moe-backend cutlass'
check "$Q_DIR/report.json" \
    'c["auto"]["correctness"]["agreement"]["result"] == "disagree-pair"' \
    'c["cutlass"]["correctness"]["agreement"]["result"] == "disagree-pair"' \
    'c["auto"]["verdict"] == "wrong-output" and c["auto"]["correctness"]["class"] == "low-accuracy"' \
    'c["cutlass"]["verdict"] == "stable" and "cannot tell which" in c["cutlass"]["why"]' ||
    fail "pair report"

# 4. the same pair with --reference: the named candidate decides
qualify ref "$WRONG" "${F[@]}" --accuracy 0 --reference cutlass \
    --candidate 'auto:' --candidate 'cutlass: --moe-backend cutlass'
check "$Q_DIR/report.json" \
    'c["auto"]["verdict"] == "wrong-output" and c["auto"]["correctness"]["class"] == "divergent"' \
    'c["auto"]["correctness"]["agreement"]["reference"] == "cutlass"' \
    'c["auto"]["correctness"]["accuracy"]["result"] == "not-run"' \
    'r["correctness"]["reference"] == "cutlass"' || fail "reference report"
assert_no_leftovers
echo "ok: wrong backend caught with evidence, noise passes, a pair is not blamed, --reference"
