# shellcheck shell=bash
# timeout_lib.sh - one helper for the few integration tests whose timeouts a
# loaded machine can outrun (sourced; q_lib.sh and re_lib.sh source it).
#
# tmul SECONDS: SECONDS times MOEPROBE_TEST_TIMEOUT_MULTIPLIER (default 1;
# tests/run.sh checks it is a number > 0), rounded up to whole seconds.
# Scale a timeout together with every bound that is measured against it, so
# the test asks the same question on a slower machine.
tmul() {
    awk -v n="$1" -v m="${MOEPROBE_TEST_TIMEOUT_MULTIPLIER:-1}" \
        'BEGIN { v = n * m; r = int(v); if (r < v) r++; print r }'
}
