#!/bin/bash
# crash_xid.sh - what the driver saw (#24), with refengine's fake driver
# (REFENGINE_FAKE_KMSG: its kernel-log lines) read by moeprobe as the kernel
# log (MOEPROBE_KMSG) and by the fake NVML as Xid events (FAKE_NVML_KMSG):
# every crashing attempt records its Xids from both sources, with the
# engine's pid and the catalog's cause, and a clean attempt none; a hardware
# Xid (79, the GPU fell off the bus) voids the diagnosis: crashed, not
# kernel-fault, saying the failure is not evidence about the kernel; an
# unreadable kernel log and an NVML without events are said, never fatal.
. "$(dirname "$0")/q_lib.sh"
: "${BUILD:?BUILD must point at the build directory}"
FAKE="$BUILD/tests/libfake_nvml.so"
[ -f "$FAKE" ] || { echo "skip: $FAKE not built (make unit-bins)"; exit 77; }
WC="$W/crash-gpu.ini"
K="$Q_TMP/kmsg"
: >"$K"

REFENGINE_FAKE_KMSG="$K" MOEPROBE_KMSG="$K" FAKE_NVML_KMSG="$K" MOEPROBE_NVML_LIB="$FAKE" \
    qualify xid "$WC" "${Q_FAST[@]}" --no-quality --candidate 'faulty: --moe-backend cutlass' \
    --candidate 'marlin: --moe-backend marlin' --candidate 'hw: --moe-backend emulation'
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/xid.stderr"; fail "xid: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'all(a["outcome"] != "crashed" or sorted(set((x["xid"], x["source"]) for x in a["gpu_fault"]["xid"])) == [(13, "kmsg"), (31, "kmsg"), (31, "nvml")] for a in c["faulty"]["attempts"])' \
    'all(x["pid"] > 0 and x["process"] == "VLLM::EngineCor" for a in c["faulty"]["attempts"] for x in a["gpu_fault"]["xid"] if x["xid"] == 31 and x["source"] == "kmsg")' \
    'all(x["cause"] == "application" for a in c["faulty"]["attempts"] for x in a["gpu_fault"]["xid"])' \
    'c["faulty"]["verdict"] == "kernel-fault"' \
    'len(c["faulty"]["crash"]["xid"]) >= 4 and all("attempt" in x for x in c["faulty"]["crash"]["xid"])' \
    'all((a["gpu_fault"] or {"xid": []})["xid"] == [] for a in c["marlin"]["attempts"])' \
    'c["marlin"]["verdict"] == "stable"' \
    'c["hw"]["verdict"] == "crashed"' \
    '"Xid 79" in c["hw"]["why"] and "not evidence about the kernel" in c["hw"]["why"] and "it read as kernel-fault" in c["hw"]["why"]' \
    'any(x["xid"] == 79 and x["cause"] == "hardware" and x["source"] == "kmsg" for x in c["hw"]["crash"]["xid"])' \
    || fail "xid: records and verdicts"
grep -q 'Xid 31 (GPU memory page fault, application; kernel log x1; NVML event x1' "$Q_DIR/report.md" ||
    fail "report.md: the faulty candidate's Xids"
grep -q '### hw: crashed' "$Q_DIR/report.md" || fail "report.md: the hardware Xid's verdict"

# unreadable kernel log, no event API: said, the run goes on
MOEPROBE_KMSG="$Q_TMP/no/such/kmsg" MOEPROBE_NVML_LIB="$FAKE" FAKE_NVML_EVENTS=unsupported \
    qualify unread "$WC" "${Q_FAST[@]}" --no-quality --no-diagnose --candidate 'faulty: --moe-backend cutlass'
[ "$Q_RC" -eq 1 ] || { cat "$Q_TMP/unread.stderr"; fail "unread: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'c["faulty"]["verdict"] == "crashed"' \
    'c["faulty"]["attempts"][0]["gpu_fault"]["kernel_log"].startswith("kernel log not readable: ")' \
    'c["faulty"]["attempts"][0]["gpu_fault"]["nvml_xid"] == "not subscribed: nvmlDeviceRegisterEvents returned 3 (not supported on this GPU)"' \
    'c["faulty"]["attempts"][0]["gpu_fault"]["xid"] == []' \
    || fail "unread: what was not read"
grep -q 'kernel log not readable' "$Q_DIR/report.md" || fail "report.md does not say the kernel log was unreadable"
# an engine whose log does not tag its processes (vLLM 0.10.0) and no dump:
# the Xid 31 names its EngineCore child, known from the process tree only
: >"$K"
REFENGINE_FAKE_KMSG="$K" MOEPROBE_KMSG="$K" MOEPROBE_NVML_LIB="$FAKE" FAKE_NVML_EVENTS=unsupported \
    qualify untagged "$W/crash-untagged.ini" "${Q_FAST[@]}" --no-quality --no-diagnose --no-coredump \
    --candidate 'auto:'
[ "$Q_RC" -eq 1 ] || { cat "$Q_TMP/untagged.stderr"; fail "untagged: exit $Q_RC"; }
grep -q 'pid=' "$Q_DIR/attempts/auto-1/server.log" && fail "untagged: the world's log tags its processes"
check "$Q_DIR/report.json" \
    'any(x["xid"] == 31 and x["source"] == "kmsg" and x["pid"] > 0 for x in c["auto"]["attempts"][0]["gpu_fault"]["xid"])' \
    'c["auto"]["attempts"][0]["gpu_fault"]["other_xids"] == 0' \
    || fail "untagged: the engine child's Xid 31 was not counted as the engine's"
# a shared host: the Xid 79 lines name no process and GPU 0000:01:00, the
# engine's GPU is 0000:02:00 (NVML) - another tenant's GPU fell off the bus,
# which must not void this candidate's diagnosis nor be listed as its Xid
: >"$K"
REFENGINE_FAKE_KMSG="$K" MOEPROBE_KMSG="$K" MOEPROBE_NVML_LIB="$FAKE" FAKE_NVML_EVENTS=unsupported \
    FAKE_NVML_PCI_BUS=2 qualify tenant "$WC" "${Q_FAST[@]}" --no-quality --candidate 'hw: --moe-backend emulation'
[ "$Q_RC" -eq 1 ] || { cat "$Q_TMP/tenant.stderr"; fail "tenant: exit $Q_RC"; }
check "$Q_DIR/report.json" \
    'c["hw"]["verdict"] == "kernel-fault"' \
    'not any(x["xid"] == 79 for a in c["hw"]["attempts"] for x in (a["gpu_fault"] or {"xid": []})["xid"])' \
    'any((a["gpu_fault"] or {}).get("other_xids", 0) > 0 for a in c["hw"]["attempts"])' \
    || fail "tenant: another GPU's Xid 79 was blamed on the candidate"
assert_no_leftovers
echo ok
