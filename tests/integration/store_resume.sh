#!/bin/bash
# store_resume.sh - the evidence store survives kill -9: kill moeprobe at a
# random point of the second candidate (after N requests), resume, and check
# that no completed request was lost or duplicated, the finished candidate
# was kept (not rerun), the interrupted attempt was redone, no engine process
# is left, a second moeprobe on a run directory in use is refused (exit 2),
# a dead run's escaped engine process is ended by the resume, and the
# reports the resumed run wrote (report.json, report.md, its --json
# output) equal what `moeprobe report` renders from the database again.
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
T=$(mktemp -d /tmp/store-resume.XXXXXX)
BG=
left=
cleanup() {
    [ -n "$BG" ] && kill -9 "$BG" 2>/dev/null && wait "$BG" 2>/dev/null
    [ -n "$left" ] && kill -9 $left 2>/dev/null # the escapee, when the resume failed to end it
    rm -rf "$T"
}
trap cleanup EXIT; [ -n "${KEEP:-}" ] && trap - EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.err; do echo "== $f"; tail -n 20 "$f"; done; exit 1; }
q() { sqlite3 -cmd '.timeout 5000' "$T/run/moeprobe.db" "$1"; }

# wait_lines FILE N: until FILE has N lines (tail -F follows it into existence)
wait_lines() {
    local fd tp rc
    exec {fd}< <(exec timeout 60 tail -n +1 -F "$1" 2>/dev/null)
    tp=$!
    head -n "$2" <&"$fd" >/dev/null
    rc=$?
    [ "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2" ] || rc=1
    kill "$tp" 2>/dev/null
    exec {fd}<&-
    wait "$tp" 2>/dev/null
    return $rc
}

# wait_grep FILE TEXT: until a line of FILE holds TEXT (bounded, 60 s)
wait_grep() {
    local fd tp rc
    exec {fd}< <(exec timeout 60 tail -n +1 -F "$1" 2>/dev/null)
    tp=$!
    grep -m1 -qF -- "$2" <&"$fd"
    rc=$?
    kill "$tp" 2>/dev/null
    exec {fd}<&-
    wait "$tp" 2>/dev/null
    return $rc
}

N=$((2 + RANDOM % 60))
echo "kill point: after $N requests of candidate b"
# fast.ini decoding 5x slower: a candidate's 231 requests take ~6 s, so the
# kill lands inside b even where tail -F polls once a second (no inotify);
# at full speed b could end, and the kill land between two attempts, before
# the watcher saw its Nth line
sed 's/^tokens_per_second = .*/tokens_per_second = 1000/' "$ROOT/tests/worlds/fast.ini" >"$T/world.ini"
"$MOEPROBE" qualify --quiet --no-quality --out "$T/run" --seq 10 --conc 4:120 --max-tokens 128 \
    --candidate 'a: ' --candidate 'b: SOME_FLAG=1' --candidate 'c: OTHER_FLAG=2' \
    -- "$REFENGINE" serve --world "$T/world.ini" --port '{port}' \
    >"$T/first.out" 2>"$T/first.err" &
BG=$!
wait_lines "$T/run/attempts/a-1/requests.jsonl" 1 || fail "candidate a never served a request"

# a second moeprobe on the same run directory is refused while the first runs
"$MOEPROBE" qualify --quiet --out "$T/run" -- "$REFENGINE" serve --port '{port}' \
    >/dev/null 2>"$T/second.err"
rc=$?
[ $rc -eq 2 ] || fail "second moeprobe on a locked run directory: exit $rc, want 2"
grep -q "in use by another moeprobe" "$T/second.err" || fail "no clear lock message"

wait_lines "$T/run/attempts/b-1/requests.jsonl" "$N" || fail "candidate b never served $N requests"
kill -9 "$BG"
wait "$BG" 2>/dev/null
BG=
before=$(q "SELECT attempt_id || ':' || seq FROM requests ORDER BY 1")
nbefore=$(echo "$before" | grep -c . || true)
[ "$nbefore" -ge 1 ] || fail "no request rows before the kill"
done_before=$(q "SELECT id FROM attempts WHERE status = 'done' ORDER BY id")
cands_done=$(q "SELECT name FROM candidates WHERE done = 1 ORDER BY pos" | tr '\n' ' ')
case "$cands_done" in "a "*) ;; *) fail "candidate a not recorded finished ($cands_done)";; esac
running=$(q "SELECT c.name FROM attempts a JOIN candidates c ON c.id = a.candidate_id WHERE status = 'running'")
marker=$(q "SELECT marker FROM attempts WHERE status = 'running'")
[ -n "$marker" ] || fail "no running attempt with a marker recorded; attempts: $(q "SELECT id || ' ' || dir || ' ' || status FROM attempts" | tr '\n' ';'); b-1 has $(wc -l <"$T/run/attempts/b-1/requests.jsonl") requests"
echo "killed while $running was running; finished: $cands_done"

"$MOEPROBE" qualify --resume "$T/run" --no-such-option >/dev/null 2>"$T/badopt.err"
[ $? -eq 2 ] || fail "an unknown option with --resume must be a usage error"

"$MOEPROBE" qualify --resume "$T/run" --json >"$T/resume.json" 2>"$T/resume.err"
rc=$?
[ $rc -eq 0 ] || fail "resume exit $rc"

# nothing the dead run completed is lost, nothing is duplicated
after=$(q "SELECT attempt_id || ':' || seq FROM requests ORDER BY 1")
missing=$(comm -23 <(echo "$before" | sort) <(echo "$after" | sort))
[ -z "$missing" ] || fail "requests lost by the resume: $missing"
dups=$(q "SELECT COUNT(*) FROM (SELECT attempt_id, seq FROM requests GROUP BY 1, 2 HAVING COUNT(*) > 1)")
[ "$dups" = 0 ] || fail "duplicate request rows"
# finished attempts kept as they were; finished candidates not rerun
for id in $done_before; do
    [ "$(q "SELECT status FROM attempts WHERE id = $id")" = done ] || fail "finished attempt $id changed"
done
for c in $cands_done; do
    [ "$(q "SELECT COUNT(*) FROM attempts a JOIN candidates c ON c.id = a.candidate_id WHERE c.name = '$c'")" = 1 ] ||
        fail "the finished candidate $c was rerun"
done
# the interrupted attempt is marked and redone under a new number
[ "$(q "SELECT status || idx FROM attempts a JOIN candidates c ON c.id = a.candidate_id WHERE c.name = '$running' ORDER BY a.id" | tr '\n' ' ')" = "interrupted1 done2 " ] ||
    fail "candidate $running: want the interrupted attempt and a redone one"
[ "$(q "SELECT COUNT(*) FROM attempts WHERE status = 'running'")" = 0 ] || fail "attempt left running"
[ "$(q "SELECT COUNT(*) FROM candidates WHERE done = 1")" = 3 ] || fail "not every candidate finished"
[ "$(q "SELECT resumes FROM run")" = 1 ] || fail "resume not counted"
# every requests.jsonl line of a finished attempt is in the database
for d in "$T"/run/attempts/*; do
    id=$(q "SELECT id FROM attempts WHERE dir = '$d' AND status = 'done'")
    [ -n "$id" ] || continue
    [ "$(wc -l <"$d/requests.jsonl")" = "$(q "SELECT COUNT(*) FROM requests WHERE attempt_id = $id")" ] ||
        fail "$d: requests.jsonl and the database disagree"
done
# no engine of the dead run is left
for p in /proc/[0-9]*; do
    { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "MOEPROBE_RUN_MARKER=$marker" &&
        fail "engine process ${p#/proc/} of the killed run is still alive"
done
# the report is rendered from the database alone
"$MOEPROBE" report --format json --no-write "$T/run" >"$T/again.json" || fail "report exit $?"
cmp -s "$T/again.json" "$T/run/report.json" || fail "moeprobe report differs from report.json"
"$MOEPROBE" report --format md --no-write "$T/run" >"$T/again.md" || fail "report md exit $?"
cmp -s "$T/again.md" "$T/run/report.md" || fail "moeprobe report differs from report.md"
cmp -s "$T/resume.json" "$T/run/report.json" || fail "--json output differs from report.json"
grep -Eq '"verdict":[[:space:]]*"stable"' "$T/run/report.json" || fail "no verdicts in the resumed report"
# A dead run's engine process that escaped its group (setsid, so neither
# PDEATHSIG nor the group kill reaches it, the run marker still in its
# environment) is found and ended by the resume before it starts anything:
# the store returns the dead run's attempts (pid, start time, marker), proc/
# ends them.
ESC="$T/esc"
"$MOEPROBE" qualify --no-quality --out "$ESC" --seq 100000 --max-tokens 64 --candidate 'a: ' \
    -- /bin/sh -c '[ -e "$0.once" ] || { : >"$0.once"; setsid sleep 600 </dev/null >/dev/null 2>&1 & }; exec "$@"' \
    "$T/escapee" "$REFENGINE" serve --world "$ROOT/tests/worlds/fast.ini" --port '{port}' \
    >/dev/null 2>"$T/esc1.err" &
BG=$!
wait_lines "$ESC/attempts/a-1/requests.jsonl" 1 || fail "the escapee run never served a request"
emarker=$(sqlite3 -cmd '.timeout 5000' "$ESC/moeprobe.db" "SELECT marker FROM attempts WHERE status = 'running'")
[ -n "$emarker" ] || fail "no running attempt with a marker in the escapee run"
marked() { # pids of live processes carrying the escapee run's marker
    for p in /proc/[0-9]*; do
        { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "MOEPROBE_RUN_MARKER=$emarker" &&
            [ "$(awk '{print $3}' "$p/stat" 2>/dev/null)" != Z ] && echo "${p#/proc/}"
    done
}
kill -9 "$BG"
wait "$BG" 2>/dev/null
BG=
left=$(marked)
[ -n "$left" ] || fail "no escaped process survived the kill -9 (the test needs one)"
"$MOEPROBE" qualify --resume "$ESC" >/dev/null 2>"$T/esc2.err" &
BG=$!
# the resume kills the leftovers first, then starts the candidate again
wait_grep "$T/esc2.err" "engine process(es) left by the interrupted run"
grep -Eq "killed [1-9][0-9]* engine process\(es\) left by the interrupted run" "$T/esc2.err" ||
    fail "the resume did not say it killed the dead run's escaped process"
kill -TERM "$BG"
wait "$BG"
rc=$?
BG=
[ $rc -eq 143 ] || fail "resume stopped with SIGTERM: exit $rc, want 143"
for p in $left; do
    [ -e "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] &&
        fail "escaped process $p of the dead run is still alive after the resume"
done
[ -z "$(marked)" ] || fail "a process of the dead run is still alive: $(marked)"

echo "ok: killed after $N requests of b; $nbefore rows kept; resume: $(grep -o 'killed [0-9]* engine' "$T/resume.err" || echo 'no engine left to kill')"
