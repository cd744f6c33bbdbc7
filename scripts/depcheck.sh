#!/bin/sh
# depcheck.sh - the include rule of DESIGN.md "Layout": a module of src/
# includes only modules of lower rank (modules of the same rank do not
# include each other). Every `#include "..."` is resolved the way the
# Makefile does (the including file's directory, then -Isrc, then
# -Isrc/base). Prints each include against the table and exits 1 when there
# is one; `depcheck.sh --table` prints the module-to-module include counts.
#
# No file includes, directly or through others, a file that includes it
# (an include circle, even inside a folder and behind include guards).
# Inside a module, files do not go round in circles either: no file uses a
# function or variable of a file of its folder that (directly or through
# others) uses one of its own (scripts/depcheck-circles.awk: the link-level
# graph of each folder). A helper that several files use lives in a file
# under them, not in the folder's top file. There is no list of tolerated
# circles: the last ones (#28) are gone, and a new one fails.
#
#   make depcheck   (part of make test)
#   DEPCHECK_ROOT=DIR   check DIR/src instead of this tree's (tests use it)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "${DEPCHECK_ROOT:-$here/..}"

rank() {
    case "$1" in
        base) echo 0 ;;
        model) echo 1 ;;
        proc|http|knowledge|quality|inspect) echo 2 ;;
        logs|verdict|engine|observe) echo 3 ;;
        store) echo 4 ;;
        report) echo 5 ;;
        run) echo 6 ;;
        sched) echo 7 ;;
        cli) echo 8 ;;
        main) echo 9 ;;
        *) echo -1 ;;
    esac
}

module_of() { # path under src/ -> module name
    case "$1" in
        src/main.c) echo main ;;
        src/*/*) p=${1#src/}; echo "${p%%/*}" ;;
        *) echo "?" ;;
    esac
}

edges=$(mktemp)
circles=$(mktemp)
trap 'rm -f "$edges" "$circles"' EXIT
find src -name '*.[ch]' | sort | while read -r f; do
    dir=$(dirname "$f")
    from=$(module_of "$f")
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
        if [ -f "$dir/$inc" ]; then t="$dir/$inc"
        elif [ -f "src/$inc" ]; then t="src/$inc"
        elif [ -f "src/base/$inc" ]; then t="src/base/$inc"
        else echo "$f: cannot resolve \"$inc\"" >&2; echo "$from ? $f $inc ?"; continue; fi
        echo "$from $(module_of "$t") $f $inc $t"
    done
done > "$edges"

if [ "${1:-}" = "--table" ]; then
    awk '$1 != $2 { n[$1 " -> " $2]++ } END { for (k in n) print n[k], k }' "$edges" | sort -k2
    exit 0
fi

bad=0
while read -r from to f inc _; do
    [ "$from" = "$to" ] && continue
    rf=$(rank "$from"); rt=$(rank "$to")
    if [ "$rf" -lt 0 ] || [ "$rt" -lt 0 ] || [ "$rt" -ge "$rf" ]; then
        echo "depcheck: $f includes \"$inc\": $from (rank $rf) may not include $to (rank $rt)"
        bad=1
    fi
done < "$edges"
# include circles, file by file (a header that includes, directly or through
# others, a header that includes it; include guards hide them from the
# compiler): across folders the ranks above already forbid them, so these
# are the ones inside a folder. tsort names each loop in its order.
awk '$5 != "?" && $3 != $5 { print $3, $5 }' "$edges" | tsort >/dev/null 2>"$circles" ||
    awk '/input contains a loop/ { if (l != "") print l; l = ""; next }
         { sub(/^tsort: /, ""); l = l $0 " -> " }
         END { if (l != "") print l }' "$circles" | sed 's/ -> $//' |
    while IFS= read -r l; do first=${l%% -> *}; echo "depcheck: include circle: $l -> $first"; done >"$circles.inc"
[ -s "$circles.inc" ] && { cat "$circles.inc"; bad=1; }
rm -f "$circles.inc"
# file-level circles inside a folder
find src -name '*.c' | sort | xargs awk -f "$here/depcheck-circles.awk" >"$circles" ||
    { echo "depcheck: the circle check failed"; exit 2; }
while IFS= read -r c; do
    echo "depcheck: file circle in $c"
    bad=1
done <"$circles"

[ "$bad" = 0 ] && echo "depcheck: ok"
exit "$bad"
