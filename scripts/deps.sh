#!/bin/sh
# deps.sh check|install|list - build dependencies of moeprobe.
#
# check:   exit 1 and name the missing Debian/Ubuntu packages.
# install: apt-get install what is missing when run as root; otherwise print
#          the one command to run and exit 1.
# Each line: pkg-config name (or "cmd:NAME" for a program) and the package.
set -u
DEPS="libcurl:libcurl4-openssl-dev
sqlite3:libsqlite3-dev
libcjson:libcjson-dev
libpcre2-8:libpcre2-dev
cmocka:libcmocka-dev
cmd:pkg-config:pkg-config
cmd:cc:gcc
cmd:make:make"
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
    done | sort -u | tr '\n' ' '
}

mode=${1:-check}
case "$mode" in
check)
    m=$(missing "$DEPS")
    if [ -n "$m" ]; then
        echo "moeprobe: missing build dependencies; install them with:" >&2
        echo "    apt-get install -y $m" >&2
        exit 1
    fi
    ;;
install)
    m=$(missing "$DEPS
$TEST_DEPS")
    [ -z "$m" ] && exit 0
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "moeprobe: installing build dependencies: $m" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null || true
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $m >/dev/null || {
            echo "moeprobe: apt-get install failed for: $m" >&2
            exit 1
        }
    else
        echo "moeprobe: missing dependencies; run as root:" >&2
        echo "    apt-get install -y $m" >&2
        exit 1
    fi
    ;;
*)
    echo "usage: $0 check|install" >&2
    exit 2
    ;;
esac
