#!/bin/bash
# Started with stdin, stdout or stderr closed (`<&-`, `>&-`, `2>&-`), moeprobe
# puts /dev/null on them before it opens anything: the first file it opens
# (RUNDIR/lock) never becomes its stdout or stderr, so neither the Markdown
# report nor the progress lines land in the lock file, and the run ends as
# it would with them open.
. "$(dirname "$0")/q_lib.sh"
for closed in 0 1 2 012; do
    d="$Q_TMP/closed-$closed"
    case $closed in
    0) "$MOEPROBE" qualify --out "$d" --seq 2 --conc 2:2 --max-tokens 8 --grace 3 --candidate 'a:' \
           -- "$REFENGINE" --world "$ROOT/tests/worlds/fast.ini" --port '{port}' <&- >/dev/null 2>"$d.err" ;;
    1) "$MOEPROBE" qualify --out "$d" --seq 2 --conc 2:2 --max-tokens 8 --grace 3 --candidate 'a:' \
           -- "$REFENGINE" --world "$ROOT/tests/worlds/fast.ini" --port '{port}' >&- 2>"$d.err" ;;
    2) "$MOEPROBE" qualify --out "$d" --seq 2 --conc 2:2 --max-tokens 8 --grace 3 --candidate 'a:' \
           -- "$REFENGINE" --world "$ROOT/tests/worlds/fast.ini" --port '{port}' >/dev/null 2>&- ;;
    012) "$MOEPROBE" qualify --out "$d" --seq 2 --conc 2:2 --max-tokens 8 --grace 3 --candidate 'a:' \
           -- "$REFENGINE" --world "$ROOT/tests/worlds/fast.ini" --port '{port}' <&- >&- 2>&- ;;
    esac
    rc=$?
    [ $rc -eq 0 ] || { cat "$d.err" 2>/dev/null; fail "fd $closed closed: exit $rc, want 0"; }
    [ -s "$d/report.md" ] || fail "fd $closed closed: no report.md"
    [ -e "$d/lock" ] || fail "fd $closed closed: no lock file (the test proves nothing)"
    [ -s "$d/lock" ] && { head -c 300 "$d/lock"; echo; fail "fd $closed closed: something was written into RUNDIR/lock"; }
    check "$d/report.json" 'c["a"]["verdict"] == "stable"' || fail "fd $closed closed: report"
done
# the error path too: a usage error with stderr closed exits 2 and writes nowhere
"$MOEPROBE" qualify --out "$Q_TMP/bad" --conc nonsense -- "$REFENGINE" 2>&- >&-
rc=$?
[ $rc -eq 2 ] || fail "usage error with stderr closed: exit $rc, want 2"
assert_no_leftovers
echo ok
