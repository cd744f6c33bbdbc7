#!/bin/bash
# bisect_podman.sh - `moeprobe bisect` over container images tagged per
# build (podman + runc, podman_lib.sh's offline set-up): moeprobe-bisect:p1
# .. :p4, each the refengine image with its build's world as /world.ini
# (p1, p2 healthy; p3, p4 a faulty kernel). {build} is the image tag; the
# first bad image is p3, and no container is left after the run. Skips where
# podman cannot run.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=q_lib.sh
. "$here/q_lib.sh"
# shellcheck source=podman_lib.sh
. "$here/podman_lib.sh"
TAGS=(p1 p2 p3 p4)
bp_cleanup() {
    local t
    for t in "${TAGS[@]}"; do podman rmi -f "moeprobe-bisect:$t" >/dev/null 2>&1; done
    pm_cleanup
    q_cleanup
}
trap bp_cleanup EXIT
pm_setup
# one image per build: the refengine root file system with that build's world
for t in "${TAGS[@]}"; do
    case $t in p1|p2) w=verdict-v1 ;; *) w=verdict-v4 ;; esac
    cp "$W/bisect/$w.ini" "$PM_DIR/rootfs/world.ini" || fail "world $w"
    tar -C "$PM_DIR/rootfs" -c . | podman import --change 'ENV ASAN_OPTIONS=detect_leaks=0' - \
        "moeprobe-bisect:$t" >>"$PM_DIR/import.log" 2>&1 || fail "podman import of $t failed"
done

"$MOEPROBE" bisect --out "$Q_TMP/pm" --good p1 --bad p4 --build p1 --build p2 --build p3 --build p4 \
    --quiet --no-diagnose --seq 2 --conc 2:2 --max-tokens 8 \
    -- podman run --rm --network host 'moeprobe-bisect:{build}' /refengine --world /world.ini \
    --port '{port}' >/dev/null 2>"$Q_TMP/pm.err"
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/pm.err"; fail "podman bisect: exit $rc"; }
check "$Q_TMP/pm/report.json" 'r["first_bad"] == "p3" and r["last_good"] == "p2"' \
    '[p["build"] for p in r["probes"]][:2] == ["p4", "p1"]' \
    'all(p["moe_backend"] == "FLASHINFER_CUTLASS" for p in r["probes"])' \
    '{p["build"]: p["verdict"] for p in r["probes"]}["p3"] == "crashed"' ||
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
