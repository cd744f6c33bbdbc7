# podman_lib.sh - a real container runtime for the integration tests
# (sourced after q_lib.sh). Debian's podman with runc, run as this user,
# configured by files under the test's temporary directory only:
#   CONTAINERS_CONF          runtime runc, cgroupfs, file events, no default
#                            ulimits, host network/cgroup namespaces, state
#                            and events under $Q_TMP
#   CONTAINERS_STORAGE_CONF  vfs storage under $Q_TMP (system storage untouched)
# and an image made offline from refengine: a root filesystem with the
# binary, every shared library ldd lists (the sanitizer runtimes too), the
# dynamic loader, /usr/bin/env and the test worlds, `podman import`ed.
# Skips (exit 77, with the reason as the last line) where podman cannot run.
PM_DIR="$Q_TMP/podman"
PM_IMAGE=moeprobe-refengine:test

pm_skip() { echo "SKIP: $*"; exit 77; }

pm_setup() {
    command -v podman >/dev/null 2>&1 || pm_skip "podman is not installed"
    command -v runc >/dev/null 2>&1 || pm_skip "runc is not installed"
    mkdir -p "$PM_DIR/graph" "$PM_DIR/run" "$PM_DIR/tmp" "$PM_DIR/rootfs" || pm_skip "no temp dir"
    cat >"$PM_DIR/containers.conf" <<CONF
[containers]
default_ulimits = []
netns = "host"
cgroupns = "host"
ipcns = "host"
utsns = "host"
log_driver = "k8s-file"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$PM_DIR/tmp/events.log"
tmp_dir = "$PM_DIR/tmp"
volume_path = "$PM_DIR/graph/volumes"
CONF
    cat >"$PM_DIR/storage.conf" <<CONF
[storage]
driver = "vfs"
graphroot = "$PM_DIR/graph"
runroot = "$PM_DIR/run"
CONF
    export CONTAINERS_CONF="$PM_DIR/containers.conf"
    export CONTAINERS_STORAGE_CONF="$PM_DIR/storage.conf"
    export CONTAINERS_REGISTRIES_CONF="$PM_DIR/registries.conf"
    : >"$CONTAINERS_REGISTRIES_CONF"
    # the image: refengine, its libraries and loader, env, the worlds
    local rf="$PM_DIR/rootfs" f
    mkdir -p "$rf/usr/bin" "$rf/tmp" "$rf/worlds" "$rf/etc"
    cp "$REFENGINE" "$rf/refengine" && cp /usr/bin/env "$rf/usr/bin/env" || pm_skip "cannot copy binaries"
    for f in $( { ldd "$REFENGINE"; ldd /usr/bin/env; } | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' | sort -u); do
        mkdir -p "$rf$(dirname "$f")" && cp -L "$f" "$rf$f" || pm_skip "cannot copy $f"
    done
    cp "$W"/*.ini "$rf/worlds/"
    echo "root:x:0:0:root:/:/refengine" >"$rf/etc/passwd"
    tar -C "$rf" -c . | podman import --change 'ENV ASAN_OPTIONS=detect_leaks=0' - "$PM_IMAGE" \
        >"$PM_DIR/import.log" 2>&1 || pm_skip "podman import failed: $(tail -n 1 "$PM_DIR/import.log")"
    # can it run a container here at all?
    podman run --rm --network host "$PM_IMAGE" /refengine --help >"$PM_DIR/probe.log" 2>&1 ||
        pm_skip "podman cannot run a container here: $(grep -v '^ ' "$PM_DIR/probe.log" | tail -n 1)"
}

# pm_leftover_containers: names of containers that exist (there must be none)
pm_containers() { podman ps -a --format '{{.Names}}' 2>/dev/null; }

pm_cleanup() {
    local c
    for c in $(pm_containers); do podman rm -f "$c" >/dev/null 2>&1; done
    podman rmi -f "$PM_IMAGE" >/dev/null 2>&1
    rm -rf "$PM_DIR" 2>/dev/null
}
