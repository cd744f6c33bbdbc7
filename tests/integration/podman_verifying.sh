#!/bin/bash
# The knob-delivery check of a container engine runs on the attempt's loop
# (#28: state VERIFYING), not as a blocking call inside it: through a
# podman whose `container inspect` hangs, a Ctrl-C during the inspect ends
# the run in seconds (the inspect was given up: the knob is unverified,
# "interrupted before it answered"; the hanging inspect is killed, no
# container is left), where a blocking inspect held the run for its 15 s
# timeout first. And a candidate stopped once resolved as the same
# configuration as one tested already still has its environment knob
# verified in the container before the stop.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=q_lib.sh
. "$here/q_lib.sh"
# shellcheck source=podman_lib.sh
. "$here/podman_lib.sh"
trap 'pm_cleanup; q_cleanup' EXIT
pm_setup
ENGINE=(/refengine --world /worlds/q-fork.ini --port '{port}')

# a podman that hangs on `container inspect` while HANG_INSPECT is set
real=$(command -v podman)
mkdir -p "$Q_TMP/bin"
cat >"$Q_TMP/bin/podman" <<EOF
#!/bin/bash
if [ -n "\$HANG_INSPECT" ] && [ "\$1" = container ] && [ "\$2" = inspect ]; then
    echo \$\$ >"\$HANG_INSPECT"
    exec sleep 60
fi
exec "$real" "\$@"
EOF
chmod +x "$Q_TMP/bin/podman"

# 1. Ctrl-C while the inspect hangs
Q_DIR="$Q_TMP/int"
mark="$Q_TMP/inspecting"
PATH="$Q_TMP/bin:$PATH" HANG_INSPECT="$mark" "$MOEPROBE" qualify --out "$Q_DIR" "${Q_FAST[@]}" \
    --no-diagnose --no-quality --candidate 'menv: VLLM_SCALED_MM_BACKEND=marlin' -- \
    podman run --rm --network host "$PM_IMAGE" "${ENGINE[@]}" >"$Q_TMP/int.out" 2>&1 &
pid=$!
for _ in $(seq 300); do [ -s "$mark" ] && break; sleep 0.1; done
[ -s "$mark" ] || { kill -9 $pid; cat "$Q_TMP/int.out"; fail "the inspect never started"; }
t0=$(date +%s%N)
kill -INT $pid
wait $pid
rc=$?
took=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
[ "$rc" -eq 130 ] || { cat "$Q_TMP/int.out"; fail "exit $rc after SIGINT, want 130"; }
# a blocking inspect would first run out its 15 s
awk -v t="$took" 'BEGIN { exit !(t < 12) }' || fail "SIGINT during the inspect took ${took}s to end the run"
check "$Q_DIR/report.json" \
    'c["menv"]["knob_delivery"][0]["status"] == "unverified"' \
    '"interrupted before it answered" in c["menv"]["knob_delivery"][0]["evidence"]' ||
    fail "the given-up inspect"
left=$(pm_containers)
[ -z "$left" ] || fail "containers left after the interrupted run: $left"
kill -0 "$(cat "$mark")" 2>/dev/null && fail "the hanging inspect was not killed"

# 2. stopped once resolved (an unknown variable: the same configuration as
#    'auto'): the inspect ran on the loop before the stop, while the
#    container was still there
Q_DIR="$Q_TMP/same"
PATH="$Q_TMP/bin:$PATH" "$MOEPROBE" qualify --out "$Q_DIR" "${Q_FAST[@]}" --no-diagnose --no-quality \
    --candidate 'auto:' --candidate 'unk: VLLM_DEFAULT_MOE_BACKEND=marlin' -- \
    podman run --rm --network host "$PM_IMAGE" "${ENGINE[@]}" >"$Q_TMP/same.out" 2>&1
check "$Q_DIR/report.json" \
    'c["unk"]["same_as"] == "auto"' \
    '[a["outcome"] for a in c["unk"]["attempts"]] == ["same-config"]' \
    'c["unk"]["knob_delivery"][0]["status"] == "verified"' \
    '"podman container inspect moeprobe-" in c["unk"]["knob_delivery"][0]["evidence"]' ||
    { cat "$Q_TMP/same.out"; fail "same configuration in a container"; }
left=$(pm_containers)
[ -z "$left" ] || fail "containers left: $left"
assert_no_leftovers
echo "ok"
