#!/bin/bash
# diagnose: a race with a per-request probability is an async race; a race
# that needs more blocked requests than allowed stays "crashed" with the
# shortfall; `moeprobe diagnose` runs one candidate.
. "$(dirname "$0")/q_lib.sh"
qualify prob "$W/q-prob.ini" --quiet --seq 6 --conc 4:24 --max-tokens 8 --no-quality --candidate 'auto:'
check "$Q_DIR/report.json" \
  'c["auto"]["verdict"] == "async-race"' \
  'c["auto"]["diagnosis"]["requests_clean"] >= c["auto"]["diagnosis"]["requests_required"]' \
  '"clean requests needed" in c["auto"]["diagnosis"]["reasoning"]' \
  || fail "probabilistic race"
# the blocked run serves its warm-up and 3 of the 6 sequential requests alone
# (enough for the speed ratio), then the rest at the top level
blocked=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print([a["dir"] for c in r["candidates"] for a in c["attempts"] if a["launch_blocking"]][0])' "$Q_DIR/report.json")
phases=$(python3 -c 'import json,sys,collections; print(sorted(collections.Counter(json.loads(l)["phase"] for l in open(sys.argv[1])).items()))' "$Q_DIR/$blocked/requests.jsonl")
case "$phases" in *"('sequential', 3)"*"('warmup', 1)"*) ;; *) fail "blocked run's phases: $phases" ;; esac
# the 12th request crashes the engine: warm-up and sequential (7) are served;
# of the concurrency-4 requests in flight with it, how many finish first
# depends on scheduling, so 7..11 were served before the failure
qualify late "$W/q-prob.ini" --quiet --seq 6 --conc 4:24 --max-tokens 8 --no-quality \
    --candidate 'late: --moe-backend cutlass' --diagnose-max-requests 20
check "$Q_DIR/report.json" \
  'c["late"]["verdict"] == "crashed"' \
  '7 <= c["late"]["crash"]["after_requests"] <= 11' \
  '"short of" in c["late"]["why"] and "--diagnose-max-requests" in c["late"]["why"]' \
  || fail "qualify diagnosis"
# --no-diagnose: crashed, and the report says why
qualify nodiag "$W/q-verdicts.ini" "${Q_FAST[@]}" --no-diagnose --candidate 'auto:'
check "$Q_DIR/report.json" 'c["auto"]["verdict"] == "crashed"' '"--no-diagnose" in c["auto"]["why"]' \
  'len(c["auto"]["attempts"]) == 1' || fail "no-diagnose"
# the diagnose command on one candidate
"$MOEPROBE" diagnose --quiet --json --out "$Q_TMP/dg" --seq 3 --conc 2:4 --max-tokens 8 --no-quality \
    --candidate 'fi: --moe-backend flashinfer_cutlass' \
    -- "$REFENGINE" --world "$W/q-verdicts.ini" --port '{port}' >"$Q_TMP/dg.json" 2>"$Q_TMP/dg.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/dg.err"; fail "diagnose exit $rc"; }
check "$Q_TMP/dg.json" 'c["fi"]["verdict"] == "async-race"' 'c["fi"]["diagnosis"]["launch_blocking"] == "clean"' \
  || fail "diagnose command"
assert_no_leftovers
echo ok
