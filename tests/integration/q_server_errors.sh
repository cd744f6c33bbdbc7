#!/bin/bash
# Failures are classified before they are diagnosed: a live server that
# answers wrongly is `server-error` (the first bad response is the evidence),
# an engine that dies without a CUDA error is `crashed` and never diagnosed
# with CUDA_LAUNCH_BLOCKING=1; only CUDA-fault evidence in the log leads to
# async-race / kernel-fault. Tokens are counted from content-bearing events.
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }
H="$ROOT/tests/integration/hostile_engine.py"

hostile() { # NAME MODE [moeprobe options...]
    local name=$1 mode=$2; shift 2
    Q_DIR="$Q_TMP/$name"
    "$MOEPROBE" qualify --out "$Q_DIR" "${Q_FAST[@]}" --candidate 'auto:' "$@" -- \
        python3 "$H" --mode "$mode" --port '{port}' >"$Q_TMP/$name.stdout" 2>"$Q_TMP/$name.stderr"
    Q_RC=$?
}

for mode in http500 cut nonsse chunked oversized garbage; do
    hostile "$mode" "$mode"
    [ "$Q_RC" -eq 1 ] || { cat "$Q_TMP/$mode.stderr"; fail "$mode: exit $Q_RC, want 1"; }
    check "$Q_DIR/report.json" \
        'c["auto"]["verdict"] == "server-error"' \
        'c["auto"]["diagnosis"] is None' \
        '"answered wrongly" in c["auto"]["why"]' \
        'any(e.startswith("attempts/auto-1/requests.jsonl:") for e in c["auto"]["evidence"])' \
        'not any(a["launch_blocking"] for a in c["auto"]["attempts"])' \
        || fail "$mode: report fields"
    # the evidence line is the first failed request
    python3 - "$Q_DIR" <<'PY' || fail "$mode: evidence is not the first bad response"
import json, os, sys
d = sys.argv[1]
c = json.load(open(os.path.join(d, "report.json")))["candidates"][0]
e = [x for x in c["evidence"] if "requests.jsonl" in x][0]
path, n = e.rsplit(":", 1)
rows = [json.loads(l) for l in open(os.path.join(d, path))]
assert rows[int(n) - 1]["outcome"] != "ok", rows[int(n) - 1]
assert all(r["outcome"] == "ok" for r in rows[:int(n) - 1])
PY
done
grep -q 'HTTP 500: internal failure in the scheduler' "$Q_TMP/http500/report.json" || fail "http500 message"
grep -q 'without an event stream' "$Q_TMP/nonsse/report.json" || fail "nonsse message"
grep -q 'larger than' "$Q_TMP/oversized/report.json" || fail "oversized message"
grep -q 'malformed JSON' "$Q_TMP/garbage/report.json" || fail "garbage message"

# the engine dies with a Python error: crashed, with its class, not diagnosed
hostile pytrace pytrace
check "$Q_DIR/report.json" \
    'c["auto"]["verdict"] == "crashed"' \
    'c["auto"]["crash"]["class"] == "python-error"' \
    '"not a CUDA fault: not diagnosed with CUDA_LAUNCH_BLOCKING=1" in c["auto"]["why"]' \
    'not any(a["launch_blocking"] for a in c["auto"]["attempts"])' \
    || fail "pytrace: report fields"

# a CUDA fault in the log is still diagnosed (and clean under launch blocking)
hostile cuda cuda
check "$Q_DIR/report.json" \
    'c["auto"]["verdict"] == "async-race"' \
    'c["auto"]["diagnosis"]["launch_blocking"] == "clean"' \
    || fail "cuda: report fields"

# empty events are no tokens, whatever the usage chunk claims
hostile empty empty
check "$Q_DIR/report.json" \
    'c["auto"]["throughput"]["sequential_tok_s"] in (0, None)' \
    'c["auto"]["verdict"] != "stable"' \
    || fail "empty: tokens counted from empty events"
assert_no_leftovers
echo ok
