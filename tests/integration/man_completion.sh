#!/bin/bash
# tier: quick
# man_completion.sh - `man moeprobe` and bash completion (#29 item 4): the
# committed docs/moeprobe.1 is what scripts/gen-man.py makes of the
# template and each command's --help (so its options are the binary's),
# groff renders it without a warning, `make install` installs it and the
# completion; the completion offers the commands, a command's own options
# only (resolve has no --seq), and the values of --preset, --format, --api.
set -u
: "${MOEPROBE:?}" "${ROOT:?}"
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d /tmp/man-completion.XXXXXX)
trap 'rm -rf "$T"' EXIT
python3 "$ROOT/scripts/gen-man.py" "$MOEPROBE" "$T/moeprobe.1" || fail "gen-man"
cmp -s "$T/moeprobe.1" "$ROOT/docs/moeprobe.1" ||
    { diff -u "$ROOT/docs/moeprobe.1" "$T/moeprobe.1" | head -20; fail "docs/moeprobe.1 is stale: run scripts/gen-man.py ./moeprobe"; }
for o in --clean-env --engine-version --only --conc --concurrency --base-url --good --from; do
    grep -qF ".B $(echo "$o" | sed 's/-/\\-/g')" "$ROOT/docs/moeprobe.1" || fail "the man page lacks $o"
done
if command -v groff >/dev/null; then
    groff -man -Tutf8 -ww -z "$ROOT/docs/moeprobe.1" 2>"$T/groff.err"
    [ ! -s "$T/groff.err" ] || { cat "$T/groff.err"; fail "groff warns"; }
fi
make -C "$ROOT" -n install DESTDIR="$T/dest" PREFIX=/usr >"$T/install.txt" 2>&1
grep -q "docs/moeprobe.1 .*/usr/share/man/man1/moeprobe.1" "$T/install.txt" || fail "make install: no man page"
grep -q "completions/moeprobe.bash .*/usr/share/bash-completion/completions/moeprobe" "$T/install.txt" ||
    fail "make install: no completion"

complete_words() { # WORD... : the completions of the last word
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _moeprobe; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$ROOT/completions/moeprobe.bash" "$MOEPROBE" "$@"
}
[ "$(complete_words res)" = resolve ] || fail "command: $(complete_words res)"
complete_words qualify --se | grep -qx -- --seq || fail "qualify --se: $(complete_words qualify --se)"
[ -z "$(complete_words resolve --se)" ] || fail "resolve offers $(complete_words resolve --se)"
complete_words soak --con | grep -qx -- --concurrency || fail "soak --con"
! complete_words soak --con | grep -qx -- --conc || fail "soak offers --conc"
[ "$(complete_words qualify --preset '')" = sm12x-nvfp4 ] || fail "--preset"
[ "$(complete_words report --format h)" = html ] || fail "--format"
# the overview (moeprobe --help) names the bug-report format the completion offers
"$MOEPROBE" --help | grep -q "^  report   --format issue \[--candidate NAME\] RUNDIR$" || fail "moeprobe --help lacks report --format issue"
[ "$(complete_words qualify --api c | tr '\n' ' ')" = "completions chat " ] || fail "--api"
echo ok
