#!/bin/bash
# An engine that exits before ready with error lines no signature knows is
# still quoted: the report (report.json's why, crash message and evidence,
# report.md, a report rendered again from the store) and the stderr summary
# show its last error-looking lines with their server.log line numbers, not
# only "exited with status 2".
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }
H="$ROOT/tests/integration/hostile_engine.py"
Q_DIR="$Q_TMP/unknown"
"$MOEPROBE" qualify --out "$Q_DIR" --seq 3 --conc 2:4 --max-tokens 8 --candidate 'auto:' -- \
    python3 "$H" --mode unknownerr --port '{port}' >"$Q_TMP/unknown.stdout" 2>"$Q_TMP/unknown.stderr"
rc=$?
[ "$rc" -eq 1 ] || { cat "$Q_TMP/unknown.stderr"; fail "exit $rc, want 1"; }
log="$Q_DIR/attempts/auto-1/server.log"
l1=$(grep -n "plugin frobnicator: load failed" "$log" | cut -d: -f1)
l2=$(grep -n "reported a FATAL condition" "$log" | cut -d: -f1)
[ -n "$l1" ] && [ -n "$l2" ] || fail "server.log lacks the engine's lines"
q1="server.log:$l1: plugin frobnicator: load failed: libfoo.so.3 missing"
q2="server.log:$l2: quux subsystem reported a FATAL condition (code 7)"
check "$Q_DIR/report.json" \
  'c["auto"]["verdict"] == "startup-failure"' \
  '"exited with status 2" in c["auto"]["why"]' \
  "'$q1' in c['auto']['why'] and '$q2' in c['auto']['why']" \
  "'$q2' in c['auto']['crash']['message']" \
  "'0 plugins failed' not in c['auto']['why']" \
  "'attempts/auto-1/server.log:$l2' in c['auto']['evidence']" \
  || fail "report.json does not quote the error lines"
grep -qF "$q1" "$Q_DIR/report.md" && grep -qF "$q2" "$Q_DIR/report.md" || fail "report.md does not quote them"
grep -qF "$q2" "$Q_TMP/unknown.stderr" || { cat "$Q_TMP/unknown.stderr"; fail "stderr does not quote them"; }
"$MOEPROBE" report --no-write --format json "$Q_DIR" >"$Q_TMP/again.json" || fail "report from the store"
check "$Q_TMP/again.json" "'$q2' in c['auto']['why']" || fail "the store lost the quoted lines"
assert_no_leftovers
echo ok
