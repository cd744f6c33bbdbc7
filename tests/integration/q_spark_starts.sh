#!/bin/bash
# What the seed's question costs (#27): on the upstream DGX Spark world (auto,
# flashinfer_cutlass and the env road all reach the racing FLASHINFER_CUTLASS;
# cutlass and Marlin are stable) the default preset takes 4 full engine starts
# (auto normally and with CUDA_LAUNCH_BLOCKING=1, cutlass, Marlin) and 2 stops at
# the selection lines: a start-up is dear beside a request, so the diagnosis'
# cost rule buys no second normal run, and the two candidates of auto's
# configuration stop once their selection lines are in. report.json's cost says
# so. A start-up of 3 s (selection 0.2 s) and 16-token requests keep it short;
# the decision's margin is wide (a rerun would cost ~3 s and save ~0.6 s).
. "$(dirname "$0")/q_lib.sh"
WS="$Q_TMP/spark.ini"
sed -e 's/^select_seconds = .*/select_seconds = 0.2/' -e 's/^load_seconds = .*/load_seconds = 3/' \
    "$ROOT/worlds/spark-nemotron-super-upstream-scaled.ini" >"$WS"
grep -q '^load_seconds = 3$' "$WS" || fail "world copy"
qualify spark "$WS" --quiet --seq 3 --conc 8:16 --max-tokens 16 --grace 3
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/spark.stderr"; fail "qualify: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    '[(a["outcome"], a["launch_blocking"]) for a in c["auto"]["attempts"]] == [("crashed", False), ("clean", True)]' \
    'c["auto"]["verdict"] == "async-race" and "not worth it" in c["auto"]["diagnosis"]["reasoning"]' \
    'all(c[n]["same_as"] == "auto" and c[n]["cost"]["selection_stops"] == 1 for n in ("flashinfer_cutlass", "marlin-env"))' \
    'c["cutlass"]["cost"]["engine_starts"] == 1 and c["marlin"]["cost"]["engine_starts"] == 1' \
    'r["cost"]["engine_starts"] == 6 and r["cost"]["selection_stops"] == 2' \
    'r["cost"]["startup_seconds"] > r["cost"]["request_seconds"] > 0' \
    'all(abs(x["cost"]["startup_seconds"] + x["cost"]["request_seconds"] + x["cost"]["overhead_seconds"] - x["cost"]["engine_seconds"]) < 0.2 for x in r["candidates"])' \
    || { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); [print(c["name"], c["verdict"], c["cost"], c["diagnosis"] and c["diagnosis"].get("reasoning")) for c in r["candidates"]]' "$Q_DIR/report.json"; fail "starts and cost"; }
assert_no_leftovers
echo "ok: the seed's question in 4 full starts and 2 selection stops"
