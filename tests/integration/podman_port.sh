#!/bin/bash
# The engine listening somewhere else, through a real container runtime
# (podman + runc, host network): the engine in the container announces a
# port moeprobe does not probe (it was given --port 0; moeprobe's {port} went
# into another argument, so no --port was appended). The attempt ends within
# seconds as startup-failure naming both ports, instead of waiting out
# --ready-timeout, and the container is gone afterwards.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=q_lib.sh
. "$here/q_lib.sh"
# shellcheck source=podman_lib.sh
. "$here/podman_lib.sh"
trap 'pm_cleanup; q_cleanup' EXIT
pm_setup

Q_DIR="$Q_TMP/port"
t0=$(date +%s)
"$MOEPROBE" qualify --out "$Q_DIR" "${Q_FAST[@]}" --no-quality --ready-timeout "$(tmul 120)" --candidate 'auto:' \
    -- podman run --rm --network host "$PM_IMAGE" /refengine --world /worlds/q-fork.ini --port 0 \
    --served-model-name 'm{port}' >"$Q_TMP/port.stdout" 2>"$Q_TMP/port.stderr"
rc=$?
dt=$(($(date +%s) - t0))
[ $rc -eq 1 ] || { cat "$Q_TMP/port.stderr"; fail "exit $rc, want 1"; }
[ "$dt" -lt "$(tmul 60)" ] || fail "took ${dt}s: the mismatch waited for the ready timeout"
check "$Q_DIR/report.json" \
    'c["auto"]["verdict"] == "startup-failure"' \
    '"(host network), but moeprobe probes port" in c["auto"]["why"]' \
    'isinstance(c["auto"]["attempts"][0]["announced_port"], int)' \
    '"podman run" in c["auto"]["attempts"][0]["command"]' \
    || fail "report fields"
left=$(pm_containers)
[ -z "$left" ] || fail "containers left after the run: $left"
assert_no_leftovers
echo "ok: port mismatch through podman in ${dt}s"
