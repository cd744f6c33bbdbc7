#!/bin/bash
# qualify --model-dir: what `moeprobe inspect` finds in the checkpoint joins
# the fingerprint, survives the evidence store (report re-rendered from it),
# and a bad folder is an input error.
. "$(dirname "$0")/q_lib.sh"
CK="$ROOT/tests/data/checkpoints/swiglu-clamp"
qualify md "$ROOT/tests/worlds/fast.ini" "${Q_FAST[@]}" --model-dir "$CK" --candidate 'a:'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/md.stderr"; fail "exit $Q_RC"; }
check "$Q_DIR/report.json" \
  'r["fingerprint"]["checkpoint"]["moe"]["swiglu_limit"] is not None' \
  'any("swiglu" in n.lower() or "clamp" in n.lower() for n in r["fingerprint"]["checkpoint"]["notes"])' \
  || fail "checkpoint in the fingerprint"
grep -q "What the checkpoint decides" "$Q_DIR/report.md" || fail "checkpoint notes in report.md"
"$MOEPROBE" report --format json --no-write "$Q_DIR" >"$Q_TMP/again.json" || fail "report from the store"
check "$Q_TMP/again.json" 'r["fingerprint"]["checkpoint"] is not None' || fail "checkpoint lost in the store"
"$MOEPROBE" report --format md --no-write "$Q_DIR" | grep -q "What the checkpoint decides" || fail "notes lost in the store"
"$MOEPROBE" qualify --quiet --out "$Q_TMP/bad" --model-dir /nonexistent --candidate 'a:' -- true 2>"$Q_TMP/bad.err"
rc=$?
[ $rc -eq 2 ] || fail "bad --model-dir: exit $rc, want 2"
grep -q "model-dir" "$Q_TMP/bad.err" || fail "bad --model-dir message"
assert_no_leftovers
echo ok
