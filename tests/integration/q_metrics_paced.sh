#!/bin/bash
# q_metrics_paced.sh - the metrics against a paced reference-engine stream.
# The engine (worlds/paced.ini) answers after a prefill of 20 us per prompt
# token, then sends one token every 20 ms. With N = 16 output tokens and P the
# prefill (from the engine's own usage.prompt_tokens in requests.jsonl):
#   TTFT = P + 20 ms, ITL = TPOT = 20 ms, E2E = P + N x 20 ms,
#   per-request decode rate = 50 tok/s,
#   aggregate tok/s of a phase of L requests in flight = L x N / E2E.
# report.json - the attempt's latency_ms, and every load phase's
# `vllm bench serve` keys (mean/median TTFT, TPOT, ITL, E2EL, decode rate,
# request and output throughput) - and the stored TPOT histogram must match
# within the tolerance docs/metrics.md states: a latency within
# [0.9, 1.5] x its expected value, a rate within [0.67, 1.1] x (a loaded
# machine only makes latencies longer and rates lower). So doubling every
# latency or halving every rate in the product path fails, and so does
# halving a latency or doubling a rate. The store also holds the workload.
. "$(dirname "$0")/q_lib.sh"
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
qualify paced "$W/paced.ini" --quiet --seq 5 --conc 4:8 --max-tokens 16 --input-tokens 2000 \
    --agreement 0 --accuracy 0 \
    --no-quality --grace 3 --candidate 'auto:'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/paced.stderr"; fail "exit $Q_RC"; }
db="$Q_DIR/moeprobe.db"
tpot=$(sqlite3 "$db" "SELECT sum(sum) / sum(n) FROM metrics WHERE metric = 'tpot_ms'")
tpot_n=$(sqlite3 "$db" "SELECT sum(n) FROM metrics WHERE metric = 'tpot_ms'")
python3 - "$Q_DIR/report.json" "$Q_DIR/attempts/auto-1/requests.jsonl" "$tpot" "$tpot_n" <<'PY' \
    || fail "metrics off the engine's pace"
import json, sys
rep = json.load(open(sys.argv[1]))
rows = [json.loads(l) for l in open(sys.argv[2])]
tpot, tpot_n = float(sys.argv[3]), int(sys.argv[4])
N, I = 16, 20.0
assert rows and all(r["outcome"] == "ok" and r["output_tokens"] == N for r in rows), rows[:3]
ptoks = sum(r["prompt_tokens"] for r in rows) / len(rows)
P = ptoks * 0.02
assert 30 <= P <= 50, P  # --input-tokens 2000: about 40 ms of prefill
c = rep["candidates"][0]
lat = c["latency_ms"]
bad = []
def near(what, got, want, lo, hi):
    r = got / want
    print("%-28s %9.2f  expected %9.2f  (x%.2f)" % (what, got, want, r))
    if not lo <= r <= hi:
        bad.append("%s: %.2f, expected %.2f (x%.2f, allowed %.2f..%.2f)" % (what, got, want, r, lo, hi))
LAT, RATE = (0.9, 1.5), (0.67, 1.1)
near("TTFT p50 (ms)", lat["ttft_p50"], P + I, *LAT)
near("ITL p50 (ms)", lat["itl_p50"], I, *LAT)
near("E2E p50 (ms)", lat["e2e_p50"], P + N * I, *LAT)
near("TPOT mean (ms, store)", tpot, I, *LAT)
assert tpot_n == len(rows), (tpot_n, len(rows))
if "tpot_p50" in lat:
    near("TPOT p50 (ms)", lat["tpot_p50"], I, *LAT)
phases = {p["phase"]: p for p in c["throughput"]["phases"]}
for name, level in (("sequential", 1), ("concurrency-4", 4)):
    p = phases[name]
    near(name + " decode tok/s p50", p["request_tok_s_p50"], 1000.0 / I, *RATE)
    near(name + " aggregate tok/s", p["tok_s"], level * N / ((P + N * I) / 1000.0), *RATE)
    near(name + " mean_ttft_ms", p["mean_ttft_ms"], P + I, *LAT)
    near(name + " median_tpot_ms", p["median_tpot_ms"], I, *LAT)
    near(name + " mean_itl_ms", p["mean_itl_ms"], I, *LAT)
    near(name + " mean_e2el_ms", p["mean_e2el_ms"], P + N * I, *LAT)
    near(name + " median_request_tok_s", p["median_request_tok_s"], 1000.0 / I, *RATE)
    near(name + " request_throughput", p["request_throughput"], level / ((P + N * I) / 1000.0), *RATE)
    near(name + " output_throughput", p["output_throughput"], level * N / ((P + N * I) / 1000.0), *RATE)
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY
# the workload the run sent is in the store (schema v9), never the API key
wl=$(sqlite3 "$db" "SELECT max_tokens, input_tokens, chat, ignore_eos FROM workload")
[ "$wl" = "16|2000|0|1" ] || fail "stored workload: '$wl'"
ph=$(sqlite3 "$db" "SELECT group_concat(name || ':' || level || ':' || requests, ' ') FROM workload_phases")
[ "$ph" = "warmup:1:1 sequential:1:5 concurrency-4:4:8" ] || fail "stored workload phases: '$ph'"
assert_no_leftovers
echo "ok: TTFT, ITL, TPOT, E2E, decode and aggregate rates match the engine's pace"
