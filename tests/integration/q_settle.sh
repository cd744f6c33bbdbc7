#!/bin/bash
# tier: quick
# The settle wait after a failure ends on evidence, not on its 10 s bound
# (#27): a server that answers 500 and stays up is done as soon as /health
# says 200 with nothing in flight; an engine that crashes is done once its
# log says it died or it exited. The attempt's state line says how long the
# wait took and what ended it ("settled in X s: ...").
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }
SLOW=(--quiet --seq 3 --conc 2:4 --max-tokens 8 --grace 3 --agreement 0 --accuracy 0)
LOUD=("${SLOW[@]:1}") # without --quiet: the state lines

settled() { # NAME: the settle line of its stderr
    grep -E '\] settled in [0-9.]+ s: ' "$Q_TMP/$1.stderr" || { cat "$Q_TMP/$1.stderr"; fail "$1: no settle line"; }
}

# a live server that answers wrongly: it stayed up
Q_DIR="$Q_TMP/up"
"$MOEPROBE" qualify --out "$Q_DIR" "${LOUD[@]}" --candidate 'auto:' -- \
    python3 "$ROOT/tests/integration/hostile_engine.py" --mode http500 --port '{port}' \
    >"$Q_TMP/up.stdout" 2>"$Q_TMP/up.stderr"
[ $? -eq 1 ] || { cat "$Q_TMP/up.stderr"; fail "http500: exit code"; }
line=$(settled up)
case $line in *"it stayed up"*) ;; *) fail "http500: settled by '$line', want: it stayed up" ;; esac

# an engine that crashes (async race, diagnosis off): its death is the evidence
qualify crash "$W/q-verdicts.ini" "${LOUD[@]}" --only auto --no-diagnose
[ "$Q_RC" -le 1 ] || { cat "$Q_TMP/crash.stderr"; fail "crash: exit $Q_RC"; }
check "$Q_DIR/report.json" '[a["outcome"] for a in c["auto"]["attempts"]] == ["crashed"]' \
    || fail "crash: outcome"
line=$(settled crash)
case $line in
*"the engine exited"* | *"its log says the engine died"*) ;;
*) fail "crash: settled by '$line', want the engine's death" ;;
esac
assert_no_leftovers
echo "ok: the settle wait ends on the engine's account (stayed up, died), not on its bound"
