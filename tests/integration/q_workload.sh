#!/bin/bash
# The workload people compare with: --input-tokens N sends prompts of about
# N tokens (the engine's usage says how many), --output-tokens is --max-tokens,
# --prefill-check N adds a last phase of long prompts. requests.jsonl records
# each request's prompt tokens from the engine's usage.
. "$(dirname "$0")/q_lib.sh"
qualify wl "$ROOT/tests/worlds/fast.ini" --quiet --seq 3 --conc 2:4 --output-tokens 5 --no-quality \
    --agreement 0 --accuracy 0 \
    --input-tokens 512 --prefill-check 2048 --candidate 'auto:'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/wl.stderr"; fail "exit $Q_RC"; }
python3 - "$Q_DIR/attempts/auto-1/requests.jsonl" <<'PY' || fail "prompt or output tokens"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["phase"], []).append(r)
assert list(by) == ["warmup", "sequential", "concurrency-2", "prefill-2048"], list(by)
assert len(by["prefill-2048"]) == 3, by["prefill-2048"]
for r in rows:
    assert r["outcome"] == "ok" and r["output_tokens"] == 5, r
    want = 2048 if r["phase"] == "prefill-2048" else 512
    assert abs(r["prompt_tokens"] - want) <= want * 0.05, (r["phase"], r["prompt_tokens"])
PY
# every phase the report shows is in its workload: with the output check, the "quality" phase
# (32 tokens, EOS honoured) is there too; latency_ms is over the load phases only
qualify q "$ROOT/tests/worlds/fast.ini" --quiet --seq 3 --conc 2:4 --output-tokens 5 \
    --prefill-check 2048 --candidate 'auto:'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/q.stderr"; fail "quality run: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    '{p["phase"] for p in c["auto"]["throughput"]["phases"]} <= {p["name"] for p in r["workload"]["phases"]}' \
    '[p["name"] for p in r["workload"]["phases"]] == ["warmup", "sequential", "concurrency-2", "prefill-2048", "quality"]' \
    '[(p["max_tokens"], p["ignore_eos"]) for p in r["workload"]["phases"]][-2:] == [(5, True), (32, False)]' \
    'r["workload"]["phases"][-1]["requests"] == [p for p in c["auto"]["throughput"]["phases"] if p["phase"] == "quality"][0]["planned"]' \
    'r["workload"]["diagnosis_phases"] is None' \
    || fail "quality run: workload.phases"
grep -q "^| quality | 1 | .* | quality prompts | 32 (greedy, EOS honoured) |" "$Q_DIR/report.md" ||
    fail "report.md: no quality line in the workload"
# defaults stay as they are: ~15-token prompts, no prefill phase
qualify def "$ROOT/tests/worlds/fast.ini" --quiet --seq 3 --conc 2:4 --max-tokens 5 --no-quality --candidate 'auto:'
python3 - "$Q_DIR/attempts/auto-1/requests.jsonl" <<'PY' || fail "defaults changed"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r["phase"] not in ("score", "task")]  # the scoring pass's own prompts
assert all(r["prompt_tokens"] < 40 for r in rows), [r["prompt_tokens"] for r in rows]
assert not any(r["phase"].startswith("prefill") for r in rows)
PY
"$MOEPROBE" qualify --out "$Q_TMP/bad" --input-tokens 0 -- true >/dev/null 2>&1
[ $? -eq 2 ] || fail "--input-tokens 0 is not a usage error"
assert_no_leftovers
echo "ok: workload"
