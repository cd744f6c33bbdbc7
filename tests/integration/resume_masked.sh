#!/bin/bash
# resume_masked.sh - --resume restores exactly what docs/store.md promises:
# a stored environment assignment NAME=*** (a word of its own, or a knob
# NAME=VALUE of a candidate) from the variable NAME; any other masked
# argument (--hf-token=***, --db-password ***) is never filled in from some
# variable - not even one called "token" - : the resume is refused (exit 2)
# until the command is given again after '--' (a candidate's masked flag
# knob cannot be given again: its run must start anew).
. "$(dirname "$0")/q_lib.sh"
S_CMD=pL4ntK-cmd-hf-token-01    # --hf-token=VALUE in the server command
S_ENV=pL4ntL-env-word-000002    # env HF_TOKEN=VALUE word in the server command
S_KNOB=pL4ntM-knob-env-00003    # candidate knob MY_TOKEN=VALUE
S_FLAG=pL4ntN-knob-flag-0004    # candidate knob --db-password VALUE
mkdir -p "$Q_TMP/w"
sed 's/^load_seconds = 0/load_seconds = 1/' "$ROOT/tests/worlds/fast.ini" >"$Q_TMP/w/w.ini"
# the engine records what it was started with: its arguments and the secrets in its environment
cat >"$Q_TMP/engine.sh" <<SH
#!/bin/bash
echo "args: \$* env: HF_TOKEN=\${HF_TOKEN-} MY_TOKEN=\${MY_TOKEN-}" >>"$Q_TMP/engine.log"
exec "$REFENGINE" "\$@"
SH
chmod +x "$Q_TMP/engine.sh"
CMD=(env "HF_TOKEN=$S_ENV" "$Q_TMP/engine.sh" --world "$Q_TMP/w/w.ini" --port '{port}' "--hf-token=$S_CMD")

wait_file() {
    local _
    for _ in $(seq 600); do
        [ -s "$1" ] && return 0
        timeout 0.1 tail -n0 -F "$1" 2>/dev/null | head -n1 >/dev/null
    done
    return 1
}
# RUN CANDIDATE-B-KNOBS: a run of a and b, stopped by SIGTERM as b starts
interrupted() {
    "$MOEPROBE" qualify --out "$Q_TMP/$1" --quiet --seq 2 --conc 2:2 --max-tokens 8 --no-quality \
        --no-diagnose --candidate 'a:' --candidate "b: $2" -- "${CMD[@]}" >/dev/null 2>"$Q_TMP/$1.err" &
    local mp=$!
    wait_file "$Q_TMP/$1/attempts/b-1/server.log" || { kill -9 $mp; fail "$1: b never started"; }
    kill -TERM $mp
    wait $mp
    [ $? -eq 143 ] || { cat "$Q_TMP/$1.err"; fail "$1: not interrupted"; }
}
starts() { wc -l <"$Q_TMP/engine.log"; }

# 1. a masked flag of the server command is not read from a variable "token"
interrupted run1 "MY_TOKEN=$S_KNOB"
n0=$(starts)
token=abc-not-the-token HF_TOKEN=$S_ENV MY_TOKEN=$S_KNOB \
    "$MOEPROBE" qualify --resume "$Q_TMP/run1" >/dev/null 2>"$Q_TMP/r1.err"
rc=$?
[ $rc -eq 2 ] || { cat "$Q_TMP/r1.err"; fail "resume with a masked --hf-token=***: exit $rc, want 2"; }
grep -q -- "--hf-token=\*\*\*.*give the same command again after '--'" "$Q_TMP/r1.err" ||
    { cat "$Q_TMP/r1.err"; fail "no message naming the masked argument"; }
[ "$(starts)" -eq "$n0" ] || { tail -n 1 "$Q_TMP/engine.log"; fail "an engine was started by the refused resume"; }
grep -q "abc-not-the-token" "$Q_TMP/engine.log" && fail "a variable named 'token' filled in --hf-token"

# 2. given again after '--', the resume runs b with the real values: the
# command's, and the variables' for NAME=*** (the env word, b's knob)
HF_TOKEN=$S_ENV MY_TOKEN=$S_KNOB "$MOEPROBE" qualify --resume "$Q_TMP/run1" -- "${CMD[@]}" \
    >/dev/null 2>"$Q_TMP/r2.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/r2.err"; fail "resume with the command given again: exit $rc, want 0"; }
tail -n 1 "$Q_TMP/engine.log" | grep -qF -- "--hf-token=$S_CMD env: HF_TOKEN=$S_ENV MY_TOKEN=$S_KNOB" ||
    { tail -n 1 "$Q_TMP/engine.log"; fail "the resumed engine did not get the real secrets"; }
grep -q '\*\*\*' "$Q_TMP/engine.log" && { cat "$Q_TMP/engine.log"; fail "an engine was started with ***"; }
check "$Q_TMP/run1/report.json" 'c["b"]["verdict"] == "stable"' || fail "resumed report"

# 3. a knob's variable that is not set: refused, naming it
interrupted run2 "MY_TOKEN=$S_KNOB"
n0=$(starts)
env -u MY_TOKEN HF_TOKEN=$S_ENV "$MOEPROBE" qualify --resume "$Q_TMP/run2" -- "${CMD[@]}" >/dev/null 2>"$Q_TMP/r3.err"
rc=$?
[ $rc -eq 2 ] || { cat "$Q_TMP/r3.err"; fail "resume without MY_TOKEN set: exit $rc, want 2"; }
grep -q "MY_TOKEN" "$Q_TMP/r3.err" || { cat "$Q_TMP/r3.err"; fail "no message naming MY_TOKEN"; }
[ "$(starts)" -eq "$n0" ] || fail "an engine was started without MY_TOKEN"

# 4. a candidate's masked flag knob: refused, never run with ***
interrupted run3 "--db-password $S_FLAG"
n0=$(starts)
HF_TOKEN=$S_ENV "$MOEPROBE" qualify --resume "$Q_TMP/run3" -- "${CMD[@]}" >/dev/null 2>"$Q_TMP/r4.err"
rc=$?
[ $rc -eq 2 ] || { cat "$Q_TMP/r4.err"; tail -n 1 "$Q_TMP/engine.log"; fail "resume with a masked knob flag: exit $rc, want 2"; }
grep -q -- "--db-password \*\*\*" "$Q_TMP/r4.err" || { cat "$Q_TMP/r4.err"; fail "no message naming the masked knob"; }
[ "$(starts)" -eq "$n0" ] || { tail -n 1 "$Q_TMP/engine.log"; fail "an engine was started with a masked knob"; }
n=$(grep -c "pL4nt" "$Q_TMP"/run*/attempts/*/server.log "$Q_TMP"/*.err | awk -F: '{s+=$2} END {print s}')
[ "$n" -eq 0 ] || fail "a planted secret reached a file"
assert_no_leftovers
echo ok
