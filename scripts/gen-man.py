#!/usr/bin/env python3
"""gen-man.py - docs/moeprobe.1 from docs/moeprobe.1.in and each command's
--help (#29): the man page's per-command OPTIONS are the option tables the
binary prints, so they cannot drift from it; the rest is the template's.

usage: scripts/gen-man.py MOEPROBE [OUT]   (OUT: docs/moeprobe.1; '-': stdout)
tests/integration/man_completion.sh checks that the committed page is what
this writes."""
import os
import re
import subprocess
import sys

COMMANDS = ["qualify", "diagnose", "resolve", "minimize", "soak", "bisect", "scan", "explain",
            "inspect", "report"]


def esc(s, term=False):
    """roff text: backslashes, leading dots and quotes, the hyphens of
    options (every one in a term, those of --words in text)."""
    s = s.replace("\\", "\\e")
    if term:
        s = s.replace("-", "\\-")
    else:
        s = re.sub(r"(?<![\w])-[-\w]*", lambda m: m.group(0).replace("-", "\\-"), s)
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


def options(moeprobe, cmd):
    """The --help lines of cmd from its first 'options:' line on, as (term,
    text) pairs and section titles."""
    out = subprocess.run([moeprobe, cmd, "--help"], capture_output=True, text=True).stdout
    lines = out.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if re.match(r"^[a-z].*:$", l) and "option" in l)
    except StopIteration:
        return []
    items, cur = [], None
    for l in lines[start:]:
        if re.match(r"^[a-z][^:]*:$", l):           # a section title
            items.append(("section", l[:-1]))
            cur = None
        elif re.match(r"^  -", l):                   # an option row
            m = re.match(r"^  (\S.*?)(?:\s{2,}(.*))?$", l)
            cur = [m.group(1), m.group(2) or ""]
            items.append(("opt", cur))
        elif l.startswith("    ") and cur is not None:  # its continuation
            cur[1] += " " + l.strip()
        elif not l.strip():
            cur = None
        else:
            break                                    # the examples / exit codes after
    return items


def render(moeprobe):
    out = []
    for cmd in COMMANDS:
        items = options(moeprobe, cmd)
        if not items:
            continue
        out.append(".SS %s" % cmd)
        for kind, v in items:
            if kind == "section":
                if v != "options":
                    out.append(".PP\n\\fI%s\\fR" % esc(v))
                continue
            out.append(".TP\n.B %s\n%s" % (esc(v[0], True), esc(v[1].strip())))
    return "\n".join(out) + "\n"


def main():
    moeprobe = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tmpl = open(os.path.join(root, "docs", "moeprobe.1.in")).read()
    page = tmpl.replace("@OPTIONS@\n", render(moeprobe))
    dest = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "docs", "moeprobe.1")
    if dest == "-":
        sys.stdout.write(page)
    else:
        open(dest, "w").write(page)


main()
