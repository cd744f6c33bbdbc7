# depcheck-circles.awk - file-level circles inside a folder of src/ (run by
# scripts/depcheck.sh). Input: the .c files of src/ (FILENAME src/DIR/F.c).
# A file uses another file of its folder when it names a function or
# variable the other defines (not static; a struct/union/enum tag of the same
# name is no use; a name the file defines static is its own). That is the
# link-level graph: a helper in the folder's top file that the files below
# call is a circle even when both include only a shared internal header.
# Prints one line per circle (a strongly connected set of files):
#   DIR: A.c B.c ... | A.c -> B.c (a symbol A uses of B), ...
function dirof(p) { sub(/\/[^\/]*$/, "", p); return p }
function baseof(p) { sub(/^.*\//, "", p); return p }
# strip comments, strings and char literals of one line (state in incom)
function strip(line,    out, i, n, c, c2, instr) {
    out = ""; n = length(line); instr = ""
    for (i = 1; i <= n; i++) {
        c = substr(line, i, 1); c2 = substr(line, i, 2)
        if (incom) { if (c2 == "*/") { incom = 0; i++ } ; continue }
        if (instr != "") {
            if (c == "\\") { i++; continue }
            if (c == instr) { instr = ""; out = out c }
            continue
        }
        if (c2 == "/*") { incom = 1; i++; out = out " "; continue }
        if (c2 == "//") break
        if (c == "\"" || c == "'") { instr = c; out = out c; continue }
        out = out c
    }
    return out
}
# the name a top-level definition defines: the identifier before the
# parameter list (the last parenthesised group) or before [ or =
function defname(t,    i, d, j, s, c) {
    if (t ~ /=/) { s = t; sub(/=.*/, "", s); sub(/\[.*/, "", s) }
    else if (t ~ /\)[^()]*$/) {
        d = 0
        for (i = length(t); i > 0; i--) {
            c = substr(t, i, 1)
            if (c == ")") d++
            else if (c == "(") { d--; if (d == 0) break }
        }
        s = substr(t, 1, i - 1)
    } else { s = t; sub(/\[.*/, "", s) }
    sub(/[^A-Za-z0-9_]+$/, "", s)
    if (match(s, /[A-Za-z_][A-Za-z0-9_]*$/)) return substr(s, RSTART, RLENGTH)
    return ""
}
FNR == 1 { incom = 0; depth = 0; stmt = ""; skiptype = 0; files[FILENAME] = 1 }
{
    raw = $0
    if (raw ~ /^[ \t]*#[ \t]*include[ \t]*"/) {
        inc = raw; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
        incs[FILENAME] = incs[FILENAME] " " inc
        next
    }
    if (raw ~ /^[ \t]*#/) next
    line = strip(raw)
    # uses: every identifier
    tl = line
    gsub(/(struct|union|enum)[ \t]+[A-Za-z_][A-Za-z0-9_]*/, " ", tl)  # tags are not uses
    while (match(tl, /[A-Za-z_][A-Za-z0-9_]*/)) {
        uses[FILENAME, substr(tl, RSTART, RLENGTH)] = 1
        tl = substr(tl, RSTART + RLENGTH)
    }
    # definitions at brace depth 0
    n = length(line)
    for (i = 1; i <= n; i++) {
        c = substr(line, i, 1)
        if (depth > 0) {
            if (c == "{") depth++
            else if (c == "}") { depth--; if (depth == 0) stmt = "" }
            continue
        }
        if (c == "{") {
            t = stmt; gsub(/[ \t]+/, " ", t); sub(/^ /, "", t)
            if (t ~ /^(typedef|struct|enum|union)[^(=]*$/) skiptype = 1
            else if (t != "" && t !~ /^extern /) {
                nm = defname(t)
                if (nm != "") {
                    if (t ~ /^static /) sdef[FILENAME, nm] = 1
                    else if (!(nm in owner) || owner[nm] == FILENAME) owner[nm] = FILENAME
                    else owner[nm] = "?"  # defined twice: ignore
                }
            }
            depth = 1; continue
        }
        if (c == ";") {
            t = stmt; gsub(/[ \t]+/, " ", t); sub(/^ /, "", t)
            if (skiptype) skiptype = 0
            else if (t != "" && t !~ /^(extern|typedef|struct [A-Za-z0-9_]+$|enum|union)/ && t !~ /\(/) {
                nm = defname(t)
                if (nm != "") {
                    if (t ~ /^static /) sdef[FILENAME, nm] = 1
                    else if (!(nm in owner)) owner[nm] = FILENAME
                }
            }
            stmt = ""; continue
        }
        stmt = stmt c
    }
    stmt = stmt " "
}
END {
    # edges inside a folder
    for (k in uses) {
        split(k, kk, SUBSEP); a = kk[1]; nm = kk[2]
        if (!(nm in owner)) continue
        b = owner[nm]
        if (b == "?" || b == a || dirof(a) != dirof(b) || ((a, nm) in sdef)) continue
        if (!((a, b) in why) || nm < why[a, b]) why[a, b] = nm
    }
    # reachability per folder (Floyd-Warshall over the folder's files)
    for (k in why) { split(k, kk, SUBSEP); reach[kk[1], kk[2]] = 1 }
    for (f in files) dirs[dirof(f)] = 1
    for (d in dirs) {
        nf = 0
        for (f in files) if (dirof(f) == d) fl[++nf] = f
        for (y = 2; y <= nf; y++)
            for (z = y; z > 1 && fl[z - 1] > fl[z]; z--) { t = fl[z]; fl[z] = fl[z - 1]; fl[z - 1] = t }
        for (x = 1; x <= nf; x++)
            for (y = 1; y <= nf; y++) if ((fl[y], fl[x]) in reach)
                for (z = 1; z <= nf; z++) if ((fl[x], fl[z]) in reach) reach[fl[y], fl[z]] = 1
        delete done
        for (x = 1; x <= nf; x++) {
            a = fl[x]
            if ((a in done) || !((a, a) in reach)) continue
            out = ""; names = ""
            delete scc
            for (y = 1; y <= nf; y++) {
                b = fl[y]
                if ((a, b) in reach && (b, a) in reach) { done[b] = 1; scc[b] = 1 }
            }
            delete srt; ns = 0
            for (b in scc) srt[++ns] = baseof(b)
            for (y = 2; y <= ns; y++)  # insertion sort: a stable key
                for (z = y; z > 1 && srt[z - 1] > srt[z]; z--) { t = srt[z]; srt[z] = srt[z - 1]; srt[z - 1] = t }
            for (y = 1; y <= ns; y++) names = names (y > 1 ? " " : "") srt[y]
            for (y = 1; y <= nf; y++) for (z = 1; z <= nf; z++) {
                b = fl[y]; c = fl[z]
                if ((b in scc) && (c in scc) && (b, c) in why) {
                    out = out (out == "" ? "" : ", ") baseof(b) " -> " baseof(c) " (" why[b, c] ")"
                    printed[b, c] = 1
                }
            }
            if (out != "") print d ": " names " | " out
        }
    }
}
