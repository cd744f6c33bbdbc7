#!/bin/bash
# Each configuration is tested once: a candidate whose log shows the
# configuration of one tested already (same selections; only knobs that act
# through the selection, or that the engine calls unknown) is stopped once
# resolved and shares that result; a knob that changes kernel behaviour
# without changing a selection line (VLLM_MARLIN_USE_ATOMIC_ADD) is tested in
# full - in this world it turns Marlin into a kernel fault. --no-dedupe runs
# everything in full with the same verdicts.
. "$(dirname "$0")/q_lib.sh"
WD="$ROOT/tests/worlds/dedupe.ini"
CANDS=(--candidate 'auto:' --candidate 'fc: --moe-backend flashinfer_cutlass'
       --candidate 'unk: VLLM_DEFAULT_MOE_BACKEND=marlin' --candidate 'marlin: --moe-backend marlin'
       --candidate 'atomic: --moe-backend marlin VLLM_MARLIN_USE_ATOMIC_ADD=1')

qualify dd "$WD" "${Q_FAST[@]:1}" "${CANDS[@]}" # not --quiet: the summary is checked
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/dd.stderr"; fail "dedupe: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'c["fc"]["same_as"] == "auto" and c["fc"]["verdict"] == "stable"' \
    '"--moe-backend flashinfer_cutlass (acts only through the moe selection" in c["fc"]["same_why"]' \
    'c["unk"]["same_as"] == "auto" and "unknown variable" in c["unk"]["same_why"]' \
    '"shared with" in c["unk"]["why"]' \
    'c["auto"]["same_as"] is None and c["marlin"]["same_as"] is None' \
    'c["atomic"]["same_as"] is None and c["atomic"]["verdict"] == "kernel-fault"' \
    'c["marlin"]["verdict"] == "stable"' \
    '[a["outcome"] for a in c["fc"]["attempts"]] == ["same-config"]' \
    'c["fc"]["requests"]["ok"] == 0 and c["auto"]["requests"]["ok"] > 0' \
    'r["recommendation"]["candidate"] == "auto"' \
    'c["fc"]["throughput"]["sequential_tok_s"] == c["auto"]["throughput"]["sequential_tok_s"] > 0' \
    'c["fc"]["cost"]["engine_starts"] == 1 and c["fc"]["cost"]["workload_seconds"] == 0' \
    'c["atomic"]["cost"]["engine_starts"] >= 2 and c["atomic"]["cost"]["engine_seconds"] > 0' \
    'isinstance(r["wall_seconds"], (int, float)) and r["wall_seconds"] >= 0' \
    || fail "dedupe: report fields"
[ "${Q_FAST[0]}" = --quiet ] || fail "Q_FAST no longer starts with --quiet"
grep -q "fc .*shared with auto" "$Q_TMP/dd.stderr" || { cat "$Q_TMP/dd.stderr"; fail "the summary does not say it is shared"; }
# the shared candidates' engines were stopped before serving anything
for n in fc unk; do
    [ ! -s "$Q_DIR/attempts/$n-1/requests.jsonl" ] || fail "$n served requests"
    grep -q "NvFp4 MoE backend" "$Q_DIR/attempts/$n-1/server.log" || fail "$n: no selection in its log"
done
grep -q "the same configuration as \`auto\` (shared result)" "$Q_DIR/report.md" || fail "report.md"
grep -q "^| fc | stable | .* | [0-9.]* (shared) | " "$Q_DIR/report.md" || fail "report.md: shared numbers"
grep -q "^- cost: 1 engine start, .* s of engine time, 0.0 s driving load" "$Q_DIR/report.md" || fail "report.md: cost"
grep -q "^| run | .* s wall time, .* engine starts |" "$Q_DIR/report.md" || fail "report.md: run cost"
grep -q "the same configuration as <code>auto</code>" "$Q_DIR/report.html" || fail "report.html"
# rendered again from the store: the same
cp "$Q_DIR/report.json" "$Q_TMP/dd-first.json"
"$MOEPROBE" report "$Q_DIR" >/dev/null 2>&1 || fail "report: exit $?"
python3 - "$Q_TMP/dd-first.json" "$Q_DIR/report.json" <<'PY' || fail "report from the store differs"
import json, sys
a, b = (json.load(open(p))["candidates"] for p in sys.argv[1:3])
for x, y in zip(a, b):
    assert (x["verdict"], x["same_as"], x["why"]) == (y["verdict"], y["same_as"], y["why"]), (x["name"], y["why"])
PY

qualify full "$WD" "${Q_FAST[@]}" "${CANDS[@]}" --no-dedupe
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/full.stderr"; fail "--no-dedupe: exit $Q_RC"; }
python3 - "$Q_TMP/dd-first.json" "$Q_DIR/report.json" <<'PY' || fail "--no-dedupe: verdicts differ or something was shared"
import json, sys
a, b = (json.load(open(p))["candidates"] for p in sys.argv[1:3])
assert [x["verdict"] for x in a] == [y["verdict"] for y in b], ([x["verdict"] for x in a], [y["verdict"] for y in b])
assert all(y["same_as"] is None and y["requests"]["ok"] > 0 for y in b), b
PY
assert_no_leftovers
echo "ok: dedupe"
