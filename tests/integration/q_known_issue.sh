#!/bin/bash
# q_known_issue.sh - #25 part 3 end to end: a qualify whose candidate fails
# the way a public issue describes names it where the user looks - the end
# of qualify on stderr ("NAME: matches known issue ID (...): fixed in ... /
# workaround ..."), report.json (candidates[].known_issues, an exact match),
# report.md, `report --format issue` and `scan` of the server log. The world:
# the MTP drafter's bf16 MoE on SM121 picks FlashInfer CUTLASS and fails
# (vLLM PR 39825). The matcher itself: tests/unit/test_known_issues*.c.
. "$(dirname "$0")/q_lib.sh"
command -v python3 >/dev/null || { echo "python3 is needed to read report.json"; exit 77; }
ID=vllm-39825-drafter-invalid-activation
qualify mtp "$ROOT/worlds/spark-nemotron-super-mtp.ini" --seq 2 --conc 2:2 --max-tokens 8 \
    --no-diagnose --agreement 0 --accuracy 0 \
    --candidate "mtp: --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'"
[ "$Q_RC" -eq 1 ] || { cat "$Q_TMP/mtp.stderr"; fail "exit $Q_RC, want 1 (no candidate serves)"; }
grep -q "^mtp: matches known issue $ID (.*): fixed in vLLM PR #39825.* / workaround: upgrade" "$Q_TMP/mtp.stderr" ||
    { cat "$Q_TMP/mtp.stderr"; fail "qualify's end does not name the known issue"; }
check "$Q_DIR/report.json" 'c["mtp"]["verdict"] == "startup-failure"' \
    '[(k["id"], k["match"]) for k in c["mtp"]["known_issues"]] == [("'$ID'", "exact")]' \
    'c["mtp"]["known_issues"][0]["source"] == "https://github.com/vllm-project/vllm/pull/39825"' ||
    fail "report.json known_issues"
grep -q "known issue: matches known issue $ID" "$Q_DIR/report.md" || fail "report.md"
"$MOEPROBE" report --format issue "$Q_DIR" 2>/dev/null | grep -q "matches known issue $ID" || fail "report --format issue"
"$MOEPROBE" scan "$Q_DIR"/attempts/mtp-1/server.log | grep -q "matches known issue $ID" || fail "scan of the server log"
echo "ok: the drafter failure is named as $ID on every channel"
