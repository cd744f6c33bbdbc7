#!/bin/bash
# tier: quick
# readme_links.sh - the README points only at what a clone has (#29 problem
# 4: it sent readers to DESIGN.md and reference/*.md, which live outside the
# repository): every path it names under the repository's folders exists,
# and it names neither DESIGN.md nor reference/ (a placeholder in capitals,
# tests/fuzz/corpus/NAME, matches any name).
set -u
: "${ROOT:?}"
fail() { echo "FAIL: $*"; exit 1; }
R="$ROOT/README.md"
bad=$(grep -nE 'DESIGN(\.md)?|reference/[a-z-]+\.md' "$R") && fail "README.md names files outside the repository: $bad"
# the documents the README links to neither
bad=$(grep -nE 'DESIGN\.md|reference/[a-z0-9-]+\.md' "$ROOT"/docs/*.md) &&
    fail "docs/ names files outside the repository: $bad"
n=0
set -f # the names are words to check, not patterns to expand here
for p in $(grep -oE '(^|[^A-Za-z0-9_./-])(docs|src|worlds|tests|scripts|data|completions|bench|refengine)/[A-Za-z0-9_./*-]*[A-Za-z0-9_*]' "$R" |
    sed -E 's/^[^a-z]//; s#/[A-Z]+(/|$)#/*\1#g' | sort -u); do
    case $p in
    refengine/refengine) continue ;; # what make builds
    *'*'*) compgen -G "$ROOT/$p" >/dev/null || fail "README.md names $p: nothing matches" ;;
    *) [ -e "$ROOT/$p" ] || fail "README.md names $p, which is not in the repository" ;;
    esac
    n=$((n + 1))
done
[ $n -ge 20 ] || fail "only $n paths found in README.md: the pattern is broken"
echo "ok: $n paths in README.md exist"
