#!/bin/bash
# `data: [DONE]` ends a request even when the engine then keeps the response
# open (no terminating chunk, no close): every request counts ok at once,
# the candidate is stable, nothing waits for the stall timeout.
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }
H="$ROOT/tests/integration/hostile_engine.py"
Q_DIR="$Q_TMP/donehold"
# no scoring pass: this engine streams every answer, non-streaming requests
# included, and holds them open, so a scoring request would wait for a body
# that never ends (a hang: what a non-streaming client must call it)
"$MOEPROBE" qualify --out "$Q_DIR" "${Q_FAST[@]}" --agreement 0 --accuracy 0 \
    --stall-timeout "$(tmul 10)" --candidate 'auto:' -- \
    python3 "$H" --mode donehold --port '{port}' >"$Q_TMP/donehold.stdout" 2>"$Q_TMP/donehold.stderr"
rc=$?
[ "$rc" -eq 0 ] || { cat "$Q_TMP/donehold.stderr"; fail "exit $rc, want 0"; }
check "$Q_DIR/report.json" \
  'c["auto"]["verdict"] == "stable"' \
  'c["auto"]["requests"]["failed"] == 0 and c["auto"]["requests"]["ok"] > 0' \
  || fail "report fields"
python3 - "$Q_DIR/attempts/auto-1/requests.jsonl" <<'PY' || fail "requests"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert rows and all(r["outcome"] == "ok" for r in rows), rows
PY
# the workload took far less than one stall timeout per request
python3 - "$Q_DIR/report.json" "$(tmul 10)" <<'PY' || fail "too slow: requests waited after [DONE]"
import json, sys
a = json.load(open(sys.argv[1]))["candidates"][0]["attempts"][0]
assert a["workload_s"] < float(sys.argv[2]), a["workload_s"]
PY
assert_no_leftovers
echo ok
