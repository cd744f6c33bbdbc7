#!/bin/bash
# Ctrl-C during a run: moeprobe tears the engine down, writes what it has
# (report marked interrupted), and exits 128+SIGINT; nothing is left behind.
# Also: --api chat drives /v1/chat/completions; --json prints report.json.
. "$(dirname "$0")/q_lib.sh"
out="$Q_TMP/sig"
"$MOEPROBE" qualify --quiet --out "$out" --seq 100000 --max-tokens 64 --candidate 'slow:' \
    -- "$REFENGINE" --world "$ROOT/tests/worlds/fast.ini" --port '{port}' \
    >/dev/null 2>"$Q_TMP/sig.err" &
mp=$!
# wait (bounded) until the first sequential request has been recorded
ok=0
for _ in $(seq 600); do
    n=$(grep -c '"phase":"sequential"' "$out/attempts/slow-1/requests.jsonl" 2>/dev/null)
    if [ "${n:-0}" -ge 1 ]; then ok=1; break; fi
    # block on the file changing rather than spinning: inotify via tail, bounded
    timeout 0.2 tail -n0 -F "$out/attempts/slow-1/requests.jsonl" 2>/dev/null | head -n1 >/dev/null
done
[ $ok -eq 1 ] || fail "no request recorded"
kill -INT "$mp"
wait "$mp"
rc=$?
[ $rc -eq 130 ] || { cat "$Q_TMP/sig.err"; fail "exit $rc after SIGINT, want 130"; }
check "$out/report.json" 'r.get("interrupted") is True' 'c["slow"]["verdict"] is None' \
  'all(a["outcome"] == "interrupted" for a in c["slow"]["attempts"])' \
  'c["slow"]["finished"] is False and r["unfinished_candidates"] == ["slow"]' \
  'r["resume_command"].startswith("moeprobe qualify --resume /")' || fail "interrupted report"
# the reports open with the banner: interrupted, what is unfinished, how to continue
sed -n 3p "$out/report.md" | grep -q '^> \*\*This run was interrupted\*\*.*unfinished: slow' ||
    fail "no interrupted banner in report.md"
grep -q 'Continue it with `moeprobe qualify --resume /' "$out/report.md" || fail "no resume command in report.md"
grep -q '<div class=banner role=alert><b>This run was interrupted</b>' "$out/report.html" ||
    fail "no interrupted banner in report.html"
assert_no_leftovers

qualify chat "$ROOT/tests/worlds/fast.ini" "${Q_FAST[@]}" --api chat --json --candidate 'a:'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/chat.stderr"; fail "chat exit $Q_RC"; }
check "$Q_TMP/chat.stdout" 'c["a"]["verdict"] == "stable"' 'c["a"]["throughput"]["sequential_tok_s"] > 0' || fail "chat"
cmp -s "$Q_TMP/chat.stdout" "$Q_DIR/report.json" || fail "--json output differs from report.json"
grep -q '/v1/chat/completions' "$Q_DIR/attempts/a-1/server.log" || fail "chat endpoint not used"
assert_no_leftovers
echo ok
