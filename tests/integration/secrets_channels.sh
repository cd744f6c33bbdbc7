#!/bin/bash
# secrets_channels.sh - every channel moeprobe writes goes through the one
# mask (docs/store.md "Secrets"): the run directory's files (with --gpus its
# tasks/<candidate>/task.log too), stdout, stderr and the terminal (the live
# progress line with the engine's last log line, read through a pty). The
# engine quotes planted secrets of every documented kind where moeprobe
# repeats engine words: its start-up log lines (the live line), a start-up
# error (the failure line on stderr), and request errors that echo the
# request's credentials (the failure note on stderr).
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }
H="$ROOT/tests/integration/hostile_engine.py"

# secret variables in moeprobe's environment, by name (the engine inherits them)
export HF_TOKEN=pL4ntA-hf-token-0001 MY_API_KEY=pL4ntB-api-key-0002 DB_PASS=pL4ntC-db-pass-0003
export SMTP_PWD=pL4ntD-smtp-pwd-0004 GITHUB_PAT=pL4ntE-gh-pat-00005
# the --api-key-env token, from a variable whose name says nothing
export SERVING_BEARER=pL4ntF-bearer-0006
CMDT=pL4ntG-cmd-token-0007      # --hf-token=VALUE in the server command
URLP=pL4ntH-url-pass-0008       # https://user:PASS@host in the server command
KNOB=pL4ntI-knob-pass-0009      # candidate knob --db-password VALUE
JSONV=pL4ntJ-json-val-0010      # candidate knob --kernel-config '{"auth_token": VALUE}'

# the engine, by the candidate's MODE knob: slowstart prints secrets while
# it starts (each the last line for a while: the live line shows it);
# startfail quotes them in a start-up error; reqfail answers requests with
# errors that echo them
cat >"$Q_TMP/engine.sh" <<SH
#!/bin/bash
case "\$MODE" in
slowstart)
    echo "\$HF_TOKEN \$MY_API_KEY loading"; sleep 0.8
    echo "DB_PASS=\$DB_PASS SMTP_PWD=\$SMTP_PWD"; sleep 0.8
    echo "GITHUB_PAT=\$GITHUB_PAT Authorization: Bearer \$SERVING_BEARER"; sleep 0.8
    echo "url https://user:$URLP@hub.example cmd $CMDT knob $KNOB"; sleep 0.8
    exec "$REFENGINE" "\$@" ;;
startfail)
    echo "ERROR hub refused: HF_TOKEN=\$HF_TOKEN MY_API_KEY=\$MY_API_KEY DB_PASS=\$DB_PASS" \
         "SMTP_PWD=\$SMTP_PWD GITHUB_PAT=\$GITHUB_PAT bearer \$SERVING_BEARER" \
         "https://user:$URLP@hub.example --hf-token=$CMDT knob $KNOB json $JSONV"
    exit 1 ;;
reqfail)
    exec python3 "$H" --mode echoauth "\$@" ;;
esac
SH
chmod +x "$Q_TMP/engine.sh"

CANDS=(--candidate "slow: MODE=slowstart --db-password $KNOB --kernel-config '{\"auth_token\": \"$JSONV\"}'"
    --candidate 'startfail: MODE=startfail' --candidate 'reqfail: MODE=reqfail')
CMD=("$Q_TMP/engine.sh" serve --world "$ROOT/tests/worlds/fast.ini" --port '{port}'
    "--hf-token=$CMDT" --model-url "https://user:$URLP@hub.example/m")
RUN=(qualify --no-quality --seq 2 --conc 2:2 --max-tokens 8 --grace 3 --api-key-env SERVING_BEARER "${CANDS[@]}")

# 1. the terminal: stdout and stderr a pty (live line, summary, report)
python3 "$ROOT/tests/integration/pty_run.py" "$Q_TMP/terminal.txt" \
    "$MOEPROBE" "${RUN[@]}" --out "$Q_TMP/tty" -- "${CMD[@]}" </dev/null
rc=$?
[ $rc -eq 0 ] || { tail -c 3000 "$Q_TMP/terminal.txt"; fail "terminal run: exit $rc, want 0"; }
grep -aq '\] startup [0-9]*s.* | ' "$Q_TMP/terminal.txt" ||
    fail "the live line never showed the engine's (masked) last line: the channel was not exercised"
# 2. stderr to a file: progress lines, the request failure note, the start-up failure line
"$MOEPROBE" "${RUN[@]}" --out "$Q_TMP/plain" -- "${CMD[@]}" >"$Q_TMP/plain.out" 2>"$Q_TMP/plain.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/plain.err"; fail "plain run: exit $rc, want 0"; }
grep -q 'failed: .*Authorization' "$Q_TMP/plain.err" || fail "no request failure note on stderr"
grep -q 'startfail[^:]*: the engine exited with status 1' "$Q_TMP/plain.err" || fail "no start-up failure line on stderr"
# 3. --gpus: the tasks' stderr goes to tasks/<candidate>/task.log
"$MOEPROBE" "${RUN[@]}" --gpus 0,1 --out "$Q_TMP/gpus" -- "${CMD[@]}" >"$Q_TMP/gpus.out" 2>"$Q_TMP/gpus.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/gpus.err" "$Q_TMP"/gpus/tasks/*/task.log; fail "--gpus run: exit $rc, want 0"; }
grep -q 'the engine exited with status 1' "$Q_TMP/gpus/tasks/startfail/task.log" || fail "no start-up failure line in task.log"

# the engine did print them (else the test proves nothing)
for d in tty plain; do
    grep -q 'DB_PASS=.* SMTP_PWD=' "$Q_TMP/$d/attempts/slow-1/server.log" ||
        fail "$d: the engine did not print the planted secrets"
done

pat="pL4nt[A-J]"
total=0
while IFS= read -r f; do
    n=$(grep -oaE "$pat" "$f" | wc -l)
    [ "$n" -gt 0 ] && printf '  %-50s %d\n' "${f#"$Q_TMP"/}" "$n"
    total=$((total + n))
done < <(find "$Q_TMP" -type f ! -name engine.sh | sort)
echo "planted-secret occurrences on all channels: $total"
[ "$total" -eq 0 ] || { grep -raoE ".{0,50}$pat.{0,10}" "$Q_TMP" --exclude=engine.sh | head -n 20; fail "secrets leaked"; }
# no over-masking of the shell's directory variable (PWD is not a *_PWD)
grep -q "$ROOT/tests/worlds/fast.ini" "$Q_TMP/plain/report.json" || fail "a path was masked"
assert_no_leftovers
echo ok
