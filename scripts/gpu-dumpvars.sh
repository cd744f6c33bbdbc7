#!/bin/bash
# gpu-dumpvars.sh - on the GPU machine, after `make cuda`: which CUDA
# core-dump variables take the engine's Python-style traceback away.
# moeprobe wants both the traceback (the crash site analysis reads it) and
# the kernel name the driver's dump gives, so this measures, on refengine-cuda's faulty backend (an out-of-bounds read in
# up_kernel), one qualify attempt per setting (--no-coredump: moeprobe adds
# nothing; each candidate sets its variables itself) and prints, per setting,
# whether the log has the driver's "coredump:" lines, the traceback and the
# CUDA error, and how the engine ended. docs/gpu.md records the results.
# Usage: MOEPROBE=... scripts/gpu-dumpvars.sh [RESULTS_DIR]
set -u
cd "$(dirname "$0")/.." || exit 2
RES=${1:-gpu-results/dumpvars}
mkdir -p "$RES" && RES=$(cd "$RES" && pwd) || exit 2
MOEPROBE=${MOEPROBE:-./moeprobe}
RE=${GPU_CHECK_ENGINE:-build/cuda/refengine-cuda}
[ -x "$RE" ] || { echo "gpu-dumpvars: $RE missing (make cuda)"; exit 2; }
FLAGS=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory
D=$RES/dumps
mkdir -p "$D"
# name: variables
SETTINGS=(
    "none:"
    "exception:CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=$FLAGS CUDA_COREDUMP_FILE=$D/exc_%p"
    "exception-skipabort:CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=$FLAGS,skip_abort CUDA_COREDUMP_FILE=$D/exa_%p"
    "pipe:CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 CUDA_COREDUMP_PIPE=$D/pipe_%p"
    "pipe-progress-file:CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 CUDA_COREDUMP_PIPE=$D/pipe2_%p CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_FILE=$D/pf_%p"
    "pipe-skipabort:CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 CUDA_COREDUMP_PIPE=$D/pipe3_%p CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=$FLAGS,skip_abort CUDA_COREDUMP_FILE=$D/ps_%p"
    "progress-file:CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_FILE=$D/only_%p"
)
printf '| setting | coredump: lines | traceback | CUDA error line | engine ended | dump files |\n|---|---|---|---|---|---|\n' \
    >"$RES/dumpvars.md"
for s in "${SETTINGS[@]}"; do
    name=${s%%:*}
    vars=${s#*:}
    out=$RES/$name
    rm -rf "$out"
    "$MOEPROBE" qualify --quiet --out "$out" --no-coredump --no-diagnose --no-quality \
        --max-tokens 16 --seq 3 --conc 2:4 --grace 5 \
        --candidate "faulty: --moe-backend humming $vars" \
        -- "$RE" --world "$PWD/worlds/cuda-h200.ini" --port '{port}' >/dev/null 2>"$out.stderr"
    log=$(ls "$out"/attempts/faulty-1/server.log 2>/dev/null)
    cd_lines=$(grep -c 'coredump:' "$log" 2>/dev/null)
    tb=$(grep -c 'Traceback (most recent call last)' "$log" 2>/dev/null)
    err=$(grep -c 'illegal memory access\|an illegal' "$log" 2>/dev/null)
    ended=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); a=r['candidates'][0]['attempts'][0]; print(a.get('exit'))" \
        "$out/report.json" 2>/dev/null)
    files=$(find "$D" -maxdepth 1 -type f | wc -l) # the dumps written (pipes are FIFOs)
    printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "${cd_lines:-0}" "${tb:-0}" "${err:-0}" \
        "${ended:-?}" "$files" >>"$RES/dumpvars.md"
    rm -f "$D"/* 2>/dev/null
done
cat "$RES/dumpvars.md"
