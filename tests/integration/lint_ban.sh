#!/bin/bash
# tier: quick
# lint_ban: scripts/lint.sh passes on this tree and fails, naming file and
# line, on a tree that forks, execs, runs a shell or reads /proc outside
# src/proc/; the same code inside src/proc/ and the same words in comments
# pass.
set -u
: "${ROOT:?}"
t=$(mktemp -d /tmp/mp-lint.XXXXXX)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$ROOT/scripts/lint.sh" >"$t/ok.out" 2>&1 || { cat "$t/ok.out"; fail "lint fails on the tree itself"; }
grep -qx "lint: ok" "$t/ok.out" || fail "no ok line"

mk() { mkdir -p "$t/tree/$(dirname "$1")"; printf '%s\n' "$2" >"$t/tree/$1"; }
lint() { LINT_ROOT="$t/tree" "$ROOT/scripts/lint.sh" >"$t/out" 2>&1; }
# the allowed: process code in proc/, the words in comments, a "/proc" that is no path
mk src/proc/spawn.c 'int f(void) { pid_t p = fork(); execve("x", 0, 0); return open("/proc/self/stat", 0); }'
mk src/sched/gpus.c '/* runs through proc/: no fork(), no /proc/PID/environ here */
int g(void) { return h("/proc could not be read"); } // not fork( either
int mp_proc_fork_helper(void);'
mk refengine/main.c 'int main(void) { return fork(); }'
lint || fail "a clean tree fails: $(cat "$t/out")"

expect() { # FILE CODE WHAT
    mk "$1" "$2"
    lint && fail "$3 passes"
    grep -q "^$1:1:" "$t/out" || fail "$3 not named with file and line: $(cat "$t/out")"
    rm "$t/tree/$1"
}
expect src/report/fingerprint.c 'static int o(void) { pid_t pid = fork(); return pid; }' "fork outside proc/"
expect src/sched/x.c 'int v(void) { return vfork (); }' "vfork outside proc/"
expect src/run/y.c 'int s(void) { return posix_spawnp(0, "a", 0, 0, 0, 0); }' "posix_spawnp outside proc/"
expect src/cli/z.c 'void e(void) { execl("/bin/sh", "sh", "-c", "x", (char *)0); }' "execl outside proc/"
expect src/sched/w.c 'int r(void) { return system("nvidia-smi"); }' "system()"
expect refengine/p.c 'void *q(void) { return popen("ls", "r"); }' "popen() in refengine"
expect src/sched/v.c 'int d(void) { return opendir("/proc") != 0; }' "opendir(\"/proc\") outside proc/"
expect src/run/u.c 'const char *m = "pid %d has it in /proc/%d/environ";' "a /proc/ path in a string outside proc/"
expect src/store/s.c 'int a = 1; /* fine */ int b(void) { return open("/proc/self/exe", 0); }' "a /proc read after a comment"
exit 0
