#!/bin/bash
# soak_options.sh - soak honours the shared options that make sense for one
# candidate under steady load, and refuses the others naming them (#16):
# --only picks the one candidate among several --candidate (also written
# --candidate=...), several without --only and an --only naming none or two
# are usage errors (counted from the parsed options: --cand is --candidate),
# an explicit --preset of several candidates without --only is refused, an
# abbreviated --cand is soaked, --conc LEVEL:REQUESTS is refused pointing at
# --concurrency, --seq N adds a sequential phase of N requests before the
# soak phase, --prefill-check N runs its long-prompt phase before it;
# report.md is titled a soak report and shows the soak phase's
# throughput; --model-dir joins the fingerprint (a bad one is a usage error).
set -u
: "${MOEPROBE:?}" "${REFENGINE:?}" "${ROOT:?}"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
T=$(mktemp -d /tmp/soak-options.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.err; do echo "== $f"; tail -n 20 "$f"; done; exit 1; }
ENGINE=(-- "$REFENGINE" serve --world "$ROOT/tests/worlds/fast.ini" --port '{port}')
q() { sqlite3 -cmd '.timeout 5000' "$T/$1/moeprobe.db" "$2"; }

# usage errors: exit 2, the flag named, no run directory left behind
usage() { # NAME WANT-IN-STDERR ARGS...
    local name=$1 want=$2
    shift 2
    "$MOEPROBE" soak --duration 1s --out "$T/$name" "$@" "${ENGINE[@]}" >/dev/null 2>"$T/$name.err"
    local rc=$?
    [ $rc -eq 2 ] || fail "$name: exit $rc, want 2"
    grep -q -- "$want" "$T/$name.err" || fail "$name: stderr does not say '$want'"
    [ ! -e "$T/$name/moeprobe.db" ] || fail "$name: a usage error left a store"
}
usage several "pick one with --only NAME" --candidate 'a: ' --candidate 'b: SOME_FLAG=1'
usage nomatch "--only 'zz' matches no candidate" --candidate 'a: ' --candidate 'b: X=1' --only zz
usage twomatch "--only 'a,b' names more than one candidate" --candidate 'a: ' --candidate 'b: X=1' --only a,b
usage conc "give the level as --concurrency N" --conc 4:16
# what was given is read from the parsed options, not counted in argv: an
# abbreviation getopt accepts counts like the full name, and an explicit
# --preset of several candidates needs --only as several --candidate do
usage severalabbr "pick one with --only NAME" --cand 'a: ' --cand 'b: X=1'
usage presetall "--preset sm12x-nvfp4 has 5 candidates" --preset sm12x-nvfp4
usage presetabbr "--preset sm12x-nvfp4 has 5 candidates" --pres=sm12x-nvfp4
grep -q -- "pick one with --only NAME" "$T/presetall.err" || fail "--preset refusal does not point at --only"
grep -q -- "--conc LEVEL:REQUESTS" "$T/conc.err" || fail "--conc refusal does not name --conc"

# --only picks b; --seq 3 adds a sequential phase before the soak phase
"$MOEPROBE" soak --duration 1s --concurrency 2 --max-tokens 16 --seq 3 --quiet --out "$T/only" \
    --candidate 'a: ' --candidate='b: SOME_FLAG=1' --only b "${ENGINE[@]}" >"$T/only.md" 2>"$T/only.err"
rc=$?
[ $rc -eq 0 ] || fail "soak --only b: exit $rc"
[ "$(q only "SELECT name FROM candidates ORDER BY pos" | tr '\n' ' ')" = "b " ] ||
    fail "soak --only b ran: $(q only "SELECT name FROM candidates" | tr '\n' ' ')"
[ "$(q only "SELECT name || ':' || ok FROM phases ORDER BY pos" | head -2 | tr '\n' ' ')" = "warmup:1 sequential:3 " ] ||
    fail "--seq 3: phases $(q only "SELECT name || ':' || ok FROM phases ORDER BY pos" | tr '\n' ' ')"
[ "$(q only "SELECT name FROM phases ORDER BY pos DESC LIMIT 1")" = soak ] || fail "the soak phase is not last"
nsoak=$(q only "SELECT ok FROM phases WHERE name = 'soak'")
[ "${nsoak:-0}" -gt 2 ] || fail "the soak phase served $nsoak requests"
cmp -s "$T/only.md" "$T/only/report.md" || fail "stdout differs from report.md"
head -1 "$T/only/report.md" | grep -qx "# moeprobe soak report" || fail "report.md is not titled a soak report"
# the candidates table: the sequential rate and the soak phase's "LEVEL: tok/s"
row=$(grep -E '^\| b \|' "$T/only/report.md" | head -1)
echo "$row" | grep -Eq '\| [0-9]+\.[0-9] \| 2: [0-9]+\.[0-9] \|' || fail "no sequential and soak throughput in: $row"

# --prefill-check N: its long-prompt phase runs before the soak phase
"$MOEPROBE" soak --duration 1s --concurrency 2 --max-tokens 8 --prefill-check 512 --quiet \
    --out "$T/prefill" --candidate 'p: ' "${ENGINE[@]}" >/dev/null 2>"$T/prefill.err" ||
    fail "soak --prefill-check: exit $?"
[ "$(q prefill "SELECT name || ':' || ok FROM phases ORDER BY pos" | tr '\n' ' ')" = "warmup:1 prefill-512:3 $(q prefill "SELECT 'soak:' || ok FROM phases WHERE name = 'soak'") " ] ||
    fail "--prefill-check phases: $(q prefill "SELECT name || ':' || ok FROM phases ORDER BY pos" | tr '\n' ' ')"
[ "$(q prefill "SELECT prompt_tokens / MAX(prompt_n, 1) FROM phases WHERE name = 'prefill-512'")" -gt 256 ] ||
    fail "the prefill phase's prompts are short: $(q prefill "SELECT prompt_tokens, prompt_n FROM phases WHERE name = 'prefill-512'")"

# without --seq there is no sequential phase (the default soak is unchanged);
# --model-dir joins the fingerprint as in qualify, and with stderr not a
# terminal the attempt's state changes are lines (the session's set-up)
"$MOEPROBE" soak --duration 1s --concurrency 2 --max-tokens 16 --out "$T/plain" \
    --model-dir "$ROOT/tests/data/checkpoints/swiglu-clamp" \
    --candidate 'solo: X=1' "${ENGINE[@]}" >/dev/null 2>"$T/plain.err" || fail "plain soak: exit $?"
[ "$(q plain "SELECT name FROM phases ORDER BY pos" | tr '\n' ' ')" = "warmup soak " ] ||
    fail "plain soak phases: $(q plain "SELECT name FROM phases ORDER BY pos" | tr '\n' ' ')"
[ "$(q plain "SELECT name FROM candidates")" = solo ] || fail "the one --candidate was not soaked"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(r["fingerprint"].get("checkpoint") is None)' \
    "$T/plain/report.json" || fail "soak --model-dir: no checkpoint in the fingerprint"
grep -q '^moeprobe: [0-9:]* \[solo 1/1\] phase soak: [0-9]* ok' "$T/plain.err" || fail "no state lines on a non-terminal stderr"
usage badmodel "model-dir" --model-dir /nonexistent
# --only without --candidate picks from the preset (its 'cutlass' candidate)
"$MOEPROBE" soak --duration 1s --concurrency 2 --max-tokens 16 --quiet --out "$T/preset" \
    --only cutlass "${ENGINE[@]}" >/dev/null 2>"$T/preset.err" || fail "soak --only cutlass: exit $?"
[ "$(q preset "SELECT name || ' ' || args FROM candidates")" = 'cutlass ["--moe-backend","cutlass"]' ] ||
    fail "soak --only cutlass ran: $(q preset "SELECT name || ' ' || args FROM candidates")"
echo "ok: --only/--candidate=/--seq honoured ($nsoak soak requests), several candidates, a bad --only and --conc refused"
# an abbreviated --cand is the candidate soaked, not dropped for the bare command
"$MOEPROBE" soak --duration 1s --concurrency 2 --max-tokens 16 --quiet --out "$T/abbr" \
    --cand 'x: --moe-backend cutlass' "${ENGINE[@]}" >/dev/null 2>"$T/abbr.err" || fail "soak --cand x: exit $?"
[ "$(q abbr "SELECT name || ' ' || args FROM candidates")" = 'x ["--moe-backend","cutlass"]' ] ||
    fail "soak --cand x ran: $(q abbr "SELECT name || ' ' || args FROM candidates")"
