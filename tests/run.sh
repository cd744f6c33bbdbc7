#!/bin/bash
# tests/run.sh [-j N] [--tier quick|full] [--list] [PATTERN...] - runs the
# tests of moeprobe and prints one closing line: "N passed, N failed, N skipped".
#
# Tests are named unit/test_X (the binaries in $BUILD/tests/),
# fuzz-replay/fuzz_X (each committed corpus replayed through
# $BUILD/fuzz-replay/fuzz_X), fuzz-smoke/... (libFuzzer runs, only when
# FUZZ_SMOKE_SECONDS > 0: scripts/fuzz-smoke.sh) and integration/X (the
# executable tests/integration/X.sh). Each counts as one test: exit 0 = pass,
# 77 = skip, anything else = fail.
#
#   -j N          run N tests at a time (default 1). Units and replays run
#                 first, then the libFuzzer build (alone: it owns build/fuzz/),
#                 then the smoke runs and the integration scripts, those that
#                 took longest last time ($BUILD/test-times) first.
#   --tier quick  units, replays and the integration scripts that carry a
#                 "# tier: quick" line (seconds each, no engine timing: the
#                 tier make check runs); full (default) is everything.
#                 A script whose runs start refengine for several attempts
#                 or slow worlds (crash worlds, eras, refengine's stages)
#                 is full-tier; one short run on tests/worlds/fast.ini may
#                 be quick. make check must stay under a minute on 2
#                 shared cores (docs/performance.md, "test-loop times").
#   --list        print the names that would run, run nothing.
#   PATTERN       shell glob on the name or on the part after the slash:
#                 'unit/test_verdict*', 'integration/q_*', 'q_teardown'.
#
# Env: MOEPROBE, REFENGINE (binaries under test), BUILD (build dir with tests/
# and fuzz-replay/; default build/san), FUZZ_SMOKE_SECONDS, RUNSH_ROOT=DIR
# (take integration scripts from DIR/tests/integration instead: tests of this
# runner use it), MOEPROBE_TEST_TIMEOUT_MULTIPLIER (default 1; passed on to
# the few scripts whose timeouts a loaded machine can outrun, which scale
# them with q_lib.sh's tmul).
#
# Every test runs with a unique MOEPROBE_TEST_MARKER in its environment; all
# processes it starts inherit it (escapees too), so after the test any process
# still carrying it is a leftover: it is killed and the test fails (exit 99).
# The marker is per test, so tests running side by side do not see each
# other's processes. Each test also gets a TMPDIR of its own (removed after
# it). Integration scripts isolate themselves (mktemp -d, ports the kernel
# picks, podman storage and Slurm daemons under their temp dir).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
: "${BUILD:=$root/build/san}"
: "${MOEPROBE:=$BUILD/bin/moeprobe}"
: "${REFENGINE:=$BUILD/bin/refengine}"
: "${MOEPROBE_TEST_TIMEOUT_MULTIPLIER:=1}"
# the scripts may change directory: relative paths are made absolute
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
BUILD=$(abs "$BUILD") MOEPROBE=$(abs "$MOEPROBE") REFENGINE=$(abs "$REFENGINE")
export MOEPROBE REFENGINE BUILD ROOT="$root" MOEPROBE_TEST_TIMEOUT_MULTIPLIER
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
itests="${RUNSH_ROOT:-$root}/tests/integration"

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
jobs=1 tier=full list=0 pats=()
while [ $# -gt 0 ]; do
    case "$1" in
    -j) [ $# -ge 2 ] || usage; jobs=$2; shift ;;
    -j*) jobs=${1#-j} ;;
    --tier) [ $# -ge 2 ] || usage; tier=$2; shift ;;
    --tier=*) tier=${1#--tier=} ;;
    --list) list=1 ;;
    -h | --help) usage ;;
    -*) echo "run.sh: unknown option $1" >&2; usage ;;
    *) pats+=("$1") ;;
    esac
    shift
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: -j wants a positive number, not '$jobs'" >&2; exit 2; }
case "$tier" in quick | full) ;; *) echo "run.sh: --tier is quick or full, not '$tier'" >&2; exit 2 ;; esac
awk -v m="$MOEPROBE_TEST_TIMEOUT_MULTIPLIER" 'BEGIN { exit !(m ~ /^[0-9]*\.?[0-9]+$/ && m + 0 > 0) }' ||
    { echo "run.sh: MOEPROBE_TEST_TIMEOUT_MULTIPLIER must be a number > 0" >&2; exit 2; }
# wait -n -p (which job ended) needs bash 5.1
if [ "$jobs" -gt 1 ] && { [ "${BASH_VERSINFO[0]}" -lt 5 ] ||
    { [ "${BASH_VERSINFO[0]}" -eq 5 ] && [ "${BASH_VERSINFO[1]}" -lt 1 ]; }; }; then
    echo "run.sh: -j needs bash >= 5.1; running one test at a time" >&2
    jobs=1
fi

# the selection: NAME, KIND (unit|replay|smoke-build|smoke|integration), PATH
names=() kinds=() paths=()
wanted() { # NAME: matches a pattern (or there is none)
    local p
    [ ${#pats[@]} -eq 0 ] && return 0
    for p in "${pats[@]}"; do
        # shellcheck disable=SC2053
        [[ $1 == $p || ${1#*/} == $p ]] && return 0
    done
    return 1
}
add() { wanted "$1" || return 0; names+=("$1"); kinds+=("$2"); paths+=("$3"); }

for t in "$BUILD"/tests/test_*; do
    [ -f "$t" ] && [ -x "$t" ] && add "unit/$(basename "$t")" unit "$t"
done
for f in "$BUILD"/fuzz-replay/fuzz_*; do
    [ -f "$f" ] && [ -x "$f" ] && add "fuzz-replay/$(basename "$f")" replay "$f"
done
first_pool=${#names[@]}
if [ "$tier" = full ] && [ "${FUZZ_SMOKE_SECONDS:-0}" -gt 0 ] 2>/dev/null; then
    for src in "$root"/tests/fuzz/fuzz_*.c; do
        n=$(basename "$src" .c)
        add "fuzz-smoke/$n" smoke "${n#fuzz_}"
    done
    # build once, before any smoke run that was selected
    if [ ${#names[@]} -gt "$first_pool" ]; then
        names=("${names[@]:0:first_pool}" fuzz-smoke/build "${names[@]:first_pool}")
        kinds=("${kinds[@]:0:first_pool}" smoke-build "${kinds[@]:first_pool}")
        paths=("${paths[@]:0:first_pool}" - "${paths[@]:first_pool}")
    fi
fi
for s in "$itests"/*.sh; do
    [ -x "$s" ] || continue
    [ "$tier" = quick ] && ! head -n 30 "$s" | grep -qx '# tier: quick' && continue
    add "integration/$(basename "$s" .sh)" integration "$s"
done

if [ "$list" = 1 ]; then
    [ ${#names[@]} -eq 0 ] || printf '%s\n' "${names[@]}"
    exit 0
fi
if [ ${#names[@]} -eq 0 ]; then
    echo "run.sh: no test matches ${pats[*]:-(no pattern)} in tier $tier" >&2
    exit 2
fi

logdir=$(mktemp -d /tmp/moeprobe-tests.XXXXXX)

leftovers() { # MARKER: pids of processes carrying it (one grep over every environ)
    local f
    for f in $(grep -lszxF "MOEPROBE_TEST_MARKER=$1" /proc/[0-9]*/environ); do
        f=${f#/proc/}; echo "${f%/environ}"
    done
}

# run_one I: runs test I; its log is $logdir/NAME.log (slashes as _); writes "RC SECONDS" to
# $logdir/I.rc. Runs in a subshell of its own when -j > 1.
run_one() {
    local i=$1 name=${names[$1]} kind=${kinds[$1]} path=${paths[$1]}
    local log="$logdir/${name//\//_}.log" t0=$EPOCHREALTIME rc cmd n
    local marker="t$$-$BASHPID-$i-$RANDOM"
    case "$kind" in
    unit | integration) cmd=("$path") ;;
    replay) n=$(basename "$path"); cmd=("$path" "$root/tests/fuzz/corpus/${n#fuzz_}") ;;
    smoke-build) cmd=("$root/scripts/fuzz-smoke.sh" build) ;;
    smoke) cmd=("$root/scripts/fuzz-smoke.sh" run "$path" "$FUZZ_SMOKE_SECONDS") ;;
    esac
    # a TMPDIR of its own: what a test's programs keep there (refengine's
    # crash-site rotation counter) is not shared with the tests beside it
    local tmp="$logdir/tmp.$i"
    mkdir -p "$tmp"
    TMPDIR=$tmp MOEPROBE_TEST_MARKER=$marker "${cmd[@]}" >"$log" 2>&1 </dev/null
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
    rm -rf "$tmp"
    echo "$rc $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')" >"$logdir/$i.rc"
}

pass=0 fail=0 skip=0 failed_names=()
report() { # I: print the verdict line of test I (and the failure's log tail)
    local i=$1 name=${names[$1]} rc dt log="$logdir/${names[$1]//\//_}.log"
    read -r rc dt <"$logdir/$i.rc" || { rc=98 dt=0; }
    times[$name]=$dt
    if [ "$rc" -eq 0 ]; then
        pass=$((pass + 1)); printf 'PASS %-50s %ss\n' "$name" "$dt"
    elif [ "$rc" -eq 77 ]; then
        skip=$((skip + 1)); printf 'SKIP %-50s %s\n' "$name" "$(tail -n 1 "$log")"
    else
        fail=$((fail + 1)); failed_names+=("$name")
        printf 'FAIL %-50s (exit %d)\n' "$name" "$rc"
        sed 's/^/    | /' "$log" | tail -n 60
    fi
}

# what each test took last time, longest first in the second pool
declare -A times=()
tfile="$BUILD/test-times"
if [ -r "$tfile" ]; then
    while read -r n d; do times[$n]=$d; done <"$tfile"
fi

# Side by side, each test runs as a job of its own (set -m): in its own
# process group and, unlike a background command without job control, with
# SIGINT and SIGQUIT not ignored (tests send them to moeprobe). Interrupted,
# the runner stops every running test's group; their traps clean up.
declare -A running=()
if [ "$jobs" -gt 1 ]; then
    set -m
    stop_all() {
        local pid
        for pid in "${!running[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
        wait
        echo "run.sh: interrupted; logs in $logdir" >&2
        exit 130
    }
    trap stop_all INT TERM
fi
pool() { # I...: run these tests, at most $jobs at a time
    local i pid
    for i in "$@"; do
        if [ "$jobs" -eq 1 ]; then
            run_one "$i"; report "$i"; continue
        fi
        while [ ${#running[@]} -ge "$jobs" ]; do
            wait -n -p pid; report "${running[$pid]}"; unset "running[$pid]"
        done
        run_one "$i" &
        running[$!]=$i
    done
    while [ ${#running[@]} -gt 0 ]; do
        wait -n -p pid; report "${running[$pid]}"; unset "running[$pid]"
    done
}

idx_first=() idx_build=() idx_rest=()
for i in "${!names[@]}"; do
    case "${kinds[$i]}" in
    unit | replay) idx_first+=("$i") ;;
    smoke-build) idx_build+=("$i") ;;
    *) idx_rest+=("$i") ;;
    esac
done
if [ ${#idx_rest[@]} -gt 1 ]; then # longest last time first; unknown first of all
    mapfile -t idx_rest < <(for i in "${idx_rest[@]}"; do
        echo "${times[${names[$i]}]:-1e9} $i"; done | sort -k1,1gr -s | cut -d' ' -f2)
fi
pool ${idx_first[@]+"${idx_first[@]}"}
pool ${idx_build[@]+"${idx_build[@]}"}
pool ${idx_rest[@]+"${idx_rest[@]}"}
[ ${#idx_build[@]} -gt 0 ] && [ -s "$root/build/fuzz/smoke-summary.txt" ] &&
    sed 's/^/     /' "$root/build/fuzz/smoke-summary.txt"

if [ -d "$BUILD" ] && [ -w "$BUILD" ]; then
    for n in "${!times[@]}"; do echo "$n ${times[$n]}"; done | sort >"$tfile.tmp" && mv -f "$tfile.tmp" "$tfile"
fi

echo
if [ $fail -gt 0 ]; then
    echo "failed: ${failed_names[*]}"
    echo "logs in $logdir"
else
    rm -rf "$logdir"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
