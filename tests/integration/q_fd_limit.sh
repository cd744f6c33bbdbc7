#!/bin/bash
# q_fd_limit.sh - moeprobe's own limits are never blamed on the engine:
# - a workload that cannot fit in the descriptors moeprobe may open (ulimit
#   -n, soft = hard) is refused before anything starts: exit 2 with the
#   numbers, no run directory;
# - a soft limit below the hard one is raised to it for moeprobe's own
#   connections; the engine still gets the limit it was given;
# - descriptors running out while the load runs (the limit lowered under a
#   running moeprobe with prlimit) is moeprobe's own failure: exit 3, the
#   message says so, and the candidate gets no verdict (never server-error).
. "$(dirname "$0")/q_lib.sh"
command -v prlimit >/dev/null || { echo "skip: prlimit (util-linux) not installed"; exit 77; }
cat >"$Q_TMP/engine.sh" <<SH
#!/bin/bash
ulimit -Sn >"$Q_TMP/engine-nofile"
exec "$REFENGINE" "\$@"
SH
chmod +x "$Q_TMP/engine.sh"
CMD=("$Q_TMP/engine.sh" --world "$ROOT/tests/worlds/fast.ini" --port '{port}')

# 1. cannot fit: refused before it starts
(ulimit -n 200; exec "$MOEPROBE" qualify --out "$Q_TMP/nofit" --quiet --seq 2 --conc 300:300 --max-tokens 8 \
    --candidate 'a:' -- "${CMD[@]}") >/dev/null 2>"$Q_TMP/nofit.err"
rc=$?
[ $rc -eq 2 ] || { cat "$Q_TMP/nofit.err"; fail "a workload over ulimit -n: exit $rc, want 2"; }
grep -q "300 requests at once.*file descriptors.*200" "$Q_TMP/nofit.err" ||
    { cat "$Q_TMP/nofit.err"; fail "the refusal does not give the numbers"; }
[ -e "$Q_TMP/nofit" ] && fail "the refused run left a run directory"
[ -e "$Q_TMP/engine-nofile" ] && fail "the refused run started the engine"

# 2. a low soft limit under a higher hard one: raised for moeprobe, not for the engine
(ulimit -Sn 100; exec "$MOEPROBE" qualify --out "$Q_TMP/soft" --quiet --no-quality --seq 2 --conc 150:300 \
    --max-tokens 8 --candidate 'a:' -- "${CMD[@]}") >/dev/null 2>"$Q_TMP/soft.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/soft.err"; fail "soft limit 100, 150 at once: exit $rc, want 0"; }
check "$Q_TMP/soft/report.json" 'c["a"]["verdict"] == "stable"' || fail "soft limit: verdict"
[ "$(cat "$Q_TMP/engine-nofile")" = 100 ] || fail "the engine got soft limit $(cat "$Q_TMP/engine-nofile"), want its own 100"

# 3. running out while the load runs
D="$Q_TMP/run"
(exec "$MOEPROBE" qualify --out "$D" --no-quality --seq 2 --conc 48:1000000 --max-tokens 64 \
    --candidate 'a:' -- "${CMD[@]}" >/dev/null 2>"$Q_TMP/run.err") &
mp=$!
ok=0
for _ in $(seq 600); do
    grep -q '"phase":"concurrency-48"' "$D/attempts/a-1/requests.jsonl" 2>/dev/null && { ok=1; break; }
    timeout 0.2 tail -n0 -F "$D/attempts/a-1/requests.jsonl" 2>/dev/null | head -n1 >/dev/null
done
[ $ok -eq 1 ] || { kill -9 $mp; fail "the concurrency phase never started"; }
prlimit --pid "$mp" --nofile=20:20 || { kill -9 $mp; fail "prlimit failed"; }
timeout 60 tail --pid="$mp" -f /dev/null || { kill -9 $mp; fail "moeprobe did not end after its descriptors ran out"; }
wait $mp
rc=$?
[ $rc -eq 3 ] || { tail -n 20 "$Q_TMP/run.err"; fail "descriptors ran out: exit $rc, want 3"; }
grep -q "moeprobe's own limit" "$Q_TMP/run.err" || { tail -n 20 "$Q_TMP/run.err"; fail "the message does not say it is moeprobe's own limit"; }
"$MOEPROBE" report --no-write --format json "$D" >"$Q_TMP/run.json" 2>"$Q_TMP/report.err" || { cat "$Q_TMP/report.err"; fail "report: exit $?"; }
check "$Q_TMP/run.json" 'c["a"]["verdict"] is None' \
    '"server-error" not in (c["a"]["why"] or "") and "connection-refused" not in (c["a"]["why"] or "")' \
    "\"moeprobe's own limit\" in (c['a']['why'] or '')" || fail "the engine was blamed for moeprobe's limit"
assert_no_leftovers
echo ok
