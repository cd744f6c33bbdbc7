#!/bin/bash
# tests/run.sh - runs every test of moeprobe and prints one closing line:
#   "N passed, N failed, N skipped"
# Env: MOEPROBE, REFENGINE (binaries under test), BUILD (build dir with
# tests/ and fuzz-replay/), FUZZ_SMOKE_SECONDS (when > 0, also build the
# libFuzzer targets with clang and run each that long: scripts/fuzz-smoke.sh;
# they skip when clang/libFuzzer is unavailable; make test sets 20). Each unit binary, fuzz replay and integration
# script counts as one test: exit 0 = pass, 77 = skip, anything else = fail.
# After every integration script we check that no process it started is left.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
: "${BUILD:=$root/build/san}"
: "${MOEPROBE:=$BUILD/bin/moeprobe}"
: "${REFENGINE:=$BUILD/bin/refengine}"
export MOEPROBE REFENGINE ROOT="$root"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
pass=0 fail=0 skip=0
failed_names=()
logdir=$(mktemp -d /tmp/moeprobe-tests.XXXXXX)

# Every test runs with a unique MOEPROBE_TEST_MARKER in its environment; all
# processes it starts inherit it (escapees too), so after the test any
# process still carrying it is a leftover.
leftovers() {
    local m=$1 p
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = "$$" ] && continue
        { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "MOEPROBE_TEST_MARKER=$m" &&
            echo "${p#/proc/}"
    done
}

run_one() {
    local name=$1; shift
    local log="$logdir/${name//\//_}.log"
    local t0 rc
    t0=$(date +%s.%N)
    local marker="t$$-$RANDOM$RANDOM"
    MOEPROBE_TEST_MARKER=$marker "$@" >"$log" 2>&1
    rc=$?
    local left
    left=$(leftovers "$marker")
    if [ -n "$left" ]; then
        echo "leftover processes after $name: $left" >>"$log"
        ps -o pid,pgid,sid,cmd -p "$(echo $left | tr ' ' ',')" >>"$log" 2>&1
        # shellcheck disable=SC2086
        kill -9 $left 2>/dev/null
        [ $rc -eq 0 ] && rc=99
    fi
    local dt
    dt=$(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo 0)")
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1)); printf 'PASS %-50s %ss\n' "$name" "$dt"
    elif [ $rc -eq 77 ]; then
        skip=$((skip + 1)); printf 'SKIP %-50s %s\n' "$name" "$(tail -n 1 "$log")"
    else
        fail=$((fail + 1)); failed_names+=("$name")
        printf 'FAIL %-50s (exit %d)\n' "$name" "$rc"
        sed 's/^/    | /' "$log" | tail -n 60
    fi
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    run_one "unit/$(basename "$t")" "$t"
done

for f in "$BUILD"/fuzz-replay/fuzz_*; do
    [ -x "$f" ] || continue
    n=$(basename "$f"); c="$root/tests/fuzz/corpus/${n#fuzz_}"
    run_one "fuzz-replay/$n" "$f" "$c"
done

if [ "${FUZZ_SMOKE_SECONDS:-0}" -gt 0 ] 2>/dev/null; then
    run_one "fuzz-smoke/build" "$root/scripts/fuzz-smoke.sh" build
    for src in "$root"/tests/fuzz/fuzz_*.c; do
        n=$(basename "$src" .c)
        run_one "fuzz-smoke/$n" "$root/scripts/fuzz-smoke.sh" run "${n#fuzz_}" "$FUZZ_SMOKE_SECONDS"
    done
    [ -s "$root/build/fuzz/smoke-summary.txt" ] && sed 's/^/     /' "$root/build/fuzz/smoke-summary.txt"
fi

for s in "$root"/tests/integration/*.sh; do
    [ -x "$s" ] || continue
    run_one "integration/$(basename "$s" .sh)" "$s"
done

echo
if [ $fail -gt 0 ]; then
    echo "failed: ${failed_names[*]}"
    echo "logs in $logdir"
else
    rm -rf "$logdir"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
