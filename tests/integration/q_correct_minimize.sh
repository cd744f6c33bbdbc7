#!/bin/bash
# q_correct_minimize.sh - minimize rejects a knob subset that reaches a
# backend computing something else: the fork knob VLLM_MOE_FORK=fast alone
# serves every request clean (FLASHINFER_CUTLASS with a logit error), but its
# scoring pass disagrees with the --to set's, so it is a fail and the minimal
# change is --moe-backend marlin. With the scoring turned off the same run
# takes the wrong knob: the check is what makes the difference.
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "python3 is needed to read minimize.json"; exit 77; }
F=(--quiet --seq 2 --conc 2:2 --max-tokens 8 --agreement 2 --accuracy 12)
minimize() {
    local name=$1; shift
    "$MOEPROBE" minimize --out "$Q_TMP/$name" --from '' --to 'VLLM_MOE_FORK=fast --moe-backend marlin' \
        "${F[@]}" "$@" -- "$REFENGINE" --world "$W/q-correct-minimize.ini" --port '{port}' \
        >"$Q_TMP/$name.stdout" 2>"$Q_TMP/$name.stderr"
}
minimize checked
rc=$?
[ $rc -eq 0 ] || { cat "$Q_TMP/checked.stderr"; fail "minimize: exit $rc"; }
python3 - "$Q_TMP/checked/minimize.json" <<'PY' || fail "minimize.json"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["minimal"] == ["--moe-backend marlin"], m["minimal"]
assert m["minimal_moe_backend"] == "MARLIN", m
fork = [t for t in m["tests"] if t["knobs"] == ["VLLM_MOE_FORK=fast"]]
assert fork, m["tests"]
t = fork[0]
assert t["attempt"] == "clean" and t["outcome"] == "fail", t
assert t["correctness"] == "wrong" and "--to" in t["correctness_why"], t
to = [t for t in m["tests"] if len(t["knobs"]) == 2]
assert to and to[0]["correctness"] == "reference", to
PY
# without the scoring pass the fluent-but-wrong subset passes
minimize unchecked --agreement 0 --accuracy 0
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["minimal"] == ["VLLM_MOE_FORK=fast"], m["minimal"]' \
    "$Q_TMP/unchecked/minimize.json" || fail "without the check the wrong knob should have won"
assert_no_leftovers
echo "ok: minimize rejects the subset that resolves to the wrong backend"
