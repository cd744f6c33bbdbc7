#!/bin/bash
# q_correct_nologprobs.sh - an engine that refuses prompt_logprobs (vLLM with
# --max-logprobs 0: "Requested prompt logprobs of 5, which is greater than max
# allowed: 0") gets the greedy comparison only, and the report says so: the
# greedy continuations are asked again with the logprobs it allows (0: the
# chosen token alone, so a difference cannot be judged and a candidate whose
# continuations all differ is not measured), the task gate still runs and
# still catches the wrong backend, nothing fails.
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "python3 is needed to read report.json"; exit 77; }
F=(--quiet --seq 2 --conc 2:2 --max-tokens 8 --no-diagnose --agreement 4 --accuracy 24)
Q_DIR="$Q_TMP/nolp"
"$MOEPROBE" qualify --out "$Q_DIR" "${F[@]}" --candidate 'auto:' \
    --candidate 'cutlass: --moe-backend cutlass' --candidate 'marlin: --moe-backend marlin' \
    -- "$REFENGINE" --world "$ROOT/worlds/fluent-wrong-trtllm.ini" --port '{port}' \
    --max-logprobs 0 >"$Q_TMP/nolp.stdout" 2>"$Q_TMP/nolp.stderr"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/nolp.stderr"; fail "exit $rc"; }
check "$Q_DIR/report.json" \
    'all(x["requests"]["failed"] == 0 for x in r["candidates"])' \
    'all(x["correctness"]["agreement"]["greedy"]["only"] for x in r["candidates"])' \
    'all(x["correctness"]["agreement"]["positions"] == 0 for x in r["candidates"])' \
    '"max allowed: 0" in c["cutlass"]["correctness"]["agreement"]["note"]' \
    'c["cutlass"]["correctness"]["agreement"]["result"] == "agrees"' \
    'c["auto"]["correctness"]["agreement"]["result"] == "not-measured"' \
    'c["auto"]["correctness"]["agreement"]["greedy"]["undecided"] > 0' \
    'c["auto"]["verdict"] == "wrong-output" and c["auto"]["correctness"]["class"] == "low-accuracy"' \
    'c["cutlass"]["verdict"] == "stable" and c["marlin"]["verdict"] == "stable"' ||
    fail "report"
grep -q 'prompt_logprobs refused' "$Q_DIR/report.md" || fail "report.md does not say prompt_logprobs was refused"
grep -q '"phase":"score","outcome":"http-error","http_status":400' "$Q_DIR/attempts/cutlass-1/requests.jsonl" ||
    fail "the refusal is not in requests.jsonl"
# --max-logprobs 2: prompt_logprobs 5 is refused with "max allowed: 2", and
# asked again with 2 (the own token and the top-1 are all the comparison
# reads): teacher-forced evidence, and the wrong backend is divergent on it
# with the task gate off
Q2="$Q_TMP/lp2"
"$MOEPROBE" qualify --out "$Q2" --quiet --seq 2 --conc 2:2 --max-tokens 8 --no-diagnose \
    --agreement 4 --accuracy 0 --candidate 'auto:' \
    --candidate 'cutlass: --moe-backend cutlass' --candidate 'marlin: --moe-backend marlin' \
    -- "$REFENGINE" --world "$ROOT/worlds/fluent-wrong-trtllm.ini" --port '{port}' \
    --max-logprobs 2 >"$Q_TMP/lp2.stdout" 2>"$Q_TMP/lp2.stderr"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/lp2.stderr"; fail "max-logprobs 2: exit $rc"; }
check "$Q2/report.json" \
    'all(x["correctness"]["agreement"]["positions"] > 0 for x in r["candidates"])' \
    'not any(x["correctness"]["agreement"]["greedy"]["only"] for x in r["candidates"])' \
    'c["auto"]["correctness"]["agreement"]["result"] == "divergent"' \
    'c["cutlass"]["correctness"]["agreement"]["result"] == "agrees"' ||
    fail "max-logprobs 2: the passages were not asked again with 2"
assert_no_leftovers
echo "ok: prompt_logprobs refused -> greedy comparison only, said in the report; the task gate still decides; 'max allowed: 2' -> asked again with 2"
