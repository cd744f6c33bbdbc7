#!/bin/bash
# rundir_one_run.sh - a run directory holds one run: a second qualify (other
# candidates, another server command), diagnose, minimize or soak on a
# directory that holds a run is refused with exit 2, naming the run found
# there, and the first run is left as it was; --out FILE is a usage error;
# links planted inside a run directory are never written through.
. "$(dirname "$0")/q_lib.sh"
FAST="$ROOT/tests/worlds/fast.ini"
short=(--quiet --seq 2 --conc 2:2 --max-tokens 8 --no-quality)
soakshort=(--quiet --seq 2 --max-tokens 8) # soak refuses --conc and --no-quality
"$MOEPROBE" qualify --out "$Q_TMP/r1" "${short[@]}" --candidate 'a:' --candidate 'b: X=1' \
    -- "$REFENGINE" --world "$FAST" --port '{port}' >/dev/null 2>"$Q_TMP/r1.err"
[ $? -eq 0 ] || { cat "$Q_TMP/r1.err"; fail "first run"; }
cp "$Q_TMP/r1/report.json" "$Q_TMP/r1.json"
ncand=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["candidates"]))' "$Q_TMP/r1.json")

# expect_refused NAME COMMAND...: exit 2 and a message that names the run there
expect_refused() {
    local name=$1; shift
    "$@" >"$Q_TMP/$name.out" 2>"$Q_TMP/$name.err"
    local rc=$?
    [ $rc -eq 2 ] || { cat "$Q_TMP/$name.err"; fail "$name: exit $rc, want 2"; }
    for want in "already holds a run" "'qualify' run" "test/fast-model" "candidates: a, b" \
                "fast.ini" "started 20"; do
        grep -qF "$want" "$Q_TMP/$name.err" || { cat "$Q_TMP/$name.err"; fail "$name: message lacks '$want'"; }
    done
}
expect_refused qualify2 "$MOEPROBE" qualify --out "$Q_TMP/r1" "${short[@]}" --candidate 'z:' \
    -- "$REFENGINE" --world "$ROOT/tests/worlds/garbage.ini" --port '{port}'
expect_refused diagnose2 "$MOEPROBE" diagnose --out "$Q_TMP/r1" "${short[@]}" \
    -- "$REFENGINE" --world "$FAST" --port '{port}'
expect_refused minimize2 "$MOEPROBE" minimize --out "$Q_TMP/r1" "${short[@]}" --from '' --to 'A=1' \
    -- "$REFENGINE" --world "$FAST" --port '{port}'
expect_refused soak2 "$MOEPROBE" soak --duration 2 --out "$Q_TMP/r1" "${soakshort[@]}" \
    -- "$REFENGINE" --world "$FAST" --port '{port}'
grep -q "moeprobe report" "$Q_TMP/qualify2.err" || fail "no hint for the finished run"
# the first run is as it was: same candidates, same report, nothing printed of it
[ ! -s "$Q_TMP/qualify2.out" ] || fail "the refused run printed a report"
cmp -s "$Q_TMP/r1/report.json" "$Q_TMP/r1.json" || fail "the first run's report changed"
"$MOEPROBE" report --format json --no-write "$Q_TMP/r1" >"$Q_TMP/r1-again.json" || fail "report"
check "$Q_TMP/r1-again.json" "len(r['candidates']) == $ncand" \
    '[x["name"] for x in r["candidates"]] == ["a", "b"]' || fail "the first run's store changed"
[ "$(ls "$Q_TMP/r1/attempts" | wc -l)" -eq 2 ] || fail "the refused runs left attempts"

# a scale-out run (tasks/index.txt) is a run too; a directory with other
# things in it (even a tasks/ folder of its own) is not
mkdir -p "$Q_TMP/so/tasks" "$Q_TMP/mine/tasks"
printf 'a\n' >"$Q_TMP/so/tasks/index.txt"
printf 'notes\n' >"$Q_TMP/mine/notes.txt"
"$MOEPROBE" qualify --out "$Q_TMP/so" "${short[@]}" --candidate 'a:' -- "$REFENGINE" --world "$FAST" \
    >/dev/null 2>"$Q_TMP/so.err"
[ $? -eq 2 ] && grep -q "a scale-out run" "$Q_TMP/so.err" || { cat "$Q_TMP/so.err"; fail "scale-out run dir not refused"; }
"$MOEPROBE" qualify --out "$Q_TMP/mine" "${short[@]}" --candidate 'a:' \
    -- "$REFENGINE" --world "$FAST" --port '{port}' >/dev/null 2>"$Q_TMP/mine.err"
[ $? -eq 0 ] || { cat "$Q_TMP/mine.err"; fail "a directory holding no run was refused"; }

# --out FILE: a usage error for every command that writes a run
: >"$Q_TMP/afile"
for cmd in qualify diagnose minimize soak; do
    extra=("${short[@]}")
    [ $cmd = minimize ] && extra+=(--from '' --to 'A=1')
    [ $cmd = soak ] && extra=("${soakshort[@]}" --duration 2)
    "$MOEPROBE" $cmd --out "$Q_TMP/afile" "${extra[@]}" -- "$REFENGINE" --world "$FAST" \
        >/dev/null 2>"$Q_TMP/file-$cmd.err"
    rc=$?
    [ $rc -eq 2 ] || { cat "$Q_TMP/file-$cmd.err"; fail "$cmd --out FILE: exit $rc, want 2"; }
    grep -q "is a file, not a directory" "$Q_TMP/file-$cmd.err" || fail "$cmd --out FILE: message"
done
[ ! -s "$Q_TMP/afile" ] || fail "--out FILE was written"
"$MOEPROBE" qualify --resume "$Q_TMP/afile" >/dev/null 2>"$Q_TMP/file-resume.err"
[ $? -eq 2 ] || fail "--resume FILE: want exit 2"

# links planted inside a run directory are never written through
printf 'precious\n' >"$Q_TMP/victim"
mkdir -p "$Q_TMP/elsewhere"
planted() { # NAME SETUP...: a fresh directory with what SETUP plants, then qualify into it
    local name=$1; shift
    local d="$Q_TMP/p-$name"
    mkdir -p "$d"
    (cd "$d" && "$@")
    "$MOEPROBE" qualify --out "$d" "${short[@]}" --candidate 'a:' \
        -- "$REFENGINE" --world "$FAST" --port '{port}' >/dev/null 2>"$Q_TMP/p-$name.err"
    local rc=$?
    [ $rc -eq 2 ] || { cat "$Q_TMP/p-$name.err"; fail "planted $name: exit $rc, want 2"; }
    grep -q "symbolic link" "$Q_TMP/p-$name.err" || { cat "$Q_TMP/p-$name.err"; fail "planted $name: message"; }
    [ "$(cat "$Q_TMP/victim")" = precious ] || fail "planted $name: written through to the victim"
    [ -z "$(ls -A "$Q_TMP/elsewhere")" ] || fail "planted $name: written into the link's target"
}
planted report ln -s "$Q_TMP/victim" report.json
planted lock ln -s "$Q_TMP/victim" lock
planted db ln -s "$Q_TMP/elsewhere/x.db" moeprobe.db
planted attempts ln -s "$Q_TMP/elsewhere" attempts
planted attemptdir sh -c "mkdir attempts && ln -s '$Q_TMP/elsewhere' attempts/a-1"
planted serverlog sh -c "mkdir -p attempts/a-1 && ln -s '$Q_TMP/victim' attempts/a-1/server.log"
planted requests sh -c "mkdir -p attempts/a-1 && ln -s '$Q_TMP/victim' attempts/a-1/requests.jsonl"
assert_no_leftovers
echo "ok: refused 4 commands on a run directory in use by a run, --out FILE for 4 commands, 7 planted links"
