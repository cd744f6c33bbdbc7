#!/bin/bash
# --objective: what "fastest" means for the recommendation. In
# worlds/objective.ini marlin is the fastest single stream and cutlass the
# fastest under concurrency, so the default (sequential) recommends marlin
# and --objective throughput recommends cutlass; the run's objective is
# recorded with the run (however it was spelled), so `moeprobe report` renders the same
# recommendation again, and `report --objective` ranks by another one.
. "$(dirname "$0")/q_lib.sh"
WO="$W/objective.ini"
CANDS=(--candidate 'marlin: --moe-backend marlin' --candidate 'cutlass: --moe-backend cutlass')
# no scoring pass: the ranking is what is tested (and MARLIN's contention 30 makes its task
# gate at concurrency 4 slow)
FAST=(--quiet --seq 3 --conc 4:8 --max-tokens 16 --grace 3 --agreement 0 --accuracy 0)

# the default: sequential tok/s, named as the objective like any other (#16);
# without --quiet, so the terminal summary on stderr can be read
qualify seq "$WO" "${FAST[@]:1}" "${CANDS[@]}"
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/seq.stderr"; fail "default: exit $Q_RC, want 0"; }
SEQ=$Q_DIR
check "$SEQ/report.json" \
    'c["marlin"]["verdict"] == c["cutlass"]["verdict"] == "stable"' \
    'c["marlin"]["throughput"]["sequential_tok_s"] > 3 * c["cutlass"]["throughput"]["sequential_tok_s"]' \
    'c["cutlass"]["throughput"]["concurrency"][0]["tok_s"] > 3 * c["marlin"]["throughput"]["concurrency"][0]["tok_s"]' \
    'r["recommendation"]["candidate"] == "marlin"' \
    'r["recommendation"]["objective"] == "sequential"' \
    'r["recommendation"]["why"].startswith("fastest of 2 stable candidates by sequential tok/s (--objective sequential): ")' \
    || fail "default objective"
grep -q 'fastest of 2 stable candidates by sequential tok/s (--objective sequential): [0-9.]* tok/s sequential' \
    "$SEQ/report.md" || fail "report.md: the default sentence names no objective"
grep -q 'fastest of 2 stable candidates by sequential tok/s (--objective sequential): [0-9.]* tok/s sequential' \
    "$SEQ/report.html" || fail "report.html: the default sentence names no objective"
grep -q '^recommendation: marlin (--moe-backend marlin), by sequential tok/s (--objective sequential)$' \
    "$Q_TMP/seq.stderr" || { cat "$Q_TMP/seq.stderr"; fail "terminal summary: no objective"; }

# the same run ranked by another objective, without rewriting it
"$MOEPROBE" report --no-write --format json --objective throughput "$SEQ" >"$Q_TMP/thr.json" \
    || fail "report --objective throughput: exit $?"
check "$Q_TMP/thr.json" \
    'r["recommendation"]["candidate"] == "cutlass"' \
    'r["recommendation"]["objective"] == "throughput"' \
    'r["recommendation"]["why"].startswith("fastest of 2 stable candidates by best concurrency tok/s (--objective throughput): ")' \
    || fail "report --objective throughput"
"$MOEPROBE" report --no-write --format json "$SEQ" >"$Q_TMP/seq-again.json" || fail "report: exit $?"
check "$Q_TMP/seq-again.json" 'r["recommendation"]["candidate"] == "marlin"' \
    'r["recommendation"]["objective"] == "sequential"' || fail "report keeps the default"

# a run started with --objective throughput
qualify thr "$WO" "${FAST[@]}" --objective throughput "${CANDS[@]}"
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/thr.stderr"; fail "throughput: exit $Q_RC, want 0"; }
THR=$Q_DIR
check "$THR/report.json" 'r["recommendation"]["candidate"] == "cutlass"' \
    'r["recommendation"]["objective"] == "throughput"' || fail "qualify --objective throughput"
grep -q '^\*\*cutlass\*\* (`--moe-backend cutlass`): fastest of 2 stable candidates by best concurrency tok/s (--objective throughput): [0-9.]* tok/s best concurrency, [0-9.]* tok/s sequential' \
    "$THR/report.md" || { grep -A2 Recommendation "$THR/report.md"; fail "report.md: the sentence names the objective"; }
# rendered again from the store alone: the run's objective, byte for byte
cp "$THR/report.md" "$Q_TMP/thr-first.md"
cp "$THR/report.json" "$Q_TMP/thr-first.json"
"$MOEPROBE" report "$THR" >/dev/null || fail "report re-render: exit $?"
cmp "$Q_TMP/thr-first.md" "$THR/report.md" || fail "re-rendered report.md differs"
cmp "$Q_TMP/thr-first.json" "$THR/report.json" || fail "re-rendered report.json differs"
# an override back to sequential
"$MOEPROBE" report --no-write --format json --objective sequential "$THR" >"$Q_TMP/thr-seq.json" || fail "override"
check "$Q_TMP/thr-seq.json" 'r["recommendation"]["candidate"] == "marlin"' || fail "override to sequential"

# options as getopt takes them (abbreviated, --x=y): the report honours what
# the run parsed - recorded with the run, not re-read from its arguments
qualify abbr "$WO" "${FAST[@]}" --obj throughput --perc=50,95 "${CANDS[@]}"
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/abbr.stderr"; fail "abbreviated: exit $Q_RC, want 0"; }
check "$Q_DIR/report.json" 'r["recommendation"]["candidate"] == "cutlass"' \
    'r["recommendation"]["objective"] == "throughput"' 'r["percentiles"] == [50, 95]' \
    || fail "--obj throughput --perc=50,95 not honoured"
cp "$Q_DIR/report.md" "$Q_TMP/abbr-first.md"
"$MOEPROBE" report "$Q_DIR" >/dev/null || fail "report re-render (abbreviated): exit $?"
cmp "$Q_TMP/abbr-first.md" "$Q_DIR/report.md" || fail "re-rendered report.md differs (abbreviated)"

# an unknown objective is a usage error, before anything runs
"$MOEPROBE" qualify --out "$Q_TMP/bad" --objective fastest -- "$REFENGINE" --world "$WO" \
    >/dev/null 2>"$Q_TMP/bad.err"
rc=$?
[ "$rc" -eq 2 ] || fail "bad objective: exit $rc, want 2"
grep -q "'fastest' is not sequential, throughput, ttft or tpot" "$Q_TMP/bad.err" || fail "bad objective: message"
[ ! -e "$Q_TMP/bad" ] || fail "bad objective: a run directory was created"
"$MOEPROBE" report --objective fastest "$THR" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "report --objective fastest: exit $rc, want 2"
assert_no_leftovers
echo "q_objective: ok"
