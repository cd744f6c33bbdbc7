# re_lib.sh - helpers for the refengine integration tests (sourced, not run).
# Starts refengine in its own session with a marker variable in its
# environment, waits for log lines without fixed sleeps (tail -F uses
# inotify; every wait has a deadline), and on exit kills whatever carries
# the marker, so a test never leaves a process behind.
set -u
: "${REFENGINE:?REFENGINE must point at the refengine binary}"
: "${ROOT:?ROOT must point at the repository root}"
. "$(dirname "${BASH_SOURCE[0]}")/timeout_lib.sh"
RE_TMP=$(mktemp -d /tmp/re-test.XXXXXX)
RE_MARK="re-test-$$-$RANDOM"
RE_PID=
RE_LOG=
RE_PORT=
RE_RC=

re_marked_pids() {
    local p
    for p in /proc/[0-9]*; do
        { tr "\\0" "\\n" <"$p/environ"; } 2>/dev/null | grep -qx "RE_TEST_MARKER=$RE_MARK" && echo "${p#/proc/}"
    done
}

re_cleanup() {
    local p
    for p in $(re_marked_pids); do kill -9 "$p" 2>/dev/null; done
    [ -n "$RE_PID" ] && wait "$RE_PID" 2>/dev/null
    rm -rf "$RE_TMP"
}
trap re_cleanup EXIT

fail() { echo "FAIL: $*"; [ -n "$RE_LOG" ] && [ -f "$RE_LOG" ] && tail -n 40 "$RE_LOG"; exit 1; }

# re_start NAME WORLD [ARGS...]: env assignments go before the call (VAR=x re_start ...)
re_start() {
    local name=$1 world=$2; shift 2
    RE_LOG="$RE_TMP/$name.log"
    RE_TEST_MARKER=$RE_MARK setsid "$REFENGINE" serve --world "$world" --port 0 "$@" >"$RE_LOG" 2>&1 &
    RE_PID=$!
}

# re_wait_line REGEX [SECONDS]: wait until the log has a line matching REGEX
re_wait_line() {
    local pat=$1 t fd tp rc
    t=$(tmul "${2:-20}")
    exec {fd}< <(exec timeout "$t" tail -n +1 -F "$RE_LOG" 2>/dev/null)
    tp=$!
    grep -q -m1 -E -- "$pat" <&"$fd"
    rc=$?
    kill "$tp" 2>/dev/null
    exec {fd}<&-
    wait "$tp" 2>/dev/null
    return $rc
}

# re_ready: wait for readiness and set RE_PORT
re_ready() {
    re_wait_line 'Application startup complete\.|Engine core initialization failed' "${1:-20}" ||
        fail "server did not start"
    RE_PORT=$(grep -oP 'Starting vLLM (API )?server( \d+)? on http://[^ ]+:\K[0-9]+' "$RE_LOG" | tail -n 1)
    [ -n "$RE_PORT" ] || fail "no port in the log"
}

# re_wait_exit [SECONDS]: wait for the server to exit; RE_RC = its status
re_wait_exit() {
    timeout "$(tmul "${1:-10}")" tail --pid="$RE_PID" -s 0.05 -f /dev/null
    if kill -0 "$RE_PID" 2>/dev/null; then
        fail "server still running"
    fi
    wait "$RE_PID"
    RE_RC=$?
    RE_PID=
}

re_url() { echo "http://127.0.0.1:$RE_PORT$1"; }

# re_post PATH JSON: body on stdout
re_post() {
    curl -sS --max-time 20 -H 'Content-Type: application/json' -d "$2" "$(re_url "$1")"
}
