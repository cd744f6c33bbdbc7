#!/bin/bash
# The stop at the selection lines (#27, logs/selstop.h): a candidate that only
# needs its selections (moeprobe resolve; the same configuration as another)
# is stopped as soon as every selection line its command can produce is in
# the log - not at 'Model loading took' - unless a later line can still change
# the configuration: with a speculative drafter the engine prints the
# drafter's own MoE selection after the main model's weights, so the stop
# waits for it (and a --moe-backend value the drafter's oracle does not take
# fails there). World: the DGX Spark upstream world with a start-up short
# enough for CI (selection 0.2 s, weights ~1.9 s, ready 4 s).
. "$(dirname "$0")/q_lib.sh"
WS="$Q_TMP/spark.ini"
sed -e 's/^select_seconds = .*/select_seconds = 0.2/' -e 's/^load_seconds = .*/load_seconds = 4/' \
    "$ROOT/worlds/spark-nemotron-super-upstream-scaled.ini" >"$WS"
grep -q '^load_seconds = 4$' "$WS" || fail "world copy"

# no drafter: stopped at the selection lines, long before the weights (1.9 s)
"$MOEPROBE" resolve --out "$Q_TMP/plain" -- "$REFENGINE" --world "$WS" --port '{port}' \
    >/dev/null 2>"$Q_TMP/plain.err" || { cat "$Q_TMP/plain.err"; fail "resolve: exit $?"; }
check "$Q_TMP/plain/report.json" \
    'c["auto"]["resolved"]["moe_backend"] == "FLASHINFER_CUTLASS" and c["marlin"]["resolved"]["moe_backend"] == "MARLIN"' \
    'all(x["attempts"][0]["outcome"] == "resolved" for x in r["candidates"])' \
    'all(x["resolved"]["drafter"] is None for x in r["candidates"])' \
    || fail "plain: report fields"
for n in auto cutlass marlin flashinfer_cutlass marlin-env; do
    log="$Q_TMP/plain/attempts/$n-1/server.log"
    for sel in "NvFp4 MoE backend" "for NVFP4 GEMM" "attention backend out of potential"; do
        grep -q "$sel" "$log" || fail "$n: '$sel' missing: stopped too early"
    done
    ! grep -q "Loading weights took" "$log" || fail "$n: stopped after the weights, not at its selection lines"
done

# an MTP drafter: the stop waits for the drafter's MoE line (after the weights)
"$MOEPROBE" resolve --out "$Q_TMP/mtp" -- "$REFENGINE" --world "$WS" --port '{port}' \
    --speculative-config '{"method": "mtp", "num_speculative_tokens": 1}' \
    >/dev/null 2>"$Q_TMP/mtp.err" || { cat "$Q_TMP/mtp.err"; fail "resolve (drafter): exit $?"; }
check "$Q_TMP/mtp/report.json" \
    'all(c[n]["resolved"]["drafter"]["moe_backend"] == "FlashInfer CUTLASS" for n in ("auto", "flashinfer_cutlass", "marlin-env"))' \
    'all(c[n]["resolved"]["moe_backend"] == "FLASHINFER_CUTLASS" for n in ("auto", "flashinfer_cutlass", "marlin-env"))' \
    'all(c[n]["verdict"] == "startup-failure" and "is not supported for unquantized MoE" in c[n]["why"] for n in ("cutlass", "marlin"))' \
    || { python3 -m json.tool "$Q_TMP/mtp/report.json" | grep -E '"(name|verdict|why|drafter)"'; fail "drafter: report fields"; }
grep -q "Loading drafter model" "$Q_TMP/mtp/attempts/auto-1/server.log" || fail "drafter: no drafter in the log"
# a start that failed at the drafter: its start-up (ready_s, cost.startup_seconds) runs to the
# failure, past the drafter's line, not to the main model's selection lines
d="$Q_TMP/mtp/attempts/cutlass-1"
t=$(paste -d' ' "$d/server.times" "$d/server.log" | awk '/Loading drafter model/ {print $1; exit}')
[ -n "$t" ] || fail "cutlass: no drafter line"
check "$Q_TMP/mtp/report.json" \
    "c['cutlass']['attempts'][0]['ready_s'] >= $t and c['cutlass']['cost']['startup_seconds'] >= $t" \
    || fail "cutlass: the failed start-up is not counted to its failure"
assert_no_leftovers
echo "ok: selection stop"
