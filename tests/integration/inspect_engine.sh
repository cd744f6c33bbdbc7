#!/bin/bash
# tier: quick
# inspect_engine.sh - `moeprobe inspect --engine` on the nvcc-built objects
# of tests/data/engine (make.sh made them): the --json contract, sm_120 vs
# sm_121 by CUDA's rules (Marlin's arch-specific sm_120a library runs on
# 12.0, not on 12.1; vLLM's _C with plain sm_120 SASS loads on 12.1, but
# VLLM_CUTLASS, whose FP4 kernels need an a or f target, is "no" there:
# vllm#50925's picture), usage errors; and, where
# cuobjdump is installed, the parser's architecture list per file against
# `cuobjdump --list-elf --list-ptx` (else against cuobjdump.txt, the listing
# recorded with cuobjdump 13.0 on the same files).
set -u
: "${MOEPROBE:?}" "${ROOT:?}"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the JSON"; exit 77; }
tmp=$(mktemp -d /tmp/inspect-engine.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
sp="$ROOT/tests/data/engine/site-packages"

for sm in 121 120; do
    "$MOEPROBE" inspect --json --engine "$sp" --sm "$sm" >"$tmp/$sm.json" || fail "inspect --engine exit $?"
done
python3 - "$tmp/121.json" "$tmp/120.json" <<'PY' || fail "engine json"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["sm"] == "121" and a["sm_source"] == "--sm"
libs = {l["path"]: l for l in a["libraries"]}
assert "other/libplain.so" not in libs, "a library without CUDA code is listed"
moe = libs["vllm/_moe_C.abi3.so"]
assert moe["sass"] == ["sm_90a", "sm_100a", "sm_120a"] and moe["ptx"] == [], moe
assert moe["runs"] == "no" and moe["backends"] == ["MARLIN"], moe
c = libs["vllm/_C.abi3.so"]
assert c["sass"] == ["sm_90", "sm_100", "sm_120"] and c["ptx"] == ["compute_120"] and c["runs"] == "native"
assert libs["other/_ptx_only.so"]["runs"] == "jit"
assert libs["other/_spark_only.so"]["runs"] == "native"
assert libs["flashinfer_jit_cache/jit_cache/fused_moe_120/fused_moe_120.so"]["runs"] == "native"
bk = {x["backend"]: x for x in a["backends"]}
assert bk["MARLIN"]["runs"] == "no" and bk["MARLIN"]["arch_specific"] is None
cut = bk["VLLM_CUTLASS"]
assert cut["runs"] == "no" and cut["arch_specific"] and "the library loads" in cut["why"], cut
assert bk["FLASHINFER_CUTLASS"]["runs"] == "native" and "sm_120f" in bk["FLASHINFER_CUTLASS"]["why"]
assert "MARLIN" in a["summary"]
libs120 = {l["path"]: l for l in b["libraries"]}
assert libs120["vllm/_moe_C.abi3.so"]["runs"] == "native"
assert libs120["other/_spark_only.so"]["runs"] == "no"
assert {x["backend"]: x for x in b["backends"]}["VLLM_CUTLASS"]["runs"] == "no"
PY
"$MOEPROBE" inspect --engine "$sp" --sm 12.1 >"$tmp/t.txt" || fail "text exit $?"
grep -q '^  MARLIN *no (vllm/_moe_C.abi3.so)' "$tmp/t.txt" || { cat "$tmp/t.txt"; fail "text table"; }
grep -q '^  VLLM_CUTLASS *no (vllm/_C.abi3.so)' "$tmp/t.txt" || { cat "$tmp/t.txt"; fail "text table: VLLM_CUTLASS"; }
for bad in "--engine $sp --sm 12.x" "--sm 121 $sp" "--engine /nonexistent/dir"; do
    # shellcheck disable=SC2086
    "$MOEPROBE" inspect $bad >/dev/null 2>"$tmp/err"; rc=$?
    [ $rc -eq 2 ] || { cat "$tmp/err"; fail "inspect $bad: exit $rc, want 2"; }
done

# our lists against cuobjdump's (live, or the recorded listing)
python3 - "$tmp/121.json" "$sp" "$ROOT/tests/data/engine/cuobjdump.txt" <<'PY' || fail "parser differs from cuobjdump"
import json, os, re, shutil, subprocess, sys
# cuobjdump 13.0 names a family target without its f (sm_120f -> sm_120): ours
# come from the fat binary header's family flag, compared without it
strip_f = lambda v: sorted(re.sub(r"^((?:sm|compute)_\d+)f$", r"\1", x) for x in v)
ours = {l["path"]: strip_f(l["sass"]) + strip_f(l["ptx"]) for l in json.load(open(sys.argv[1]))["libraries"]}
sp, recorded = sys.argv[2], sys.argv[3]
def names(text):
    sass = {m for m in re.findall(r"\.(sm_\d+[af]?)\.cubin", text)}
    ptx = {"compute_" + m for m in re.findall(r"\.sm_(\d+[af]?)\.ptx", text)}
    return sorted(sass) + sorted(ptx)
theirs, how = {}, ""
if shutil.which("cuobjdump"):
    how = "live cuobjdump"
    for path in ours:
        r = subprocess.run(["cuobjdump", "--list-elf", "--list-ptx", os.path.join(sp, path)],
                           capture_output=True, text=True)
        theirs[path] = names(r.stdout)
else:
    how = "recorded listing"
    cur = None
    for line in open(recorded):
        m = re.match(r"^== (\S+)", line)
        if m:
            cur = m.group(1); theirs[cur] = ""
        elif cur:
            theirs[cur] += line
    theirs = {k: names(v) for k, v in theirs.items()}
bad = [(p, ours[p], theirs.get(p)) for p in ours if ours[p] != theirs.get(p)]
print("compared with", how, ":", len(ours), "files")
assert not bad, bad
PY
