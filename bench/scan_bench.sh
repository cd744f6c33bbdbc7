#!/bin/bash
# scan_bench.sh - scan throughput on one core against `grep -F` with the same
# literals. Builds a synthetic vLLM log of SIZE_MB (default 1024) MiB: the
# healthy startup logs of the corpus, then serving traffic (access lines,
# periodic stats, tqdm-like progress, an occasional warning), with a crash at
# the end. Results go to stdout; docs/performance.md records a run.
# usage: bench/scan_bench.sh [SIZE_MB]     (run `make bench-bins` first)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
size_mb=${1:-1024}
bin=$root/build/rel/bench/scan_bench
[ -x "$bin" ] || { echo "build first: make bench-bins"; exit 2; }
t=$(mktemp -d /tmp/mp-scanbench.XXXXXX)
trap 'rm -rf "$t"' EXIT
log=$t/big.log
python3 - "$log" "$size_mb" <<'PY'
import sys
path, mb = sys.argv[1], int(sys.argv[2])
start = """(APIServer pid=1) INFO 04-17 18:06:17 [utils.py:299]  \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  version 0.19.0
(APIServer pid=1) WARNING 04-17 18:06:17 [envs.py:1744] Unknown vLLM environment variable detected: VLLM_SCALED_MM_BACKEND
(EngineCore pid=184) INFO 04-17 18:06:35 [nvfp4_utils.py:85] Using NvFp4LinearBackend.FLASHINFER_CUTLASS for NVFP4 GEMM
(EngineCore pid=184) INFO 04-17 18:06:36 [nvfp4.py:256] Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN'].
(EngineCore pid=184) INFO 04-17 18:06:36 [cuda.py:334] Using FLASHINFER attention backend out of potential backends: ['FLASHINFER', 'TRITON_ATTN'].
(APIServer pid=1) INFO:     Application startup complete.
"""
block = []
for i in range(200):
    block.append('(APIServer pid=1) INFO:     127.0.0.1:%d - "POST /v1/completions HTTP/1.1" 200 OK\n' % (40000 + i))
    if i % 20 == 0:
        block.append("(APIServer pid=1) INFO 04-17 18:%02d:%02d [loggers.py:248] Engine 000: Avg prompt throughput: 1234.5 tokens/s, Avg generation throughput: 456.7 tokens/s, Running: 8 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.3%%, Prefix cache hit rate: 45.6%%\n" % (i % 60, i % 60))
    if i % 50 == 0:
        block.append("(EngineCore pid=184) INFO 04-17 18:07:%02d [gpu_model_runner.py:4735] Model loading took 15.77 GiB memory and 27.614537 seconds\n" % (i % 60))
    if i % 100 == 0:
        block.append("(APIServer pid=1) WARNING 04-17 18:07:01 [protocol.py:101] The following fields were present in the request but ignored: {'foo'}\n")
block = "".join(block).encode()
end = b"(EngineCore pid=184) ERROR 04-17 19:00:00 [core.py:1] torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
with open(path, "wb") as f:
    f.write(start.encode())
    n = len(start)
    while n < mb * 1048576:
        f.write(block)
        n += len(block)
    f.write(end)
PY
bytes=$(stat -c %s "$log")
echo "log: $bytes bytes, $(wc -l < "$log") lines"
cat "$log" > /dev/null   # page cache
# the literal set of the built-in signatures
python3 -c "
import json,sys
d=json.load(open('$root/data/knowledge.json'))
print('\n'.join(sorted({s['literal'] for s in d['signatures']})))" > "$t/lits"
echo "literals: $(wc -l < "$t/lits")"
echo "== moeprobe scanner (in memory, 1 MiB chunks, best of 3)"
taskset -c 0 "$bin" "$log" 3 2>/dev/null || "$bin" "$log" 3
echo "== moeprobe scan --json FILE (whole command, reads the file)"
s=$(date +%s.%N); taskset -c 0 "$root/moeprobe" scan --json "$log" > /dev/null; e=$(date +%s.%N)
python3 -c "print('%.3f s  %.2f GB/s' % ($e-$s, $bytes/($e-$s)/1e9))"
# grep's output goes to a file: with /dev/null GNU grep stops at the first match
for mode in "-c" ""; do
  echo "== LC_ALL=C grep -F $mode -f literals FILE"
  s=$(date +%s.%N); LC_ALL=C taskset -c 0 grep -F $mode -f "$t/lits" "$log" > "$t/grep.out" || true; e=$(date +%s.%N)
  python3 -c "print('%.3f s  %.2f GB/s  (%d output bytes)' % ($e-$s, $bytes/($e-$s)/1e9, $(stat -c %s "$t/grep.out")))"
done
