#!/bin/bash
# A signal during teardown is never lost, and a second one means "now"
# (#30 item 6). The engine's EngineCore child ignores SIGTERM, so a teardown
# would wait out the whole --grace (60 s here) before its KILL.
#  A. Ctrl-C during the load: the attempt is interrupted and torn down; a
#     second Ctrl-C during the grace KILLs the group at once.
#  B. Ctrl-C during the teardown of an attempt that ended normally: recorded
#     (the run is interrupted, the candidate unfinished, never "finished"),
#     and a second one KILLs at once.
# Both: exit 130, the report says interrupted, the attempt's teardown needed
# KILL and took far less than the grace, nothing is left behind.
. "$(dirname "$0")/q_lib.sh"
W="$ROOT/tests/worlds/term_ignored.ini"

# wait (bounded) until FILE has a line matching RE
wait_line() {
    local file=$1 re=$2
    for _ in $(seq 600); do
        grep -q "$re" "$file" 2>/dev/null && return 0
        timeout 0.2 tail -n0 -F "$file" 2>/dev/null | head -n1 >/dev/null
    done
    return 1
}

run_case() { # NAME SEQ FILE RE: start moeprobe; the first signal when FILE has RE, the second once
             # the teardown began and moeprobe has taken the first in (two SIGINTs still pending
             # at once would be one: the kernel does not queue a standard signal twice)
    local name=$1 seq=$2 first_at=$3
    out="$Q_TMP/$name"
    "$MOEPROBE" qualify --out "$out" --seq "$seq" --conc 2:2 --max-tokens 8 --grace 60 \
        --no-diagnose --candidate 'a:' -- "$REFENGINE" --world "$W" --port '{port}' \
        >/dev/null 2>"$Q_TMP/$name.err" &
    mp=$!
    wait_line "$out/attempts/a-1/$first_at" "$4" || { kill -9 $mp; fail "$name: never saw '$4'"; }
    kill -INT "$mp"
    wait_line "$out/attempts/a-1/server.log" 'Application shutdown complete' ||
        { kill -9 $mp; fail "$name: the teardown did not begin"; }
    wait_line "$Q_TMP/$name.err" "$5" || { kill -9 $mp; fail "$name: the first signal was not seen"; }
    kill -INT "$mp"
    wait "$mp"
    rc=$?
    [ $rc -eq 130 ] || { cat "$Q_TMP/$name.err"; fail "$name: exit $rc, want 130"; }
    check "$out/report.json" 'r.get("interrupted") is True' 'c["a"]["verdict"] is None' \
        'c["a"]["finished"] is False' \
        'c["a"]["attempts"][0]["teardown"]["killed"] is True' \
        'c["a"]["attempts"][0]["teardown_s"] < 30' \
        'c["a"]["attempts"][0]["teardown"]["leftovers"] == 0' || fail "$name: report"
    grep -q 'second signal: killing the engine now' "$Q_TMP/$name.err" ||
        { cat "$Q_TMP/$name.err"; fail "$name: no word of the second signal"; }
    assert_no_leftovers
}

# A: the first Ctrl-C once a sequential request is recorded
run_case during-load 100000 requests.jsonl '"phase":"sequential"' 'started: pid'
check "$out/report.json" 'c["a"]["attempts"][0]["outcome"] == "interrupted"' || fail "A: outcome"
# B: a short workload ends; the first Ctrl-C once its teardown began
run_case during-teardown 2 server.log 'Application shutdown complete' 'interrupted (signal 2): stopping after this teardown'
check "$out/report.json" 'c["a"]["attempts"][0]["outcome"] == "clean"' || fail "B: outcome"
echo ok
