#!/bin/bash
# soak --base-url/--log: attach to a server someone else started, read the
# backends it resolved from its log, classify its crash from the log, and
# never stop it.
. "$(dirname "$0")/q_lib.sh"
# start_engine NAME WORLD: starts refengine on a free port, sets EPORT/ELOG/EPID
start_engine() {
    ELOG="$Q_TMP/$1.log"
    setsid "$REFENGINE" --world "$2" --port 0 >"$ELOG" 2>&1 &
    EPID=$!
    EPORT=""
    exec {lfd}< <(exec timeout 20 tail -n +1 -F "$ELOG" 2>/dev/null)
    local line
    while read -r line <&"$lfd"; do
        case "$line" in
        *"on http://"*) EPORT=$(echo "$line" | sed -n 's|.*http://[0-9.]*:\([0-9]*\).*|\1|p') ;;
        *"Application startup complete"*) break ;;
        esac
    done
    exec {lfd}<&-
    [ -n "$EPORT" ] || { cat "$ELOG"; fail "engine did not report its port"; }
}

start_engine healthy "$ROOT/tests/worlds/fast.ini"
"$MOEPROBE" soak --quiet --out "$Q_TMP/s1" --duration 1 --concurrency 2 --max-tokens 8 \
    --base-url "http://127.0.0.1:$EPORT/" --log "$ELOG" >/dev/null 2>"$Q_TMP/s1.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/s1.err"; fail "healthy attach: exit $rc"; }
check "$Q_TMP/s1/report.json" 'c["soak"]["verdict"] == "stable"' \
  'c["soak"]["resolved"]["moe_backend"] == "FLASHINFER_CUTLASS"' \
  'c["soak"]["requests"]["ok"] > 10' \
  '"attached to" in c["soak"]["attempts"][0]["command"]' || fail "healthy attach report"
kill -0 "$EPID" 2>/dev/null || fail "moeprobe stopped a server it did not start"
curl -sf "http://127.0.0.1:$EPORT/health" >/dev/null || fail "server not healthy after the soak"
kill "$EPID"; wait "$EPID" 2>/dev/null

# a racy server: the crash is classified from the followed log
start_engine racy "$ROOT/tests/integration/worlds/q-verdicts.ini"
"$MOEPROBE" soak --quiet --out "$Q_TMP/s2" --duration 30 --concurrency 1 --max-tokens 8 \
    --base-url "http://127.0.0.1:$EPORT" --log "$ELOG" >/dev/null 2>"$Q_TMP/s2.err"
rc=$?
[ $rc -eq 1 ] || { cat "$Q_TMP/s2.err"; fail "racy attach: exit $rc, want 1"; }
check "$Q_TMP/s2/report.json" 'c["soak"]["verdict"] in ("crashed", "async-race")' \
  'c["soak"]["crash"]["class"] == "illegal-address"' \
  'c["soak"]["crash"]["after_requests"] == 2' || fail "racy attach report"
wait "$EPID" 2>/dev/null

# usage errors
"$MOEPROBE" soak --duration 1 --log x 2>/dev/null; [ $? -eq 2 ] || fail "--log without --base-url"
"$MOEPROBE" soak --duration 1 --base-url ftp://x 2>/dev/null; [ $? -eq 2 ] || fail "bad URL"
"$MOEPROBE" soak --duration 1 --base-url http://127.0.0.1:1 -- true 2>/dev/null; [ $? -eq 2 ] || fail "URL and command"
assert_no_leftovers
echo ok
