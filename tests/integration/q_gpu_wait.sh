#!/bin/bash
# q_gpu_wait.sh - before each engine start on a GPU moeprobe waits, bounded
# and reported, until the GPU memory the previous engine held is free again
# (#29 item 3): with the fake NVML, the engine's 80 GiB stay in use for 2 s
# after it exits (as unified memory on a DGX Spark returns late); the second
# candidate is started only once they are back to what the run began with,
# and stderr says it waited and for how long.
. "$(dirname "$0")/q_lib.sh"
: "${BUILD:?BUILD must point at the build directory}"
FAKE="$BUILD/tests/libfake_nvml.so"
[ -f "$FAKE" ] || { echo "skip: $FAKE not built (make unit-bins)"; exit 77; }
MEM="$Q_TMP/gpu-mem"
cat >"$Q_TMP/engine.sh" <<SH
#!/bin/sh
"$REFENGINE" "\$@" &
pid=\$!
trap 'kill -TERM \$pid 2>/dev/null' TERM INT
wait \$pid; wait \$pid
echo "81920 \$(( \$(date +%s) + 2 ))" >"$MEM"
SH
chmod +x "$Q_TMP/engine.sh"
MOEPROBE_NVML_LIB="$FAKE" FAKE_NVML_MEM_FILE="$MEM" "$MOEPROBE" qualify --out "$Q_TMP/w" \
    --seq 3 --conc 2:4 --max-tokens 8 --grace 3 --no-quality --candidate 'a:' --candidate 'b: --moe-backend marlin' \
    -- "$Q_TMP/engine.sh" --world "$ROOT/tests/worlds/fast.ini" --port '{port}' \
    >/dev/null 2>"$Q_TMP/w.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/w.err"; fail "exit $rc"; }
grep -q "b 2/2: waiting for the GPU memory the previous engine held to be freed: 80.0 GiB in use, 1.0 GiB before" \
    "$Q_TMP/w.err" || { cat "$Q_TMP/w.err"; fail "no wait reported"; }
grep -Eq "b 2/2: the GPU memory was freed after [0-9.]+ s" "$Q_TMP/w.err" || fail "no end of the wait"
waited=$(grep -Eo "freed after [0-9.]+" "$Q_TMP/w.err" | grep -Eo "[0-9.]+$")
python3 -c "import sys; w = float(sys.argv[1]); sys.exit(not (0.5 <= w <= 10))" "$waited" ||
    fail "waited $waited s for memory held 2 s"
check "$Q_TMP/w/report.json" 'c["b"]["verdict"] == "stable"' || fail "report"
assert_no_leftovers
echo "ok: waited $waited s"
