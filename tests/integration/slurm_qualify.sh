#!/bin/bash
# qualify --slurm on a real one-node Slurm cluster started inside the test
# (munged with a private key and socket, slurmctld -D and slurmd -D with a
# minimal slurm.conf): one array task per candidate, merged report equal to
# a serial run's verdicts; report --merge and --resume on the same run
# directory; every daemon stopped at the end. Skipped (77) when slurm-wlm
# and munge cannot be installed or we are not root.
. "$(dirname "$0")/q_lib.sh"
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root (the test cluster runs jobs as SlurmUser=root)"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null ||
    ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >"$Q_TMP/apt.log" 2>&1 ||
        skip "cannot install slurm-wlm and munge with apt-get ($(tail -n 1 "$Q_TMP/apt.log"))"
fi

S="$Q_TMP/slurm"
mkdir -p "$S/munge" "$S/state" "$S/spool" "$S/log"
chmod 711 "$S/munge"
PIDS=()
stop_daemons() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do
        timeout 20 tail --pid="$p" -f /dev/null 2>/dev/null || kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    PIDS=()
}
trap 'stop_daemons; q_cleanup' EXIT

# wait_line FILE REGEX SECONDS: until FILE has a line matching REGEX
wait_line() {
    local f=$1 pat=$2 t=$3 fd tp rc
    exec {fd}< <(exec timeout "$t" tail -n +1 -F "$f" 2>/dev/null)
    tp=$!
    grep -q -m1 -E -- "$pat" <&"$fd"
    rc=$?
    kill "$tp" 2>/dev/null
    exec {fd}<&-
    wait "$tp" 2>/dev/null
    return $rc
}

# munge: private key, socket and state
if command -v mungekey >/dev/null; then
    mungekey --create --keyfile="$S/munge/munge.key" >/dev/null 2>&1
fi
[ -s "$S/munge/munge.key" ] || head -c 1024 /dev/urandom >"$S/munge/munge.key"
chmod 400 "$S/munge/munge.key"
SOCK="$S/munge/munge.sock"
munged -F --force --key-file="$S/munge/munge.key" --socket="$SOCK" \
    --pid-file="$S/munge/munged.pid" --log-file="$S/munge/munged.log" \
    --seed-file="$S/munge/munged.seed" >"$S/log/munged.out" 2>&1 &
PIDS+=($!)
wait_line "$S/log/munged.out" 'Created [0-9]+ work threads' 20 ||
    { cat "$S/log/munged.out"; fail "munged did not start"; }

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NODE=$(hostname -s)
cat >"$S/slurm.conf" <<CONF
ClusterName=mptest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$(port)
SlurmdPort=$(port)
AuthType=auth/munge
AuthInfo=socket=$SOCK
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
SlurmctldDebug=debug
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$S/slurm.conf"
slurmctld -D -i -f "$SLURM_CONF" >"$S/log/slurmctld.out" 2>&1 &
PIDS+=($!)
wait_line "$S/log/slurmctld.log" 'slurmctld version .* started|Running as primary controller' 30 ||
    { tail -n 30 "$S/log/slurmctld.out" "$S/log/slurmctld.log"; fail "slurmctld did not start"; }
slurmd -D -f "$SLURM_CONF" >"$S/log/slurmd.out" 2>&1 &
PIDS+=($!)
wait_line "$S/log/slurmctld.log" "node $NODE registered|Node $NODE now responding|node $NODE returned to service" 30 ||
    { tail -n 30 "$S/log/slurmd.out" "$S/log/slurmd.log" "$S/log/slurmctld.log"; fail "slurmd did not register"; }
# the node turns idle right after it registered: ask until it says so (bounded)
state=
for _ in $(seq 200); do
    state=$(sinfo -h -n "$NODE" -o '%T' 2>/dev/null)
    [ "$state" = idle ] && break
    timeout 0.05 tail -f /dev/null 2>/dev/null
done
[ "$state" = idle ] || { sinfo; tail -n 30 "$S/log/slurmctld.log"; fail "node is '$state', not idle"; }

CANDS=(--candidate 'auto:' --candidate 'cutlass: --moe-backend cutlass'
    --candidate 'marlin: --moe-backend marlin' --candidate 'trtllm: --moe-backend flashinfer_trtllm')
t0=$(date +%s.%N)
qualify serial "$W/q-verdicts.ini" "${Q_FAST[@]}" "${CANDS[@]}"
t1=$(date +%s.%N)
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/serial.stderr"; fail "serial run: exit $Q_RC"; }
qualify slurm "$W/q-verdicts.ini" "${Q_FAST[@]}" "${CANDS[@]}" --slurm --slurm-args '--partition=test'
t2=$(date +%s.%N)
[ "$Q_RC" -eq 0 ] || { cat "$Q_TMP/slurm.stderr"; cat "$Q_DIR"/tasks/*.out "$Q_DIR"/tasks/*/task.log 2>/dev/null | tail -n 40; fail "slurm run: exit $Q_RC"; }
echo "serial $(echo "$t1 - $t0" | bc) s, slurm $(echo "$t2 - $t1" | bc) s"
grep -q '^#SBATCH --array=0,1,2,3$' "$Q_DIR/tasks/qualify.sbatch" || fail "array line"
grep -q '^#SBATCH --partition=test$' "$Q_DIR/tasks/qualify.sbatch" || fail "--slurm-args not in the script"
python3 - "$Q_TMP/serial/report.json" "$Q_DIR/report.json" "$Q_DIR" <<'PY' || fail "merged report differs from the serial one"
import json, sys, os
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
def key(r):
    return ([(c["name"], c["verdict"], c["resolved"]["moe_backend"]) for c in r["candidates"]],
            r["same_backend_groups"], r["noop_knobs"], (r["recommendation"] or {}).get("candidate"))
assert key(a) == key(b), (key(a), key(b))
for c in b["candidates"]:
    rec = dict(l.split("=", 1) for l in open(os.path.join(sys.argv[3], "tasks", c["name"], "task.txt")).read().split("\n") if "=" in l)
    assert rec["exit"] in ("0", "1") and rec["job"].split("_")[1].isdigit(), rec
    for e in c["evidence"]:
        assert e.startswith("tasks/" + c["name"] + "/"), e
PY

# report --merge renders the same verdicts again
"$MOEPROBE" report --merge --format json "$Q_DIR" >"$Q_TMP/merge.json" 2>"$Q_TMP/merge.err" ||
    { cat "$Q_TMP/merge.err"; fail "report --merge: exit $?"; }
check "$Q_TMP/merge.json" 'c["marlin"]["verdict"] == "stable"' 'c["auto"]["verdict"] == "async-race"' ||
    fail "report --merge"

# a task that died leaves a gap; --resume submits only that one
rm -rf "$Q_DIR/tasks/cutlass"
"$MOEPROBE" qualify --resume "$Q_DIR" --slurm "${Q_FAST[@]}" "${CANDS[@]}" -- \
    "$REFENGINE" --world "$W/q-verdicts.ini" --port '{port}' >"$Q_TMP/resume.out" 2>"$Q_TMP/resume.err" ||
    { cat "$Q_TMP/resume.err"; fail "resume: exit $?"; }
grep -q '^#SBATCH --array=1$' "$Q_DIR/tasks/qualify.sbatch" || { cat "$Q_DIR/tasks/qualify.sbatch"; fail "resume resubmitted more than the missing task"; }
check "$Q_DIR/report.json" 'c["cutlass"]["verdict"] == "kernel-fault"' 'r["recommendation"]["candidate"] == "marlin"' ||
    fail "resumed report"

stop_daemons
pgrep -f "$S/" >/dev/null && fail "a daemon of this test is still running"
assert_no_leftovers
echo "ok"
