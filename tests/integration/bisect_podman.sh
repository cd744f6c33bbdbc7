#!/bin/bash
# bisect_podman.sh - `moeprobe bisect` over container images tagged per
# build (podman + runc, podman_lib.sh's offline set-up): moeprobe-bisect:p1
# .. :p3, the refengine image holding each build's world as
# /worlds/<build>.ini (p1 healthy; p2, p3 a faulty kernel). {build} is the image tag; the first
# bad image is p2, each probe ran its own image, and no container is left. Skips where
# podman cannot run.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=q_lib.sh
. "$here/q_lib.sh"
# shellcheck source=podman_lib.sh
. "$here/podman_lib.sh"
TAGS=(p1 p2 p3)
bp_cleanup() {
    local t
    for t in "${TAGS[@]}"; do podman rmi -f "moeprobe-bisect:$t" >/dev/null 2>&1; done
    pm_cleanup
    q_cleanup
}
trap bp_cleanup EXIT
# the image: podman_lib.sh's refengine root file system with each build's
# world as /worlds/<build>.ini, imported once and tagged once per build (a
# full import per build costs seconds each under the sanitizers)
mkdir -p "$Q_TMP/pmworlds"
cp "$W/bisect/verdict-v1.ini" "$Q_TMP/pmworlds/p1.ini"
cp "$W/bisect/verdict-v4.ini" "$Q_TMP/pmworlds/p2.ini"
cp "$W/bisect/verdict-v5.ini" "$Q_TMP/pmworlds/p3.ini"
W="$Q_TMP/pmworlds" pm_setup
for t in "${TAGS[@]}"; do
    podman tag "$PM_IMAGE" "moeprobe-bisect:$t" || fail "podman tag $t"
done

"$MOEPROBE" bisect --out "$Q_TMP/pm" --good p1 --bad p3 --build p1 --build p2 --build p3 \
    --quiet --no-diagnose --agreement 0 --accuracy 0 --seq 2 --conc 2:2 --max-tokens 8 \
    -- podman run --rm --network host 'moeprobe-bisect:{build}' /refengine --world '/worlds/{build}.ini' \
    --port '{port}' >/dev/null 2>"$Q_TMP/pm.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/pm.err"; fail "podman bisect: exit $rc"; }
check "$Q_TMP/pm/report.json" 'r["first_bad"] == "p2" and r["last_good"] == "p1"' \
    '[p["build"] for p in r["probes"]] == ["p3", "p1", "p2"]' \
    'all(p["moe_backend"] == "FLASHINFER_CUTLASS" for p in r["probes"])' \
    '{p["build"]: p["verdict"] for p in r["probes"]}["p2"] == "crashed"' ||
    fail "podman bisect: report.json"
# each probe ran its own image: the command stored with its attempt
python3 - "$Q_TMP/pm/moeprobe.db" <<'PY' || fail "podman bisect: a probe ran another image"
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "select c.name, a.command from attempts a join candidates c on c.id = a.candidate_id").fetchall()
assert rows and all(f"moeprobe-bisect:{name} " in cmd for name, cmd in rows), rows
PY
left=$(pm_containers)
[ -z "$left" ] || fail "containers left after the run: $left"
assert_no_leftovers
echo "ok"
