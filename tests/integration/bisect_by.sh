#!/bin/bash
# bisect_by.sh - `moeprobe bisect --by resolved` and `--by throughput:PCT`
# over refengine builds on the host (worlds/bisect/<kind>-{build}.ini):
#  2. a resolved-backend change (FlashInfer CUTLASS rejected from r3 on, auto
#     falls to MARLIN) with --by resolved: first bad r3, confidence 1;
#  3. a 5x slowdown from s4 on, nothing crashing, --by throughput:50: first
#     bad s4, no confidence stated (a rate, not a failure probability).
. "$(dirname "$0")/q_lib.sh"
WB="$W/bisect"
FAST=(--quiet --seq 3 --conc 2:4 --max-tokens 16 --no-diagnose --agreement 0 --accuracy 0)
bisect() {
    local name=$1 kind=$2; shift 2
    B_DIR="$Q_TMP/$name"
    "$MOEPROBE" bisect --out "$B_DIR" "$@" -- "$REFENGINE" --world "$WB/$kind-{build}.ini" \
        --port '{port}' >"$Q_TMP/$name.out" 2>"$Q_TMP/$name.err"
    B_RC=$?
}

# 2. resolved-backend change
bisect backend backend --good r1 --bad r6 --build r1 --build r2 --build r3 --build r4 --build r5 \
    --build r6 --by resolved "${FAST[@]}"
[ $B_RC -eq 0 ] || { cat "$Q_TMP/backend.err"; fail "backend: exit $B_RC"; }
check "$B_DIR/report.json" 'r["first_bad"] == "r3" and r["last_good"] == "r2" and r["by"] == "resolved"' \
    'r["confidence"] == 1 and r["requests_required"] == 0' \
    '{f["field"]: (f["last_good"], f["first_bad"]) for f in r["difference"]["fields"]}["moe_backend"] == ("FLASHINFER_CUTLASS", "MARLIN")' \
    'all(p["verdict"] == "stable" for p in r["probes"])' || fail "backend: report.json"

# 3. slowdown
# (8-token requests at 100 tok/s against 20: decode time outweighs a loaded
# machine's per-request overhead, so a healthy build stays well above 0.5x)
bisect slow slow --good s1 --bad s5 --build s1 --build s2 --build s3 --build s4 --build s5 \
    --by throughput:50 --quiet --seq 2 --conc 2:2 --max-tokens 8 --no-diagnose --no-quality --agreement 0 --accuracy 0
[ $B_RC -eq 0 ] || { cat "$Q_TMP/slow.err"; fail "slow: exit $B_RC"; }
check "$B_DIR/report.json" 'r["first_bad"] == "s4" and r["last_good"] == "s3"' \
    'r["by"] == "throughput" and r["slowdown_pct"] == 50 and r["confidence"] is None' \
    'all(p["verdict"] == "stable" for p in r["probes"])' \
    '[p for p in r["probes"] if p["build"] == "s4"][0]["tok_s"] < 0.5 * [p for p in r["probes"] if p["build"] == "s1"][0]["tok_s"]' ||
    fail "slow: report.json"

assert_no_leftovers
echo "ok"
