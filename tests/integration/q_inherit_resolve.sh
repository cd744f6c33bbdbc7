#!/bin/bash
# tier: quick
# q_inherit_resolve.sh - #29 problem 1 as the issue met it: with
# VLLM_TEST_FORCE_FP8_MARLIN=1 exported, `moeprobe resolve` on a vLLM 0.17
# Spark world sees auto resolve to MARLIN. The variable must be in
# report.json's fingerprint, judged for the engine's version (it acts on the
# MoE backend from vLLM 0.15, on dense layers only before: the judgement made
# before the first start must be replaced once the log gives the version),
# named on the first screen of report.md and report.html, and
# `--moe-backend marlin` must not be listed as a knob that changed nothing.
# With --clean-env the engines run without it: auto is the engine's default
# again and the variable is listed as removed.
. "$(dirname "$0")/q_lib.sh"
WS="$ROOT/worlds/spark-nemotron-super-scaled.ini"
resolve() { # NAME [options]: moeprobe resolve, auto and marlin; sets Q_RC, Q_DIR
    local name=$1; shift
    Q_DIR="$Q_TMP/$name"
    "$MOEPROBE" resolve --quiet --out "$Q_DIR" "$@" --candidate 'auto:' \
        --candidate 'marlin: --moe-backend marlin' -- "$REFENGINE" --world "$WS" --port '{port}' \
        >"$Q_TMP/$name.md" 2>"$Q_TMP/$name.err"
    Q_RC=$?
}
VLLM_TEST_FORCE_FP8_MARLIN=1 resolve inh
[ "$Q_RC" = 0 ] || { cat "$Q_TMP/inh.err"; fail "resolve: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'r["fingerprint"]["engine_version"] == "0.17.0"' \
    'c["auto"]["resolved"]["moe_backend"] == "MARLIN"' \
    'r["fingerprint"]["inherited_env"]["VLLM_TEST_FORCE_FP8_MARLIN"] == "1"' \
    '[x for x in r["fingerprint"]["inherited_env_detail"] if x["name"] == "VLLM_TEST_FORCE_FP8_MARLIN"][0]["affects"] == "moe"' \
    'r["noop_knobs"] == []' \
    || fail "report.json"
MD="$Q_DIR/report.md"
head -n 14 "$MD" | grep -q 'Inherited environment.*`VLLM_TEST_FORCE_FP8_MARLIN=1` (\*\*acts on the MoE backend selection\*\*).* One of them acts on what the engine selects' ||
    fail "report.md's first screen: $(grep 'Inherited' "$MD")"
awk '/^## Knobs that changed nothing/ {on = 1; next} /^## / {on = 0} on' "$MD" >"$Q_TMP/noop.md"
grep -q 'the inherited VLLM_TEST_FORCE_FP8_MARLIN=1 changes what every candidate' "$Q_TMP/noop.md" &&
    ! grep -q 'moe-backend marlin' "$Q_TMP/noop.md" || fail "no-op section: $(cat "$Q_TMP/noop.md")"
grep -q 'class="fp inh bad">.*VLLM_TEST_FORCE_FP8_MARLIN=1.*acts on the MoE backend selection' "$Q_DIR/report.html" ||
    fail "report.html: the inherited variable"
# rendered again from the store: the judgement for 0.17 was stored
"$MOEPROBE" report --format json "$Q_DIR" 2>/dev/null >"$Q_TMP/again.json" || fail "report: exit $?"
check "$Q_TMP/again.json" \
    '[x for x in r["fingerprint"]["inherited_env_detail"] if x["name"] == "VLLM_TEST_FORCE_FP8_MARLIN"][0]["affects"] == "moe"' \
    || fail "report from the store"

VLLM_TEST_FORCE_FP8_MARLIN=1 resolve clean --clean-env
[ "$Q_RC" = 0 ] || { cat "$Q_TMP/clean.err"; fail "resolve --clean-env: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'c["auto"]["resolved"]["moe_backend"] == "FLASHINFER_CUTLASS"' \
    'r["fingerprint"]["clean_env"] is True' \
    '[x for x in r["fingerprint"]["inherited_env_detail"] if x["name"] == "VLLM_TEST_FORCE_FP8_MARLIN"][0]["passed"] is False' \
    || fail "--clean-env"
grep -q '`--clean-env` removed `VLLM_TEST_FORCE_FP8_MARLIN=1`' "$Q_DIR/report.md" || fail "report.md: --clean-env"
assert_no_leftovers
echo ok
