#!/bin/bash
# gpu-dumpvars.sh - on the GPU machine, after `make cuda`: which CUDA
# core-dump variables take the engine's Python-style traceback away.
# moeprobe wants both the traceback (the crash site analysis reads it) and
# the kernel name the driver's dump gives, so this measures, on
# refengine-cuda's faulty backend (an out-of-bounds read in up_kernel), one
# qualify attempt per setting (--no-coredump: moeprobe adds nothing; each
# candidate sets its variables itself; the row "moeprobe" is moeprobe's own
# settings, with no candidate variable) and prints, per setting, how many of
# the driver's "coredump:" lines the log has, the traceback and the CUDA
# error, how the engine ended, whether the faulting process aborted (SIGABRT,
# or vLLM's "Engine core proc ... died unexpectedly" where the EngineCore is
# a child process), and the dump files written (kept with --keep-coredumps,
# which moeprobe deletes otherwise; the engine runs in a folder of its own,
# where the driver's default file name would land). scripts/gpu-check.sh
# runs it into its results; docs/verdicts.md "GPU core dumps" has the H200's
# table (tests/gpu/dumpvars-h200.md) and tests/integration/crash_dumpvars.sh
# checks that refengine's imitation gives the same table.
# Usage: MOEPROBE=... scripts/gpu-dumpvars.sh [RESULTS_DIR]
# Environment: GPU_CHECK_ENGINE (default build/cuda/refengine-cuda),
# DUMPVARS_WORLD (default worlds/cuda-h200.ini), DUMPVARS_BACKEND (the
# faulty backend's --moe-backend, default humming).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
RES=${1:-gpu-results/dumpvars}
mkdir -p "$RES" && RES=$(cd "$RES" && pwd) || exit 2
MOEPROBE=${MOEPROBE:-$ROOT/moeprobe}
RE=${GPU_CHECK_ENGINE:-build/cuda/refengine-cuda}
case "$RE" in /*) ;; *) RE=$ROOT/$RE ;; esac
WORLD=${DUMPVARS_WORLD:-$ROOT/worlds/cuda-h200.ini}
BACKEND=${DUMPVARS_BACKEND:-humming}
[ -x "$RE" ] || { echo "gpu-dumpvars: $RE missing (make cuda)"; exit 2; }
FLAGS=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory
D=$RES/dumps
PIPE="CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 CUDA_COREDUMP_PIPE=$D/pipe_%p"
# name: variables ("moeprobe": moeprobe's own, without --no-coredump)
SETTINGS=(
    "none:"
    "exception:CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=$FLAGS CUDA_COREDUMP_FILE=$D/exc_%p"
    "exception-skipabort:CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=$FLAGS,skip_abort CUDA_COREDUMP_FILE=$D/exa_%p"
    "exception-noprogress:CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_GENERATION_FLAGS=$FLAGS CUDA_COREDUMP_FILE=$D/exn_%p"
    "pipe:$PIPE"
    "pipe-progress-file:$PIPE CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_FILE=$D/pf_%p"
    "pipe-skipabort:$PIPE CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=$FLAGS,skip_abort CUDA_COREDUMP_FILE=$D/ps_%p"
    "exception-off-pipe:CUDA_ENABLE_COREDUMP_ON_EXCEPTION=0 $PIPE CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_FILE=$D/op_%p"
    "progress-file:CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_FILE=$D/only_%p"
    "moeprobe:"
)
{
    printf '| setting | coredump: lines | traceback | CUDA error line | engine ended | aborted | dump files |\n'
    printf '|---|---|---|---|---|---|---|\n'
} >"$RES/dumpvars.md"
: >"$RES/settings.txt"
for s in "${SETTINGS[@]}"; do
    name=${s%%:*}
    vars=${s#*:}
    out=$RES/$name
    cwd=$RES/$name.cwd
    rm -rf "$out" "$cwd" "$D"
    mkdir -p "$cwd" "$D"
    off=(--no-coredump)
    [ "$name" = moeprobe ] && off=()
    # the world's path and the engine's are absolute: the engine runs in $cwd
    (cd "$cwd" && "$MOEPROBE" qualify --quiet --out "$out" "${off[@]}" --keep-coredumps \
        --no-diagnose --no-quality --max-tokens 16 --seq 3 --conc 2:4 --grace 5 \
        --candidate "faulty: --moe-backend $BACKEND $vars" \
        -- "$RE" --world "$WORLD" --port '{port}' >/dev/null 2>"$out.stderr")
    log=$out/attempts/faulty-1/server.log
    cd_lines=$(grep -c 'coredump:' "$log" 2>/dev/null)
    tb=$(grep -c 'Traceback (most recent call last)' "$log" 2>/dev/null)
    err=$(grep -c 'illegal memory access\|an illegal' "$log" 2>/dev/null)
    ended=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); a=r['candidates'][0]['attempts'][0]; print(a.get('exit'))" \
        "$out/report.json" 2>/dev/null)
    aborted=no
    case "$ended" in *"signal 6"*) aborted=yes ;; esac
    grep -q 'Engine core proc .* died unexpectedly' "$log" 2>/dev/null && aborted=yes
    # the dumps written: in $D, in the engine's folder, in the attempt's (pipes are FIFOs)
    files=$(find "$D" "$cwd" "$out/attempts" -type f \( -path "$D/*" -o -name 'core*' \) 2>/dev/null | wc -l)
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "${cd_lines:-0}" "${tb:-0}" "${err:-0}" \
        "${ended:-?}" "$aborted" "$files" >>"$RES/dumpvars.md"
    printf '%s: %s\n' "$name" "${vars:-(none)}" >>"$RES/settings.txt"
    rm -rf "$D" "$cwd"
done
cat "$RES/dumpvars.md"
