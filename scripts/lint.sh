#!/bin/sh
# lint.sh - banned calls (make lint):
#  1. everywhere in src/ and refengine/: strcpy, strcat, sprintf, gets, atoi,
#     strtok (unbounded or not reentrant), system and popen (a shell);
#  2. in src/ outside src/proc/: fork, vfork, posix_spawn, the exec family
#     and any "/proc/" path: proc/ is the only code that starts processes
#     or reads /proc (a helper command goes through mp_proc_run_capture, a
#     path for a message through a proc/ function).
# Comments are not code: they are stripped before matching (a comment may
# say "/proc/PID/environ" or "fork()"); string literals are kept, since
# "/proc/..." in a string is how /proc is read. Prints FILE:LINE: TEXT for
# each hit and exits 1.
#
#   LINT_ROOT=DIR   check DIR instead of this tree (tests use it)
set -eu
cd "${LINT_ROOT:-$(dirname "$0")/..}"

# C source with comments blanked (line numbers kept), string and character
# literals left as they are.
strip_comments() {
    awk '
    BEGIN { incom = 0 }
    {
        line = $0; out = ""; i = 1; n = length(line); instr = ""
        while (i <= n) {
            c = substr(line, i, 1); c2 = substr(line, i, 2)
            if (incom) {
                if (c2 == "*/") { incom = 0; i += 2; out = out "  " } else { out = out " "; i++ }
            } else if (instr != "") {
                out = out c
                if (c == "\\") { out = out substr(line, i + 1, 1); i += 2; continue }
                if (c == instr) instr = ""
                i++
            } else if (c2 == "/*") { incom = 1; out = out "  "; i += 2
            } else if (c2 == "//") { break
            } else { if (c == "\"" || c == "'\''") instr = c; out = out c; i++ }
        }
        print out
    }' "$1"
}

bad=0
hits() { # FILE REGEX MESSAGE
    strip_comments "$1" | grep -nE "$2" | while IFS= read -r h; do
        echo "$1:$h"
    done | { out=$(cat); [ -z "$out" ] || { printf '%s\n' "$out"; echo "lint: $3" >&2; exit 1; }; }
}

for f in $(find src refengine -name '*.[ch]' 2>/dev/null | sort); do
    hits "$f" '\b(strcpy|strcat|sprintf|gets|atoi|strtok|system|popen)[[:space:]]*\(' \
        "banned function used (see scripts/lint.sh)" || bad=1
    case "$f" in
        src/proc/*) ;;
        src/*)
            hits "$f" '\b(fork|vfork|posix_spawnp?|execvp?e?|execlp?e?|execve|fexecve|clone3?)[[:space:]]*\(' \
                "process started outside src/proc/ (use mp_proc_spawn / mp_proc_run_capture)" || bad=1
            hits "$f" '/proc(/|")' \
                "/proc read outside src/proc/ (add a proc/ function)" || bad=1
            ;;
    esac
done
[ "$bad" = 0 ] || exit 1
echo "lint: ok"
