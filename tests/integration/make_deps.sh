#!/bin/bash
# tier: quick
# make_deps.sh - the build needs no test framework and says how to get what
# it lacks (issue #29): with cmocka missing (a stub pkg-config on PATH),
# `scripts/deps.sh check` (what plain make runs) passes and the compile
# lines of `make all` name no cmocka and no test, while `check test` (make
# check, unit, integration) names libcmocka-dev; a non-root user is told
# `sudo apt-get install -y ...` and nothing is installed, root is told
# `apt-get install -y ...` and `install` runs apt-get (a stub) for exactly
# the missing packages, `install build` only for the build ones. Plain make
# builds `all` (the default goal: moeprobe and refengine, no test and no
# benchmark: the issue found it building the benchmarks), and `make unit`, `integration`,
# `fuzz-replay` and `check` run tests/run.sh with their selection.
set -u
: "${ROOT:?}"
t=$(mktemp -d /tmp/mp-deps.XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$t/bin"
# stubs: pkg-config knows every package but those in $STUB_MISSING; id -u
# says $STUB_UID; apt-get records its arguments
cat >"$t/bin/pkg-config" <<'EOF'
#!/bin/sh
[ "$1" = --exists ] || exec /usr/bin/pkg-config "$@"
for m in $STUB_MISSING; do [ "$m" = "$2" ] && exit 1; done
exit 0
EOF
cat >"$t/bin/id" <<'EOF'
#!/bin/sh
[ "$1" = -u ] && { echo "$STUB_UID"; exit 0; }
exec /usr/bin/id "$@"
EOF
cat >"$t/bin/apt-get" <<'EOF'
#!/bin/sh
echo "$*" >>"$STUB_APT"
EOF
chmod +x "$t/bin/"*
export STUB_APT="$t/apt.log"
deps() { # UID MISSING ARGS...: scripts/deps.sh ARGS with the stubs; sets rc, output in $t/out
    local uid=$1 miss=$2; shift 2
    : >"$STUB_APT"
    PATH="$t/bin:$PATH" STUB_UID=$uid STUB_MISSING=$miss "$ROOT/scripts/deps.sh" "$@" >"$t/out" 2>&1
    rc=$?
}

deps 1000 cmocka check
[ $rc -eq 0 ] || fail "deps.sh check wants cmocka: $(cat "$t/out")"
deps 1000 cmocka check test
[ $rc -eq 1 ] || fail "deps.sh check test without cmocka: exit $rc"
grep -qx '    sudo apt-get install -y libcmocka-dev' "$t/out" || fail "check test, non-root: $(cat "$t/out")"
deps 0 "cmocka libcurl" check test
grep -qx '    apt-get install -y libcmocka-dev libcurl4-openssl-dev' "$t/out" || fail "check test, root: $(cat "$t/out")"
deps 1000 libcurl install
[ $rc -eq 1 ] && [ ! -s "$STUB_APT" ] || fail "install as non-root ran apt-get or passed"
grep -qx '    sudo apt-get install -y libcurl4-openssl-dev' "$t/out" || fail "install, non-root: $(cat "$t/out")"
deps 0 "libcurl cmocka" install
[ $rc -eq 0 ] || fail "install as root: exit $rc: $(cat "$t/out")"
grep -q '^install .* libcmocka-dev libcurl4-openssl-dev$' "$STUB_APT" || fail "apt-get got: $(cat "$STUB_APT")"
deps 0 "libcurl cmocka" install build
grep -q '^install .* libcurl4-openssl-dev$' "$STUB_APT" || fail "install build, apt-get got: $(cat "$STUB_APT")"
deps 0 "" install
[ $rc -eq 0 ] && [ ! -s "$STUB_APT" ] || fail "install with nothing missing ran apt-get"
deps 0 "" frob
[ $rc -eq 2 ] || fail "unknown mode: exit $rc"

cd "$ROOT" || exit 2
# plain make: the default goal is all, its deps step passes without cmocka,
# and none of its compile lines is a test or names cmocka (into an empty
# build dir, so every line is printed)
goal=$(make -pq 2>/dev/null | sed -n 's/^\.DEFAULT_GOAL := //p')
[ "$goal" = all ] || fail "default goal '$goal', want all"
PATH="$t/bin:$PATH" STUB_UID=1000 STUB_MISSING=cmocka make -s --no-print-directory deps >"$t/out" 2>&1 ||
    fail "make deps without cmocka: $(cat "$t/out")"
make -n --no-print-directory B="$t/b" all >"$t/all.n" 2>&1 || fail "make -n all: $(tail -n 3 "$t/all.n")"
grep -q -- '-o .*/bin/moeprobe' "$t/all.n" && grep -q -- '-o .*/bin/refengine' "$t/all.n" ||
    fail "make all does not link moeprobe and refengine"
grep -E 'cmocka|tests/(unit|fuzz)|bench/' "$t/all.n" && fail "make all builds something of the tests or the benchmarks"
# the test targets run the runner with their selection (they are not names
# without a rule, which make answers with "Nothing to be done" and exit 0)
for tg in "unit:'unit/\*'" "integration:'integration/\*'" "fuzz-replay:'fuzz-replay/\*'" "check:--tier quick"; do
    make -n --no-print-directory "${tg%%:*}" >"$t/n" 2>&1 || fail "make -n ${tg%%:*}: $(tail -n 3 "$t/n")"
    grep -q "tests/run.sh -j[0-9]* ${tg#*:}\$" "$t/n" || fail "make ${tg%%:*} runs no tests/run.sh ${tg#*:}: $(tail -n 3 "$t/n")"
done
echo "ok: make without cmocka, deps.sh with sudo, default goal all, test targets run tests"
