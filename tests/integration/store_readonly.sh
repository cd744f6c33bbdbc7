#!/bin/bash
# store_readonly.sh - a run copied to read-only media renders with
# `moeprobe report`: the database is opened read-only (immutable where
# SQLite cannot create its -shm file), the report is printed on stdout with
# a warning that the files were not rewritten (exit 0), and a -wal file
# that cannot be read is named. Never "schema version -1".
#
# Read-only media: a read-only bind mount in a private mount namespace as
# root (root ignores permissions), a directory without write permission
# otherwise.
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
T=$(mktemp -d /tmp/store-ro.XXXXXX)
cleanup() { chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.err; do echo "== $f"; tail -n 5 "$f"; done; exit 1; }

if [ "$(id -u)" = 0 ]; then
    command -v unshare >/dev/null || { echo "root without unshare: cannot make read-only media"; exit 77; }
    mkdir "$T/probe"
    unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1"' sh "$T/probe" 2>/dev/null ||
        { echo "root without mount namespaces: cannot make read-only media"; exit 77; }
fi
# readonly DIR CMD...: run CMD with DIR read-only
readonly_run() {
    local d=$1; shift
    if [ "$(id -u)" = 0 ]; then
        unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' \
            sh "$d" "$@"
    else
        chmod a-w "$d"
        "$@"
        local rc=$?
        chmod u+w "$d"
        return $rc
    fi
}

"$MOEPROBE" qualify --quiet --no-quality --out "$T/run" --seq 3 --conc 2:4 --max-tokens 8 \
    --candidate 'a: ' -- "$REFENGINE" serve --world "$ROOT/tests/worlds/fast.ini" --port '{port}' \
    >/dev/null 2>"$T/run.err"
[ $? -eq 0 ] || fail "qualify failed"

# 1. a finished run copied (database only, as a finished run leaves it)
mkdir "$T/ro" && cp "$T/run/moeprobe.db" "$T/ro/"
readonly_run "$T/ro" "$MOEPROBE" report "$T/ro" >"$T/ro.out" 2>"$T/ro.err"
rc=$?
[ $rc -eq 0 ] || fail "report on read-only media: exit $rc, want 0"
grep -q '^| a |' "$T/ro.out" || fail "read-only: the report lacks candidate a"
grep -q 'stable' "$T/ro.out" || fail "read-only: verdict missing"
grep -q 'not writable' "$T/ro.err" || fail "read-only: no warning that the files were not rewritten"
! grep -q 'schema version' "$T/ro.err" || fail "read-only: misleading schema version message"
[ ! -e "$T/ro/report.md" ] || fail "read-only: report.md appeared on read-only media"
[ ! -e "$T/ro/moeprobe.db-shm" ] || fail "read-only: a -shm file appeared"
# the same with --no-write: no warning at all
readonly_run "$T/ro" "$MOEPROBE" report --no-write --format json "$T/ro" >"$T/ro-nw.out" 2>"$T/ro-nw.err" ||
    fail "report --no-write on read-only media failed"
[ ! -s "$T/ro-nw.err" ] || fail "read-only --no-write: unexpected stderr"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["candidates"][0]["verdict"]=="stable"' \
    "$T/ro-nw.out" || fail "read-only: JSON report wrong"

# 2. a copy taken while a writer had transactions in the -wal file (a
# killed run): the main file renders, the warning names the -wal file
mkdir "$T/live" "$T/wal"
cp "$T/run/moeprobe.db" "$T/live/"
python3 - "$T/live" "$T/wal" <<'PY' || fail "could not make a -wal copy"
import shutil, sqlite3, sys
live, out = sys.argv[1], sys.argv[2]
c = sqlite3.connect(live + "/moeprobe.db")
c.execute("PRAGMA wal_autocheckpoint=0")
c.execute("UPDATE run SET finished = 'late'")
c.commit()
for f in ("moeprobe.db", "moeprobe.db-wal"):
    shutil.copy(live + "/" + f, out + "/" + f)
c.close()
PY
[ -s "$T/wal/moeprobe.db-wal" ] || fail "the copy has no -wal content"
readonly_run "$T/wal" "$MOEPROBE" report --no-write "$T/wal" >"$T/wal.out" 2>"$T/wal.err"
rc=$?
[ $rc -eq 0 ] || fail "read-only with -wal: exit $rc, want 0"
grep -q '^| a |' "$T/wal.out" || fail "read-only with -wal: candidate a missing"
grep -q 'moeprobe.db-wal' "$T/wal.err" || fail "read-only with -wal: the unread -wal file is not named"

# 3. the same copy on writable storage reads the -wal too (no warning)
"$MOEPROBE" report --no-write "$T/wal" >/dev/null 2>"$T/walrw.err" || fail "writable -wal copy failed"
! grep -q 'moeprobe.db-wal' "$T/walrw.err" || fail "writable copy: needless -wal warning"
# 4. as root also the other kind of read-only: a directory without write
# permission, read by an unprivileged user (root would ignore the mode)
extra=""
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
    setpriv --reuid=65534 --regid=65534 --clear-groups "$MOEPROBE" version >/dev/null 2>&1; then
    chmod 0755 "$T"
    mkdir "$T/perm" && cp "$T/run/moeprobe.db" "$T/perm/" && chmod 0644 "$T/perm/moeprobe.db"
    chmod 0555 "$T/perm"
    setpriv --reuid=65534 --regid=65534 --clear-groups "$MOEPROBE" report "$T/perm" \
        >"$T/perm.out" 2>"$T/perm.err"
    rc=$?
    chmod 0755 "$T/perm"
    [ $rc -eq 0 ] || fail "directory without write permission: exit $rc, want 0"
    grep -q '^| a |' "$T/perm.out" || fail "directory without write permission: candidate a missing"
    grep -q 'not writable' "$T/perm.err" || fail "directory without write permission: no warning"
    [ ! -e "$T/perm/moeprobe.db-shm" ] || fail "directory without write permission: a -shm appeared"
    extra="; a directory without write permission too"
fi
echo "ok: read-only media render (stdout, warning), a -wal that cannot be read is named$extra"
