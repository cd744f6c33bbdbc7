#!/bin/bash
# bench/evidence_bench.sh - the evidence path stays bounded (issue #15, docs/performance.md
# section 7):
#   1. flood: an engine that sends FLOOD_EVENTS (2,000,000) events per request
#      (bench/flood_engine.py), once with empty text (no tokens) and once with one character each
#      (2 M token events: 2 M inter-token gaps per request); moeprobe's peak RSS (< 50 MB) and
#      the database size, which must grow with requests, not with events;
#   2. soak: `moeprobe soak --duration SOAK (10m)` at high rate against the fast reference engine;
#      peak RSS, database size and rows, and whether the ITL histogram holds every gap of the
#      soak (its count = the sum of chunks - 1 over the soak's requests).
# Usage: make -j2 && bench/evidence_bench.sh        Env: SKIP_FLOOD / SKIP_SOAK (0), SOAK (10m),
#   SOAK_CONC (16), SOAK_TOKENS (32), FLOOD_EVENTS (2000000), FLOOD_REQUESTS (3), OUT (a tmp dir,
#   kept). Prints key=value lines. Exits 77 when a tool is missing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
MP=${MOEPROBE:-$root/moeprobe}
RE=${REFENGINE_BIN:-$root/refengine/refengine}
SOAK=${SOAK:-10m}
SOAK_CONC=${SOAK_CONC:-16}
SOAK_TOKENS=${SOAK_TOKENS:-32}
FLOOD_EVENTS=${FLOOD_EVENTS:-2000000}
FLOOD_REQUESTS=${FLOOD_REQUESTS:-3}
for x in "$MP" "$RE"; do [ -x "$x" ] || { echo "missing $x (run: make -j2)"; exit 77; }; done
for t in sqlite3 python3; do command -v $t >/dev/null || { echo "$t not installed"; exit 77; }; done
[ -x /usr/bin/time ] || { echo "/usr/bin/time not installed (apt-get install time)"; exit 77; }
OUT=${OUT:-$(mktemp -d /tmp/evidence-bench.XXXXXX)}
mkdir -p "$OUT"
# private copies: a concurrent `make` relinking the build outputs must not break a run
cp "$MP" "$OUT/moeprobe" && cp "$RE" "$OUT/refengine" || exit 1
echo "out=$OUT"

rss_kb() { sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$1"; }
# peak NAME COMMAND...: run COMMAND (moeprobe; output into $OUT/NAME.stdout and .stderr) in the
# background and follow its own peak RSS
# (VmHWM in /proc/PID/status; /usr/bin/time's figure would be the largest of moeprobe and the
# engine it reaps). Sets $NAME.exit, .max_rss_kb, .wall_s.
peak() {
    local n=$1; shift
    local t0 hwm=0 v
    t0=$(date +%s.%N)
    "$@" >"$OUT/$n.stdout" 2>"$OUT/$n.stderr" &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        v=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null)
        [ -n "$v" ] && [ "$v" -gt "$hwm" ] && hwm=$v
        sleep 0.2
    done
    wait "$pid"
    echo "$n.exit=$?"
    echo "$n.max_rss_kb=$hwm"
    echo "$n.wall_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
}

report_db() { # NAME DB
    local db=$2
    echo "$1.db_bytes=$(stat -c %s "$db")"
    [ -e "$db-wal" ] && echo "$1.db_wal_bytes=$(stat -c %s "$db-wal")"
    echo "$1.requests=$(sqlite3 "$db" "SELECT count(*) FROM requests")"
    echo "$1.requests_with_itl=$(sqlite3 "$db" "SELECT count(*) FROM requests WHERE itl IS NOT NULL")"
    echo "$1.bucket_rows=$(sqlite3 "$db" "SELECT count(*) FROM metric_buckets")"
    echo "$1.itl_samples=$(sqlite3 "$db" "SELECT COALESCE(sum(n), 0) FROM metrics WHERE metric = 'itl_ms'")"
    echo "$1.itl_gaps_of_requests=$(sqlite3 "$db" "SELECT COALESCE(sum(chunks - 1), 0) FROM requests WHERE outcome = 'ok' AND chunks > 0")"
}

# flood NAME TEXT: the empty-event flood (TEXT "") and the token-event flood (TEXT x)
flood() {
    local n=$1
    peak "$n" "$OUT/moeprobe" qualify --out "$OUT/$n" --quiet \
        --seq "$FLOOD_REQUESTS" --conc 2:2 --max-tokens 16 --no-quality --no-dedupe --grace 3 \
        --ready-timeout 60 --candidate 'auto:' \
        -- python3 "$root/bench/flood_engine.py" --events "$FLOOD_EVENTS" --text "$2" --port '{port}'
    echo "$n.events_per_request=$FLOOD_EVENTS"
    report_db "$n" "$OUT/$n/moeprobe.db"
    /usr/bin/time -v -o "$OUT/$n-report.time" "$OUT/moeprobe" report "$OUT/$n" >/dev/null 2>&1
    echo "$n.report_max_rss_kb=$(rss_kb "$OUT/$n-report.time")"
}
if [ "${SKIP_FLOOD:-0}" != 1 ]; then
    flood flood-empty ""
    flood flood-tokens x
fi

if [ "${SKIP_SOAK:-0}" != 1 ]; then
    peak soak "$OUT/moeprobe" soak --duration "$SOAK" \
        --concurrency "$SOAK_CONC" --max-tokens "$SOAK_TOKENS" --out "$OUT/soak" \
        -- "$OUT/refengine" serve --world "$root/tests/worlds/fast.ini" --port '{port}'
    echo "soak.duration=$SOAK"
    report_db soak "$OUT/soak/moeprobe.db"
    /usr/bin/time -v -o "$OUT/soak-report.time" "$OUT/moeprobe" report "$OUT/soak" >/dev/null 2>&1
    echo "soak.report_max_rss_kb=$(rss_kb "$OUT/soak-report.time")"
fi
