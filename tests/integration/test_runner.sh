#!/bin/bash
# tier: quick
# test_runner.sh - tests/run.sh on a planted tree of tests (RUNSH_ROOT, a
# fake BUILD): patterns pick by full name or by the part after the slash;
# --tier quick takes units and the "# tier: quick" scripts only; pass, fail
# (with its log) and skip are counted and the exit status says whether
# anything failed; under -j 2 two tests really run side by side (each
# waits, with a deadline, for the other to have started), a process left
# by one test fails that test (exit 99) and is killed, while the test
# running beside it, which left nothing, passes; the timeout multiplier
# reaches the tests and tmul scales by it; each test has a TMPDIR of its
# own, removed after it; bad options are usage errors.
set -u
: "${ROOT:?}"
t=$(mktemp -d /tmp/mp-runner.XXXXXX)
fail() { echo "FAIL: $*"; exit 1; }
cleanup() {
    [ -s "$t/shared/d.pid" ] && kill -9 "$(cat "$t/shared/d.pid")" 2>/dev/null
    rm -rf "$t"
}
trap cleanup EXIT
I="$t/tree/tests/integration"
mkdir -p "$I" "$t/build/tests" "$t/shared"
export RT_SHARED="$t/shared"

plant() { # NAME BODY: an executable integration script
    printf '#!/bin/bash\n%s\n' "$2" >"$I/$1.sh"
    chmod +x "$I/$1.sh"
}
# rv ME OTHER: say ME has started, then wait (10 s at most) for OTHER
rv='rv() { touch "$RT_SHARED/$1"; for i in $(seq 200); do [ -e "$RT_SHARED/$2" ] && return 0; sleep 0.05; done; return 1; }'
plant a_pass 'exit 0'
plant b_fail 'echo "boom-b went wrong"; exit 3'
plant c_skip 'echo "skip: no frobnicator here"; exit 77'
plant d_leftover "$rv
setsid sleep 300 </dev/null >/dev/null 2>&1 &
echo \$! >\"\$RT_SHARED/d.pid\"
rv d e || exit 1
# stay until e_pair is gone, so its leftover check runs while ours is alive
while [ -e \"\$RT_SHARED/e\" ] && kill -0 \"\$(cat \"\$RT_SHARED/e.pid\")\" 2>/dev/null; do sleep 0.05; done
exit 0"
plant e_pair "$rv
echo \$\$ >\"\$RT_SHARED/e.pid\"
rv e d"
plant m_mult 'echo "$MOEPROBE_TEST_TIMEOUT_MULTIPLIER" >"$RT_SHARED/mult"
echo "$TMPDIR" >"$RT_SHARED/tmpdir"; touch "$TMPDIR/left-here"'
plant q_quick '# tier: quick
exit 0'
printf '#!/bin/bash\nexit 1\n' >"$I/not_a_test.sh" # not executable: a library
printf '#!/bin/sh\nexit 0\n' >"$t/build/tests/test_ok"
chmod +x "$t/build/tests/test_ok"

run() { RUNSH_ROOT="$t/tree" BUILD="$t/build" MOEPROBE=/bin/false REFENGINE=/bin/false \
    FUZZ_SMOKE_SECONDS=0 "$ROOT/tests/run.sh" "$@" >"$t/out" 2>&1; }
list_is() { # EXPECTED-NAMES... (after run --list)
    local want
    want=$(printf '%s\n' "$@")
    [ "$(cat "$t/out")" = "$want" ] || fail "listed: $(tr '\n' ' ' <"$t/out"), want: $*"
}

# selection
run --list || fail "--list: $(cat "$t/out")"
list_is unit/test_ok integration/a_pass integration/b_fail integration/c_skip \
    integration/d_leftover integration/e_pair integration/m_mult integration/q_quick
run --list 'integration/[ab]_*'; list_is integration/a_pass integration/b_fail
run --list a_pass 'unit/*'; list_is unit/test_ok integration/a_pass
run --list --tier quick; list_is unit/test_ok integration/q_quick
run --tier quick 'no_such_*'; [ $? -eq 2 ] || fail "a pattern that matches nothing is not a usage error"

# counting: pass, fail with its log, skip with its reason; exit 1
run a_pass b_fail c_skip test_ok; rc=$?
[ $rc -eq 1 ] || fail "a failing test: run.sh exit $rc, want 1"
grep -q '^PASS integration/a_pass' "$t/out" || fail "no PASS line: $(cat "$t/out")"
grep -q '^FAIL integration/b_fail .*(exit 3)' "$t/out" || fail "no FAIL line with the exit status"
grep -q '| boom-b went wrong' "$t/out" || fail "the failed test's log is not shown"
grep -q '^SKIP integration/c_skip .*skip: no frobnicator here' "$t/out" || fail "no SKIP line with its reason"
grep -qx 'failed: integration/b_fail' "$t/out" || fail "the failed names are not listed"
grep -qx '2 passed, 1 failed, 1 skipped' "$t/out" || fail "closing line: $(tail -n 1 "$t/out")"
run a_pass q_quick || fail "passing tests: $(cat "$t/out")"
grep -qx '2 passed, 0 failed, 0 skipped' "$t/out" || fail "closing line: $(tail -n 1 "$t/out")"

# side by side: d and e wait for each other (run one at a time, d would time
# out and fail with exit 1); d leaves a process: exit 99 for d only
run -j 2 'integration/[de]_*'; rc=$?
[ $rc -eq 1 ] || fail "-j 2 with a leftover: exit $rc, want 1: $(cat "$t/out")"
grep -q '^PASS integration/e_pair' "$t/out" || fail "e_pair, which left nothing, did not pass: $(cat "$t/out")"
grep -q '^FAIL integration/d_leftover .*(exit 99)' "$t/out" || fail "the leftover was not caught: $(cat "$t/out")"
grep -q 'leftover processes after integration/d_leftover' "$t/out" || fail "the leftover is not named"
left=$(cat "$t/shared/d.pid")
# killed with SIGKILL: gone (or a zombie) within moments, never running on
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
for _ in $(seq 100); do alive "$left" || break; sleep 0.05; done
[ -n "$left" ] && ! alive "$left" || fail "the leftover process $left is still alive"

# the multiplier reaches the tests (default 1); tmul scales and rounds up;
# a test has a TMPDIR of its own, gone after it
rm -f "$t/shared/mult"; run m_mult || fail "m_mult: $(cat "$t/out")"
[ "$(cat "$t/shared/mult")" = 1 ] || fail "default multiplier $(cat "$t/shared/mult"), want 1"
td=$(cat "$t/shared/tmpdir")
case "$td" in /tmp | /tmp/ | "") fail "the test ran with the shared TMPDIR '$td'" ;; esac
[ ! -e "$td" ] || fail "the test's TMPDIR $td is left behind"
MOEPROBE_TEST_TIMEOUT_MULTIPLIER=2.5 run m_mult || fail "m_mult: $(cat "$t/out")"
[ "$(cat "$t/shared/mult")" = 2.5 ] || fail "multiplier not passed on"
MOEPROBE_TEST_TIMEOUT_MULTIPLIER=2.5 bash -c '. "$0/tests/integration/timeout_lib.sh"; echo $(tmul 1) $(tmul 10) $(tmul 120)' "$ROOT" >"$t/tm"
[ "$(cat "$t/tm")" = "3 25 300" ] || fail "tmul with 2.5: $(cat "$t/tm"), want 3 25 300"
bash -c '. "$0/tests/integration/timeout_lib.sh"; tmul 7' "$ROOT" >"$t/tm"
[ "$(cat "$t/tm")" = 7 ] || fail "tmul without a multiplier: $(cat "$t/tm")"

# usage errors
for bad in "-j 0" "-j x" "--tier slow" "--frob"; do
    # shellcheck disable=SC2086
    run $bad a_pass; [ $? -eq 2 ] || fail "run.sh $bad: not a usage error"
done
MOEPROBE_TEST_TIMEOUT_MULTIPLIER=fast run a_pass; [ $? -eq 2 ] || fail "a bad multiplier is accepted"
echo "ok: selection, counting, -j 2 side by side, leftovers per test, multiplier"
