#!/bin/bash
# secrets_args.sh - secrets given as arguments never reach a file moeprobe
# writes or its stdout/stderr: --flag VALUE and --flag=VALUE of secret flag
# names (server command and candidate knobs), JSON values of secret keys
# (--kernel-config style), NAME=VALUE words inside the command (env ...),
# URL passwords, Authorization/Bearer text the engine prints, and a known
# secret straddling the 64 KiB line cut. Short or common values of secret
# names (TOKENIZERS_PARALLELISM=false, MONKEY=INFO) are not masked.
# Prints the planted-secret count per file.
. "$(dirname "$0")/q_lib.sh"

KEY=sk-plantedA1b2C3d4e5f6      # --api-key VALUE in the server command
HFT=hf_plantedB9x8y7z6w5v4      # --hf-token=VALUE in the server command
ENVV=plantedC-env-word-7781     # MY_SECRET=VALUE word inside the command (env ...)
URLP=plantedD-url-pass-4410     # https://user:PASS@host
KNOB=plantedE-knob-flag-9912    # candidate knob --db-password VALUE
JSONV=plantedF-json-val-3307    # candidate knob --kernel-config '{"auth_token": VALUE}'
BEAR=plantedG-bearer-tok-5521   # "Authorization: Bearer VALUE" printed by the engine
AUTHV=plantedH-authz-hdr-6630   # "authorization: VALUE" printed by the engine

# the engine: prints what real engines print about credentials, a known
# secret across the 64 KiB cut, then execs refengine with the arguments
cat >"$Q_TMP/engine.sh" <<'SH'
#!/bin/bash
echo "INFO request headers: Authorization: Bearer $P1"
echo "DEBUG upstream authorization: $P2"
python3 -c 'import sys; sys.stdout.write("x" * (65536 - 12) + sys.argv[1] + " tail\n")' "$P3"
exec "$@"
SH
chmod +x "$Q_TMP/engine.sh"

out="$Q_TMP/run"
P1=$BEAR P2=$AUTHV P3=$KEY "$MOEPROBE" qualify --json --no-quality --out "$out" \
    --seq 2 --conc 2:2 --max-tokens 8 --grace 3 \
    --candidate "a: TOKENIZERS_PARALLELISM=false MONKEY=INFO --db-password $KNOB --kernel-config '{\"auth_token\": \"$JSONV\", \"moe_backend\": \"cutlass\"}'" \
    -- env "MY_SECRET=$ENVV" "$Q_TMP/engine.sh" "$REFENGINE" serve --world "$ROOT/tests/worlds/fast.ini" \
    --port '{port}' --api-key "$KEY" "--hf-token=$HFT" --model-url "https://user:$URLP@hub.example/m" \
    >"$Q_TMP/stdout" 2>"$Q_TMP/stderr"
rc=$?
[ $rc -eq 0 ] || { tail -n 30 "$Q_TMP/stderr"; fail "qualify exit $rc"; }
"$MOEPROBE" report --format json "$out" >"$Q_TMP/report-stdout" 2>>"$Q_TMP/stderr" || fail "report failed"

# the engine did print them (else the test proves nothing)
log="$out/attempts/a-1/server.log"
[ -f "$log" ] || fail "no server.log"
grep -q "'api_key'" "$log" || fail "the engine did not echo its api_key"

pat="planted[A-H]"
total=0
while IFS= read -r f; do
    n=$(grep -oaE "$pat" "$f" | wc -l)
    printf '  %-40s %d\n' "${f#"$Q_TMP"/}" "$n"
    total=$((total + n))
done < <(find "$out" "$Q_TMP/stdout" "$Q_TMP/stderr" "$Q_TMP/report-stdout" -type f | sort)
echo "planted-secret occurrences in all files: $total"
[ "$total" -eq 0 ] || { grep -raoE ".{0,40}$pat.{0,20}" "$out" "$Q_TMP"/stdout "$Q_TMP"/stderr | head -n 20; fail "secrets leaked"; }
# no part of the key straddling the cut was written
grep -aq "plantedA" "$log" && fail "part of the key at the line cut was written"
# masked, not dropped: the command still shows where the secrets were
cmd=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["candidates"][0]["attempts"][0]["command"])' "$out/report.json") ||
    fail "no command in report.json"
for want in '--api-key ***' '--hf-token=***' 'MY_SECRET=***' 'user:***@hub.example' '"auth_token": "***"'; do
    case "$cmd" in *"$want"*) ;; *) fail "the stored command does not show $want: $cmd" ;; esac
done
grep -q 'Bearer \*\*\*' "$log" || fail "server.log does not show Bearer ***"
# no over-masking: short or common values of secret names stay
grep -q 'TOKENIZERS_PARALLELISM=false' "$out/report.md" || fail "TOKENIZERS_PARALLELISM=false was masked"
grep -q 'MONKEY=INFO' "$out/report.md" || fail "MONKEY=INFO was masked"
[ "$(grep -c ' INFO ' "$log")" -gt 3 ] || fail "INFO was masked in server.log"
grep -q "moe_backend" "$out/report.md" || fail "the kernel-config was masked whole"
# a resume cannot restore a masked argument: it says so (exit 2), never runs with ***
"$MOEPROBE" qualify --resume "$out" >"$Q_TMP/resume.out" 2>"$Q_TMP/resume.err"
rc=$?
[ $rc -eq 2 ] || { cat "$Q_TMP/resume.err"; fail "resume with a masked argument: exit $rc, want 2"; }
grep -q "stored masked" "$Q_TMP/resume.err" || fail "resume: no message about the masked secret"

# minimize: knob texts of both kinds (a secret flag knob and a secret
# NAME=VALUE knob) in minimize.json, its "not needed" lines on stdout and
# its progress on stderr; --json and plain output both
MFL=plantedI-minflag-2291       # --to knob --hf-token VALUE
MEN=plantedJ-minenv-8823        # --to knob MY_API_KEY=VALUE
for mode in plain json; do
    mj=(); [ "$mode" = json ] && mj=(--json)
    "$MOEPROBE" minimize "${mj[@]}" --no-quality --out "$Q_TMP/min-$mode" --seq 2 --conc 2:2 --max-tokens 8 --grace 3 \
        --from '' --to "VLLM_SCALED_MM_BACKEND=marlin --hf-token $MFL MY_API_KEY=$MEN" \
        -- "$REFENGINE" --world "$W/q-fork.ini" --port '{port}' >"$Q_TMP/min-$mode.out" 2>"$Q_TMP/min-$mode.err"
    rc=$?
    [ $rc -eq 0 ] || { tail -n 20 "$Q_TMP/min-$mode.err"; fail "minimize ($mode) exit $rc"; }
    # it did print the knobs (else the test proves nothing)
    grep -q 'hf-token \*\*\*' "$Q_TMP/min-$mode.out" "$Q_TMP/min-$mode/minimize.json" ||
        fail "minimize ($mode) shows no masked --hf-token knob"
    n=$(grep -raoE 'planted[IJ]' "$Q_TMP/min-$mode" "$Q_TMP/min-$mode.out" "$Q_TMP/min-$mode.err" | wc -l)
    echo "minimize ($mode): planted-secret occurrences $n"
    [ "$n" -eq 0 ] || { grep -raoE ".{0,40}planted[IJ].{0,10}" "$Q_TMP/min-$mode"* | head; fail "minimize ($mode) leaked a secret"; }
done
assert_no_leftovers
echo ok
