#!/bin/bash
# tier: quick
# version_cli.sh - `moeprobe version` (and --version) names the git commit
# the binary was built from (#29: it printed the version alone), so a report
# or an issue can say exactly which moeprobe ran.
set -u
: "${MOEPROBE:?}" "${ROOT:?}"
fail() { echo "FAIL: $*"; exit 1; }
out=$("$MOEPROBE" version) || fail "exit $?"
echo "$out" | grep -Eq '^moeprobe [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{7,40}(-dirty)?|unknown)\)$' ||
    fail "'$out'"
[ "$("$MOEPROBE" --version)" = "$out" ] || fail "--version differs"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    head=$(git -C "$ROOT" rev-parse --short=12 HEAD)
    echo "$out" | grep -q "(commit $head" || fail "'$out' is not HEAD $head (a stale build?)"
fi
echo "ok: $out"
