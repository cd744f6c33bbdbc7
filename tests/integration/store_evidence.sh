#!/bin/bash
# store_evidence.sh - when an evidence file cannot be written (a file-size
# limit cuts server.log; as root also a full device under server.times and a
# full disk under attempts/), moeprobe says so
# with the file and the reason, keeps what was recorded (the database and
# the report files), exits 3, and the attempt over the cut evidence gets no
# verdict (never "stable").
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
T=$(mktemp -d /tmp/store-evidence.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.err; do echo "== $f"; tail -n 8 "$f"; done; exit 1; }
W="$ROOT/tests/worlds/fast.ini"

# verdict RUN NAME: the candidate's verdict in RUN/report.json ("None" when null)
verdict() {
    python3 -c 'import json,sys
r = json.load(open(sys.argv[1] + "/report.json"))
print([c for c in r["candidates"] if c["name"] == sys.argv[2]][0]["verdict"])' "$1" "$2"
}
why() {
    python3 -c 'import json,sys
r = json.load(open(sys.argv[1] + "/report.json"))
print([c for c in r["candidates"] if c["name"] == sys.argv[2]][0]["why"])' "$1" "$2"
}

# 1. file-size limit: an engine that prints 3 MB before it starts; the limit
# (1000 KiB) cuts server.log long before the database reaches it
( ulimit -f 1000
  exec "$MOEPROBE" qualify --quiet --no-quality --out "$T/cut" --seq 3 --conc 2:4 --max-tokens 8 \
      --candidate 'a: ' --candidate 'b: EXTRA=1' -- sh -c \
      'yes "INFO 12-03 08:00:00 [chatty.py:1] a line of padding that fills the server log" |
       head -n 40000 >&2; exec "$0" "$@"' "$REFENGINE" serve --world "$W" --port '{port}' ) \
    >"$T/cut.out" 2>"$T/cut.err"
rc=$?
[ $rc -eq 3 ] || fail "file-size limit: exit $rc, want 3"
grep -qF "$T/cut/attempts/a-1/server.log" "$T/cut.err" || fail "file-size limit: the file is not named"
grep -q "File too large" "$T/cut.err" || fail "file-size limit: the reason is not given"
[ -s "$T/cut/report.json" ] && [ -s "$T/cut/report.md" ] || fail "file-size limit: no report written"
[ "$(sqlite3 "$T/cut/moeprobe.db" 'PRAGMA integrity_check')" = ok ] || fail "file-size limit: database damaged"
v=$(verdict "$T/cut" a)
[ "$v" = None ] || fail "file-size limit: the attempt over the cut log has verdict '$v'"
why "$T/cut" a | grep -q 'evidence incomplete' || fail "file-size limit: the report does not say the evidence is incomplete"
grep -q '^| a |.*evidence incomplete' "$T/cut/report.md" || fail "file-size limit: report.md row"
[ "$(sqlite3 "$T/cut/moeprobe.db" "SELECT outcome || ' ' || fail_class FROM attempts")" = "error evidence-incomplete" ] ||
    fail "file-size limit: the stored attempt does not say its evidence is incomplete"
# report renders the same again from the store alone
"$MOEPROBE" report --no-write --format json "$T/cut" >"$T/cut-again.json" || fail "report of the cut run failed"
grep -q 'evidence incomplete' "$T/cut-again.json" || fail "report again: evidence incomplete lost"

# 2. (root) a device that is always full under server.times, bind-mounted
# over the file (no link: links are never written through): the failure
# shows only when the last buffer is flushed, after an otherwise clean
# attempt
ns_ok=false
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null &&
    unshare -m sh -c "mount -t tmpfs -o size=256k tmpfs '$T'" 2>/dev/null; then
    ns_ok=true
fi
if $ns_ok; then
    mkdir -p "$T/full/attempts/a-1" && : >"$T/full/attempts/a-1/server.times"
    unshare -m sh -c 'mount --bind /dev/full "$1" && shift && exec "$@"' sh "$T/full/attempts/a-1/server.times" \
        "$MOEPROBE" qualify --quiet --no-quality --out "$T/full" --seq 3 --conc 2:4 --max-tokens 8 \
        --candidate 'a: ' -- "$REFENGINE" serve --world "$W" --port '{port}' >"$T/full.out" 2>"$T/full.err"
    rc=$?
    [ $rc -eq 3 ] || fail "full device: exit $rc, want 3"
    grep -q "server.times': No space left on device" "$T/full.err" || fail "full device: file and reason not named"
    v=$(verdict "$T/full" a)
    [ "$v" = None ] || fail "full device: verdict '$v' over incomplete evidence"
    [ "$(sqlite3 "$T/full/moeprobe.db" 'PRAGMA integrity_check')" = ok ] || fail "full device: database damaged"
fi

# 3. (root) a real full disk: a 256 KiB tmpfs under attempts/ in a private
# mount namespace while a chatty engine starts; the database is outside
if $ns_ok; then
    mkdir -p "$T/disk/attempts"
    unshare -m sh -c 'mount -t tmpfs -o size=256k tmpfs "$1/attempts" && shift && exec "$@"' sh "$T/disk" \
        "$MOEPROBE" qualify --quiet --no-quality --out "$T/disk" --seq 3 --conc 2:4 --max-tokens 8 \
        --candidate 'a: ' -- sh -c \
        'yes "INFO 12-03 08:00:00 [chatty.py:1] a line of padding that fills the server log" |
         head -n 10000 >&2; exec "$0" "$@"' "$REFENGINE" serve --world "$W" --port '{port}' \
        >"$T/disk.out" 2>"$T/disk.err"
    rc=$?
    [ $rc -eq 3 ] || fail "full disk: exit $rc, want 3"
    # both files share the full tmpfs: whichever flush meets the last free
    # block first is the one named (server.log's 4 KiB buffer may just fit)
    grep -qE "server\.(log|times)': No space left on device" "$T/disk.err" || fail "full disk: file and reason not named"
    [ "$(verdict "$T/disk" a)" = None ] || fail "full disk: a verdict over a cut log"
    [ -s "$T/disk/report.json" ] || fail "full disk: no report"
    disk="; a full device and a full tmpfs too"
else
    disk=" (no full-device and tmpfs cases: they need root and mount namespaces)"
fi
echo "ok: a cut server.log ends in exit 3 naming the file, reports kept, no verdict$disk"
