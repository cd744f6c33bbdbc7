#!/bin/bash
# bench/client_bench.sh - the HTTP client's performance targets (DESIGN.md "Performance targets"):
#   1. one process sustains >= 1,000 concurrent SSE streams against the reference engine, with the
#      client not the bottleneck (events/s delivered vs. the engine's configured rate, client CPU);
#   2. the client's request rate on a non-streaming endpoint (GET /health) is >= 0.8x wrk's with
#      the same connection count.
# Usage: make -j2 && make -j2 bench-bins && bench/client_bench.sh
# Env: DURATION (s, default 10), STREAMS (default 1000), TPS (per-stream tokens/s, default 20),
#      MAX_TOKENS (default 32), CONNS (wrk comparison connection counts, default "100 1000").
# Prints key=value lines from loadgen_bench and wrk, and a closing summary. Exits 77 when a tool
# is missing. Numbers are recorded in docs/perf-client.md.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
RE=${REFENGINE:-$root/refengine/refengine}
LB=${LOADGEN_BENCH:-$root/build/rel/bench/loadgen_bench}
DURATION=${DURATION:-10}
STREAMS=${STREAMS:-1000}
TPS=${TPS:-20}
MAX_TOKENS=${MAX_TOKENS:-32}
CONNS=${CONNS:-100 1000}
for x in "$RE" "$LB"; do [ -x "$x" ] || { echo "missing $x (run: make -j2 && make -j2 bench-bins)"; exit 77; }; done
command -v wrk >/dev/null || { echo "wrk not installed"; exit 77; }
[ "$(ulimit -n)" -ge $((STREAMS + 100)) ] || ulimit -n $((STREAMS + 512)) 2>/dev/null || true

tmp=$(mktemp -d /tmp/client-bench.XXXXXX)
pid=
stop_engine() {
    [ -n "$pid" ] || return 0
    kill -TERM -- "-$pid" 2>/dev/null
    timeout 10 tail --pid="$pid" -f /dev/null 2>/dev/null
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=
}
trap 'stop_engine; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

cat >"$tmp/world.ini" <<INI
# client benchmark world: one fast, stable backend; no contention so each stream gets TPS
[engine]
version = 0.17.0
device = sm121
model = bench/client
quantization = modelopt_fp4
load_seconds = 0
seed = 1

[backend VLLM_CUTLASS]
tokens_per_second = $TPS
contention = 0
INI

# Start the engine in its own session (setsid does not fork here: a background job of a
# non-interactive shell is not a group leader, so pid is also the process-group id).
mkfifo "$tmp/out"
setsid "$RE" --world "$tmp/world.ini" --port 0 --moe-backend cutlass >"$tmp/out" 2>&1 &
pid=$!
exec 3<"$tmp/out"
url=
while IFS= read -r -t 30 -u 3 line; do
    echo "$line" >>"$tmp/engine.log"
    case $line in
    *"Starting vLLM"*http://*) url=$(echo "$line" | grep -o 'http://[0-9.]*:[0-9]*' | head -1) ;;
    *"Application startup complete."*) break ;;
    esac
done
cat <&3 >>"$tmp/engine.log" & # keep draining the engine's log
[ -n "$url" ] || { echo "engine did not become ready:"; cat "$tmp/engine.log"; exit 1; }
echo "engine: $url (world: tokens_per_second=$TPS per stream, contention 0)"

cpu_ticks() { # user+sys clock ticks of the engine's API server and its children
    local t=0 p
    for p in $pid $(pgrep -P "$pid"); do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
    echo $t
}
hz=$(getconf CLK_TCK)

echo
echo "== 1. $STREAMS concurrent streams, $MAX_TOKENS tokens each, ${DURATION}s"
a=$(cpu_ticks)
s1=$("$LB" --url "$url" --mode stream --conc "$STREAMS" --duration "$DURATION" --max-tokens "$MAX_TOKENS")
b=$(cpu_ticks)
echo "$s1"
eng_cpu=$(echo "scale=1; 100 * ($b - $a) / $hz / $DURATION" | bc)
expect=$((STREAMS * TPS))
eps=$(echo "$s1" | grep -o 'eps=[0-9.]*' | cut -d= -f2)
echo "engine_cpu_pct=$eng_cpu expected_eps=$expect delivered_ratio=$(echo "scale=3; $eps / $expect" | bc)"

echo
echo "== 2. GET /health request rate: loadgen vs wrk (same connection count, ${DURATION}s each)"
summary=
for c in $CONNS; do
    l=$("$LB" --url "$url" --mode get --path /health --conc "$c" --duration "$DURATION")
    echo "$l"
    w=$(wrk -t2 -c"$c" -d"${DURATION}s" "$url/health")
    echo "$w" | grep -E 'Requests/sec|requests in|Socket errors|Non-2xx'
    lr=$(echo "$l" | grep -o 'rps=[0-9.]*' | cut -d= -f2)
    wr=$(echo "$w" | awk '/Requests\/sec/ {print $2}')
    ratio=$(echo "scale=3; $lr / $wr" | bc)
    summary="$summary\nconns=$c loadgen_rps=$lr wrk_rps=$wr ratio=$ratio"
done

echo
echo "== summary"
echo "streams=$STREAMS tps_per_stream=$TPS $(echo "$s1" | grep -oE '(eps|cpu_pct|errors|avg_inflight|itl_p50_ms|itl_p99_ms|stream_tok_s_p50)=[0-9.]*' | tr '\n' ' ')engine_cpu_pct=$eng_cpu expected_eps=$expect"
printf "%b\n" "${summary#\\n}"
