# q_lib.sh - helpers for moeprobe's qualify/diagnose/minimize integration
# tests (sourced). Every process a test starts inherits Q_TEST_MARKER; on exit
# whatever still carries it is killed, and a test fails if it had to.
set -u
: "${MOEPROBE:?MOEPROBE must point at the moeprobe binary}"
: "${REFENGINE:?REFENGINE must point at the refengine binary}"
: "${ROOT:?ROOT must point at the repository root}"
. "$(dirname "${BASH_SOURCE[0]}")/timeout_lib.sh"
Q_TMP=$(mktemp -d /tmp/q-test.XXXXXX)
Q_MARK="q-test-$$-$RANDOM"
export Q_TEST_MARKER=$Q_MARK
W="$ROOT/tests/integration/worlds"
# a short workload: 1 warm-up, 3 sequential, 2:4 concurrency, 8 tokens; a
# token scoring pass (1 passage, 1 greedy continuation, 2 task problems; the
# q_correct*.sh tests run real ones)
Q_FAST=(--quiet --seq 3 --conc 2:4 --max-tokens 8 --grace 3 --agreement 1 --accuracy 2)

q_marked() {
    local p
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = "$$" ] && continue
        { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "Q_TEST_MARKER=$Q_MARK" && echo "${p#/proc/}"
    done
}

q_cleanup() {
    local left
    left=$(q_marked)
    if [ -n "$left" ]; then
        echo "cleanup: killing leftover processes: $left"
        # shellcheck disable=SC2086
        kill -9 $left 2>/dev/null
    fi
    rm -rf "$Q_TMP"
}
trap q_cleanup EXIT

fail() { echo "FAIL: $*"; exit 1; }

# assert_no_leftovers: nothing this test started (except this shell) is alive
assert_no_leftovers() {
    local left
    left=$(q_marked | grep -vx "$BASHPID" || true)
    [ -z "$left" ] || { ps -o pid,ppid,pgid,sid,cmd -p "$(echo $left | tr ' ' ',')"; fail "processes left: $left"; }
}

# qualify OUTNAME WORLD [moeprobe options...]: runs qualify, sets Q_RC and Q_DIR
qualify() {
    local name=$1 world=$2; shift 2
    Q_DIR="$Q_TMP/$name"
    "$MOEPROBE" qualify --out "$Q_DIR" "$@" -- "$REFENGINE" --world "$world" --port '{port}' \
        >"$Q_TMP/$name.stdout" 2>"$Q_TMP/$name.stderr"
    Q_RC=$?
}

# check REPORT PYTHON-EXPR...: each expression is evaluated with r = the report
# JSON and c = {name: candidate}; prints the failing one.
check() {
    local report=$1; shift
    python3 - "$report" "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = {x["name"]: x for x in r.get("candidates", [])}
bad = 0
for e in sys.argv[2:]:
    try:
        ok = eval(e)
    except Exception as ex:
        ok = False
        e += f"  [{type(ex).__name__}: {ex}]"
    if not ok:
        print("check failed:", e)
        bad = 1
if bad:
    print(json.dumps(r, indent=1)[:6000])
sys.exit(bad)
PY
}
