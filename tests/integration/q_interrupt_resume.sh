#!/bin/bash
# q_interrupt_resume.sh - an interrupted run says so, and resumes from any
# working directory:
# - SIGTERM and kill -9 while the second of three candidates runs (SIGINT:
#   q_signal.sh): report.md
#   and report.html open with a banner (interrupted / did not finish, the
#   unfinished candidates, the exact resume command); report.json has
#   "finished" per candidate, the unfinished ones without a verdict and not
#   counted in "no candidate qualified";
# - the run used relative paths (./refengine --world worlds/w.ini); it is
#   resumed from another directory (the engine starts where the run did);
# - --resume DIR -- ANOTHER COMMAND is refused (exit 2); the run's own
#   command after '--' is accepted.
. "$(dirname "$0")/q_lib.sh"
A="$Q_TMP/A" B="$Q_TMP/B"
mkdir -p "$A/worlds" "$B"
cp "$REFENGINE" "$A/refengine"
# start-up takes 3 s: a signal sent once the second candidate's
# engine has written its first line lands well before that candidate ends
sed 's/^load_seconds = 0/load_seconds = 3/' "$ROOT/tests/worlds/fast.ini" >"$A/worlds/w.ini"
grep -q '^load_seconds = 3' "$A/worlds/w.ini" || fail "world: no load_seconds to set"
CMD=(./refengine --world worlds/w.ini --port '{port}')
opts=(--quiet --seq 2 --conc 2:2 --max-tokens 8 --no-quality --no-diagnose
      --candidate 'a:' --candidate 'b: X=1' --candidate 'c: Y=2')

# wait_file FILE: until FILE has a line (bounded; each round blocks on the
# file changing through tail -F rather than spinning, as q_signal.sh does)
wait_file() {
    local _
    for _ in $(seq 600); do
        [ -s "$1" ] && return 0
        timeout 0.1 tail -n0 -F "$1" 2>/dev/null | head -n1 >/dev/null
    done
    return 1
}

# interrupted RUN SIGNAL: a run in $A, stopped by SIGNAL while b starts
interrupted() {
    (cd "$A" && exec "$MOEPROBE" qualify --out "$1" "${opts[@]}" -- "${CMD[@]}" \
        >"$Q_TMP/$1.out" 2>"$Q_TMP/$1.err") &
    local mp=$!
    wait_file "$A/$1/attempts/b-1/server.log" || { kill -9 $mp; fail "$1: b never started"; }
    kill -"$2" $mp
    { wait $mp; } 2>/dev/null
    RC=$?
}

banner_checks() { # RUN HOW: the banner in report.md and report.html, the JSON facts
    local dir="$A/$1" how=$2 cmd="moeprobe qualify --resume $A/$1"
    head -n 4 "$dir/report.md" | grep -qF "**$how**" || { head "$dir/report.md"; fail "$1: no banner in report.md"; }
    head -n 4 "$dir/report.md" | grep -qF "2 of 3 candidates are unfinished: b, c" || { head -n 6 "$dir/report.md"; fail "$1: unfinished candidates in report.md"; }
    grep -qF "\`$cmd\`" "$dir/report.md" || fail "$1: no resume command in report.md"
    grep -q "<div class=banner role=alert><b>$how</b>.*<b>b</b>, <b>c</b>.*<code>$cmd</code>" "$dir/report.html" ||
        fail "$1: no banner in report.html"
    grep -q "No finished candidate qualified\|^\*\*a\*\*" "$dir/report.md" || fail "$1: recommendation text"
    check "$dir/report.json" 'r["incomplete"] is True' \
        'r["unfinished_candidates"] == ["b", "c"]' \
        "r['resume_command'] == '$cmd'" \
        'c["a"]["finished"] is True and c["a"]["verdict"] == "stable"' \
        'c["b"]["finished"] is False and c["b"]["verdict"] is None' \
        'c["c"]["finished"] is False and c["c"]["verdict"] is None' \
        'not any(x in " ".join(r["learned"]) for x in ("crashed", "no candidate ran"))' \
        'r["recommendation"] is None or r["recommendation"]["candidate"] == "a"' \
        || fail "$1: report.json"
}

# 1. SIGTERM
interrupted run1 TERM
[ $RC -eq 143 ] || { cat "$Q_TMP/run1.err"; fail "SIGTERM: exit $RC, want 143"; }
check "$A/run1/report.json" 'r.get("interrupted") is True' || fail "run1 not marked interrupted"
banner_checks run1 "This run was interrupted"
assert_no_leftovers

# 2. another command after '--' is refused; the run is untouched
(cd "$B" && "$MOEPROBE" qualify --resume ../A/run1 -- ./refengine --world other.ini) \
    >/dev/null 2>"$Q_TMP/other.err"
rc=$?
[ $rc -eq 2 ] || { cat "$Q_TMP/other.err"; fail "--resume with another command: exit $rc, want 2"; }
grep -q "the command after '--' is another one" "$Q_TMP/other.err" || fail "no message for another command"
[ -z "$(ls "$A/run1/attempts" | grep -v '^[ab]-1$')" ] || fail "the refused resume ran attempts"

# 3. resumed from another directory, with the run's own command given again
(cd "$B" && "$MOEPROBE" qualify --resume ../A/run1 --json -- "${CMD[@]}") \
    >"$Q_TMP/resume1.json" 2>"$Q_TMP/resume1.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/resume1.err"; fail "resume from another directory: exit $rc"; }
check "$Q_TMP/resume1.json" 'all(x["finished"] and x["verdict"] == "stable" for x in r["candidates"])' \
    '"incomplete" not in r and "interrupted" not in r' \
    'all(a["dir"].startswith("attempts/") for x in r["candidates"] for a in x["attempts"])' \
    'all(e.startswith("attempts/") for x in r["candidates"] for e in x["evidence"])' \
    || fail "resumed run1"
# evidence paths are relative to the run directory, whatever it was called by
python3 - "$A/run1" "$Q_TMP/resume1.json" <<'PY' || fail "evidence of the resumed run1"
import json, os, sys
r = json.load(open(sys.argv[2]))
for x in r["candidates"]:
    for e in x["evidence"]:
        path, line = e.rsplit(":", 1)
        with open(os.path.join(sys.argv[1], path), errors="replace") as f:
            assert len(f.readlines()) >= int(line), e
PY
! grep -q "did not finish\|was interrupted" "$A/run1/report.md" || fail "banner after a finished resume"
assert_no_leftovers

# 4. kill -9: the report rendered afterwards says the run did not finish
interrupted run2 KILL
[ $RC -eq 137 ] || fail "kill -9: exit $RC"
"$MOEPROBE" report "$A/run2" >/dev/null 2>"$Q_TMP/report2.err" || { cat "$Q_TMP/report2.err"; fail "report of a killed run"; }
banner_checks run2 "This run did not finish"
# side by side with the finished run1: b and c of run2 are unfinished, not "not run"
"$MOEPROBE" report --compare --format json "$A/run1" "$A/run2" >"$Q_TMP/cmp.json" || fail "compare"
check "$Q_TMP/cmp.json" '[x["candidates"]["b"]["verdict"] for x in r["runs"]] == ["stable", "unfinished"]' \
    || fail "compare of a killed run"
"$MOEPROBE" report --compare "$A/run1" "$A/run2" | grep -q '^| \*\*c\*\* | stable.* | unfinished |' ||
    fail "compare (md) of a killed run"
# resumed from another directory by its absolute path, nothing given again
(cd "$B" && "$MOEPROBE" qualify --resume "$A/run2") >/dev/null 2>"$Q_TMP/resume2.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/resume2.err"; fail "resume of the killed run: exit $rc"; }
check "$A/run2/report.json" 'all(x["finished"] and x["verdict"] == "stable" for x in r["candidates"])' ||
    fail "resumed run2"
assert_no_leftovers
echo ok
