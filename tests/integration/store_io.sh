#!/bin/bash
# store_io.sh - secrets planted in candidates, the environment and the
# bearer token appear in no file of the run directory; a full disk (file
# size limit) and a read-only run directory end with a clear error and
# exit 3, leaving the database intact.
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
T=$(mktemp -d /tmp/store-io.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.err; do echo "== $f"; tail -n 20 "$f"; done; exit 1; }
W="$ROOT/tests/worlds/fast.ini"

# 1. redaction: candidate knob, inherited variable, bearer token
export HF_TOKEN=planted-hf-0b5e7c MY_BEARER=planted-bearer-91d2
"$MOEPROBE" qualify --quiet --no-quality --out "$T/red" --seq 2 --conc 2:4 --max-tokens 16 \
    --api-key-env MY_BEARER --candidate 'a: DB_PASSWORD=planted-pw-4471 EXTRA=1' \
    -- "$REFENGINE" serve --world "$W" --port '{port}' --hf-token "$HF_TOKEN" >"$T/red.out" 2>"$T/red.err"
rc=$?
[ $rc -eq 0 ] || fail "redaction run exit $rc"
"$MOEPROBE" report --format json "$T/red" >>"$T/red.out" || fail "report failed"
leaks=$(grep -rlaE 'planted-(hf|bearer|pw)' "$T/red" "$T/red.out" "$T/red.err")
[ -z "$leaks" ] || fail "secret found in: $leaks"
grep -q 'DB_PASSWORD=\*\*\*' "$T/red/report.md" || fail "masked knob not shown in the report"
sqlite3 "$T/red/moeprobe.db" "SELECT argv FROM run" | grep -q 'DB_PASSWORD=\*\*\*' || fail "argv not masked"
unset HF_TOKEN MY_BEARER

# 2. full disk: a file-size limit hits the database while requests are written
# (400 KiB: above the new store's migration transaction in its -wal, about 150 KiB)
( ulimit -f 400; exec "$MOEPROBE" qualify --quiet --no-quality --out "$T/full" --seq 400 --conc 4:4000 \
    --max-tokens 8 --candidate 'a: ' -- "$REFENGINE" serve --world "$W" --port '{port}' ) \
    >"$T/full.out" 2>"$T/full.err"
rc=$?
[ $rc -eq 3 ] || fail "full disk: exit $rc, want 3"
grep -q "evidence store" "$T/full.err" || fail "full disk: no clear message"
[ "$(sqlite3 "$T/full/moeprobe.db" 'PRAGMA integrity_check')" = ok ] || fail "database damaged"
n=$(sqlite3 "$T/full/moeprobe.db" 'SELECT COUNT(*) FROM requests')
[ "$n" -gt 0 ] || fail "no request survived"
"$MOEPROBE" report --no-write "$T/full" >/dev/null || fail "report of the full-disk run failed"

# 3. read-only run directory (root ignores permissions: use a read-only mount there):
# a new run into an empty one, and the resume of a run copied there (a
# directory that holds a run takes no new one: rundir_one_run.sh)
mkdir -p "$T/ro" "$T/ro-empty"
# (the full-disk run: it holds no secret, so the resume gets as far as the
# store, which reads fine on read-only media and cannot be written)
cp -a "$T/full/moeprobe.db" "$T/ro/"
chmod 0555 "$T/ro" "$T/ro-empty"
on_ro() { # DIR COMMAND...: run COMMAND with DIR read-only
    local d=$1; shift
    if [ "$(id -u)" = 0 ]; then
        unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' sh "$d" "$@"
    else
        "$@"
    fi
}
if [ "$(id -u)" = 0 ] && ! command -v unshare >/dev/null; then
    echo "root without unshare: read-only case skipped"; exit 0
fi
on_ro "$T/ro-empty" "$MOEPROBE" qualify --quiet --out "$T/ro-empty" --candidate 'a: ' \
    -- "$REFENGINE" serve --world "$W" --port '{port}' >/dev/null 2>"$T/ro-empty.err"
rc=$?
# a run directory that cannot be written is the user's choice: exit 2, as a
# missing parent is (#29)
[ $rc -eq 2 ] || fail "read-only run directory: exit $rc, want 2"
grep -qiE "read-only|permission|cannot" "$T/ro-empty.err" || fail "read-only: no clear message"
on_ro "$T/ro" "$MOEPROBE" qualify --quiet --resume "$T/ro" >/dev/null 2>"$T/ro.err"
rc=$?
[ $rc -eq 2 ] || fail "resume on a read-only run directory: exit $rc, want 2"
[ -s "$T/ro.err" ] || fail "resume on a read-only run directory: no message"
chmod 0755 "$T/ro" "$T/ro-empty"
[ "$(sqlite3 "$T/ro/moeprobe.db" 'PRAGMA integrity_check')" = ok ] || fail "read-only: database damaged"
echo "ok: no secret in $(find "$T/red" -type f | wc -l) files; full disk kept $n requests"
