#!/bin/bash
# qualify through a real container runtime (podman + runc), in several
# command shapes: env knobs reach the engine in the container and are
# verified there (inspect + the container's processes), a container process
# that drops a variable, or the user's own -e for it, makes the knob missing
# and the candidate not-delivered, and every container of the run is gone
# afterwards.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=q_lib.sh
. "$here/q_lib.sh"
# shellcheck source=podman_lib.sh
. "$here/podman_lib.sh"
trap 'pm_cleanup; q_cleanup' EXIT
pm_setup

# pq NAME CANDIDATES... -- PODMAN ARGS...: qualify with the podman command
pq() {
    local name=$1; shift
    local cands=()
    while [ "$1" != "--" ]; do cands+=(--candidate "$1"); shift; done
    shift
    Q_DIR="$Q_TMP/$name"
    "$MOEPROBE" qualify --out "$Q_DIR" "${Q_FAST[@]}" --no-diagnose --no-quality "${cands[@]}" \
        -- "$@" >"$Q_TMP/$name.stdout" 2>"$Q_TMP/$name.stderr"
    Q_RC=$?
    [ -f "$Q_DIR/report.json" ] || { cat "$Q_TMP/$name.stderr"; fail "$name: no report"; }
    local left
    left=$(pm_containers)
    [ -z "$left" ] || fail "$name: containers left after the run: $left"
}
ENGINE=(/refengine --world /worlds/q-fork.ini --port '{port}')

# 1. podman run: the env knob and the flag are verified in the container
pq plain 'menv: VLLM_SCALED_MM_BACKEND=marlin' 'flag: --moe-backend marlin' -- \
    podman run --rm --network host "$PM_IMAGE" "${ENGINE[@]}"
check "$Q_DIR/report.json" \
    'c["menv"]["verdict"] == "stable"' \
    'c["menv"]["resolved"]["moe_backend"] == "MARLIN"' \
    'c["menv"]["knob_delivery"][0]["knob"] == "VLLM_SCALED_MM_BACKEND=marlin"' \
    'c["menv"]["knob_delivery"][0]["status"] == "verified"' \
    '"podman container inspect moeprobe-" in c["menv"]["knob_delivery"][0]["evidence"]' \
    '"of the container" in c["menv"]["knob_delivery"][0]["evidence"]' \
    'c["flag"]["knob_delivery"][0] == {"knob": "--moe-backend marlin", "status": "verified", "evidence": c["flag"]["knob_delivery"][0]["evidence"]}' \
    '__import__("re").match(r"podman run -e VLLM_SCALED_MM_BACKEND=marlin (-e CUDA_\S+ )*--name moeprobe-", c["menv"]["attempts"][0]["command"])' \
    'r["recommendation"] is not None' || fail "podman run"

# 2. a global option with an argument before run (the old bug: the knob
#    went to the client and was reported as one that changed nothing)
pq global 'auto:' 'menv: VLLM_SCALED_MM_BACKEND=marlin' -- \
    podman --runtime runc run --rm --network host "$PM_IMAGE" "${ENGINE[@]}"
check "$Q_DIR/report.json" \
    'c["menv"]["resolved"]["moe_backend"] == "MARLIN"' \
    'c["auto"]["resolved"]["moe_backend"] == "FLASHINFER_CUTLASS"' \
    'c["menv"]["knob_delivery"][0]["status"] == "verified"' \
    'not r["noop_knobs"]' \
    'r["recommendation"]["candidate"] == "menv"' || fail "podman --runtime runc run"

# 3. podman container run, and a process in the container that drops the
#    variable before the engine starts: configured, but missing where it counts
pq dropped 'auto:' 'menv: VLLM_SCALED_MM_BACKEND=marlin' -- \
    podman container run --rm --network host "$PM_IMAGE" \
    /usr/bin/env -u VLLM_SCALED_MM_BACKEND "${ENGINE[@]}"
check "$Q_DIR/report.json" \
    'c["menv"]["verdict"] == "not-delivered"' \
    'c["menv"]["knob_delivery"][0]["status"] == "missing"' \
    '"dropped on the way to the engine" in c["menv"]["knob_delivery"][0]["evidence"]' \
    'c["menv"]["resolved"]["moe_backend"] == "FLASHINFER_CUTLASS"' \
    'not r["noop_knobs"]' \
    'not r["same_backend_groups"]' \
    'r["recommendation"] is None' || fail "dropped in the container"
[ "$Q_RC" -eq 1 ] || fail "no candidate qualified, yet exit $Q_RC"
grep -q 'not-delivered' "$Q_DIR/report.md" || fail "report.md does not say not-delivered"
grep -q 'dlv-missing' "$Q_DIR/report.html" || fail "report.html does not show the missing knob"

# 4. the user's own -e for the same variable wins in the container (it comes
#    later): the candidate's value is missing, with what the container has;
#    the user's --name is the one inspected and removed
pq override 'menv: VLLM_SCALED_MM_BACKEND=marlin' -- \
    podman run --rm --network host -e VLLM_SCALED_MM_BACKEND=cutlass --name "mp-user-$$" \
    "$PM_IMAGE" "${ENGINE[@]}"
check "$Q_DIR/report.json" \
    'c["menv"]["verdict"] == "not-delivered"' \
    '"podman container inspect mp-user-" in c["menv"]["knob_delivery"][0]["evidence"]' \
    '"has VLLM_SCALED_MM_BACKEND=cutlass, not VLLM_SCALED_MM_BACKEND=marlin" in c["menv"]["knob_delivery"][0]["evidence"]' \
    '"--name moeprobe-" not in c["menv"]["attempts"][0]["command"]' || fail "overridden by the user's -e"
assert_no_leftovers
echo "ok"
