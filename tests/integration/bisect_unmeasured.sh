#!/bin/bash
# bisect_unmeasured.sh - a build whose output cannot be compared with the
# good build's is not vouched for: u2 refuses logprobs (--max-logprobs 0, as
# a vLLM started so does), so with the task gate off nothing says it computes
# the right thing; bisect still counts its clean verdict as good, and its
# probe says that correctness was not established (#23/#26: say so rather
# than guess). u1 healthy, u3 and u4 fluent but wrong (worlds/bisect/wrong-*).
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "python3 is needed to read report.json"; exit 77; }
E="$Q_TMP/engines"
mkdir -p "$E"
for b in 1 2 3 4; do
    extra=
    [ $b = 2 ] && extra="--max-logprobs 0"
    printf '#!/bin/sh\nexec "%s" --world "%s" %s "$@"\n' "$REFENGINE" "$W/bisect/wrong-w$b.ini" "$extra" >"$E/u$b"
    chmod +x "$E/u$b"
done
D="$Q_TMP/unmeasured"
"$MOEPROBE" bisect --out "$D" --good u1 --bad u4 --build u1 --build u2 --build u3 --build u4 \
    --quiet --seq 2 --conc 2:2 --max-tokens 8 --no-diagnose --agreement 6 --accuracy 0 \
    -- "$E/{build}" --port '{port}' >"$Q_TMP/unm.out" 2>"$Q_TMP/unm.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/unm.err"; fail "exit $rc"; }
check "$D/report.json" 'r["first_bad"] == "u3" and r["last_good"] == "u2"' \
    '[p for p in r["probes"] if p["build"] == "u2"][0]["outcome"] == "good"' \
    '"correctness not established" in [p for p in r["probes"] if p["build"] == "u2"][0]["why"]' \
    'not any("correctness not established" in p["why"] for p in r["probes"] if p["build"] != "u2")' ||
    { cat "$D/report.json"; fail "report.json"; }
grep -q "correctness not established" "$D/report.md" || fail "report.md does not say it"
assert_no_leftovers
echo "ok: a build whose output could not be compared is good by its verdict, and says so"
