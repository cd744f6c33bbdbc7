#!/bin/bash
# q_cli_items.sh - #29's smaller items: `qualify --resume` of a finished run
# is refused (exit 2) and leaves its record as it was (it rewrote the finish
# time and exited 0); the reports keep the run's stall and ready timeouts
# (report.html said "stall timeout 0 s, ready timeout 0 s"); a diagnose run's
# reports are titled a diagnose report; an --out that cannot be created is an
# input error, exit 2, whether its parent is missing or not a directory (it
# was 3 for the one, 2 for the other); explain names the inherited variables
# as the reports do, and --clean-env leaves them out.
. "$(dirname "$0")/q_lib.sh"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
FAST="$ROOT/tests/worlds/fast.ini"
qualify fin "$FAST" "${Q_FAST[@]}" --no-quality --candidate 'a:' --stall-timeout 7 --ready-timeout 30
[ "$Q_RC" = 0 ] || { cat "$Q_TMP/fin.stderr"; fail "qualify: exit $Q_RC"; }
sqlite3 "$Q_DIR/moeprobe.db" .dump >"$Q_TMP/before.sql"
"$MOEPROBE" qualify --resume "$Q_DIR" >"$Q_TMP/res.out" 2>"$Q_TMP/res.err"
rc=$?
[ $rc = 2 ] || { cat "$Q_TMP/res.err"; fail "resume of a finished run: exit $rc, want 2"; }
grep -q "holds a finished qualify run .*nothing to resume.*moeprobe report" "$Q_TMP/res.err" ||
    fail "resume of a finished run: $(cat "$Q_TMP/res.err")"
sqlite3 "$Q_DIR/moeprobe.db" .dump | cmp -s - "$Q_TMP/before.sql" || fail "the refused resume changed the record"
# the timeouts, rendered again from the store alone
"$MOEPROBE" report --format html "$Q_DIR" >"$Q_TMP/again.html" 2>/dev/null || fail "report"
grep -q "stall timeout 7 s, ready timeout 30 s" "$Q_TMP/again.html" || fail "timeouts not kept: $(grep -o 'stall timeout [^.]*' "$Q_TMP/again.html")"

"$MOEPROBE" diagnose --quiet --out "$Q_TMP/dg" --seq 3 --conc 2:4 --max-tokens 8 --grace 3 --no-quality --candidate 'a:' \
    -- "$REFENGINE" --world "$FAST" --port '{port}' >/dev/null 2>&1 || fail "diagnose: exit $?"
head -1 "$Q_TMP/dg/report.md" | grep -qx "# moeprobe diagnose report" || fail "report.md: $(head -1 "$Q_TMP/dg/report.md")"
grep -q "<h1>moeprobe diagnose report</h1>" "$Q_TMP/dg/report.html" || fail "report.html title"

: >"$Q_TMP/afile"
for out in "$Q_TMP/no/such/parent/run" "$Q_TMP/afile/run"; do
    "$MOEPROBE" qualify --quiet --out "$out" --candidate 'a:' -- "$REFENGINE" --world "$FAST" \
        >/dev/null 2>"$Q_TMP/out.err"
    rc=$?
    [ $rc = 2 ] || { cat "$Q_TMP/out.err"; fail "--out $out: exit $rc, want 2"; }
    grep -q "cannot create run directory" "$Q_TMP/out.err" || fail "--out $out: $(cat "$Q_TMP/out.err")"
done
# explain says what resolve and qualify say about the inherited environment
# (#29 item 1): it names the variables taken from this shell and
# --clean-env evaluates the command without them
out=$(env -i PATH="$PATH" VLLM_TEST_FORCE_FP8_MARLIN=1 FLASHINFER_Y=2 "$MOEPROBE" explain \
    --engine-version 0.17.0 -- vllm serve M) || fail "explain: exit $?"
echo "$out" | head -1 | grep -q "MARLIN" || fail "explain did not evaluate the inherited variable: $out"
echo "$out" | grep -q "^inherited from this shell .*: VLLM_TEST_FORCE_FP8_MARLIN=1, FLASHINFER_Y=2$" ||
    fail "explain does not name the inherited variables: $out"
out=$(env -i PATH="$PATH" VLLM_TEST_FORCE_FP8_MARLIN=1 "$MOEPROBE" explain --clean-env \
    --engine-version 0.17.0 -- vllm serve M) || fail "explain --clean-env: exit $?"
! echo "$out" | grep -q "VLLM_TEST_FORCE_FP8_MARLIN" || fail "explain --clean-env used the variable: $out"
assert_no_leftovers
echo ok
