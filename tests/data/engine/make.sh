#!/bin/sh
# make.sh - rebuild the small CUDA objects under site-packages/ that
# tests/integration/inspect_engine.sh and tests/unit/test_fatbin.c read:
# one trivial kernel (kernel.cu) compiled for known targets with nvcc 13.0
# (-cudart none keeps each object ~20 KB; strip drops the host symbols).
# The outputs are committed: CI has no nvcc. Run from this folder:
#   NVCC=/usr/local/cuda/bin/nvcc ./make.sh
set -eu
NVCC=${NVCC:-nvcc}
sp=site-packages
mkdir -p $sp/vllm $sp/flashinfer_jit_cache/jit_cache/fused_moe_120 $sp/flashinfer_cubin $sp/other
so() { # OUT GENCODE...
    out=$1; shift
    "$NVCC" -shared -Xcompiler -fPIC -cudart none -o "$out" kernel.cu "$@"
    strip "$out"
}
# vLLM's _C: SASS for Hopper, Blackwell (SM100) and SM120, PTX of SM120
so $sp/vllm/_C.abi3.so -gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100 \
    -gencode arch=compute_120,code=sm_120 -gencode arch=compute_120,code=compute_120
# an arch-specific-only build of vLLM's _moe_C: sm_90a/100a/120a SASS, no PTX,
# nothing that runs on sm_121. (Not vllm#50925's listing: the reporter's
# cuobjdump --list-elf of the published aarch64 nightly's
# _moe_C_stable_libtorch.abi3.so showed SASS sm_80 sm_87 sm_89 sm_90 sm_90a
# sm_100 sm_110 sm_120 and PTX sm_80; tests/unit/test_fatbin.c reproduces it.)
so $sp/vllm/_moe_C.abi3.so -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_100a,code=sm_100a \
    -gencode arch=compute_120a,code=sm_120a
# FlashInfer's fused MoE for the SM12x family
so $sp/flashinfer_jit_cache/jit_cache/fused_moe_120/fused_moe_120.so -gencode arch=compute_120f,code=sm_120f
# PTX only (compute_90): JIT on anything newer
so $sp/other/_ptx_only.so -gencode arch=compute_90,code=compute_90
# sm_121a SASS and compute_121 PTX (a GB10-only build)
so $sp/other/_spark_only.so -gencode arch=compute_121a,code=sm_121a -gencode arch=compute_121,code=compute_121
# a bare cubin for sm_100a (TRT-LLM-gen style)
"$NVCC" -cubin -o $sp/flashinfer_cubin/moe_sm100a.cubin kernel.cu -gencode arch=compute_100a,code=sm_100a
# a host library without CUDA code: skipped
cc -shared -fPIC -o $sp/other/libplain.so -x c - <<'C'
int plain(void) { return 1; }
C
strip $sp/other/libplain.so
