#!/bin/bash
# bisect_race.sh - `moeprobe bisect` where the difference does not show on
# every run:
#  1. an async race from c4 on (each request crashes the engine with
#     probability 0.3, drawn per run): with 40 clean requests per probe the
#     first bad build is c4; the bad probes are diagnosed async-race; the
#     bad build's measured rate and the confidence are in the report;
. "$(dirname "$0")/q_lib.sh"
WB="$W/bisect"

# 1. the race
"$MOEPROBE" bisect --out "$Q_TMP/race" --good c1 --bad c6 --build c1 --build c2 --build c3 \
    --build c4 --build c5 --build c6 --probe-requests 40 --quiet --agreement 0 --accuracy 0 --seq 3 --conc 2:4 --max-tokens 16 \
    -- "$REFENGINE" --world "$WB/race-{build}.ini" --port '{port}' >/dev/null 2>"$Q_TMP/race.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/race.err"; fail "race: exit $rc"; }
check "$Q_TMP/race/report.json" 'r["first_bad"] == "c4" and r["last_good"] == "c3"' \
    'r["requests_required"] == 40 and "--probe-requests" in r["required_why"]' \
    'r["bad_failure_rate"] > 0 and r["confidence"] > 0.99' \
    'all(p["verdict"] == "async-race" for p in r["probes"] if p["outcome"] == "bad")' \
    'all(p["requests_ok"] >= 40 and p["requests_failed"] == 0 for p in r["probes"] if p["outcome"] == "good")' \
    '{f["field"]: f["first_bad"] for f in r["difference"]["fields"]}["error_class"] == "illegal-address"' ||
    fail "race: report.json"

assert_no_leftovers
echo "ok"
