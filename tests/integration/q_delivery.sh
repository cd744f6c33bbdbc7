#!/bin/bash
# Knob delivery on host commands: an env knob is verified in the engine's
# process tree whether the engine is started directly, through `env A=B`,
# `bash -c 'exec ...'` or sudo (which resets the environment: the knobs go
# as `env NAME=VALUE` after sudo's options); a flag is verified from the engine's non-default
# args; a wrapper that drops the variable before exec'ing the engine makes
# the knob missing: the candidate is not-delivered, not diagnosed, never
# recommended, and its knob is not one "that changed nothing" although the
# engine resolved exactly like auto. A wrapper that stays alive with the
# variable while the engine runs without it is missing too: the process
# listening on the port is the engine. A launch-blocking run whose
# CUDA_LAUNCH_BLOCKING=1 never arrived is no evidence for the diagnosis.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=q_lib.sh
. "$here/q_lib.sh"
cat >"$Q_TMP/drop.sh" <<'SH'
#!/bin/sh
exec env -u VLLM_SCALED_MM_BACKEND "$@"
SH
# a wrapper that stays (no exec): it still has the variable, the engine does not
cat >"$Q_TMP/fork.sh" <<'SH'
#!/bin/bash
env -u VLLM_SCALED_MM_BACKEND "$@" &
wait
SH
# a wrapper that drops CUDA_LAUNCH_BLOCKING: the "blocked" run is a normal one
cat >"$Q_TMP/noblock.sh" <<'SH'
#!/bin/sh
exec env -u CUDA_LAUNCH_BLOCKING "$@"
SH
# a stand-in for sudo's env_reset (no sudo needed): the command gets a fresh
# environment (the test markers kept, as an env_keep would)
mkdir -p "$Q_TMP/bin"
cat >"$Q_TMP/bin/sudo" <<'SH'
#!/bin/sh
[ "$1" = "-E" ] && shift
exec env -i PATH="$PATH" Q_TEST_MARKER="$Q_TEST_MARKER" \
    MOEPROBE_TEST_MARKER="${MOEPROBE_TEST_MARKER:-}" MOEPROBE_RUN_MARKER="$MOEPROBE_RUN_MARKER" "$@"
SH
chmod +x "$Q_TMP/drop.sh" "$Q_TMP/fork.sh" "$Q_TMP/noblock.sh" "$Q_TMP/bin/sudo"
ENG=("$REFENGINE" --world "$W/q-fork.ini" --port '{port}')

# hq NAME MOEPROBE-ARGS... -- COMMAND...
hq() {
    local name=$1; shift
    local args=()
    while [ "$1" != "--" ]; do args+=("$1"); shift; done
    shift
    Q_DIR="$Q_TMP/$name"
    "$MOEPROBE" qualify --out "$Q_DIR" "${Q_FAST[@]}" --no-quality "${args[@]}" -- "$@" \
        >"$Q_TMP/$name.stdout" 2>"$Q_TMP/$name.stderr"
    Q_RC=$?
    [ -f "$Q_DIR/report.json" ] || { cat "$Q_TMP/$name.stderr"; fail "$name: no report"; }
}

for shape in direct env bash sudo; do
    case $shape in
    direct) cmd=("${ENG[@]}") ;;
    env) cmd=(env MOEPROBE_SHAPE=env "${ENG[@]}") ;;
    bash) cmd=(bash -c 'exec "$0" "$@"' "${ENG[@]}") ;;
    sudo) cmd=("$Q_TMP/bin/sudo" -E "${ENG[@]}") ;;
    esac
    hq "$shape" --no-diagnose --candidate 'menv: VLLM_SCALED_MM_BACKEND=marlin' \
        --candidate 'flag: --moe-backend marlin' -- "${cmd[@]}"
    check "$Q_DIR/report.json" \
        'c["menv"]["knob_delivery"][0]["status"] == "verified"' \
        '"/environ" in c["menv"]["knob_delivery"][0]["evidence"]' \
        'c["flag"]["knob_delivery"][0]["status"] == "verified"' \
        '"non-default args" in c["flag"]["knob_delivery"][0]["evidence"]' \
        'c["menv"]["verdict"] == "stable"' || fail "shape $shape"
done

# the dropping wrapper; auto (knob-less) crashes the same way menv now does
hq dropped --candidate 'auto:' --candidate 'menv: VLLM_SCALED_MM_BACKEND=marlin' \
    --candidate 'flag: --moe-backend marlin' -- "$Q_TMP/drop.sh" "${ENG[@]}"
check "$Q_DIR/report.json" \
    'c["menv"]["verdict"] == "not-delivered"' \
    'c["menv"]["knob_delivery"] == [{"knob": "VLLM_SCALED_MM_BACKEND=marlin", "status": "missing", "evidence": c["menv"]["knob_delivery"][0]["evidence"]}]' \
    '"listening on port" in c["menv"]["knob_delivery"][0]["evidence"]' \
    'c["menv"]["resolved"]["moe_backend"] == c["auto"]["resolved"]["moe_backend"]' \
    'not any(k["candidate"] == "menv" for k in r["noop_knobs"])' \
    'all("menv" not in g["candidates"] for g in r["same_backend_groups"])' \
    'c["menv"]["diagnosis"] is None or "did not reach the engine" in (c["menv"]["diagnosis"]["note"] or "")' \
    'not any(a["launch_blocking"] for a in c["menv"]["attempts"])' \
    'r["recommendation"]["candidate"] == "flag"' || fail "dropped"
grep -q '`VLLM_SCALED_MM_BACKEND=marlin` \*\*missing\*\*' "$Q_DIR/report.md" || fail "report.md"

# moeprobe resolve maps knob sets to roads: a knob that never arrived maps nowhere
Q_DIR="$Q_TMP/resolve"
"$MOEPROBE" resolve --out "$Q_DIR" --quiet --candidate 'auto:' \
    --candidate 'menv: VLLM_SCALED_MM_BACKEND=marlin' -- "$Q_TMP/drop.sh" "${ENG[@]}" \
    >"$Q_TMP/resolve.stdout" 2>"$Q_TMP/resolve.stderr" || { cat "$Q_TMP/resolve.stderr"; fail "resolve"; }
check "$Q_DIR/report.json" \
    'c["menv"]["verdict"] == "not-delivered"' \
    'c["menv"]["knob_delivery"][0]["status"] == "missing"' \
    'not r["noop_knobs"] and not r["same_backend_groups"]' || fail "resolve: not-delivered"

# the forking wrapper: the process serving the port decides, not the wrapper
hq forked --no-diagnose --candidate 'menv: VLLM_SCALED_MM_BACKEND=marlin' -- "$Q_TMP/fork.sh" "${ENG[@]}"
check "$Q_DIR/report.json" \
    'c["menv"]["verdict"] == "not-delivered"' \
    'c["menv"]["knob_delivery"][0]["status"] == "missing"' \
    '"listening on port" in c["menv"]["knob_delivery"][0]["evidence"]' \
    '"(fork.sh) of the tree has it" in c["menv"]["knob_delivery"][0]["evidence"]' || fail "forked"
"$MOEPROBE" report --format md "$Q_DIR" | grep -q 'not-delivered' || fail "report from the store"

# the diagnosis of a crash whose CUDA_LAUNCH_BLOCKING=1 run did not get the
# variable: no kernel-fault (it crashes "blocked" too), an inconclusive crash
hq noblock --candidate 'auto:' -- "$Q_TMP/noblock.sh" "${ENG[@]}"
check "$Q_DIR/report.json" \
    'c["auto"]["verdict"] == "crashed"' \
    'any(a["launch_blocking"] for a in c["auto"]["attempts"])' \
    '"CUDA_LAUNCH_BLOCKING=1 did not reach the engine" in c["auto"]["diagnosis"]["note"]' || fail "noblock"
assert_no_leftovers
echo ok
