#!/bin/bash
# Observations in the store, decisions in verdict/ (#28 part 2): `moeprobe
# report RUNDIR` judges a run again from what it observed, whatever the
# conclusions stored beside the observations say. A qualify run whose
# engine crashes with a CUDA fault (async-race after the blocked run):
#  1. the stored conclusions (failure class, CUDA-fault flag, the diagnosis
#     row) are overwritten with nonsense: the report is still byte-exact
#     the run's own report.json (failure and diagnosis are derived);
#  2. the observed crash in the log is changed to a Python error: the
#     verdict follows the observation (crashed, not diagnosed).
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }
H="$ROOT/tests/integration/hostile_engine.py"
Q_DIR="$Q_TMP/run"
"$MOEPROBE" qualify --out "$Q_DIR" "${Q_FAST[@]}" --candidate 'auto:' -- \
    python3 "$H" --mode cuda --port '{port}' >/dev/null 2>"$Q_TMP/q.stderr"
[ $? -eq 1 ] || { cat "$Q_TMP/q.stderr"; fail "qualify exit, want 1 (no stable candidate)"; }
check "$Q_DIR/report.json" 'c["auto"]["verdict"] == "async-race"' \
    'c["auto"]["diagnosis"]["launch_blocking"] == "clean"' || fail "the run itself"

sql() { python3 -c 'import sqlite3, sys; d = sqlite3.connect(sys.argv[1]); d.executescript(sys.argv[2]); d.commit()' "$Q_DIR/moeprobe.db" "$1"; }
sql "UPDATE attempts SET fail_class = 'tampered', fail_message = 'tampered', cuda_fault = 0,
         engine_died = 0, sites = '[]';
     UPDATE diagnoses SET done = 0, launch_blocking = NULL, requests_clean = 0,
         requests_required = 0, confidence = 0, throughput_ratio = -1, note = 'tampered',
         reasoning = 'tampered';"
"$MOEPROBE" report --no-write --format json "$Q_DIR" >"$Q_TMP/again.json" 2>"$Q_TMP/again.err" ||
    { cat "$Q_TMP/again.err"; fail "report exit"; }
grep -q tampered "$Q_TMP/again.json" && fail "a stored conclusion reached the report"
cmp -s "$Q_DIR/report.json" "$Q_TMP/again.json" ||
    { diff "$Q_DIR/report.json" "$Q_TMP/again.json" | head -20; fail "the report judged again differs"; }

sql "UPDATE attempts SET observations = json_set(observations, '$.crash.class', 'python-error')
     WHERE observations IS NOT NULL AND launch_blocking = 0;"
"$MOEPROBE" report --no-write --format json "$Q_DIR" >"$Q_TMP/py.json" 2>"$Q_TMP/py.err" ||
    { cat "$Q_TMP/py.err"; fail "report exit (2)"; }
check "$Q_TMP/py.json" 'c["auto"]["verdict"] == "crashed"' \
    '"not a CUDA fault" in c["auto"]["why"]' \
    'c["auto"]["diagnosis"] is None' || fail "not judged from the observation"
assert_no_leftovers
echo ok
