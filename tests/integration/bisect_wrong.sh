#!/bin/bash
# bisect_wrong.sh - a build that serves fluent wrong output is a bad build
# (#26: a probe has qualify's output checks, agreement and task gate):
# worlds/bisect/wrong-{build}.ini, w1 w2 healthy, w3 w4 fluent but wrong.
# Every probe is compared with the good build's logprobs and task answers
# (verdict/correct.c: in a bisection the good build is the bar, not the
# best of the builds). Without the scoring pass the bisection says
# "nothing to bisect" with confidence.
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "python3 is needed to read report.json"; exit 77; }
D="$Q_TMP/wrong"
"$MOEPROBE" bisect --out "$D" --good w1 --bad w4 --build w1 --build w2 --build w3 --build w4 \
    --quiet --seq 2 --conc 2:2 --max-tokens 8 --no-diagnose --agreement 6 --accuracy 16 \
    -- "$REFENGINE" --world "$W/bisect/wrong-{build}.ini" --port '{port}' >"$Q_TMP/wrong.out" 2>"$Q_TMP/wrong.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/wrong.err"; fail "exit $rc"; }
check "$D/report.json" 'r["first_bad"] == "w3" and r["last_good"] == "w2"' \
    '{p["build"]: p["outcome"] for p in r["probes"]} == {"w4": "bad", "w1": "good", "w2": "good", "w3": "bad"}' \
    'all("wrong-output" in p["why"] for p in r["probes"] if p["outcome"] == "bad")' \
    '{c["name"]: c["verdict"] for c in r["candidates"]}["w1"] == "stable"' \
    '{c["name"]: c["verdict"] for c in r["candidates"]}["w2"] == "stable"' \
    '{c["name"]: c["verdict"] for c in r["candidates"]}["w3"] == "wrong-output"' ||
    { cat "$D/report.json"; fail "report.json"; }
# the good build is the reference the store keeps (a resume compares with it too)
[ "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select reference from score_run").fetchone()[0])' "$D/moeprobe.db")" = "w1" ] ||
    fail "the store's reference is not the good build"
echo "ok: fluent wrong output from w3 on is the first bad build"
