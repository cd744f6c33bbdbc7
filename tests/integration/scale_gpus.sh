#!/bin/bash
# qualify --gpus on a machine without GPUs: fake GPU ids. From the task
# records and the engines' own environment: every candidate ran exactly
# once, each engine saw CUDA_VISIBLE_DEVICES = its task's GPU set, and two
# tasks on one GPU never overlapped in time; the merged report has the
# serial run's verdicts and each task's latency (from its store); a task
# whose database is gone is a failed task (a warning, no verdict), never
# read back from its report.json. SIGINT tears every task down. Bad --gpus is exit 2.
. "$(dirname "$0")/q_lib.sh"

# the engine: records its GPUs, then becomes refengine
cat >"$Q_TMP/engine.sh" <<SH
#!/bin/sh
echo "\$CUDA_VISIBLE_DEVICES \$\$" >>"$Q_TMP/engines.log"
exec "$REFENGINE" "\$@"
SH
chmod +x "$Q_TMP/engine.sh"

CANDS=(--candidate 'auto:' --candidate 'cutlass: --moe-backend cutlass'
    --candidate 'marlin: --moe-backend marlin' --candidate 'trtllm: --moe-backend flashinfer_trtllm'
    --candidate 'marlin-env: VLLM_SCALED_MM_BACKEND=marlin')
D="$Q_TMP/gpus"
"$MOEPROBE" qualify --out "$D" --gpus 0,1,2,3 --gpus-per-engine 2 "${Q_FAST[@]}" --percentiles 75,95 "${CANDS[@]}" -- \
    "$Q_TMP/engine.sh" --world "$W/q-verdicts.ini" --port '{port}' >"$Q_TMP/gpus.out" 2>"$Q_TMP/gpus.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/gpus.err"; tail -n 20 "$D"/tasks/*/task.log; fail "exit $rc, want 0"; }
check "$D/report.json" \
    'c["auto"]["verdict"] == "async-race"' 'c["cutlass"]["verdict"] == "kernel-fault"' \
    'c["marlin"]["verdict"] == "stable"' 'c["trtllm"]["verdict"] == "startup-failure"' \
    'c["marlin-env"]["verdict"] == "async-race"' \
    'any(set(g["candidates"]) >= {"auto", "marlin-env"} for g in r["same_backend_groups"])' \
    'any(k["candidate"] == "marlin-env" for k in r["noop_knobs"])' \
    'r["recommendation"]["candidate"] == "marlin"' \
    'r["percentiles"] == [75, 95]' 'r["workload"] is not None and r["workload"]["max_tokens"] == 8' \
    'all(e.startswith("tasks/" + x["name"] + "/attempts/") for x in r["candidates"] for e in x["evidence"])' \
    || fail "merged report"
grep -q '^| candidate | verdict | resolved MoE backend | why (evidence)' "$D/report.md" || fail "report.md"
python3 - "$D" "$Q_TMP/engines.log" <<'PY' || fail "schedule"
import os, sys
d, elog = sys.argv[1], sys.argv[2]
names = open(os.path.join(d, "tasks", "index.txt")).read().split()
assert names == ["auto", "cutlass", "marlin", "trtllm", "marlin-env"], names
recs = {}
for n in names:
    r = dict(l.split("=", 1) for l in open(os.path.join(d, "tasks", n, "task.txt")).read().splitlines())
    assert r["candidate"] == n and r["exit"] in ("0", "1"), r
    assert r["gpus"] in ("0,1", "2,3"), r
    assert 0 < int(r["start_ns"]) < int(r["end_ns"]), r
    recs[n] = r
    # every engine of this task saw the task's GPUs
    for a in os.listdir(os.path.join(d, "tasks", n, "attempts")):
        pass
assert len({r["gpus"] for r in recs.values()}) == 2, "both GPU sets used"
for a in names:
    for b in names:
        ra, rb = recs[a], recs[b]
        if a < b and set(ra["gpus"].split(",")) & set(rb["gpus"].split(",")):
            assert int(ra["end_ns"]) <= int(rb["start_ns"]) or int(rb["end_ns"]) <= int(ra["start_ns"]), (a, b, ra, rb)
# engines: one line per start, each with one of the sets; as many starts as attempts
seen = [l.split()[0] for l in open(elog).read().splitlines()]
assert seen and all(s in ("0,1", "2,3") for s in seen), seen
attempts = sum(len(os.listdir(os.path.join(d, "tasks", n, "attempts"))) for n in names)
assert len(seen) == attempts, (len(seen), attempts)
PY
assert_no_leftovers

# the merged latency is each task's, from its store's histograms
python3 - "$D" <<'PY' || fail "merged latency"
import json, os, sys
d = sys.argv[1]
m = {c["name"]: c for c in json.load(open(os.path.join(d, "report.json")))["candidates"]}
t = json.load(open(os.path.join(d, "tasks", "marlin", "report.json")))["candidates"][0]
assert t["latency_ms"]["ttft_p50"] is not None and t["latency_ms"]["ttft_p50"] > 0, t["latency_ms"]
assert m["marlin"]["latency_ms"] == t["latency_ms"], (m["marlin"]["latency_ms"], t["latency_ms"])
PY
# a task without its database is a failed task: its report.json is not evidence
mv "$D/tasks/marlin/moeprobe.db" "$Q_TMP/marlin.db"
"$MOEPROBE" report --merge "$D" >/dev/null 2>"$Q_TMP/merge.err"
grep -q "the task for 'marlin' ended with exit 0 .*and left no evidence store (moeprobe.db)" "$Q_TMP/merge.err" \
    || { cat "$Q_TMP/merge.err"; fail "no message for the task without a database"; }
check "$D/report.json" 'c["marlin"]["verdict"] is None' '"left no evidence store" in c["marlin"]["why"]' \
    'r["recommendation"] is None or r["recommendation"]["candidate"] != "marlin"' \
    || fail "a task without a database counted"
mv "$Q_TMP/marlin.db" "$D/tasks/marlin/moeprobe.db"
# the run's options and workload come from the tasks that loaded, whichever
# task (here the last) left no database
last=$(tail -n 1 "$D/tasks/index.txt" 2>/dev/null || echo marlin-env)
mv "$D/tasks/$last/moeprobe.db" "$Q_TMP/last.db"
"$MOEPROBE" report --merge "$D" >/dev/null 2>"$Q_TMP/merge2.err"
check "$D/report.json" 'r["percentiles"] == [75, 95]' 'r["workload"] is not None' \
    || fail "a task without a database reset the run's options ($last)"
mv "$Q_TMP/last.db" "$D/tasks/$last/moeprobe.db"
"$MOEPROBE" report --merge --percentiles 50 "$D" >/dev/null 2>"$Q_TMP/merge3.err"
[ $? -eq 2 ] && grep -q -- "--percentiles does not apply to --merge" "$Q_TMP/merge3.err" ||
    fail "report --merge --percentiles is not refused"

# bad GPU lists are input errors
"$MOEPROBE" qualify --out "$Q_TMP/bad" --gpus 0,0 "${CANDS[@]}" -- "$REFENGINE" >/dev/null 2>"$Q_TMP/bad.err"
[ $? -eq 2 ] && grep -q "listed twice" "$Q_TMP/bad.err" || fail "--gpus 0,0"
"$MOEPROBE" qualify --out "$Q_TMP/bad" --gpus 0,1 --gpus-per-engine 3 "${CANDS[@]}" -- "$REFENGINE" >/dev/null 2>"$Q_TMP/bad.err"
[ $? -eq 2 ] || fail "--gpus-per-engine 3 with 2 GPUs"
"$MOEPROBE" qualify --out "$Q_TMP/bad" --gpus 0 --slurm "${CANDS[@]}" -- "$REFENGINE" >/dev/null 2>"$Q_TMP/bad.err"
[ $? -eq 2 ] || fail "--gpus with --slurm"

# SIGINT while two long tasks run: both torn down, exit 130, nothing left
I="$Q_TMP/int"
"$MOEPROBE" qualify --out "$I" --gpus 7,8 --seq 1000000 --conc 1:1 --max-tokens 8 --grace 3 \
    --candidate 'a: --moe-backend marlin' --candidate 'b: --moe-backend marlin' \
    --candidate 'c: --moe-backend marlin' -- \
    "$REFENGINE" --world "$W/q-verdicts.ini" --port '{port}' >"$Q_TMP/int.out" 2>"$Q_TMP/int.err" &
qp=$!
# both tasks running and their engines serving: requests are being recorded
# (tail -F follows files that do not exist yet; it prints a header per file)
timeout 30 tail -n +1 -F "$I/tasks/a/attempts/a-1/requests.jsonl" "$I/tasks/b/attempts/b-1/requests.jsonl" 2>/dev/null |
    awk '/^==> /{s[$2] = 1; if (length(s) == 2) { ok = 1; exit }} END {exit !ok}' ||
    { kill -9 $qp; cat "$Q_TMP/int.err"; fail "tasks did not get going"; }
kill -INT $qp
timeout 60 tail --pid=$qp -f /dev/null || { kill -9 $qp; fail "qualify did not stop after SIGINT"; }
wait $qp
rc=$?
[ $rc -eq 130 ] || { cat "$Q_TMP/int.err"; fail "exit $rc after SIGINT, want 130"; }
[ ! -e "$I/tasks/c/task.txt" ] || fail "a task started after SIGINT"
grep -q '^exit=' "$I/tasks/a/task.txt" || fail "task record a"
assert_no_leftovers
echo ok
