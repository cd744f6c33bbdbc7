#!/bin/bash
# inspect_fifo.sh - a FIFO (or a device, a socket) named like a checkpoint
# file (config.json, hf_quant_config.json, *.safetensors) never makes
# `moeprobe inspect` or `qualify --model-dir` wait forever for a writer: the
# type is checked before anything is read, and the file is named in an
# input error (exit 2). Every call is bounded by timeout(1): a hang fails.
# tier: quick
set -u
: "${MOEPROBE:?}" "${ROOT:?}" "${REFENGINE:?}"
tmp=$(mktemp -d /tmp/inspect-fifo.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ck="$ROOT/tests/data/checkpoints/nemotron-h-nvfp4"

# DIR WANT_IN_MESSAGE [inspect|qualify]
expect2() {
    local dir=$1 want=$2 how=${3:-inspect} rc
    if [ "$how" = inspect ]; then
        timeout 20 "$MOEPROBE" inspect --json "$dir" >"$tmp/out" 2>"$tmp/err"
    else
        timeout 20 "$MOEPROBE" qualify --quiet --out "$tmp/run-$RANDOM" --model-dir "$dir" --candidate 'a:' \
            -- "$REFENGINE" --world "$ROOT/tests/worlds/fast.ini" --port '{port}' >"$tmp/out" 2>"$tmp/err"
    fi
    rc=$?
    [ $rc -eq 124 ] && fail "$how $dir: still waiting after 20 s (opened a FIFO for reading?)"
    [ $rc -eq 2 ] || { cat "$tmp/err"; fail "$how $dir: exit $rc, want 2"; }
    grep -q -- "$want" "$tmp/err" || { cat "$tmp/err"; fail "$how $dir: message lacks '$want'"; }
}

for name in config.json hf_quant_config.json model-00001-of-00002.safetensors; do
    d="$tmp/fifo-${name%%.*}"
    cp -r "$ck" "$d"
    rm -f "$d/$name"
    mkfifo "$d/$name"
    expect2 "$d" "$name.*not a regular file (a FIFO)"
    expect2 "$d" "$name.*not a regular file (a FIFO)" qualify
done
# a character device linked in as config.json
d="$tmp/dev"
cp -r "$ck" "$d"
rm -f "$d/config.json"
ln -s /dev/zero "$d/config.json"
expect2 "$d" "config.json.*not a regular file (a character device)"
# the checkpoint itself still reads
timeout 20 "$MOEPROBE" inspect --json "$ck" >/dev/null || fail "inspect of the intact checkpoint: exit $?"
echo ok
