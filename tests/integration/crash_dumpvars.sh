#!/bin/bash
# crash_dumpvars.sh - refengine imitates what the CUDA driver did with each
# setting of the core-dump variables on an H200 (tests/gpu/dumpvars-h200.md,
# measured by scripts/gpu-dumpvars.sh on refengine-cuda): the same script
# run on refengine gives, row by row, the driver's "coredump:" lines or
# none, the traceback and the CUDA error line or none, and the abort of the
# faulting process or not (the dump on exception aborts unless the
# generation flags have skip_abort; the pipe's variables alone and
# SHOW_PROGRESS with FILE alone make that dump too, the pipe alone without
# lines). The row "moeprobe" (moeprobe's own settings) keeps both: the
# lines and the traceback, no abort (docs/verdicts.md "GPU core dumps").
. "$(dirname "$0")/q_lib.sh"
export MOEPROBE_KMSG=none MOEPROBE_NVML_LIB=none
MEASURED="$ROOT/tests/gpu/dumpvars-h200.md"
MOEPROBE="$MOEPROBE" GPU_CHECK_ENGINE="$REFENGINE" DUMPVARS_WORLD="$W/crash-gpu.ini" \
    DUMPVARS_BACKEND=cutlass "$ROOT/scripts/gpu-dumpvars.sh" "$Q_TMP/dv" >"$Q_TMP/dv.out" 2>&1 ||
    { cat "$Q_TMP/dv.out"; fail "gpu-dumpvars.sh on refengine: exit $?"; }
python3 - "$MEASURED" "$Q_TMP/dv/dumpvars.md" <<'PY' || { cat "$Q_TMP/dv.out"; fail "refengine differs from the H200"; }
import sys

def table(path):
    rows, head = {}, None
    for ln in open(path):
        if not ln.startswith("| ") or ln.startswith("|---"):
            continue
        cells = [x.strip() for x in ln.strip().strip("|").split("|")]
        if head is None:
            head = cells
        else:
            rows[cells[0]] = dict(zip(head, cells))
    return rows

def facts(row):
    aborted = row.get("aborted", "yes" if "signal 6" in row["engine ended"] else "no")
    return {"lines": int(row["coredump: lines"]) > 0, "traceback": int(row["traceback"]) > 0,
            "error": int(row["CUDA error line"]) > 0, "aborted": aborted == "yes"}

h200, ref = table(sys.argv[1]), table(sys.argv[2])
bad = []
assert len(h200) >= 7, "the measured table has %d rows" % len(h200)
for name, row in h200.items():
    if name not in ref:
        bad.append("%s: not measured on refengine" % name)
    elif facts(ref[name]) != facts(row):
        bad.append("%s: H200 %s, refengine %s" % (name, facts(row), facts(ref[name])))
want = {"lines": True, "traceback": True, "error": True, "aborted": False}
if "moeprobe" not in ref or facts(ref["moeprobe"]) != want:
    bad.append("moeprobe's own settings: %s, want %s" % (ref.get("moeprobe") and facts(ref["moeprobe"]), want))
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
assert_no_leftovers
echo ok
