#!/bin/bash
# fuzz-smoke.sh - run moeprobe's libFuzzer targets for a fixed time each.
#
#   scripts/fuzz-smoke.sh check            exit 0 when clang can build libFuzzer
#                                          targets here, else 77 with the reason
#   scripts/fuzz-smoke.sh build            make fuzz (clang, build/fuzz/libfuzzer/)
#   scripts/fuzz-smoke.sh run NAME SECONDS run build/fuzz/libfuzzer/fuzz_NAME
#   scripts/fuzz-smoke.sh all SECONDS      build, then run every target
#
# `make test` runs check, build and run (one test each, through tests/run.sh,
# FUZZ_SMOKE_SECONDS per target, default 20); `make fuzz-run FUZZ_SECONDS=N`
# runs "all N". A run starts from the committed corpus (tests/fuzz/corpus/NAME/,
# read only: new inputs go to a scratch directory that is deleted afterwards)
# and prints one line: "fuzz_NAME: EXECS execs in S s (EXECS/s), corpus N
# inputs, no crash" (also appended to build/fuzz/smoke-summary.txt, which
# tests/run.sh prints after the smoke runs). A crash, leak, sanitizer report or timeout fails the run
# (exit 1); the input that did it is kept in build/fuzz/artifacts/NAME/ and
# the fuzzer's report is printed. Exit 77: libFuzzer is unavailable (skip).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
bindir=build/fuzz/libfuzzer
summary=build/fuzz/smoke-summary.txt   # one line per run since the last build

check() {
    command -v clang >/dev/null 2>&1 || { echo "skip: clang not installed (libFuzzer needs it)"; return 77; }
    local t
    t=$(mktemp -d /tmp/mp-fuzzcheck.XXXXXX) || return 2
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' > "$t/f.c"
    if ! clang -fsanitize=fuzzer,address,undefined "$t/f.c" -o "$t/f" >"$t/log" 2>&1; then
        echo "skip: clang cannot link -fsanitize=fuzzer here ($(head -n 1 "$t/log"))"
        rm -rf "$t"
        return 77
    fi
    rm -rf "$t"
    return 0
}

build() {
    check || return $?
    mkdir -p build/fuzz && : > "$summary"
    make --no-print-directory -j"${FUZZ_JOBS:-2}" fuzz
}

run_target() {
    local name=$1 secs=$2 bin="$bindir/fuzz_$1" corpus="tests/fuzz/corpus/$1"
    if [ ! -x "$bin" ]; then
        check >/dev/null || { check; return 77; }
        echo "fuzz_$name: not built ($bin); run 'make fuzz' first"
        return 2
    fi
    [ -d "$corpus" ] || { echo "fuzz_$name: no corpus at $corpus"; return 2; }
    local scratch art log rc
    scratch=$(mktemp -d /tmp/mp-fuzz-"$name".XXXXXX) || return 2
    art="build/fuzz/artifacts/$name"
    mkdir -p "$art"
    log="$scratch/fuzz.log"
    mkdir "$scratch/new"
    # -close_fd_mask=3: the targets' own messages (usage errors, ...) go
    # nowhere; libFuzzer and the sanitizers still report on a copy of stderr
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
        "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=3 \
        -print_final_stats=1 -artifact_prefix="$art/" "$scratch/new" "$corpus" \
        >"$log" 2>&1
    rc=$?
    local execs per corp
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    per=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    corp=$(grep -o 'corp: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    if [ $rc -ne 0 ]; then
        echo "fuzz_$name: FAILED (exit $rc) after ${execs:-?} execs; input kept in $art/" | tee -a "$summary"
        grep -v '^#' "$log" | tail -n 60
        rm -rf "$scratch"
        return 1
    fi
    echo "fuzz_$name: ${execs:-?} execs in ${secs} s (${per:-?}/s), corpus ${corp:-?} inputs, no crash" |
        tee -a "$summary"
    rm -rf "$scratch"
    return 0
}

case "${1:-}" in
check) check ;;
build) build ;;
run)
    [ $# -eq 3 ] || { echo "usage: $0 run NAME SECONDS"; exit 2; }
    run_target "$2" "$3"
    ;;
all)
    secs=${2:-20}
    build || exit $?
    fail=0
    for src in tests/fuzz/fuzz_*.c; do
        n=$(basename "$src" .c)
        run_target "${n#fuzz_}" "$secs" || fail=1
    done
    exit $fail
    ;;
*)
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
