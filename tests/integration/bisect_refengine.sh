#!/bin/bash
# bisect_refengine.sh - `moeprobe bisect` over refengine builds on the host:
# worlds/bisect/<kind>-{build}.ini stands for one engine build each.
#  1. a verdict change (a faulty kernel from v4 on), --builds FILE with
#     comments: first bad v4, last good v3; the bad build is probed first and
#     sets the clean requests per probe from its measured failure rate;
#     report.json/md/html agree; the store holds every probe;
#  (a resolved-backend change and a slowdown: bisect_by.sh)
#  4. two builds only: a side-by-side comparison (exit 0, they differ) and,
#     under --by resolved, two builds that resolve alike (exit 1);
#  5. usage errors: no {build}, good not in the list, a bad --by (exit 2).
. "$(dirname "$0")/q_lib.sh"
WB="$W/bisect"
FAST=(--quiet --seq 3 --conc 2:4 --max-tokens 16 --no-diagnose --agreement 0 --accuracy 0)
# bisect NAME KIND ARGS...: a bisection in $Q_TMP/NAME over WB/KIND-{build}.ini
bisect() {
    local name=$1 kind=$2; shift 2
    B_DIR="$Q_TMP/$name"
    "$MOEPROBE" bisect --out "$B_DIR" "$@" -- "$REFENGINE" --world "$WB/$kind-{build}.ini" \
        --port '{port}' >"$Q_TMP/$name.out" 2>"$Q_TMP/$name.err"
    B_RC=$?
}
probes() { # REPORT: "build:outcome ..." in probe order
    python3 -c 'import json,sys; print(" ".join(p["build"] + ":" + str(p["outcome"]) for p in json.load(open(sys.argv[1]))["probes"]))' "$1"
}

# 1. verdict change
printf '# release order\nv1\nv2   # a comment\n\nv3\nv4\nv5\n' >"$Q_TMP/builds.txt"
bisect verdict verdict --good v1 --bad v5 --builds "$Q_TMP/builds.txt" "${FAST[@]}"
[ $B_RC -eq 0 ] || { cat "$Q_TMP/verdict.err"; fail "verdict: exit $B_RC"; }
check "$B_DIR/report.json" 'r["first_bad"] == "v4" and r["last_good"] == "v3"' \
    'r["by"] == "verdict" and r["finished"] is True and r["comparison"] is False' \
    'r["builds"] == ["v1", "v2", "v3", "v4", "v5"]' \
    '[p["build"] for p in r["probes"]][:2] == ["v5", "v1"]' \
    'r["requests_required"] == 11 and "95 %" in r["required_why"]' \
    'all(p["requests_required"] == 11 for p in r["probes"][1:])' \
    '0.95 <= r["confidence"] < 1' \
    '[f["field"] for f in r["difference"]["fields"] if f["differs"]][:1] == ["engine_version"]' \
    '{f["field"]: f["first_bad"] for f in r["difference"]["fields"]}["verdict"] == "crashed"' \
    'all(p["evidence"] for p in r["probes"]) and len(r["candidates"]) == len(r["probes"])' \
    '[p["failure_rate_upper_95"] is not None for p in r["probes"]] == [False, True, True, False]' ||
    fail "verdict: report.json"
[ "$(probes "$B_DIR/report.json")" = "v5:bad v1:good v3:good v4:bad" ] || fail "verdict: probes $(probes "$B_DIR/report.json")"
grep -q '^\*\*first bad build v4, last good build v3\*\* (confidence 0\.9' "$B_DIR/report.md" || fail "verdict: report.md answer"
grep -q '^| \*\*verdict\*\* | stable | crashed |' "$B_DIR/report.md" || fail "verdict: report.md difference"
grep -q '<tr class="differs"><th>verdict</th><td>stable</td><td>crashed</td>' "$B_DIR/report.html" || fail "verdict: report.html"
[ "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select group_concat(build||\":\"||outcome, \" \") from (select * from bisect_probes order by step)").fetchone()[0])' "$B_DIR/moeprobe.db")" = "v5:bad v1:good v3:good v4:bad" ] ||
    fail "verdict: the store's probes"
# `moeprobe report` renders the bisection again, from the store alone
"$MOEPROBE" report --format json "$B_DIR" >"$Q_TMP/again.json" || fail "report: exit $?"
check "$Q_TMP/again.json" 'r["first_bad"] == "v4" and len(r["probes"]) == 4' || fail "report of a bisect run"

# 4. two builds: side by side
bisect two verdict --good v2 --bad v5 "${FAST[@]}"
[ $B_RC -eq 0 ] || { cat "$Q_TMP/two.err"; fail "two: exit $B_RC"; }
check "$B_DIR/report.json" 'r["comparison"] is True and r["builds"] == ["v2", "v5"]' \
    'r["first_bad"] == "v5" and r["last_good"] == "v2" and len(r["probes"]) == 2' || fail "two: report.json"
grep -q '^# moeprobe: two builds compared' "$B_DIR/report.md" && grep -q '^## Side by side' "$B_DIR/report.md" ||
    fail "two: report.md"
bisect same backend --good r3 --bad r5 --by resolved "${FAST[@]}"
[ $B_RC -eq 1 ] || { cat "$Q_TMP/same.err"; fail "same: exit $B_RC, want 1"; }
check "$B_DIR/report.json" 'r["first_bad"] is None and "nothing to bisect" in r["summary"]' || fail "same: report.json"

# a build named with a terminal control sequence (a list is outside input):
# the progress lines escape it, as every message does
mkdir -p "$Q_TMP/escw"
ESC_B=$'b\e[31m'
cp "$WB/verdict-v1.ini" "$Q_TMP/escw/g.ini"
cp "$WB/verdict-v5.ini" "$Q_TMP/escw/$ESC_B.ini"
"$MOEPROBE" bisect --out "$Q_TMP/esc" --good g --bad "$ESC_B" --seq 3 --conc 2:4 --max-tokens 16 --no-diagnose --agreement 0 --accuracy 0 \
    -- "$REFENGINE" --world "$Q_TMP/escw/{build}.ini" --port '{port}' >/dev/null 2>"$Q_TMP/esc.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/esc.err"; fail "escaped build name: exit $rc"; }
grep -q 'probe 1: build b\\x1b\[31m (the bad build first' "$Q_TMP/esc.err" || { cat -v "$Q_TMP/esc.err"; fail "no escaped probe line"; }
if grep -q $'\e' "$Q_TMP/esc.err"; then cat -v "$Q_TMP/esc.err"; fail "a raw ESC reached stderr"; fi

# 5. usage errors
for args in "--good v1 --bad v5 -- $REFENGINE --world x.ini" "--good v9 --bad v5 --build v1 --build v5 -- x {build}" \
    "--good v1 --bad v5 --by speed -- x {build}" "--good v1 -- x {build}" "--good v1 --bad v5 --probe-requests 0 -- x {build}"; do
    # shellcheck disable=SC2086
    "$MOEPROBE" bisect --out "$Q_TMP/usage" $args >/dev/null 2>"$Q_TMP/usage.err"; rc=$?
    [ $rc -eq 2 ] || { cat "$Q_TMP/usage.err"; fail "bisect $args: exit $rc, want 2"; }
    [ -e "$Q_TMP/usage/moeprobe.db" ] && fail "bisect $args: left a store behind"
done
assert_no_leftovers
echo "ok"
