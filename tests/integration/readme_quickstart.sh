#!/bin/bash
# readme_quickstart.sh - the README's quick start works as written (#29 item
# 4): the lines between <!-- quickstart:refengine --> and <!-- /quickstart -->
# run, word for word, in a directory laid out like a checkout (./moeprobe,
# ./refengine/refengine and worlds/ are the binaries and worlds under test),
# and give what the README says: a recommendation (exit 0), report.md with
# its first screen, report.html; the real Spark command beside it is the same
# command with the server in place of refengine, so the two stay in step:
# every option the quick start gives moeprobe is an option of qualify. The
# sample output the README shows is what the quick start prints (but speeds).
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
fail() { echo "FAIL: $*"; for f in "$T"/*.err; do [ -f "$f" ] && tail -n 20 "$f"; done; exit 1; }
T=$(mktemp -d /tmp/readme-quickstart.XXXXXX)
trap 'rm -rf "$T"' EXIT
awk '/<!-- quickstart:refengine/ {on = 1; next} /<!-- \/quickstart -->/ {on = 0}
     on && !/^```/ {print}' "$ROOT/README.md" >"$T/quickstart.sh"
grep -q '^\./moeprobe qualify ' "$T/quickstart.sh" || fail "no quick start in README.md: $(cat "$T/quickstart.sh")"
mkdir -p "$T/co/refengine"
ln -s "$MOEPROBE" "$T/co/moeprobe"
ln -s "$REFENGINE" "$T/co/refengine/refengine"
ln -s "$ROOT/worlds" "$T/co/worlds"
(cd "$T/co" && bash -eu "$T/quickstart.sh") >"$T/out.md" 2>"$T/run.err" || fail "the quick start failed: exit $?"
R="$T/co/first-run"
[ -s "$R/report.md" ] && [ -s "$R/report.html" ] && [ -s "$R/report.json" ] || fail "no reports"
grep -q '^## Candidates' "$R/report.md" && grep -q '^## Next steps' "$R/report.md" || fail "report.md first screen"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(r["recommendation"] is None)' \
    "$R/report.json" || fail "no recommendation"
grep -q '^recommendation: cutlass' "$T/run.err" || fail "the README's sample says cutlass is recommended"
# the README's sample output is this run's: the terminal summary's
# candidate, verdict and backend columns, the recommendation and the serve
# command word for word; the first screen's columns up to the backend
awk '/^The terminal summary of the quick start/ {on = 1; next} on && /^```$/ {n++; if (n == 2) exit; next}
     on && n == 1' "$ROOT/README.md" >"$T/sample.txt"
grep -q '^recommendation: ' "$T/sample.txt" || fail "no sample summary in README.md"
cols() { awk '/^  [a-z]/ {print $1, $2, $3} /^(recommendation|serve it with): / {print}'; }
cols <"$T/sample.txt" >"$T/sample.cols"
sed -n '/^moeprobe: run directory first-run$/,$p' "$T/run.err" | cols >"$T/run.cols"
diff "$T/sample.cols" "$T/run.cols" >"$T/cols.diff" || fail "README's sample summary is not the quick start's: $(cat "$T/cols.diff")"
for n in auto cutlass; do
    want=$(grep "^| $n |" "$R/report.md" | cut -d'|' -f2-4)
    [ -n "$want" ] && grep -qF "$want" "$ROOT/README.md" || fail "README's sample row of $n is not the report's: $want"
done
# the Spark command beside it: the same moeprobe options
spark=$(awk '/^### On a DGX Spark/ {on = 1} on && /^moeprobe qualify/ {print; exit}' "$ROOT/README.md")
[ -n "$spark" ] || fail "no Spark command in README.md"
for o in $(echo "$spark" | grep -o -- ' --[a-z-]*' ); do
    "$MOEPROBE" qualify --help | grep -q -- "^  $o" || fail "the Spark command's $o is no qualify option"
done
echo "ok: the quick start runs as written"
