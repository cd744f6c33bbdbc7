#!/bin/sh
# deps.sh check [test] | install [build] - dependencies of moeprobe.
#
# check:        exit 1 and name the missing Debian/Ubuntu packages needed to
#               build moeprobe and refengine (plain make; no test framework).
# check test:   the same, plus what the tests link (cmocka): make check,
#               make unit, make integration.
# install:      apt-get install everything missing (build, test and the optional
#               tools below) when run as root; otherwise print the one
#               command to run (with sudo) and exit 1. make test uses it.
# install build: the same for the build dependencies only (make demo).
# Each line: pkg-config name (or "cmd:NAME" for a program) and the package.
set -u
DEPS="libcurl:libcurl4-openssl-dev
sqlite3:libsqlite3-dev
libcjson:libcjson-dev
libpcre2-8:libpcre2-dev
cmd:pkg-config:pkg-config
cmd:cc:gcc
cmd:make:make"
# What the unit tests link.
UNIT_DEPS="cmocka:libcmocka-dev"
# Optional tools used by tests/benchmarks (installed by 'install', not required by 'check').
TEST_DEPS="cmd:clang:clang
cmd:python3:python3
cmd:curl:curl"

missing() {
    echo "$1" | while IFS= read -r line; do
        [ -n "$line" ] || continue
        pkg=${line##*:}
        name=${line%:*}
        case "$name" in
        cmd:*) command -v "${name#cmd:}" >/dev/null 2>&1 || echo "$pkg" ;;
        *) pkg-config --exists "$name" 2>/dev/null || echo "$pkg" ;;
        esac
    done | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# the command a user runs: root runs apt-get itself, anyone else through sudo
apt_cmd() {
    if [ "$(id -u)" -eq 0 ]; then echo "apt-get install -y $1"; else echo "sudo apt-get install -y $1"; fi
}

mode=${1:-check}
set_=${2:-}
case "$mode $set_" in
"check " | "check test")
    want=$DEPS
    [ "$set_" = test ] && want="$DEPS
$UNIT_DEPS"
    m=$(missing "$want")
    if [ -n "$m" ]; then
        echo "moeprobe: missing build dependencies; install them with:" >&2
        echo "    $(apt_cmd "$m")" >&2
        exit 1
    fi
    ;;
"install " | "install build")
    want="$DEPS
$UNIT_DEPS
$TEST_DEPS"
    [ "$set_" = build ] && want=$DEPS
    m=$(missing "$want")
    [ -z "$m" ] && exit 0
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "moeprobe: installing dependencies: $m" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null || true
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $m >/dev/null || {
            echo "moeprobe: apt-get install failed for: $m" >&2
            exit 1
        }
    else
        echo "moeprobe: missing dependencies; install them with:" >&2
        echo "    $(apt_cmd "$m")" >&2
        exit 1
    fi
    ;;
*)
    echo "usage: $0 check [test] | install [build]" >&2
    exit 2
    ;;
esac
