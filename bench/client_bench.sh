#!/bin/bash
# bench/client_bench.sh - the HTTP client's performance targets (DESIGN.md "Performance targets"):
#   1. one process sustains >= 1,000 concurrent SSE streams against the reference engine, with the
#      client not the bottleneck (per-stream rate and ITL vs. the engine's configured rate, client
#      CPU), in bounded memory (max RSS < 50 MB);
#   2. the client's request rate on a non-streaming endpoint is >= 0.8x wrk's with the same
#      connection count: POST /v1/completions "stream": false, max_tokens 1 (what a load test of a
#      model server sends) and GET /health (no server work at all: the client's floor).
# Placement on a 2-core machine: the engine on CPU 1, the client and wrk (-t1) each on CPU 0, so
# both clients get the same one core (PIN=0: no pinning). Runs alternate loadgen/wrk REPEAT times.
# Usage: make -j2 && make -j2 bench-bins && bench/client_bench.sh
# Env: DURATION (s per run, 5), STREAMS (1000), TPS (per-stream tokens/s, 20), MAX_TOKENS (32),
#      CONNS (connection counts, "16 64 256"), REPEAT (3), PIN (1), SKIP_STREAMS / SKIP_RATE (0).
# Prints key=value lines and a closing summary. Exits 77 when a tool is missing. Numbers are
# recorded in docs/performance.md.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
RE=${REFENGINE_BIN:-$root/refengine/refengine}
LB=${LOADGEN_BENCH:-$root/build/rel/bench/loadgen_bench}
DURATION=${DURATION:-5}
STREAMS=${STREAMS:-1000}
TPS=${TPS:-20}
MAX_TOKENS=${MAX_TOKENS:-32}
CONNS=${CONNS:-16 64 256}
REPEAT=${REPEAT:-3}
PIN=${PIN:-1}
for x in "$RE" "$LB"; do [ -x "$x" ] || { echo "missing $x (run: make -j2 && make -j2 bench-bins)"; exit 77; }; done
command -v wrk >/dev/null || { echo "wrk not installed"; exit 77; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not installed (apt-get install time)"; exit 77; }
[ "$(ulimit -n)" -ge $((STREAMS + 100)) ] || ulimit -n $((STREAMS + 512)) 2>/dev/null || true
srv_pin=() cli_pin=()
if [ "$PIN" = 1 ] && [ "$(nproc)" -ge 2 ]; then srv_pin=(taskset -c 1); cli_pin=(taskset -c 0); fi

tmp=$(mktemp -d /tmp/client-bench.XXXXXX)
# private copies: a concurrent `make` relinking the build outputs must not break a run
cp "$RE" "$tmp/refengine" && cp "$LB" "$tmp/loadgen_bench" || exit 1
RE=$tmp/refengine LB=$tmp/loadgen_bench
pid= tailpid=
stop_engine() {
    [ -n "$tailpid" ] && kill "$tailpid" 2>/dev/null && wait "$tailpid" 2>/dev/null
    tailpid=
    [ -n "$pid" ] || return 0
    kill -TERM -- "-$pid" 2>/dev/null
    timeout 10 tail --pid="$pid" -f /dev/null 2>/dev/null
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    pid=
}
trap 'stop_engine; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# start_engine TPS: one stable backend, no contention (each stream gets TPS tokens/s); the log
# goes to a file (no reader process competing for the CPUs); sets url.
start_engine() {
    stop_engine
    cat >"$tmp/world.ini" <<INI
[engine]
version = 0.17.0
device = sm121
model = bench/client
quantization = modelopt_fp4
load_seconds = 0
seed = 1

[backend VLLM_CUTLASS]
tokens_per_second = $1
contention = 0
INI
    : >"$tmp/engine.log"
    # setsid does not fork here (a background job of a non-interactive shell is not a group
    # leader), so pid is also the process-group id
    setsid "${srv_pin[@]}" "$RE" --world "$tmp/world.ini" --port 0 --moe-backend cutlass \
        >"$tmp/engine.log" 2>&1 &
    pid=$!
    exec 3< <(exec tail -n +1 -f "$tmp/engine.log")
    tailpid=$!
    url=
    while IFS= read -r -t 30 -u 3 line; do
        case $line in
        *"Starting vLLM"*http://*) url=$(echo "$line" | grep -o 'http://[0-9.]*:[0-9]*' | head -1) ;;
        *"Application startup complete."*) break ;;
        esac
    done
    exec 3<&-
    kill "$tailpid" 2>/dev/null; wait "$tailpid" 2>/dev/null; tailpid=
    [ -n "$url" ] || { echo "engine did not become ready:"; cat "$tmp/engine.log"; exit 1; }
    echo "engine: $url (tokens_per_second=$1 per stream, contention 0) ${srv_pin[*]}"
}
cpu_ticks() { # user+sys clock ticks of the engine's API server and its children
    local t=0 p
    for p in $pid $(pgrep -P "$pid"); do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
    echo $t
}
hz=$(getconf CLK_TCK)
kv() { echo "$1" | grep -o "$2=[0-9.]*" | head -1 | cut -d= -f2; }
summary=

if [ "${SKIP_STREAMS:-0}" != 1 ]; then
    start_engine "$TPS"
    echo
    echo "== 1. $STREAMS concurrent streams, $MAX_TOKENS tokens each, ${DURATION}s (client: ${cli_pin[*]:-any CPU})"
    a=$(cpu_ticks)
    s1=$(/usr/bin/time -f "maxrss_kb=%M" "${cli_pin[@]}" "$LB" --url "$url" --mode stream --conc "$STREAMS" \
         --duration "$DURATION" --max-tokens "$MAX_TOKENS" 2>&1)
    b=$(cpu_ticks)
    echo "$s1"
    eng_cpu=$(echo "scale=1; 100 * ($b - $a) / $hz / $DURATION" | bc)
    summary="streams=$STREAMS tps_per_stream=$TPS $(echo "$s1" | grep -oE '(max_inflight|errors|cpu_pct|itl_p50_ms|itl_p99_ms|stream_tok_s_p50|maxrss_kb)=[0-9.]*' | tr '\n' ' ')engine_cpu_pct=$eng_cpu"
fi

if [ "${SKIP_RATE:-0}" != 1 ]; then
    start_engine 1000000 # one token per request: the token timer fires at once
    body='{"model":"bench/client","prompt":"Benchmark prompt number 1.","max_tokens":1,"temperature":0,"stream":false,"ignore_eos":true}'
    cat >"$tmp/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
LUA
    echo
    echo "== 2. request rate, loadgen vs wrk -t1, same connection count, ${DURATION}s each, $REPEAT rounds"
    for c in $CONNS; do
        for ep in complete health; do
            for ((i = 1; i <= REPEAT; i++)); do
                if [ $ep = complete ]; then
                    lgargs=(--mode complete --max-tokens 1 --model bench/client)
                    wargs=(-s "$tmp/post.lua" "$url/v1/completions")
                else
                    lgargs=(--mode get --path /health)
                    wargs=("$url/health")
                fi
                run_lg() { l=$("${cli_pin[@]}" "$LB" --url "$url" --conc "$c" --duration "$DURATION" "${lgargs[@]}"); }
                run_wrk() { w=$(/usr/bin/time -f "wrk_cpu_s=%U+%S" "${cli_pin[@]}" wrk -t1 -c"$c" -d"${DURATION}s" "${wargs[@]}" 2>&1); }
                if ((i % 2)); then run_lg; run_wrk; else run_wrk; run_lg; fi
                lr=$(kv "$l" rps)
                wr=$(echo "$w" | awk '/Requests\/sec/ {print $2}')
                if [ -z "$lr" ] || [ -z "$wr" ]; then echo "endpoint=$ep conns=$c round=$i: a run failed"; continue; fi
                werr=$(echo "$w" | grep -E 'Socket errors|Non-2xx' | tr -s ' ' | tr '\n' ' ')
                ratio=$(echo "scale=3; $lr / $wr" | bc)
                # CPU per request of each client: less sensitive to scheduling noise than rates
                lus=$(echo "scale=2; 1000000 * $(kv "$l" cpu_s) / ($lr * $(kv "$l" duration_s))" | bc)
                wcpu=$(echo "$w" | grep -o 'wrk_cpu_s=[0-9.+]*' | cut -d= -f2)
                wus=$(echo "scale=2; 1000000 * ($wcpu) / ($wr * $DURATION)" | bc)
                echo "endpoint=$ep conns=$c round=$i loadgen_rps=$lr loadgen_cpu_pct=$(kv "$l" cpu_pct) loadgen_errors=$(kv "$l" errors) wrk_rps=$wr ratio=$ratio loadgen_us_per_req=$lus wrk_us_per_req=$wus $werr"
                echo "$ep $c $ratio" >>"$tmp/ratios"
            done
        done
    done
    summary="$summary\n$(awk '{k=$1" conns="$2; if(!(k in lo)||$3<lo[k])lo[k]=$3; if(!(k in hi)||$3>hi[k])hi[k]=$3; if(!(k in seen)){seen[k]=1; order[++n]=k}}
        END{for(i=1;i<=n;i++){k=order[i]; printf "endpoint=%s ratio_min=%s ratio_max=%s\n", k, lo[k], hi[k]}}' "$tmp/ratios")"
fi

echo
echo "== summary"
printf "%b\n" "${summary#\\n}"
