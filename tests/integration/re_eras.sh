#!/bin/bash
# refengine log lines per vLLM era: each world's start-up log must match the
# regexes of reference/vllm-knobs.md §4, and the same regex must match the
# corresponding line of a real vLLM log in the corpus.
. "$(dirname "$0")/re_lib.sh"
corpus=${MOEPROBE_CORPUS:-$ROOT/../shared/corpus}/vllm-logs
have_corpus=1
[ -d "$corpus" ] || have_corpus=0

PREFIX='^\((APIServer|EngineCore(_DP0)?) pid=\d+\) (INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d \[[\w.]+:\d+\] '
MOE="Using '(?P<backend>[A-Z0-9_]+)' NvFp4 MoE backend out of potential backends: \[(?P<candidates>[^\]]*)\]"
PRE='Using FlashInfer (?P<fi>CUTLASS|TensorRT-LLM|CUTEDSL) kernels for (?P<cls>\w+)\.'
DENSE='Using (?P<k>[\w.\-]+) for NVFP4 GEMM'
ATTN='Using (?P<attn>[A-Z0-9_]+) attention backend out of potential backends: (?P<cands>[\[(][^\])]*[\])])'
BANNER='version\s+(?P<ver>\d+\.\d+\.\d+[\w.+\-]*)'
OLDVER='vLLM API server version (?P<ver>\S+)'
INIT="Initializing a V1 LLM engine \(v(?P<ver>[^)]+)\) with config: model='(?P<model>[^']+)'"
UNKNOWN='Unknown vLLM environment variable detected: (?P<var>\w+)'
KC="moe_backend='(?P<mb>[^']+)'"

# check REGEX CORPUS-FILE-PREFIX: our log and the corpus file both match
check() {
    grep -qP -- "$1" "$RE_LOG" || fail "refengine log lacks /$1/"
    if [ $have_corpus = 1 ]; then
        grep -qP -- "$1" "$corpus/$2"*.log || fail "corpus $2 lacks /$1/ (regex drifted?)"
    fi
}

run_world() { # NAME WORLD [ARGS]
    local name=$1; shift
    re_start "$@"
    re_ready
    kill -TERM "$RE_PID"
    re_wait_exit
    [ "$RE_RC" = 0 ] || fail "$name exit $RE_RC"
}

# pre-oracle (<= 0.13): opt-in FlashInfer phrasing, tuple attention list, old version line
VLLM_USE_FLASHINFER_MOE_FP4=1 VLLM_FLASHINFER_MOE_BACKEND=throughput \
    run_world e13 pre "$ROOT/worlds/era-0.13-preoracle.ini"
check "$PRE" 001
check "$DENSE" 001
check "$ATTN" 001
check "$OLDVER" 031
grep -qP "$ATTN" "$RE_LOG" && grep -q "('FLASHINFER', 'TRITON_ATTN')$" "$RE_LOG" || fail "tuple list"
grep -q 'NvFp4 MoE backend out of potential' "$RE_LOG" && fail "no oracle line before 0.15"

# 0.15 oracle: 5-entry list, VLLM_CUTLASS
run_world e15 e15 "$ROOT/worlds/era-0.15-oracle.ini"
check "$MOE" 009
grep -qP "Using 'VLLM_CUTLASS' NvFp4 MoE backend out of potential backends: \['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN'\]\." "$RE_LOG" ||
    fail "0.15 selection line"
check "$INIT" 009

# 0.17: explicit flag in non-default args and KernelConfig
run_world e17 e17 "$ROOT/worlds/era-0.17-flag.ini" --moe-backend cutlass
check "$KC" 012
grep -q "'moe_backend': 'cutlass'" "$RE_LOG" || fail "non-default args"
grep -q "Using 'VLLM_CUTLASS' NvFp4 MoE backend" "$RE_LOG" || fail "explicit cutlass"
check "$PREFIX" 009

# 0.19: banner, unknown env warning
VLLM_SCALED_MM_BACKEND=marlin run_world e19 e19 "$ROOT/worlds/era-0.19-unknown-env.ini"
check "$BANNER" 009
check "$UNKNOWN" 009
grep -q 'Unknown vLLM environment variable detected: VLLM_SCALED_MM_BACKEND' "$RE_LOG" || fail "unknown env"
grep -q "Using 'FLASHINFER_CUTLASS'" "$RE_LOG" || fail "the unknown knob must change nothing"

# 0.23: removed FlashInfer env (unknown + no effect); VLLM_TEST_FORCE_FP8_MARLIN is still a
# variable but, as the knowledge assumes (uncertain), no longer read by the NvFp4 oracle
VLLM_USE_FLASHINFER_MOE_FP4=0 VLLM_TEST_FORCE_FP8_MARLIN=1 run_world e23 e23 "$ROOT/worlds/era-0.23-removed-env.ini"
grep -q 'detected: VLLM_USE_FLASHINFER_MOE_FP4' "$RE_LOG" || fail "removed env not unknown"
grep -q 'detected: VLLM_TEST_FORCE_FP8_MARLIN' "$RE_LOG" && fail "VLLM_TEST_FORCE_FP8_MARLIN lives until 0.28"
grep -q "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: \[.*'EMULATION'\]\." "$RE_LOG" ||
    fail "0.23 selection"
grep -q '\[shutdown\] API server: shutdown triggered' "$RE_LOG" || fail "new shutdown lines"
check "$DENSE" 012

[ $have_corpus = 1 ] || echo "corpus part skipped: no corpus at $corpus"
echo ok
